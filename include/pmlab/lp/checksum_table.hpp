// Collision-free checksum table: one slot per region, indexed by region coordinates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"

namespace pmlab::lp {

// A slot is 32 bytes, 32-byte aligned, so it never straddles a cache line and reaches NVM as
// one unit. `tag` is 0 in a never-written slot (pools are zero-filled) and tag_for(index),
// which is never 0, once written: an unwritten slot can't be mistaken for any checksum value,
// and a slot's tag also names its own index.
struct alignas(32) ChecksumSlot {
  std::uint64_t primary;
  std::uint64_t secondary;
  std::uint64_t tag;
  std::uint64_t reserved;
};
static_assert(sizeof(ChecksumSlot) == 32);

enum class SlotCheck { kUnwritten, kMatch, kMismatch };

class ChecksumTable {
 public:
  ChecksumTable() = default;
  ChecksumTable(ChecksumSlot* slots, std::size_t count) : slots_(slots), count_(count) {}

  [[nodiscard]] static constexpr std::uint64_t tag_for(std::size_t index) {
    return 0x8000'0000'0000'0000ull | (0x5a17'c0de'0000'0000ull ^ index);
  }
  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] ChecksumSlot* slot(std::size_t i) const { return slots_ + i; }
  [[nodiscard]] static std::size_t bytes_for(std::size_t count) {
    return count * sizeof(ChecksumSlot);
  }

  // LP commit: plain stores, no flush, no fence.
  template <mem::Backend B>
  void commit(B& b, std::size_t i, ChecksumValue v) const {
    ChecksumSlot* s = slots_ + i;
    b.store(&s->primary, v.primary);
    b.store(&s->secondary, v.secondary);
    b.store(&s->tag, tag_for(i));
  }
  // Eager commit (recovery): the slot is durable on return.
  template <mem::Backend B>
  void commit_durable(B& b, std::size_t i, ChecksumValue v) const {
    commit(b, i, v);
    b.persist(slots_ + i, sizeof(ChecksumSlot));
  }
  template <mem::Backend B>
  [[nodiscard]] bool written(B& b, std::size_t i) const {
    return b.load(&slots_[i].tag) == tag_for(i);
  }
  template <mem::Backend B>
  [[nodiscard]] SlotCheck check(B& b, std::size_t i, ChecksumValue computed) const {
    if (!written(b, i)) return SlotCheck::kUnwritten;
    if (mem::mutated(b, mem::Mutation::kNoValidate)) return SlotCheck::kMatch;  // negative control
    ChecksumValue stored{b.load(&slots_[i].primary), b.load(&slots_[i].secondary)};
    return stored == computed ? SlotCheck::kMatch : SlotCheck::kMismatch;
  }
  // Marks a slot unwritten again (used when recovery rewinds a region); durable on return.
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
