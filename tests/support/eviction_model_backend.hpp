// A test backend that records every line version so a "power failure" can persist any legal subset.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::testing {

// Thrown by the backend when the armed store count is reached.
struct PowerCut : std::runtime_error {
  PowerCut() : std::runtime_error("power cut") {}
};

// Model of a write-back cache in front of NVM, independent of the simulator: a line reaches NVM
// whole, at any moment the hardware chooses, so after a crash each line holds *some* version it
// had during the run (its value after one of its stores, or its value at the start), never
// older than the version that a completed flush+fence made durable. crash_image() picks one such
// version per line at random, which covers every eviction order a real cache could produce.
// Single-threaded (parallel_for runs iterations in order).
class EvictionModelBackend {
 public:
  explicit EvictionModelBackend(std::uint64_t seed) : rng_(seed) {}

  // Stores after the `k`-th one throw PowerCut (k = 0 disarms).
  void arm(std::uint64_t k) { armed_at_ = k == 0 ? 0 : stores_ + k; }
  [[nodiscard]] std::uint64_t stores() const { return stores_; }

  template <class T>
  [[nodiscard]] T load(const T* p) const {
    return *p;
  }
  template <class T>
  void store(T* p, T v) {
    if (armed_at_ != 0 && stores_ + 1 >= armed_at_) throw PowerCut();
    ++stores_;
    auto line = line_base(p);
    auto& h = history_[line];
    if (h.versions.empty()) {
      h.versions.push_back(snapshot(line));  // value at the start
      h.first_touch = stores_;
    }
    *p = v;
    h.versions.push_back(snapshot(line));
  }
  void flush(const void* p) {
    auto it = history_.find(line_base(p));
    if (it != history_.end()) pending_.push_back({it->first, it->second.versions.size() - 1});
  }
  void fence() {
    for (auto [line, version] : pending_) {
      auto& h = history_[line];
      if (version > h.durable) h.durable = version;
    }
    pending_.clear();
  }
  void persist(const void* p, std::size_t len) {
    auto first = line_base(p);
    auto end = reinterpret_cast<std::uintptr_t>(p) + len;
    for (auto a = first; a < end; a += kCacheLineBytes) flush(reinterpret_cast<const void*>(a));
    fence();
  }
  void region_begin(mem::RegionId) {}
  void region_end(mem::RegionId) {}
  template <class Fn>
  void parallel_for(std::size_t begin, std::size_t end, Fn&& fn) {
    for (std::size_t i = begin; i < end; ++i) fn(i);
  }
  [[nodiscard]] int threads() const { return 1; }

  // Rewrites memory as NVM would hold it after the crash and forgets all history (the
  // post-crash memory is the new starting point). `latest_bias` = chance a line holds its
  // newest version (otherwise a uniformly random legal one).
  void apply_crash_image(double latest_bias = 0.5) {
    std::bernoulli_distribution latest(latest_bias);
    // Lines in the order the run first stored to them, so a seed draws the same image on every
    // run (the hash map's order, and addresses, depend on where the allocator put the buffers,
    // which made failures unreplayable).
    std::vector<std::pair<std::uint64_t, std::uintptr_t>> lines;
    lines.reserve(history_.size());
    for (const auto& [line, h] : history_) lines.emplace_back(h.first_touch, line);
    std::sort(lines.begin(), lines.end());
    for (auto [first_touch, line] : lines) {
      auto& h = history_[line];
      std::size_t pick = h.versions.size() - 1;
      if (!latest(rng_)) {
        std::uniform_int_distribution<std::size_t> d(h.durable, h.versions.size() - 1);
        pick = d(rng_);
      }
      std::memcpy(reinterpret_cast<void*>(line), h.versions[pick].data(), kCacheLineBytes);
    }
    history_.clear();
    pending_.clear();
    armed_at_ = 0;
  }

 private:
  using Line = std::array<unsigned char, kCacheLineBytes>;
  struct History {
    std::vector<Line> versions;
    std::size_t durable = 0;        // index of the oldest version the crash may leave
    std::uint64_t first_touch = 0;  // store count when the line was first stored to
  };
  static std::uintptr_t line_base(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{kCacheLineBytes} - 1);
  }
  static Line snapshot(std::uintptr_t line) {
    Line l;
    std::memcpy(l.data(), reinterpret_cast<const void*>(line), kCacheLineBytes);
    return l;
  }

  std::mt19937_64 rng_;
  std::unordered_map<std::uintptr_t, History> history_;
  std::vector<std::pair<std::uintptr_t, std::size_t>> pending_;
  std::uint64_t stores_ = 0;
  std::uint64_t armed_at_ = 0;
};

static_assert(mem::Backend<EvictionModelBackend>);

}  // namespace pmlab::testing
