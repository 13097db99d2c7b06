// Recovery bookkeeping shared by every kernel's LP recovery: what was validated and repaired.
#pragma once

#include <cstdint>

namespace pmlab::lp {

struct RecoveryStats {
  std::uint64_t regions_validated = 0;     // checksums recomputed and compared
  std::uint64_t regions_inconsistent = 0;  // written slots whose data did not match
  std::uint64_t regions_recomputed = 0;    // region executions redone by recovery
  std::uint64_t regions_unwritten = 0;     // slots never written (region not reached/persisted)
  RecoveryStats& operator+=(const RecoveryStats& o) {
    regions_validated += o.regions_validated;
    regions_inconsistent += o.regions_inconsistent;
    regions_recomputed += o.regions_recomputed;
    regions_unwritten += o.regions_unwritten;
    return *this;
  }
};

}  // namespace pmlab::lp
