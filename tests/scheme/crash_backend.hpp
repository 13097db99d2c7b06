// Test backend for scheme tests: power cut before the K-th store/flush/fence, any legal NVM image.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"

namespace pmlab::scheme_test {

struct Crash : std::runtime_error {
  Crash() : std::runtime_error("simulated power cut") {}
};

// Every line reaches NVM whole, at a moment the "hardware" picks: after a crash a line holds
// one of the versions it had since the last crash (one per store), never older than the newest
// version a completed flush + fence made durable. apply_crash() picks one per line at random:
// that covers every eviction order and every flush that was still in flight at the cut.
//
// Crash points are stores, flushes and fences (numbered 1, 2, ...): arm(K) makes op K throw
// before it has any effect. parallel_for runs iterations one after another, in a shuffled
// order when asked (panels finish in any order on a real machine). Single-threaded.
class CrashBackend {
 public:
  explicit CrashBackend(std::uint64_t seed = 1, int threads = 1, bool shuffle = false)
      : rng_(seed), threads_(threads), shuffle_(shuffle) {}

  void arm(std::uint64_t k) { crash_at_ = k == 0 ? 0 : ops_ + k; }
  void disarm() { crash_at_ = 0; }
  [[nodiscard]] std::uint64_t ops() const { return ops_; }
  [[nodiscard]] std::uint64_t fences() const { return fences_; }
  // A negative control the scheme code consults through mem::mutated() (the simulator's
  // backend carries one the same way).
  void set_mutation(mem::Mutation m) { mutation_ = m; }
  [[nodiscard]] mem::Mutation mutation() const { return mutation_; }

  template <class T>
  [[nodiscard]] T load(const T* p) const {
    return *p;
  }
  template <class T>
  void store(T* p, T v) {
    tick();
    auto line = line_of(p);
    auto& h = history_[line];
    if (h.versions.empty()) h.versions.push_back(snapshot(line));  // the durable starting value
    *p = v;
    h.versions.push_back(snapshot(line));
  }
  void flush(const void* p) {
    tick();
    auto it = history_.find(line_of(p));
    if (it != history_.end()) pending_.push_back({it->first, it->second.versions.size() - 1});
  }
  void fence() {
    tick();
    ++fences_;
    for (auto [line, v] : pending_) history_[line].durable = std::max(history_[line].durable, v);
    pending_.clear();
  }
  void persist(const void* p, std::size_t len) {
    const auto first = line_of(p), end = reinterpret_cast<std::uintptr_t>(p) + len;
    for (auto a = first; a < end; a += kCacheLineBytes) flush(reinterpret_cast<const void*>(a));
    fence();
  }
  void region_begin(mem::RegionId) {}
  void region_end(mem::RegionId) {}
  template <class Fn>
  void parallel_for(std::size_t begin, std::size_t end, Fn&& fn) {
    std::vector<std::size_t> order(end - begin);
    std::iota(order.begin(), order.end(), begin);
    if (shuffle_) std::shuffle(order.begin(), order.end(), rng_);
    for (auto i : order) fn(i);
  }
  [[nodiscard]] int threads() const { return threads_; }

  // Rewrites memory as NVM holds it after the cut and starts a fresh history from there.
  // `latest_bias`: chance a line holds its newest version; otherwise it holds a uniformly
  // random version no older than its durable one.
  void apply_crash(double latest_bias = 0.3) {
    std::bernoulli_distribution latest(latest_bias);
    for (auto& [line, h] : history_) {
      std::size_t pick = h.versions.size() - 1;
      if (!latest(rng_)) pick = std::uniform_int_distribution<std::size_t>(h.durable, pick)(rng_);
      std::memcpy(reinterpret_cast<void*>(line), h.versions[pick].data(), kCacheLineBytes);
    }
    forget();
  }
  // Worst case: every line reverts to its last durable version.
  void apply_crash_durable_only() {
    for (auto& [line, h] : history_)
      std::memcpy(reinterpret_cast<void*>(line), h.versions[h.durable].data(), kCacheLineBytes);
    forget();
  }
  // Forgets the history (the current memory becomes the durable state), e.g. after setup.
  void forget() {
    history_.clear();
    pending_.clear();
    crash_at_ = 0;
  }

 private:
  using Line = std::array<unsigned char, kCacheLineBytes>;
  struct History {
    std::vector<Line> versions;
    std::size_t durable = 0;
  };
  void tick() {
    if (crash_at_ != 0 && ops_ + 1 >= crash_at_) throw Crash();
    ++ops_;
  }
  static std::uintptr_t line_of(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{kCacheLineBytes} - 1);
  }
  static Line snapshot(std::uintptr_t line) {
    Line l;
    std::memcpy(l.data(), reinterpret_cast<const void*>(line), kCacheLineBytes);
    return l;
  }

  std::mt19937_64 rng_;
  int threads_;
  bool shuffle_;
  std::unordered_map<std::uintptr_t, History> history_;
  std::vector<std::pair<std::uintptr_t, std::size_t>> pending_;
  std::uint64_t ops_ = 0, fences_ = 0, crash_at_ = 0;
  mem::Mutation mutation_ = mem::Mutation::kNone;
};

static_assert(mem::Backend<CrashBackend>);

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Zeroed, 64-byte aligned heap memory standing in for a pool array.
template <class T>
std::unique_ptr<T[], FreeDeleter> zeroed(std::size_t count) {
  const std::size_t bytes = round_up(std::max<std::size_t>(count * sizeof(T), 64), 64);
  void* p = std::aligned_alloc(64, bytes);
  std::memset(p, 0, bytes);
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(p));
}

}  // namespace pmlab::scheme_test
