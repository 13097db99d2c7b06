// Building blocks of the pointer-based BEP benchmarks (rbtree, sdg): index-based 512 B nodes,
// a write-deferring accessor that yields a transaction's write set, per-thread arenas.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "pmlab/bep/entry.hpp"

namespace pmlab::bep {

// "No node": indices, never pointers, so a pool may be mapped anywhere and a crash image is
// position-independent.
inline constexpr std::uint64_t kNil = ~std::uint64_t{0};

// What the algorithms need from memory: a backend (b.load/b.store), Deferred, or Direct.
template <class A>
concept WordAccess = requires(A& a, const std::uint64_t* cp, std::uint64_t* p) {
  { a.load(cp) } -> std::same_as<std::uint64_t>;
  a.store(p, std::uint64_t{0});
};

// Plain memory, for checkers that read a (durable) image outside any backend.
struct Direct {
  [[nodiscard]] std::uint64_t load(const std::uint64_t* p) const { return *p; }
  void store(std::uint64_t* p, std::uint64_t v) const { *p = v; }
};

// Buffers an operation's stores in volatile memory (loads see them) so that its whole write set
// is known before any of it reaches persistent memory: the undo log's first epoch must hold the
// old contents of every line the update will touch, and a tree rebalance only knows which
// lines those are once it has run. `apply` then performs the buffered stores through the
// backend. Fixed capacity, so an operation allocates nothing; kCapacity bounds a red-black
// insert/erase on a tree of height <= 64 (about 2h words recoloured + 3 rotations) with room.
template <class B>
class Deferred {
 public:
  static constexpr std::size_t kCapacity = 512;

  explicit Deferred(B& b) : b_(b) {}

  [[nodiscard]] std::uint64_t load(const std::uint64_t* p) {
    for (std::size_t i = 0; i < n_; ++i)
      if (w_[i].p == p) return w_[i].v;
    return b_.load(p);
  }
  void store(std::uint64_t* p, std::uint64_t v) {
    for (std::size_t i = 0; i < n_; ++i)
      if (w_[i].p == p) {
        w_[i].v = v;
        return;
      }
    if (n_ == kCapacity)
      throw std::logic_error("bep::Deferred: write set exceeds its fixed capacity");
    w_[n_++] = {p, v};
  }
  [[nodiscard]] std::size_t size() const { return n_; }
  [[nodiscard]] bool empty() const { return n_ == 0; }
  void clear() { n_ = 0; }

  // The distinct 64 B lines written, in first-store order, into `out` (returns how many).
  std::size_t lines(std::span<const std::uint64_t*> out) const {
    std::size_t m = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      const auto* l = line_of(w_[i].p);
      bool seen = false;
      for (std::size_t j = 0; j < m && !seen; ++j) seen = out[j] == l;
      if (seen) continue;
      if (m == out.size())
        throw std::logic_error("bep::Deferred: more lines than the caller's span");
      out[m++] = l;
    }
    return m;
  }
  // Performs the buffered stores, in program order, through `to` (a backend or a wrapper).
  template <class To>
  void apply(To& to) const {
    for (std::size_t i = 0; i < n_; ++i) to.store(w_[i].p, w_[i].v);
  }

  static const std::uint64_t* line_of(const std::uint64_t* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<const std::uint64_t*>(a - a % (kLineWords * sizeof(std::uint64_t)));
  }

 private:
  struct Write {  // no initializers: the buffer is not zeroed for every operation
    std::uint64_t* p;
    std::uint64_t v;
  };
  B& b_;
  std::array<Write, kCapacity> w_;
  std::size_t n_ = 0;
};

// Per-thread volatile free lists over a node array split into equal contiguous arenas. Nothing
// about allocation is persistent: after a crash (and the undo of half-done transactions) the
// free nodes are exactly the unreachable ones, so `rebuild` recomputes them, as NV-Heaps does.
// Each free list has its arena's capacity reserved, so alloc/free never allocate.
class Arenas {
 public:
  Arenas() = default;
  Arenas(std::uint64_t capacity, int threads)
      : per_(capacity / static_cast<std::uint64_t>(threads)), free_(threads) {
    for (auto& f : free_) f.reserve(per_);
  }
  [[nodiscard]] std::uint64_t per_thread() const { return per_; }
  [[nodiscard]] int owner(std::uint64_t node) const { return static_cast<int>(node / per_); }
  // reachable[i] != 0 for every node in use; every other node of an arena becomes free.
  void rebuild(std::span<const std::uint8_t> reachable) {
    for (std::size_t t = 0; t < free_.size(); ++t) {
      free_[t].clear();
      // Highest index first, so that allocation hands out low indices first.
      for (std::uint64_t i = per_; i-- > 0;)
        if (reachable[t * per_ + i] == 0) free_[t].push_back(t * per_ + i);
    }
  }
  [[nodiscard]] std::uint64_t alloc(int t) {
    auto& f = free_[static_cast<std::size_t>(t)];
    if (f.empty())
      throw std::logic_error(
          "bep::Arenas: thread's arena exhausted (key range too "
          "large for its arena)");
    const std::uint64_t n = f.back();
    f.pop_back();
    return n;
  }
  void free(int t, std::uint64_t node) { free_[static_cast<std::size_t>(t)].push_back(node); }
  [[nodiscard]] std::size_t free_count(int t) const {
    return free_[static_cast<std::size_t>(t)].size();
  }

 private:
  std::uint64_t per_ = 0;
  std::vector<std::vector<std::uint64_t>> free_;
};

enum class OpKind : std::uint8_t { kInsert, kErase, kSearch };

struct Op {
  OpKind kind = OpKind::kSearch;
  std::uint64_t key = 0;  // in the thread's own range [0, range)
};

// Op j of thread t (1/3 insert, 1/3 delete, 1/3 search, key uniform in the thread's range; spec
// §3.6): a function of (seed, t, j) only, never of the structure's state, so an op replayed
// after a crash is the same op and the logical content after any prefix can be replayed.
[[nodiscard]] inline Op op_of(std::uint64_t seed, std::uint64_t thread, std::uint64_t j,
                              std::uint64_t range) {
  const std::uint64_t r = op_random(seed, thread, j);
  return {static_cast<OpKind>((r >> 32) % 3), (r & 0xffffffffull) % range};
}

// The keys thread t holds after its first `done` operations: its range starts with every even
// local key (the initial fill) and each insert/erase sets/clears its key. Thread t's keys are
// t * range + k, so threads never share a key and the set is independent of the interleaving.
[[nodiscard]] inline std::vector<std::uint64_t> replay(std::uint64_t seed, std::uint64_t thread,
                                                       std::uint64_t range, std::uint64_t done) {
  if (range == 0) return {};
  std::vector<std::uint8_t> present(range, 0);
  for (std::uint64_t k = 0; k < range; k += 2) present[k] = 1;
  for (std::uint64_t j = 0; j < done; ++j) {
    const Op op = op_of(seed, static_cast<std::uint64_t>(thread), j, range);
    if (op.kind != OpKind::kSearch) present[op.key] = op.kind == OpKind::kInsert ? 1 : 0;
  }
  std::vector<std::uint64_t> keys;
  const std::uint64_t base = thread * range;
  for (std::uint64_t k = 0; k < range; ++k)
    if (present[k] != 0) keys.push_back(base + k);
  return keys;
}

}  // namespace pmlab::bep
