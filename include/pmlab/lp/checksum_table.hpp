// Collision-free checksum table: one slot per region, indexed by region coordinates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"

namespace pmlab::lp {

// The name of LP's checksum table in a pool.
inline constexpr std::string_view kTableArray = "lp_table";

/// One region's checksum in persistent memory. A slot is 32 bytes, 32-byte aligned, so it never
/// straddles a cache line and reaches NVM as one unit. `tag` is 0 in a never-written slot (pools
/// are zero-filled) and tag_for(index), which is never 0, once written: an unwritten slot can't
/// be mistaken for any checksum value, and a slot's tag also names its own index. A reused slot
/// still holds its previous use's checksum: see docs/protect-your-own-loop.md, rule 2.
struct alignas(32) ChecksumSlot {
  std::uint64_t primary;    ///< ChecksumValue::primary
  std::uint64_t secondary;  ///< ChecksumValue::secondary
  std::uint64_t tag;        ///< 0: never written (or cleared); ChecksumTable::tag_for(i): written
  std::uint64_t use;        ///< which use of a reused slot wrote it (commit with a use), else 0
};
static_assert(sizeof(ChecksumSlot) == 32);

/// What ChecksumTable::check found in a slot.
enum class SlotCheck {
  kUnwritten,  ///< the slot's tag is not its own: never written, or cleared
  kMatch,      ///< written, and equal to the checksum computed from memory
  kMismatch,   ///< written, and different: the region's data did not all persist
};

/// Collision-free checksum table: one slot per region, indexed by region coordinates, over
/// memory the caller owns (a pool array of bytes_for(count) bytes, zero-filled).
class ChecksumTable {
 public:
  /// An empty table.
  ChecksumTable() = default;
  /// A table over `count` slots at `slots`.
  ChecksumTable(ChecksumSlot* slots, std::size_t count) : slots_(slots), count_(count) {}

  /// The tag of a written slot `index`: never 0, different for every index.
  [[nodiscard]] static constexpr std::uint64_t tag_for(std::size_t index) {
    return 0x8000'0000'0000'0000ull | (0x5a17'c0de'0000'0000ull ^ index);
  }
  /// Number of slots.
  [[nodiscard]] std::size_t size() const { return count_; }
  /// Slot i.
  [[nodiscard]] ChecksumSlot* slot(std::size_t i) const { return slots_ + i; }
  /// Asks the CPU to bring slot i's line in for writing, so that a commit at the end of a short
  /// region does not wait for it. Slots are written once per run and mostly cold: without this,
  /// Cholesky's 16 x 16 tile regions spent ~1% of their time in the commit's read-for-ownership
  /// (docs/lp-native-cost.md). A hint only: no store, invisible to the simulator.
  void prefetch(std::size_t i) const { __builtin_prefetch(slots_ + i, 1, 3); }
  /// Bytes a table of `count` slots takes (the pool array to allocate).
  [[nodiscard]] static std::size_t bytes_for(std::size_t count) {
    return count * sizeof(ChecksumSlot);
  }

  /// LP commit of slot i: plain stores of the checksum, then the tag; no flush, no fence.
  template <mem::Backend B>
  void commit(B& b, std::size_t i, ChecksumValue v) const {
    ChecksumSlot* s = slots_ + i;
    b.store(&s->primary, v.primary);
    b.store(&s->secondary, v.secondary);
    b.store(&s->tag, tag_for(i));
  }
  /// LP commit of a slot reused across uses (e.g. one bank per iteration, reused every few
  /// iterations) for its use `use`: the use is stored in the same 32-byte unit as the checksum
  /// and the tag, so it reaches NVM with them, and check(b, i, computed, use) takes a slot left
  /// by any other use as unwritten. Such a slot needs no durable clear before it is reused
  /// (docs/protect-your-own-loop.md, rule 2).
  template <mem::Backend B>
  void commit(B& b, std::size_t i, ChecksumValue v, std::uint64_t use) const {
    b.store(&slots_[i].use, use);
    commit(b, i, v);
  }
  /// Eager commit (recovery): the slot is durable on return.
  template <mem::Backend B>
  void commit_durable(B& b, std::size_t i, ChecksumValue v) const {
    commit(b, i, v);
    b.persist(slots_ + i, sizeof(ChecksumSlot));
  }
  /// Whether slot i carries its own tag (written and not cleared).
  template <mem::Backend B>
  [[nodiscard]] bool written(B& b, std::size_t i) const {
    return b.load(&slots_[i].tag) == tag_for(i);
  }
  /// Compares slot i with the checksum `computed` from the region's data in memory.
  template <mem::Backend B>
  [[nodiscard]] SlotCheck check(B& b, std::size_t i, ChecksumValue computed) const {
    if (!written(b, i)) return SlotCheck::kUnwritten;
    if (mem::mutated(b, mem::Mutation::kNoValidate)) return SlotCheck::kMatch;  // negative control
    ChecksumValue stored{b.load(&slots_[i].primary), b.load(&slots_[i].secondary)};
    return stored == computed ? SlotCheck::kMatch : SlotCheck::kMismatch;
  }
  /// check() of a slot written by commit(b, i, v, use): kUnwritten unless it holds that use.
  template <mem::Backend B>
  [[nodiscard]] SlotCheck check(B& b, std::size_t i, ChecksumValue computed,
                                std::uint64_t use) const {
    if (b.load(&slots_[i].use) != use) return SlotCheck::kUnwritten;
    return check(b, i, computed);
  }
  /// Marks a slot unwritten again (before reusing it, or when recovery rewinds a region);
  /// durable on return.
  template <mem::Backend B>
  void clear_durable(B& b, std::size_t i) const {
    b.store(&slots_[i].tag, std::uint64_t{0});
    b.persist(&slots_[i].tag, sizeof(std::uint64_t));
  }

 private:
  ChecksumSlot* slots_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace pmlab::lp
