// Recovery bookkeeping shared by every kernel's LP recovery: what was validated and repaired.
#pragma once

#include <cstdint>

namespace pmlab::lp {

/// What one recovery validated and repaired.
struct RecoveryStats {
  std::uint64_t regions_validated = 0;     ///< checksums recomputed and compared
  std::uint64_t regions_inconsistent = 0;  ///< written slots whose data did not match
  std::uint64_t regions_recomputed = 0;    ///< region executions redone by recovery
  std::uint64_t regions_unwritten = 0;     ///< slots never written (region not reached/persisted)
  /// Repairs whose data had fully persisted but whose checksum had not (the paper's R3 case):
  /// the recomputed region equals what memory already held.
  std::uint64_t regions_unnecessary = 0;
  /// Adds another recovery's counts (a recovery interrupted and run again).
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
#include <utility>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::lp {

/// Recovery driver for loops whose regions are independent of each other (as the regions inside
/// one tmm kk iteration are): validates every region's data against its checksum slot and
/// repairs, eagerly, the ones that do not match.
///
/// Region i (i in [0, count)) owns slot `first_slot + i` of `table`, so one table can hold
/// several loops' slots, or the slots of one outer iteration of a loop (slot reuse: see
/// docs/protect-your-own-loop.md for why a reused slot must be cleared or tagged per use).
/// `checksum_of(i)` recomputes region i's checksum from the data in memory; `repair(i)`
/// recomputes region i from its (read-only) inputs, returns the new checksum, and leaves its data
/// durable (persist). The slot is then committed durably, so a crash during recovery is
/// recovered the same way. Regions never reached (unwritten slot) are repaired too when
/// `repair_unwritten` is set.
template <mem::Backend B, class ChecksumOf, class Repair>
RecoveryStats recover_independent_regions(B& be, const ChecksumTable& table, std::size_t first_slot,
                                          std::size_t count, ChecksumOf&& checksum_of,
                                          Repair&& repair, bool repair_unwritten) {
  RecoveryStats stats;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t slot = first_slot + i;
    const bool written = table.written(be, slot);
    if (written) {
      ++stats.regions_validated;
      if (table.check(be, slot, checksum_of(i)) == SlotCheck::kMatch) continue;
      ++stats.regions_inconsistent;
    } else {
      ++stats.regions_unwritten;
      if (!repair_unwritten) continue;
    }
    ChecksumValue v = repair(i);
    table.commit_durable(be, slot, v);
    ++stats.regions_recomputed;
  }
  return stats;
}

/// The same with region i in slot i.
template <mem::Backend B, class ChecksumOf, class Repair>
RecoveryStats recover_independent_regions(B& be, const ChecksumTable& table, std::size_t count,
                                          ChecksumOf&& checksum_of, Repair&& repair,
                                          bool repair_unwritten) {
  return recover_independent_regions(be, table, std::size_t{0}, count,
                                     std::forward<ChecksumOf>(checksum_of),
                                     std::forward<Repair>(repair), repair_unwritten);
}

}  // namespace pmlab::lp
