// Gaussian elimination of [A | b] to upper-triangular form: base, LP, recovery.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/matrix.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/scheme/eager_region.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/lines.hpp"

namespace pmlab::kernels::gauss {

// [A | b], n x (n+1), row-major. No pivoting, so A is strictly diagonally dominant by rows and
// columns (off-diagonal in [-1, 1), diagonal n + u, u in [0, 1)); b in [-1, 1).
inline void fill_input(double* a, std::size_t n, std::uint64_t seed) {
  const std::size_t ld = n + 1;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j)
      a[i * ld + j] = i == j ? static_cast<double>(n) + 0.5 * (input_value(seed, 1, i) + 1.0)
                             : input_value(seed, 0, i * n + j);
    a[i * ld + n] = input_value(seed, 2, i);
  }
}

// Step k (k = 0 .. n-2) eliminates column k below the diagonal: for every row i > k,
// m = w[i][k] / w[k][k]; w[i][k] = 0; w[i][j] -= m·w[k][j] for k < j <= n. Row i is final after
// step i-1. Region (k, b) = step k on the rows of block b below row k. Its stores, except the
// zero, go into two checksums: slot R(k+1) takes row k+1 (final from now on: columns > k), slot
// S(k, b) the rows > k+1 of the block (columns > k: exactly what step k+1 reads and rewrites).
// The zeros below the diagonal are constants; recovery checks them directly.
struct Operands {
  mem::MatrixView<const double> a;  // [A | b] input, read-only
  mem::MatrixView<double> w;        // in place: [A | b] at first, [U | y] at the end
  std::size_t n = 0, bs = 1;

  [[nodiscard]] std::size_t cols() const { return n + 1; }
  [[nodiscard]] std::size_t blocks() const { return (n + bs - 1) / bs; }
  [[nodiscard]] std::size_t first_row(std::size_t b) const { return b * bs; }
  [[nodiscard]] std::size_t end_row(std::size_t b) const { return std::min(n, b * bs + bs); }
  // Steps 0 .. end_row-2 touch block b: its number of states after the input.
  [[nodiscard]] std::size_t max_version(std::size_t b) const { return end_row(b) - 1; }
  [[nodiscard]] std::size_t steps() const { return n - 1; }
  [[nodiscard]] std::size_t live_slot(std::size_t k, std::size_t b) const {
    return k * blocks() + b;
  }
  [[nodiscard]] std::size_t row_slot(std::size_t i) const { return steps() * blocks() + (i - 1); }
  [[nodiscard]] std::size_t table_slots() const {
    return std::max<std::size_t>(1, steps() * blocks() + steps());
  }
};

// Elements [begin, end) of one row into `sink`: an lp::Accumulator folds them in its lanes
// (add_each); any other sink (base's and the rivals' do-nothing callables) gets the same loop
// shape, unrolled by the accumulator's four lanes, so base stays LP's loop minus the checksum
// (with base's plain loop, LP measured 7.7% faster than base: docs/lp-native-cost.md).
template <class Sink, class Body>
void fold_row(Sink& sink, std::size_t begin, std::size_t end, Body&& body) {
  if constexpr (requires { sink.add_each(begin, end, body); }) {
    sink.add_each(begin, end, body);
  } else {
    const std::size_t groups = end > begin ? (end - begin) / 4 : 0;  // as add_each's
    std::size_t j = begin;
#pragma GCC unroll 4
    for (std::size_t g = 0; g < groups; ++g, j += 4)
      for (std::size_t l = 0; l < 4; ++l) sink(body(j + l));
    for (; j < end; ++j) sink(body(j));
  }
}

namespace detail {

template <mem::Backend B, class Sink>
void eliminate_row_here(B& be, double* row, const double* pivot, double m, std::size_t begin,
                        std::size_t end, Sink& sink) {
  const auto element = [&](std::size_t j) {
    const double x = be.load(row + j) - m * be.load(pivot + j);
    be.store(row + j, x);
    return x;
  };
  fold_row(sink, begin, end, element);
}

// The native backend's copy, cloned for AVX2 (function multiversioning: the clone is chosen
// when the program loads). Why: with SSE2's two doubles per register the loop spent its vector
// ports on twice the instructions; AVX2 runs base's loop 2-3 times as fast at n = 512-1024
// (docs/lp-native-cost.md, "gauss's row loop cloned for AVX2"). Target "avx2" does not enable FMA, so every clone
// rounds m·pivot[j] and the subtraction separately: the bits are the default clone's and the
// simulator's.
// Clang (the fuzz build) does not multiversion function templates: it gets the one loop.
#if defined(__clang__)
#define PMLAB_GAUSS_ROW_CLONES gnu::noinline
#else
#define PMLAB_GAUSS_ROW_CLONES gnu::noinline, gnu::target_clones("avx2", "default")
#endif
template <mem::Backend B, class Sink>
[[PMLAB_GAUSS_ROW_CLONES]] void eliminate_row_cloned(B& be, double* row, const double* pivot,
                                                     double m, std::size_t begin, std::size_t end,
                                                     Sink& sink) {
  eliminate_row_here(be, row, pivot, m, begin, end, sink);
}
#undef PMLAB_GAUSS_ROW_CLONES

}  // namespace detail

// Row `row` of a step from column `begin` to `end`: row[j] -= m·pivot[j], each stored value into
// `sink` (fold_row). Base and every scheme run this one loop; natively it is out of line, so
// base's and LP's code differ only by the fold (docs/lp-native-cost.md).
template <mem::Backend B, class Sink>
void eliminate_row(B& be, double* row, const double* pivot, double m, std::size_t begin,
                   std::size_t end, Sink& sink) {
  if constexpr (mem::kIsNativeBackend<B>)
    detail::eliminate_row_cloned(be, row, pivot, m, begin, end, sink);
  else
    detail::eliminate_row_here(be, row, pivot, m, begin, end, sink);
}

// Step k on block b. `on_final` folds row k+1's stored values, `on_live` those of the rows below
// it (zeros excluded), each in store order: an lp::Accumulator, or a callable taking a double
// (fold_row). The choice between the two is made once per row, outside the element loop,
// so that loop is base's loop plus the fold (docs/lp-native-cost.md).
template <mem::Backend B, class OnFinal, class OnLive>
void eliminate_block(B& be, const Operands& op, std::size_t k, std::size_t b, OnFinal&& on_final,
                     OnLive&& on_live) {
  const std::size_t ld = op.cols();
  double* const w = op.w.data();
  const double* const pivot = w + k * ld;
  const double d = be.load(pivot + k);
  for (std::size_t i = std::max(k + 1, op.first_row(b)); i < op.end_row(b); ++i) {
    double* row = w + i * ld;
    const double m = be.load(row + k) / d;
    be.store(row + k, 0.0);
    if (i == k + 1)
      eliminate_row(be, row, pivot, m, k + 1, ld, on_final);
    else
      eliminate_row(be, row, pivot, m, k + 1, ld, on_live);
  }
}

// Blocks with rows below row k.
[[nodiscard]] inline std::size_t first_block_of_step(const Operands& op, std::size_t k) {
  return (k + 1) / op.bs;
}

template <mem::Backend B>
void run_base(B& be, const Operands& op, std::size_t first_k = 0) {
  for (std::size_t k = first_k; k + 1 < op.n; ++k) {
    be.parallel_for(first_block_of_step(op, k), op.blocks(), [&](std::size_t b) {
      eliminate_block(
          be, op, k, b, [](double) {}, [](double) {});
    });
    mem::outer_step_done(be);
  }
}

// One LP region: two thread-private checksums, committed with plain stores (no flush, no fence).
template <lp::ChecksumKind K, mem::Backend B>
void lp_region(B& be, const Operands& op, const lp::ChecksumTable& table, std::size_t k,
               std::size_t b) {
  const mem::RegionId id{static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(b)};
  // The commits' slots arrive while the block is eliminated (ChecksumTable::prefetch).
  const bool commits_row = k + 1 >= op.first_row(b), commits_live = k + 2 < op.end_row(b);
  if (commits_row) table.prefetch(op.row_slot(k + 1));
  if (commits_live) table.prefetch(op.live_slot(k, b));
  be.region_begin(id);
  lp::Accumulator<K> fin, live;
  eliminate_block(be, op, k, b, fin, live);
  if (commits_row) table.commit(be, op.row_slot(k + 1), fin.value());
  if (commits_live) table.commit(be, op.live_slot(k, b), live.value());
  be.region_end(id);
}

template <lp::ChecksumKind K, mem::Backend B>
void run_lp(B& be, const Operands& op, const lp::ChecksumTable& table, std::size_t first_k = 0) {
  for (std::size_t k = first_k; k + 1 < op.n; ++k) {
    be.parallel_for(first_block_of_step(op, k), op.blocks(),
                    [&](std::size_t b) { lp_region<K>(be, op, table, k, b); });
    mem::outer_step_done(be);
  }
}

// Checksum of rows [r0, r1), columns [c0, n] in row-major order.
template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] lp::ChecksumValue rows_checksum(B& be, const Operands& op, std::size_t r0,
                                              std::size_t r1, std::size_t c0) {
  lp::Accumulator<K> acc;
  for (std::size_t i = r0; i < r1; ++i)
    for (std::size_t j = c0; j < op.cols(); ++j) acc.add(be.load(op.w.at(i, j)));
  return acc.value();
}

namespace detail {

struct BlockState {
  std::size_t version = 0;  // steps applied
  bool lost = false;        // matches no state: restore from the input
  lp::ChecksumValue live{};
  lp::RecoveryStats stats;
};

template <mem::Backend B>
bool block_equals_input(B& be, const Operands& op, std::size_t b) {
  for (std::size_t i = op.first_row(b); i < op.end_row(b); ++i)
    for (std::size_t j = 0; j < op.cols(); ++j)
      if (std::bit_cast<std::uint64_t>(be.load(op.w.at(i, j))) !=
          std::bit_cast<std::uint64_t>(be.load(op.a.at(i, j))))
        return false;
  return true;
}

// Block b is in state v (v >= 1) when its rows 1..v hold their final values (slots R) and its
// rows > v hold, in columns >= v, their values after step v-1 (slot S(v-1, b)); the columns left
// of that are the zeros, checked separately. Newest candidate first; candidates are limited by
// the first row whose final checksum fails.
template <lp::ChecksumKind K, mem::Backend B>
void find_version(B& be, const Operands& op, const lp::ChecksumTable& table, std::size_t b,
                  BlockState& s) {
  const std::size_t r0 = op.first_row(b), r1 = op.end_row(b), vmax = op.max_version(b);
  std::size_t cap = vmax;
  for (std::size_t i = std::max<std::size_t>(1, r0); i <= vmax; ++i) {
    const auto verdict = table.check(be, op.row_slot(i), rows_checksum<K>(be, op, i, i + 1, i));
    if (verdict == lp::SlotCheck::kMatch) {
      ++s.stats.regions_validated;
      continue;
    }
    if (verdict == lp::SlotCheck::kUnwritten) {
      ++s.stats.regions_unwritten;
    } else {
      ++s.stats.regions_validated;
      ++s.stats.regions_inconsistent;
    }
    cap = i - 1;
    break;
  }
  for (std::size_t v = cap; v >= 1; --v) {
    if (v == vmax) {  // every row of the block final, all of them matched
      s.version = v;
      return;
    }
    const std::size_t slot = op.live_slot(v - 1, b);
    if (!table.written(be, slot)) {
      ++s.stats.regions_unwritten;
      continue;
    }
    ++s.stats.regions_validated;
    if (table.check(be, slot, rows_checksum<K>(be, op, std::max(v + 1, r0), r1, v)) ==
        lp::SlotCheck::kMatch) {
      s.version = v;
      return;
    }
    ++s.stats.regions_inconsistent;
  }
  s.version = 0;
  s.lost = !block_equals_input(be, op, b);
}

// Rows of block b must hold exact zeros left of min(row, steps applied).
template <mem::Backend B>
void fix_zeros(B& be, const Operands& op, std::size_t b, std::size_t version) {
  for (std::size_t i = op.first_row(b); i < op.end_row(b); ++i) {
    double* row = op.w.row(i);
    const std::size_t z = std::min(i, version);
    bool fixed = false;
    for (std::size_t j = 0; j < z; ++j)
      if (std::bit_cast<std::uint64_t>(be.load(row + j)) != 0) {
        be.store(row + j, 0.0);
        fixed = true;
      }
    if (fixed) scheme::flush_lines(be, row, z * sizeof(double));
  }
  be.fence();
}

}  // namespace detail

// Recovery skeleton: Tracker::find names every block's state (steps applied, or lost),
// execution resumes at step K = the newest state of any block, and the blocks behind are brought
// to min(K, their last state) step by step, in parallel over blocks (step q of any block reads
// only pivot row q, final by then: its block was brought past q at an earlier q, or was already).
// Tracker hooks: find, begin (before a block's repair), step (apply step q with bookkeeping),
// finish (after a block's repair), settle (every block, at the end). Returns K.
template <mem::Backend B, class Tracker>
[[nodiscard]] std::size_t recover_blocks(B& be, const Operands& op, const Tracker& tracker,
                                         lp::RecoveryStats& stats) {
  const std::size_t nb = op.blocks();
  std::vector<detail::BlockState> st(nb);
  be.parallel_for(0, nb, [&](std::size_t b) { tracker.find(be, b, st[b]); });
  std::size_t resume = 0;
  for (const auto& s : st) resume = std::max(resume, s.version);
  std::size_t oldest = resume;
  for (const auto& s : st) oldest = std::min(oldest, s.version);
  auto target = [&](std::size_t b) { return std::min(resume, op.max_version(b)); };
  auto behind = [&](std::size_t b) { return st[b].lost || st[b].version < target(b); };
  be.parallel_for(0, nb, [&](std::size_t b) {
    if (!behind(b)) return;
    tracker.begin(be, b, st[b]);
    if (!st[b].lost) return;
    for (std::size_t i = op.first_row(b); i < op.end_row(b); ++i)
      for (std::size_t j = 0; j < op.cols(); ++j) be.store(op.w.at(i, j), be.load(op.a.at(i, j)));
  });
  for (std::size_t q = oldest; q < resume; ++q) {
    be.parallel_for(first_block_of_step(op, q), nb, [&](std::size_t b) {
      if (q < st[b].version || q >= target(b)) return;
      tracker.step(be, q, b, st[b]);
      ++st[b].stats.regions_recomputed;
    });
  }
  be.parallel_for(0, nb, [&](std::size_t b) {
    if (behind(b)) tracker.finish(be, b, st[b], target(b));
    tracker.settle(be, b, target(b));
  });
  for (const auto& s : st) stats += s.stats;
  return resume;
}

// LP bookkeeping (detail::find_version). A row made final by a repair is persisted and its slot
// R committed durably at once; a repaired block's rows and slot S at the end; zeros last.
template <lp::ChecksumKind K>
struct LpBlockTracker {
  const Operands& op;
  const lp::ChecksumTable& table;

  template <mem::Backend B>
  void find(B& be, std::size_t b, detail::BlockState& s) const {
    detail::find_version<K>(be, op, table, b, s);
  }
  template <mem::Backend B>
  void begin(B&, std::size_t, detail::BlockState&) const {}
  template <mem::Backend B>
  void step(B& be, std::size_t q, std::size_t b, detail::BlockState& s) const {
    lp::Accumulator<K> fin, live;
    eliminate_block(be, op, q, b, fin, live);
    s.live = live.value();
    if (q + 1 >= op.first_row(b)) {  // row q+1 is final: durable now, then its slot
      be.persist(op.w.row(q + 1), op.cols() * sizeof(double));
      table.commit_durable(be, op.row_slot(q + 1), fin.value());
    }
  }
  template <mem::Backend B>
  void finish(B& be, std::size_t b, const detail::BlockState& s, std::size_t t) const {
    const std::size_t r0 = op.first_row(b);
    be.persist(op.w.row(r0), (op.end_row(b) - r0) * op.cols() * sizeof(double));
    if (t >= 1 && t + 1 < op.end_row(b)) table.commit_durable(be, op.live_slot(t - 1, b), s.live);
  }
  template <mem::Backend B>
  void settle(B& be, std::size_t b, std::size_t t) const {
    detail::fix_zeros(be, op, b, t);
  }
};

// LP recovery (recover_blocks with LpBlockTracker); returns the step where execution resumes.
template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] std::size_t recover_lp(B& be, const Operands& op, const lp::ChecksumTable& table,
                                     lp::RecoveryStats& stats) {
  return recover_blocks(be, op, LpBlockTracker<K>{op, table}, stats);
}

// EagerRecompute: region (k, b) marks block b's record "in flight" durably, eliminates, flushes
// the block's rows, then records k+1 steps durably. Elimination is in place and not idempotent,
// so a block found in flight may be torn and is recomputed from the input.
[[nodiscard]] constexpr std::uint64_t ep_word(std::size_t steps, bool in_flight) {
  return (static_cast<std::uint64_t>(steps) << 1) | (in_flight ? 1u : 0u);
}

template <mem::Backend B>
void persist_block(B& be, const Operands& op, std::size_t b) {
  const std::size_t r0 = op.first_row(b);
  be.persist(op.w.row(r0), (op.end_row(b) - r0) * op.cols() * sizeof(double));
}

// One index record per row block.
[[nodiscard]] inline std::size_t ep_records(const Operands& op) {
  return op.blocks();
}

// Region (k, b): in flight, eliminate, flush the changed columns, record k + 1.
template <mem::Backend B>
void ep_region(B& be, const Operands& op, const scheme::IndexRecordTable<1>& rec, std::size_t k,
               std::size_t b) {
  const mem::RegionId id{static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(b)};
  scheme::eager_region(
      be, id, rec[b], {.in_flight = ep_word(k, true), .done = ep_word(k + 1, false)},
      [&] {
        eliminate_block(
            be, op, k, b, [](double) {}, [](double) {});
      },
      [&] {  // only columns >= k of the rows below k changed
        for (std::size_t i = std::max(k + 1, op.first_row(b)); i < op.end_row(b); ++i)
          scheme::flush_lines(be, op.w.at(i, k), (op.cols() - k) * sizeof(double));
        be.fence();
      });
}

template <mem::Backend B>
void run_ep(B& be, const Operands& op, const scheme::IndexRecordTable<1>& rec,
            std::size_t first_k = 0) {
  for (std::size_t k = first_k; k + 1 < op.n; ++k) {
    be.parallel_for(first_block_of_step(op, k), op.blocks(),
                    [&](std::size_t b) { ep_region(be, op, rec, k, b); });
    mem::outer_step_done(be);
  }
}

struct EpBlockTracker {
  const Operands& op;
  const scheme::IndexRecordTable<1>& rec;

  template <mem::Backend B>
  void find(B& be, std::size_t b, detail::BlockState& s) const {
    const std::uint64_t w = rec[b].get(be, 0);
    ++s.stats.regions_validated;
    s.lost = (w & 1u) != 0;
    s.version = s.lost ? 0 : static_cast<std::size_t>(w >> 1);
    if (s.lost) ++s.stats.regions_inconsistent;
  }
  template <mem::Backend B>
  void begin(B& be, std::size_t b, const detail::BlockState& s) const {
    rec[b].set(be, 0, ep_word(s.version, true));
  }
  template <mem::Backend B>
  void step(B& be, std::size_t q, std::size_t b, detail::BlockState&) const {
    eliminate_block(
        be, op, q, b, [](double) {}, [](double) {});
  }
  template <mem::Backend B>
  void finish(B& be, std::size_t b, const detail::BlockState&, std::size_t t) const {
    persist_block(be, op, b);
    rec[b].set(be, 0, ep_word(t, false));
  }
  template <mem::Backend B>
  void settle(B&, std::size_t, std::size_t) const {}  // zeros were flushed with their rows
};

template <mem::Backend B>
[[nodiscard]] std::size_t recover_ep(B& be, const Operands& op,
                                     const scheme::IndexRecordTable<1>& rec,
                                     lp::RecoveryStats& stats) {
  return recover_blocks(be, op, EpBlockTracker{op, rec}, stats);
}

// base's "recovery": W back to [A | b], durably; restart from step 0.
template <mem::Backend B>
void restart(B& be, const Operands& op) {
  be.parallel_for(0, op.blocks(), [&](std::size_t b) {
    for (std::size_t i = op.first_row(b); i < op.end_row(b); ++i)
      for (std::size_t j = 0; j < op.cols(); ++j) be.store(op.w.at(i, j), be.load(op.a.at(i, j)));
    persist_block(be, op, b);
  });
}

}  // namespace pmlab::kernels::gauss
