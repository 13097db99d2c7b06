// SPS (seed Table 2): random swaps of two 512 B entries of an array, each swap one transaction.
//
// pmlab's choices (the seed gives only the entry size and the op): thread t swaps within its own
// slice [t·n/T, (t+1)·n/T) of the array, so the final array is deterministic and equals the
// replay on ids; op j of thread t swaps the two entries op_random(seed, t, j) picks. Entry i
// starts as fill_entry(i, 0, i): its id is word 0 and its payload and checksum follow from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/entry.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/progress.hpp"
#include "pmlab/bep/tx.hpp"

namespace pmlab::bep::sps {

struct Shape {
  std::size_t n = 0;        // entries
  std::size_t threads = 1;  // T
  std::size_t ops = 0;      // swaps per thread
  std::uint64_t seed = 0;
  [[nodiscard]] std::size_t lo(std::size_t t) const { return t * n / threads; }
  [[nodiscard]] std::size_t hi(std::size_t t) const { return (t + 1) * n / threads; }
  // The two entries op j of thread t swaps (equal when the slice has one entry; none if empty).
  [[nodiscard]] std::pair<std::size_t, std::size_t> pick(std::size_t t, std::size_t j) const {
    const std::size_t len = hi(t) - lo(t);
    const std::uint64_t r = op_random(seed, t, j);
    return {lo(t) + (r & 0xffffffffu) % len, lo(t) + (r >> 32) % len};
  }
};

inline void init(Entry* a, const Shape& s) {
  for (std::size_t i = 0; i < s.n; ++i) fill_entry(a[i], i, 0, i);
}

// The swap itself (E3 of the transaction, or the whole op without one).
template <mem::Backend B>
void swap_entries(B& b, Entry& x, Entry& y) {
  for (std::size_t k = 0; k < kEntryWords; ++k) {
    const std::uint64_t vx = b.load(&x.w[k]), vy = b.load(&y.w[k]);
    b.store(&x.w[k], vy);
    b.store(&y.w[k], vx);
  }
}

// Epoch persistency: each swap an undo-log transaction in the thread's log.
template <EpochBackend B>
void run_tx(B& b, Entry* a, TxLog* logs, const Shape& s) {
  auto* heap = reinterpret_cast<std::byte*>(a);
  run_thread_ops(
      b, s.threads, s.ops, [&](std::size_t t) { return tx_done(b, logs[t]); },
      [&](std::size_t t, std::size_t j) {
        Tx<B> tx(b, logs[t], heap);
        if (s.hi(t) > s.lo(t)) {
          const auto [x, y] = s.pick(t, j);
          tx.add(&a[x], sizeof(Entry));
          tx.add(&a[y], sizeof(Entry));
          tx.begin();
          if (x != y) swap_entries(b, a[x], a[y]);
        } else {
          tx.begin();  // an empty slice: the op only counts
        }
        tx.commit();
      });
}

// Rolls back every thread's interrupted swap.
template <EpochBackend B>
std::uint64_t recover_tx(B& b, Entry* a, TxLog* logs, const Shape& s) {
  std::uint64_t undone = 0;
  for (std::size_t t = 0; t < s.threads; ++t)
    undone += tx_recover(b, logs[t], reinterpret_cast<std::byte*>(a)) ? 1 : 0;
  return undone;
}

// No persistency: the swaps alone (the throughput baseline; recovery restarts, see sps_kernel).
template <mem::Backend B>
void run_base(B& b, Entry* a, const Shape& s) {
  b.parallel_for(0, s.threads * s.ops, [&](std::size_t i) {
    const std::size_t t = i / s.ops, j = i % s.ops;
    if (s.hi(t) == s.lo(t)) return;
    const auto [x, y] = s.pick(t, j);
    if (x != y) swap_entries(b, a[x], a[y]);
  });
}

// The ids the array holds after every op (the fault-free replay).
[[nodiscard]] inline std::vector<std::uint64_t> reference_ids(const Shape& s) {
  std::vector<std::uint64_t> id(s.n);
  std::iota(id.begin(), id.end(), std::uint64_t{0});
  for (std::size_t t = 0; t < s.threads; ++t)
    for (std::size_t j = 0; j < s.ops && s.hi(t) > s.lo(t); ++j) {
      const auto [x, y] = s.pick(t, j);
      std::swap(id[x], id[y]);
    }
  return id;
}

struct Check {
  std::uint64_t entries = 0, bad = 0;
  std::string first;
};

// Every entry whole (no torn swap) and the array equal to the replay, hence a permutation of
// the initial multiset.
[[nodiscard]] inline Check check(const Entry* a, const Shape& s) {
  Check c;
  const auto ids = reference_ids(s);
  for (std::size_t i = 0; i < s.n; ++i) {
    ++c.entries;
    std::string why;
    if (!entry_intact(a[i], a[i].w[0]))
      why = "torn entry (checksum or payload)";
    else if (a[i].w[0] != ids[i])
      why = fmt::format("holds id {}, the replay says {}", a[i].w[0], ids[i]);
    if (!why.empty() && c.bad++ == 0) c.first = fmt::format("entry {}: {}", i, why);
  }
  return c;
}

}  // namespace pmlab::bep::sps
