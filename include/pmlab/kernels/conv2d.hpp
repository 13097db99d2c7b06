// Out-of-place 2D convolution: base, LP per row block, recovery of independent regions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/lp/region.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/matrix.hpp"
#include "pmlab/scheme/eager_region.hpp"
#include "pmlab/scheme/index_record.hpp"

namespace pmlab::kernels::conv2d {

inline constexpr std::size_t kDefaultWidth = 5;

// Width for the run parameter `width`: 0 (absent) means the default, 5, narrowed to the largest odd
// width <= n on tiny inputs; anything else is taken as given (the driver rejects even or too wide
// kernels).
[[nodiscard]] inline std::size_t width_for(std::uint64_t extra, std::size_t n) {
  if (extra != 0) return extra;
  return std::min(kDefaultWidth, n % 2 == 1 ? n : n - 1);
}

// Input image (n x n) and kernel (w x w), both in [-1, 1).
inline void fill_input(double* in, std::size_t n, double* ker, std::size_t w, std::uint64_t seed) {
  for (std::size_t i = 0; i < n * n; ++i) in[i] = input_value(seed, 0, i);
  for (std::size_t i = 0; i < w * w; ++i) ker[i] = input_value(seed, 1, i);
}

// out[i][j] = sum over p, q of ker[p][q] · in[i + r - p][j + r - q] (r = w/2: the kernel is
// flipped, i.e. a true convolution), terms outside the image skipped (zero padding), p then q
// ascending, starting from 0.0. Region = one block of bs output rows, written once: regions are
// independent (they read only the read-only inputs), so they are associative.
struct Operands {
  mem::MatrixView<const double> in;
  const double* ker = nullptr;
  std::size_t width = 1;
  mem::MatrixView<double> out;
  std::size_t n = 0, bs = 1;

  [[nodiscard]] std::size_t blocks() const { return (n + bs - 1) / bs; }
  [[nodiscard]] std::size_t first_row(std::size_t b) const { return b * bs; }
  [[nodiscard]] std::size_t end_row(std::size_t b) const { return std::min(n, b * bs + bs); }
  [[nodiscard]] std::size_t table_slots() const { return blocks(); }
};

namespace detail {

// Output row i for a kernel of width W (0: op.width, known only at run time). Every output
// element is the same sequence of loads, multiplications and additions whatever W is; a
// compile-time W lets the compiler unroll the w x w window of interior elements completely, so
// the hot loop no longer depends on how a 5-iteration runtime loop happens to be vectorised and
// laid out (which had made base and LP, the same loop, differ by 20-30% in time:
// docs/lp-native-cost.md). Out of line and independent of the scheme's hook, so that base and LP
// run this one function, byte for byte: when each scheme instantiated its own copy inside
// conv_block, the two copies compiled slightly differently (LP -0.21% instructions,
// yet +2.6% time on every code layout).
template <std::size_t W, mem::Backend B>
[[gnu::noinline]] void conv_row(B& be, const Operands& op, std::size_t i) {
  const std::size_t n = op.n, w = W != 0 ? W : op.width, r = w / 2;
  const double* const ker = op.ker;
  const double* const in = op.in.data();
  double* const out = op.out.data();
  const std::size_t ldi = op.in.ld(), ldo = op.out.ld();
  // p with 0 <= i + r - p < n, q likewise for j.
  const std::size_t p0 = i + r >= n ? i + r - (n - 1) : 0, p1 = std::min(w, i + r + 1);
  const bool all_p = p0 == 0 && p1 == w;
  const auto element = [&](std::size_t j) {
    const std::size_t q0 = j + r >= n ? j + r - (n - 1) : 0, q1 = std::min(w, j + r + 1);
    double s = 0.0;
    bool interior = false;
    if constexpr (W != 0) {
      interior = all_p && q0 == 0 && q1 == W;
      if (interior)  // the whole window, unrolled
        for (std::size_t p = 0; p < W; ++p) {
          const double* irow = in + (i + r - p) * ldi;
          for (std::size_t q = 0; q < W; ++q)
            s += be.load(ker + p * W + q) * be.load(irow + (j + r - q));
        }
    }
    if (!interior) {
      for (std::size_t p = p0; p < p1; ++p) {
        const double* irow = in + (i + r - p) * ldi;
        for (std::size_t q = q0; q < q1; ++q)
          s += be.load(ker + p * w + q) * be.load(irow + (j + r - q));
      }
    }
    be.store(out + i * ldo + j, s);
  };
  for (std::size_t j = 0; j < n; ++j) element(j);
}

// Output rows of block b, each reported to `on_stored` once finished.
template <std::size_t W, mem::Backend B, class OnStored>
void conv_rows(B& be, const Operands& op, std::size_t b, OnStored& on_stored) {
  double* const out = op.out.data();
  const std::size_t ldo = op.out.ld();
  for (std::size_t i = op.first_row(b); i < op.end_row(b); ++i) {
    conv_row<W>(be, op, i);
    on_stored(lp::StoredBlock{out + i * ldo, 1, op.n, ldo});
  }
}

}  // namespace detail

// Computes output rows of block b and reports each finished row to `on_stored` (the protocol of
// lp::kIgnoreStored): LP folds it from L1 there, so base and LP run the same element loop. Folding
// each value as it was stored made the two loops differ and cost LP +5.3% on every code layout
// (docs/lp-native-cost.md).
template <mem::Backend B, class OnStored>
[[gnu::noinline]] void conv_block(B& be, const Operands& op, std::size_t b, OnStored&& on_stored) {
  if (op.width == kDefaultWidth)
    detail::conv_rows<kDefaultWidth>(be, op, b, on_stored);
  else
    detail::conv_rows<0>(be, op, b, on_stored);
}

template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] lp::ChecksumValue block_checksum(B& be, const Operands& op, std::size_t b) {
  lp::Accumulator<K> acc;
  for (std::size_t i = op.first_row(b); i < op.end_row(b); ++i)
    for (std::size_t j = 0; j < op.n; ++j) acc.add(be.load(op.out.at(i, j)));
  return acc.value();
}

template <mem::Backend B>
void run_base(B& be, const Operands& op) {
  be.parallel_for(0, op.blocks(), [&](std::size_t b) {
    conv_block(be, op, b, lp::kIgnoreStored);
    mem::outer_step_done(be);  // a block is conv2d's outer unit
  });
}

// LP: each row block is a region; its checksum goes to slot b with plain stores. The outer
// iteration counts blocks done, 0 or all of them (the blocks run in one parallel loop): `first`
// = blocks() means "already complete".
template <lp::ChecksumKind K, mem::Backend B>
void run_lp(B& be, const Operands& op, const lp::ChecksumTable& table, std::size_t first = 0) {
  if (first >= op.blocks()) return;
  be.parallel_for(0, op.blocks(), [&](std::size_t b) {
    lp::Region<K, B> region(be, table, b, {0, static_cast<std::uint32_t>(b)});
    // Each finished output row is folded from L1 (conv_block): folding each value as it was
    // stored, with one chain or with lanes, measured slower (docs/lp-native-cost.md).
    conv_block(be, op, b, lp::fold_stored_into(region));
    region.commit();
    mem::outer_step_done(be);
  });
}

// Recovery: every block whose slot does not match its data — written or not — is recomputed
// from the inputs, persisted, and its slot committed durably, in parallel. The convolution is
// then complete (normal execution has nothing left to do): returns blocks().
template <lp::ChecksumKind K, mem::Backend B>
std::size_t recover_lp(B& be, const Operands& op, const lp::ChecksumTable& table,
                       lp::RecoveryStats& stats) {
  std::vector<lp::RecoveryStats> per(op.blocks());
  be.parallel_for(0, op.blocks(), [&](std::size_t b) {
    lp::RecoveryStats& s = per[b];
    if (table.written(be, b)) {
      ++s.regions_validated;
      if (table.check(be, b, block_checksum<K>(be, op, b)) == lp::SlotCheck::kMatch) return;
      ++s.regions_inconsistent;
    } else {
      ++s.regions_unwritten;
    }
    lp::Accumulator<K> acc;
    conv_block(be, op, b, lp::fold_stored_into(acc));
    const std::size_t r0 = op.first_row(b);
    be.persist(op.out.row(r0), (op.end_row(b) - r0) * op.out.ld() * sizeof(double));
    table.commit_durable(be, b, acc.value());
    ++s.regions_recomputed;
  });
  for (const auto& s : per) stats += s;
  return op.blocks();
}

// EagerRecompute: a block's rows are flushed, then its record set to 1 durably (one 64-byte
// record per block). Blocks are written once from read-only inputs, so recomputing one is
// idempotent: no in-flight mark is needed.
template <mem::Backend B>
void persist_block(B& be, const Operands& op, std::size_t b) {
  const std::size_t r0 = op.first_row(b);
  be.persist(op.out.row(r0), (op.end_row(b) - r0) * op.out.ld() * sizeof(double));
}

template <mem::Backend B>
void ep_block(B& be, const Operands& op, const scheme::IndexRecordTable<1>& rec, std::size_t b) {
  // Out of place: recomputing a torn block is harmless, so no in-flight mark.
  scheme::eager_region(
      be, mem::RegionId{0, static_cast<std::uint32_t>(b)}, rec[b], {.done = 1},
      [&] { conv_block(be, op, b, lp::kIgnoreStored); }, [&] { persist_block(be, op, b); });
}

// One index record per row block.
[[nodiscard]] inline std::size_t ep_records(const Operands& op) {
  return op.blocks();
}

template <mem::Backend B>
void run_ep(B& be, const Operands& op, const scheme::IndexRecordTable<1>& rec,
            std::size_t first = 0) {
  if (first >= op.blocks()) return;
  be.parallel_for(0, op.blocks(), [&](std::size_t b) {
    ep_block(be, op, rec, b);
    mem::outer_step_done(be);
  });
}

// Recomputes the blocks not recorded as done; the convolution is then complete: returns
// blocks().
template <mem::Backend B>
std::size_t recover_ep(B& be, const Operands& op, const scheme::IndexRecordTable<1>& rec,
                       lp::RecoveryStats& stats) {
  std::vector<lp::RecoveryStats> per(op.blocks());
  be.parallel_for(0, op.blocks(), [&](std::size_t b) {
    ++per[b].regions_validated;
    if (rec[b].get(be, 0) != 0) return;
    ep_block(be, op, rec, b);
    ++per[b].regions_recomputed;
  });
  for (const auto& s : per) stats += s;
  return op.blocks();
}

}  // namespace pmlab::kernels::conv2d
