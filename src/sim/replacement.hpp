// Replacement policies (LRU, random, SRRIP) behind one small interface, as in ChampSim.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

namespace pmlab::sim {

// A policy sees slots (set * ways + way); the cache picks invalid ways itself, so victim() is
// asked only when the set is full.
template <class P>
concept ReplacementPolicy = requires(P& p, std::size_t slot, std::size_t set_base) {
  p.on_hit(slot);
  p.on_fill(slot);
  p.on_invalidate(slot);
  { p.victim(set_base) } -> std::same_as<std::size_t>;
  p.reset();
};

// The LRU victim of the set at `base`: its first way with the oldest stamp (LruPolicy's stamps;
// 0 marks an invalid way, so an invalid way wins when there is one).
template <std::size_t Ways>
[[gnu::always_inline]] [[nodiscard]] inline std::size_t lru_oldest_of(const std::uint64_t* stamps,
                                                                      std::size_t base) {
  // A tournament: pairs, then pairs of winners, so the chain of dependent compares is
  // log2(Ways) long instead of Ways - 1. The left (lower) way wins ties, so the result is the
  // first oldest way, as the generic loop's.
  const std::uint64_t* s = stamps + base;
  std::array<std::size_t, Ways> way{};
  for (std::size_t w = 0; w < Ways; ++w) way[w] = w;
  for (std::size_t n = Ways; n > 1; n /= 2)
    for (std::size_t i = 0; i < n / 2; ++i) {
      const std::size_t l = way[2 * i], r = way[2 * i + 1];
      way[i] = s[r] < s[l] ? r : l;
    }
  return base + way[0];
}
[[gnu::always_inline]] [[nodiscard]] inline std::size_t lru_oldest(const std::uint64_t* stamps,
                                                                   std::size_t base,
                                                                   std::uint32_t ways) {
  // The presets' associativities get a fully unrolled, branch-free scan (cmov, no mispredicts).
  switch (ways) {
    case 8:
      return lru_oldest_of<8>(stamps, base);
    case 16:
      return lru_oldest_of<16>(stamps, base);
    default:
      break;
  }
  std::size_t best = base;
  for (std::size_t s = base + 1; s < base + ways; ++s)
    if (stamps[s] < stamps[best]) best = s;
  return best;
}

// True LRU with per-slot timestamps: the victim is the oldest stamp of the set.
class LruPolicy {
 public:
  LruPolicy(std::size_t slots, std::uint32_t ways) : stamp_(slots, 0), ways_(ways) {}
  void on_hit(std::size_t slot) { stamp_[slot] = ++now_; }
  void on_fill(std::size_t slot) { stamp_[slot] = ++now_; }
  void on_invalidate(std::size_t slot) { stamp_[slot] = 0; }
  [[nodiscard]] std::size_t victim(std::size_t base) const {
    return lru_oldest(stamp_.data(), base, ways_);
  }
  void reset() {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    now_ = 0;
  }
  // For Machine's L1 hit fast path, which performs on_hit itself: stamp[slot] = ++*now.
  [[nodiscard]] std::uint64_t* stamp_data() { return stamp_.data(); }
  [[nodiscard]] std::uint64_t* now_ptr() { return &now_; }

 private:
  std::vector<std::uint64_t> stamp_;
  std::uint64_t now_ = 0;
  std::uint32_t ways_;
};

// Uniform random victim from a fixed-seed xorshift64: reproducible run to run.
class RandomPolicy {
 public:
  RandomPolicy(std::uint32_t ways, std::uint64_t seed)
      : ways_(ways), seed_(seed | 1), state_(seed_) {}
  void on_hit(std::size_t) {}
  void on_fill(std::size_t) {}
  void on_invalidate(std::size_t) {}
  [[nodiscard]] std::size_t victim(std::size_t base) {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return base + static_cast<std::size_t>(state_ % ways_);
  }
  void reset() { state_ = seed_; }

 private:
  std::uint32_t ways_;
  std::uint64_t seed_;
  std::uint64_t state_;
};

// SRRIP-HP (Jaleel et al., ISCA'10), 2-bit RRPVs: fill at 2, hit to 0, evict the first 3,
// ageing the whole set until one exists.
class SrripPolicy {
 public:
  static constexpr std::uint8_t kMax = 3;
  SrripPolicy(std::size_t slots, std::uint32_t ways) : rrpv_(slots, kMax), ways_(ways) {}
  void on_hit(std::size_t slot) { rrpv_[slot] = 0; }
  void on_fill(std::size_t slot) { rrpv_[slot] = kMax - 1; }
  void on_invalidate(std::size_t slot) { rrpv_[slot] = kMax; }
  [[nodiscard]] std::size_t victim(std::size_t base) {
    for (;;) {
      for (std::size_t s = base; s < base + ways_; ++s)
        if (rrpv_[s] == kMax) return s;
      for (std::size_t s = base; s < base + ways_; ++s) ++rrpv_[s];
    }
  }
  void reset() { std::fill(rrpv_.begin(), rrpv_.end(), kMax); }

 private:
  std::vector<std::uint8_t> rrpv_;
  std::uint32_t ways_;
};

static_assert(ReplacementPolicy<LruPolicy> && ReplacementPolicy<RandomPolicy> &&
              ReplacementPolicy<SrripPolicy>);

// The policy a cache holds; std::visit compiles to a jump table, no virtual call.
using AnyPolicy = std::variant<LruPolicy, RandomPolicy, SrripPolicy>;

}  // namespace pmlab::sim
