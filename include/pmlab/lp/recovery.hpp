// Recovery bookkeeping shared by every kernel's LP recovery: what was validated and repaired.
#pragma once

#include <cstdint>

namespace pmlab::lp {

struct RecoveryStats {
  std::uint64_t regions_validated = 0;     // checksums recomputed and compared
  std::uint64_t regions_inconsistent = 0;  // written slots whose data did not match
  std::uint64_t regions_recomputed = 0;    // region executions redone by recovery
  std::uint64_t regions_unwritten = 0;     // slots never written (region not reached/persisted)
  // Repairs whose data had fully persisted but whose checksum had not (the paper's R3 case):
  // the recomputed region equals what memory already held.
  std::uint64_t regions_unnecessary = 0;
  RecoveryStats& operator+=(const RecoveryStats& o) {
    regions_unnecessary += o.regions_unnecessary;
    regions_validated += o.regions_validated;
    regions_inconsistent += o.regions_inconsistent;
    regions_recomputed += o.regions_recomputed;
    regions_unwritten += o.regions_unwritten;
    return *this;
  }
};

}  // namespace pmlab::lp

#include <cstddef>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::lp {

// Recovery driver for kernels whose regions are associative (independent of each other, as the
// regions inside one tmm kk iteration are): validate every region's data against its slot and
// repair the ones that do not match, eagerly. `checksum_of(i)` recomputes region i's checksum
// from the data in memory; `repair(i)` recomputes region i from the (read-only) inputs, returns
// the new checksum, and leaves its data durable (persist). The slot is then committed durably,
// so a crash during recovery is recovered the same way. Regions in [0, count) that were never
// reached (unwritten slot) are repaired too when `repair_unwritten` is set.
template <mem::Backend B, class ChecksumOf, class Repair>
RecoveryStats recover_independent_regions(B& be, const ChecksumTable& table, std::size_t count,
                                          ChecksumOf&& checksum_of, Repair&& repair,
                                          bool repair_unwritten) {
  RecoveryStats stats;
  for (std::size_t i = 0; i < count; ++i) {
    const bool written = table.written(be, i);
    if (written) {
      ++stats.regions_validated;
      if (table.check(be, i, checksum_of(i)) == SlotCheck::kMatch) continue;
      ++stats.regions_inconsistent;
    } else {
      ++stats.regions_unwritten;
      if (!repair_unwritten) continue;
    }
    ChecksumValue v = repair(i);
    table.commit_durable(be, i, v);
    ++stats.regions_recomputed;
  }
  return stats;
}

}  // namespace pmlab::lp
