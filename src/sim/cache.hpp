// One set-associative cache level over flat arrays: tags, MESI-ish state bits, LLC directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"
#include "replacement.hpp"

namespace pmlab::sim {

inline constexpr std::uint64_t kInvalidTag = ~std::uint64_t{0};
inline constexpr std::size_t kNoSlot = ~std::size_t{0};

// State bits of a cached line.
inline constexpr std::uint8_t kDirty = 1;      // newer than the level below
inline constexpr std::uint8_t kExclusive = 2;  // private copy with write permission (E or M)

class Cache {
 public:
  // `directory` adds sharer masks and owners (the inclusive LLC tracks private copies).
  Cache(const LevelParams& p, bool directory, std::uint64_t seed);

  [[nodiscard]] std::size_t find(std::uint64_t line) const {
    const std::size_t base = set_base(line);
    for (std::size_t s = base; s < base + ways_; ++s)
      if (tags_[s] == line) return s;
    return kNoSlot;
  }
  // Slot to fill for `line`: an invalid way if any, else the policy's victim (still valid).
  [[nodiscard]] std::size_t victim_for(std::uint64_t line);
  void touch(std::size_t slot) {
    std::visit([slot](auto& p) { p.on_hit(slot); }, policy_);
  }
  void fill(std::size_t slot, std::uint64_t line, std::uint8_t state);
  void invalidate(std::size_t slot);
  void clear();  // everything invalid, policy state reset

  [[nodiscard]] std::uint64_t tag(std::size_t slot) const { return tags_[slot]; }
  [[nodiscard]] std::uint8_t state(std::size_t slot) const { return state_[slot]; }
  void set_state(std::size_t slot, std::uint8_t s) { state_[slot] = s; }
  void add_state(std::size_t slot, std::uint8_t bits) { state_[slot] = static_cast<std::uint8_t>(state_[slot] | bits); }
  void drop_state(std::size_t slot, std::uint8_t bits) { state_[slot] = static_cast<std::uint8_t>(state_[slot] & ~bits); }
  [[nodiscard]] std::size_t slots() const { return tags_.size(); }

  // Directory (LLC only): which cores' private caches hold the line, and which one (if any)
  // holds it exclusively and so may have it dirty.
  [[nodiscard]] std::uint64_t sharers(std::size_t slot) const { return sharers_[slot]; }
  void set_sharers(std::size_t slot, std::uint64_t m) { sharers_[slot] = m; }
  [[nodiscard]] int owner(std::size_t slot) const { return owner_[slot]; }
  void set_owner(std::size_t slot, int core) { owner_[slot] = static_cast<std::int8_t>(core); }

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] Cycles latency() const { return latency_; }

  [[nodiscard]] const LevelStats& stats() const { return stats_; }
  [[nodiscard]] LevelStats& counters() { return stats_; }  // Hierarchy counts into these

 private:
  [[nodiscard]] std::size_t set_base(std::uint64_t line) const {
    const std::uint64_t set = pow2_ ? (line & set_mask_) : (line % sets_);
    return static_cast<std::size_t>(set) * ways_;
  }

  std::string name_;
  Cycles latency_;
  std::uint64_t sets_;
  std::uint64_t set_mask_;
  bool pow2_;
  std::uint32_t ways_;
  std::vector<std::uint64_t> tags_;
  std::vector<std::uint8_t> state_;
  std::vector<std::uint64_t> sharers_;
  std::vector<std::int8_t> owner_;
  AnyPolicy policy_;
  LevelStats stats_;
};

}  // namespace pmlab::sim
