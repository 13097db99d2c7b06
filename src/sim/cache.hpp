// One set-associative cache level over flat arrays: tags, MESI-ish state bits, LLC directory.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"
#include "pmlab/sim/tag_hash.hpp"
#include "replacement.hpp"

namespace pmlab::sim {

inline constexpr std::uint64_t kInvalidTag = ~std::uint64_t{0};
inline constexpr std::size_t kNoSlot = ~std::size_t{0};

// State bits of a cached line.
inline constexpr std::uint8_t kDirty = 1;      // newer than the level below
inline constexpr std::uint8_t kExclusive = 2;  // private copy with write permission (E or M)
static_assert(kDirty == detail::kStateDirty && kExclusive == detail::kStateExclusive);

class Cache {
 public:
  // `directory` adds sharer masks and owners (the inclusive LLC tracks private copies).
  Cache(const LevelParams& p, bool directory, std::uint64_t seed);

  [[nodiscard]] std::size_t find(std::uint64_t line) const {
    const std::size_t base = set_base(line);
    if (hashed_) [[likely]] {
      const std::size_t s = detail::find_hashed(tags_.data(), hash_.data(), base, ways_, line);
      if (s != kNoSlot || !hides_) [[likely]]
        return s;
      // A hidden line (hide()) has no hash to match: the tags decide.
    }
    for (std::size_t s = base; s < base + ways_; ++s)
      if (tags_[s] == line) return s;
    return kNoSlot;
  }
  // Slot to fill for `line`: an invalid way if any, else the policy's victim (still valid).
  // Inline, like the other per-access methods: they run on every simulated miss.
  [[nodiscard]] std::size_t victim_for(std::uint64_t line) {
    const std::size_t base = set_base(line);
    // LRU stamps are 0 exactly for invalid ways and positive for valid ones, so its oldest way
    // is the first invalid one when there is one: the scan below would give the same slot.
    if (auto* lru = std::get_if<LruPolicy>(&policy_)) [[likely]]
      return lru->victim(base);
    for (std::size_t s = base; s < base + ways_; ++s)
      if (tags_[s] == kInvalidTag) return s;
    return std::visit([base](auto& p) { return p.victim(base); }, policy_);
  }
  void touch(std::size_t slot) {
    with_policy([slot](auto& p) { p.on_hit(slot); });
  }
  void fill(std::size_t slot, std::uint64_t line, std::uint8_t state) {
    tags_[slot] = line;
    if (hashed_) hash_[slot] = detail::tag_hash(line);
    state_[slot] = state;
    if (!sharers_.empty()) {
      sharers_[slot] = 0;
      owner_[slot] = -1;
    }
    with_policy([slot](auto& p) { p.on_fill(slot); });
  }
  void invalidate(std::size_t slot) {
    tags_[slot] = kInvalidTag;
    if (hashed_) hash_[slot] = detail::kNoHash;
    state_[slot] = 0;
    if (!sharers_.empty()) {
      sharers_[slot] = 0;
      owner_[slot] = -1;
    }
    with_policy([slot](auto& p) { p.on_invalidate(slot); });
  }
  void clear();  // everything invalid, policy state reset

  // The stream prefetcher's unused lines (hashed caches only, after allow_hiding): a hidden
  // slot keeps kHiddenHash in place of its tag's hash, so the hashed lookups of Machine's inline
  // L1 path miss it and its first demand access reaches the Hierarchy; find() still finds it,
  // by its tag. fill, invalidate and clear end the hiding with the line.
  void allow_hiding() { hides_ = hashed_; }
  void hide(std::size_t slot) { hash_[slot] = detail::kHiddenHash; }
  [[nodiscard]] bool hidden(std::size_t slot) const {
    return hides_ && hash_[slot] == detail::kHiddenHash;
  }
  void reveal(std::size_t slot) { hash_[slot] = detail::tag_hash(tags_[slot]); }

  [[nodiscard]] std::uint64_t tag(std::size_t slot) const { return tags_[slot]; }
  [[nodiscard]] std::uint8_t state(std::size_t slot) const { return state_[slot]; }
  void set_state(std::size_t slot, std::uint8_t s) { state_[slot] = s; }
  void add_state(std::size_t slot, std::uint8_t bits) {
    state_[slot] = static_cast<std::uint8_t>(state_[slot] | bits);
  }
  void drop_state(std::size_t slot, std::uint8_t bits) {
    state_[slot] = static_cast<std::uint8_t>(state_[slot] & ~bits);
  }
  [[nodiscard]] std::size_t slots() const { return tags_.size(); }
  [[nodiscard]] std::uint64_t sets() const { return sets_; }
  [[nodiscard]] std::uint32_t ways() const { return ways_; }

  // Directory (LLC only): which cores' private caches hold the line, and which one (if any)
  // holds it exclusively and so may have it dirty.
  [[nodiscard]] std::uint64_t sharers(std::size_t slot) const { return sharers_[slot]; }
  void set_sharers(std::size_t slot, std::uint64_t m) { sharers_[slot] = m; }
  [[nodiscard]] int owner(std::size_t slot) const { return owner_[slot]; }
  void set_owner(std::size_t slot, int core) { owner_[slot] = static_cast<std::int8_t>(core); }

  // Link (last private level only): the LLC slot the line was filled from, so an eviction
  // updates the directory without searching the LLC set. Checked against the LLC's tag.
  [[nodiscard]] std::size_t link(std::size_t slot) const { return link_[slot]; }
  void set_link(std::size_t slot, std::size_t llc_slot) { link_[slot] = llc_slot; }

  // Raw arrays for Machine's L1 hit fast path (stable: the vectors never reallocate).
  [[nodiscard]] const std::uint64_t* tag_data() const { return tags_.data(); }
  [[nodiscard]] const std::uint8_t* state_data() const { return state_.data(); }
  // nullptr unless the ways come in whole groups of 8 (see detail::find_hashed).
  [[nodiscard]] const std::uint8_t* hash_data() const { return hashed_ ? hash_.data() : nullptr; }
  [[nodiscard]] LruPolicy* lru() { return std::get_if<LruPolicy>(&policy_); }
  // Every array of an LRU cache with hashed lookups, for Hierarchy's lean miss path
  // (src/sim/hierarchy_hot.hpp): through Cache's accessors each store of a state or hash byte (a
  // character type, which may alias anything) made the compiler load every vector's data pointer
  // again; the lean miss reads these pointers once and writes the bytes last. Empty arrays (no
  // directory, no link) are nullptr.
  struct Raw {
    std::uint64_t* tags;
    std::uint8_t* hash;
    std::uint8_t* state;
    std::uint64_t* stamp;
    std::uint64_t* now;
    std::uint64_t* sharers;
    std::int8_t* owner;
    std::size_t* link;
    std::uint64_t set_mask;
    std::uint32_t ways;
  };
  [[nodiscard]] Raw raw() {
    LruPolicy* l = lru();
    return {tags_.data(),
            hash_.data(),
            state_.data(),
            l->stamp_data(),
            l->now_ptr(),
            sharers_.empty() ? nullptr : sharers_.data(),
            owner_.empty() ? nullptr : owner_.data(),
            link_.empty() ? nullptr : link_.data(),
            set_mask_,
            ways_};
  }
  [[nodiscard]] bool pow2_sets() const { return pow2_; }

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] Cycles latency() const { return latency_; }

  [[nodiscard]] const LevelStats& stats() const { return stats_; }
  [[nodiscard]] LevelStats& counters() { return stats_; }  // Hierarchy counts into these

 private:
  // LRU (the presets' policy) is called directly; the others go through the variant's table.
  template <class Fn>
  void with_policy(Fn&& fn) {
    if (auto* lru = std::get_if<LruPolicy>(&policy_)) [[likely]]
      fn(*lru);
    else
      std::visit(std::forward<Fn>(fn), policy_);
  }
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
  bool hashed_;                     // ways % 8 == 0: lookups scan hash_ first
  bool hides_ = false;              // allow_hiding(): a hashed miss also scans the tags
  std::vector<std::uint8_t> hash_;  // per slot: detail::tag_hash of its tag, kNoHash if invalid
  std::vector<std::uint8_t> state_;
  std::vector<std::uint64_t> sharers_;
  std::vector<std::int8_t> owner_;
  std::vector<std::size_t> link_;
  AnyPolicy policy_;
  LevelStats stats_;
};

}  // namespace pmlab::sim
