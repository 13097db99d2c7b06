// Right-looking tiled Cholesky: base, LP per (step, tile), versioned-tile recovery.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tiled_factorization.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/matrix.hpp"
#include "pmlab/scheme/lines.hpp"

namespace pmlab::kernels::cholesky {

// The schemes of tiled_factorization.hpp are this kernel's API (ch::run_lp, lu::run_wal, ...).
using namespace tiled;

// Symmetric, strictly diagonally dominant with a positive diagonal, hence SPD (Gershgorin):
// off-diagonal a_ij = a_ji in [-1, 1), a_ii = n + u with u in [0, 1). O(n²) to generate.
inline void fill_input(double* a, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const double v = input_value(seed, 0, i * n + j);
      a[i * n + j] = v;
      a[j * n + i] = v;
    }
    a[i * n + i] = static_cast<double>(n) + 0.5 * (input_value(seed, 1, i) + 1.0);
  }
}

// The working matrix starts as the lower triangle of A (upper triangle zero, never touched).
inline void fill_work(double* l, const double* a, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) l[i * n + j] = j <= i ? a[i * n + j] : 0.0;
}

// A (read-only input) and L (in place: lower(A) at first, the factor at the end).
// Tile (i, j), i >= j, undergoes ops 0..j: op q < j is the update at step q
// (L_ij -= L_iq·L_jqᵀ), op j the factorization at step j (POTRF if i == j, else TRSM).
struct Operands : tiled::InPlaceTiles<Operands> {
  mem::MatrixView<const double> a;
  mem::MatrixView<double> l;
  tiled::Tiling tiling;

  Operands() = default;
  Operands(mem::MatrixView<const double> a_, mem::MatrixView<double> l_, tiled::Tiling t)
      : a(a_), l(l_), tiling(t) {}

  [[nodiscard]] std::size_t n() const { return tiling.n; }
  [[nodiscard]] std::size_t tiles() const { return tiling.tiles(); }
  [[nodiscard]] mem::MatrixView<double> work() const { return l; }
  // Steps >= s write only the lower triangle of the trailing matrix from row and column s·bs
  // on: a checkpoint copies just that (about 1/3 of the lower triangle per step on average).
  template <class Fn>
  void step_segments(std::size_t from, Fn&& fn) const {
    const std::size_t c0 = std::min(n(), from * tiling.bs);
    for (std::size_t r = c0; r < n(); ++r) fn(r * l.ld() + c0, r + 1 - c0);
  }
  // A hybrid band: tile row u's lower triangle.
  template <class Fn>
  void tile_row_band(std::size_t u, Fn&& fn) const {
    const std::size_t r0 = tiling.begin(u);
    for (std::size_t r = r0; r < r0 + tiling.len(u); ++r) fn(r * l.ld(), r + 1);
  }
  // Slots are keyed by (step q, tile (i, j)) with q <= j <= i: sum over q of the lower triangle
  // of the trailing (T-q) x (T-q) tile matrix, i.e. the tetrahedral number T(T+1)(T+2)/6.
  [[nodiscard]] static std::size_t tetra(std::size_t m) { return m * (m + 1) * (m + 2) / 6; }
  [[nodiscard]] std::size_t table_slots() const { return tetra(tiles()); }
  [[nodiscard]] std::size_t slot(std::size_t q, Tile t) const {
    const std::size_t a_ = t.i - q, b_ = t.j - q;
    return tetra(tiles()) - tetra(tiles() - q) + a_ * (a_ + 1) / 2 + b_;
  }
  // Columns of row r (tile-relative) that belong to tile t: the lower triangle on the diagonal.
  [[nodiscard]] std::size_t row_cols(Tile t, std::size_t r) const {
    return t.i == t.j ? r + 1 : tiling.len(t.j);
  }

  // --- the interface of tiled::recover_tiled ---
  [[nodiscard]] std::vector<Tile> group(std::size_t m) const {
    std::vector<Tile> g;
    for (std::size_t i = m; i < tiles(); ++i) g.push_back({i, m});
    return g;
  }
  template <mem::Backend B, class OnStored>
  void apply(B& be, Tile t, std::size_t q, OnStored&& on_stored) const;
};

// Unblocked Cholesky of diagonal tile k (row by row, in a scratch copy so that every element is
// stored exactly once, in canonical order: row-major lower triangle).
template <mem::Backend B>
[[gnu::noinline]] lp::StoredBlock potrf(B& be, const Operands& op, std::size_t k) {
  const std::size_t k0 = op.tiling.begin(k), m = op.tiling.len(k);
  std::vector<double> s(m * m);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t c = 0; c <= r; ++c) s[r * m + c] = be.load(op.l.at(k0 + r, k0 + c));
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t c = 0; c <= r; ++c) {
      double x = s[r * m + c];
      for (std::size_t p = 0; p < c; ++p) x -= s[r * m + p] * s[c * m + p];
      s[r * m + c] = r == c ? std::sqrt(x) : x / s[c * m + c];
    }
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t c = 0; c <= r; ++c) be.store(op.l.at(k0 + r, k0 + c), s[r * m + c]);
  return lp::StoredBlock{op.l.at(k0, k0), m, m, op.l.ld(), true};
}

// L_ik = A_ik · L_kk^-T (forward substitution per row, reading back the row's earlier results).
template <mem::Backend B>
[[gnu::noinline]] lp::StoredBlock trsm(B& be, const Operands& op, std::size_t i, std::size_t k) {
  const std::size_t i0 = op.tiling.begin(i), k0 = op.tiling.begin(k);
  const std::size_t mi = op.tiling.len(i), mk = op.tiling.len(k);
  for (std::size_t r = 0; r < mi; ++r) {
    double* row = op.l.at(i0 + r, k0);
    for (std::size_t c = 0; c < mk; ++c) {
      const double* lkk = op.l.at(k0 + c, k0);
      double x = be.load(row + c);
      for (std::size_t p = 0; p < c; ++p) x -= be.load(row + p) * be.load(lkk + p);
      x /= be.load(lkk + c);
      be.store(row + c, x);
    }
  }
  return lp::StoredBlock{op.l.at(i0, k0), mi, mk, op.l.ld()};
}

// L_ij -= L_ik · L_jkᵀ (lower triangle only when i == j).
template <mem::Backend B>
[[gnu::noinline]] lp::StoredBlock update(B& be, const Operands& op, Tile t, std::size_t k) {
  const std::size_t i0 = op.tiling.begin(t.i), j0 = op.tiling.begin(t.j), k0 = op.tiling.begin(k);
  const std::size_t mk = op.tiling.len(k);
  for (std::size_t r = 0; r < op.tiling.len(t.i); ++r) {
    const double* lik = op.l.at(i0 + r, k0);
    for (std::size_t c = 0; c < op.row_cols(t, r); ++c) {
      const double* ljk = op.l.at(j0 + c, k0);
      double x = be.load(op.l.at(i0 + r, j0 + c));
      for (std::size_t p = 0; p < mk; ++p) x -= be.load(lik + p) * be.load(ljk + p);
      be.store(op.l.at(i0 + r, j0 + c), x);
    }
  }
  return lp::StoredBlock{op.l.at(i0, j0), op.tiling.len(t.i), op.tiling.len(t.j), op.l.ld(),
                         t.i == t.j};
}

// Each tile op is out of line, knows nothing of the scheme and returns the block it stored, which
// goes to `on_stored` here: base and LP run the very same machine code for every op and differ
// only by the fold (as conv2d's conv_row; each scheme compiling its own copy of the loops made
// the two differ in time beyond the fold's instructions: docs/lp-native-cost.md).
template <mem::Backend B, class OnStored>
void Operands::apply(B& be, Tile t, std::size_t q, OnStored&& on_stored) const {
  if (q < t.j)
    on_stored(update(be, *this, t, q));
  else if (t.i == t.j)
    on_stored(potrf(be, *this, q));
  else
    on_stored(trsm(be, *this, t.i, q));
}

// Step k: POTRF(k,k); then TRSM of column k in parallel; then the trailing updates in parallel.
// `exec(tile)` runs op k on the tile (as a plain op or an LP region).
template <mem::Backend B, class Exec>
void run_step(B& be, const Operands& op, std::size_t k, Exec&& exec) {
  const std::size_t nt = op.tiles(), m = nt - k - 1;
  be.parallel_for(0, 1, [&](std::size_t) { exec(Tile{k, k}); });
  be.parallel_for(k + 1, nt, [&](std::size_t i) { exec(Tile{i, k}); });
  be.parallel_for(0, m * (m + 1) / 2, [&](std::size_t x) {
    const auto [a, b] = tiled::tri_unrank(x);
    exec(Tile{k + 1 + a, k + 1 + b});
  });
  mem::outer_step_done(be);  // every scheme's step k goes through here, recovery's never
}

// base's "recovery": the working matrix back to lower(A), durably; restart from step 0.
template <mem::Backend B>
void restart(B& be, const Operands& op) {
  const std::size_t nt = op.tiles();
  be.parallel_for(0, nt * (nt + 1) / 2, [&](std::size_t x) {
    const auto [i, j] = tiled::tri_unrank(x);
    op.restore_input(be, Tile{i, j});
    op.persist_tile(be, Tile{i, j});
  });
}

}  // namespace pmlab::kernels::cholesky
