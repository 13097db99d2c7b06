// Set-associative cache level: fills, invalidations and victim choice over flat arrays.
#include "cache.hpp"

#include <algorithm>
#include <bit>

namespace pmlab::sim {

namespace {
AnyPolicy make_policy(const LevelParams& p, std::uint64_t seed) {
  const auto slots = static_cast<std::size_t>(p.sets() * p.ways);
  switch (p.replacement) {
    case Replacement::kRandom:
      return RandomPolicy(p.ways, seed);
    case Replacement::kSrrip:
      return SrripPolicy(slots, p.ways);
    case Replacement::kLru:
      break;
  }
  return LruPolicy(slots, p.ways);
}
}  // namespace

Cache::Cache(const LevelParams& p, bool directory, std::uint64_t seed)
    : name_(p.name),
      latency_(p.hit_latency),
      sets_(p.sets()),
      set_mask_(p.sets() - 1),
      pow2_(std::has_single_bit(p.sets())),
      ways_(p.ways),
      tags_(static_cast<std::size_t>(p.sets() * p.ways), kInvalidTag),
      hashed_(p.ways % 8 == 0),
      hash_(hashed_ ? tags_.size() : 0, detail::kNoHash),
      state_(tags_.size(), 0),
      link_(directory ? 0 : tags_.size(), kNoSlot),
      policy_(make_policy(p, seed)) {
  if (directory) {
    sharers_.assign(tags_.size(), 0);
    owner_.assign(tags_.size(), -1);
  }
  stats_.name = p.name;
}

void Cache::clear() {
  std::fill(tags_.begin(), tags_.end(), kInvalidTag);
  std::fill(hash_.begin(), hash_.end(), detail::kNoHash);
  std::fill(state_.begin(), state_.end(), std::uint8_t{0});
  std::fill(sharers_.begin(), sharers_.end(), 0);
  std::fill(owner_.begin(), owner_.end(), std::int8_t{-1});
  std::visit([](auto& p) { p.reset(); }, policy_);
}

}  // namespace pmlab::sim
