// Right-looking tiled LU without pivoting: base, LP per (step, tile), versioned-tile recovery.
#pragma once

#include <algorithm>
#include <bit>
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

namespace pmlab::kernels::lu {

// The schemes of tiled_factorization.hpp are this kernel's API (ch::run_lp, lu::run_wal, ...).
using namespace tiled;

// No pivoting, so the input must not need any: strictly diagonally dominant by rows and by
// columns (off-diagonal in [-1, 1), diagonal n + u, u in [0, 1)), for which LU without
// pivoting exists and is stable.
inline void fill_input(double* a, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      a[i * n + j] = i == j ? static_cast<double>(n) + 0.5 * (input_value(seed, 1, i) + 1.0)
                            : input_value(seed, 0, i * n + j);
}

// A (read-only input) and W (in place: A at first, L and U packed at the end, L's unit
// diagonal implicit). Tile (i, j) undergoes ops 0..m, m = min(i, j): op q < m is the update at
// step q (W_ij -= L_iq·U_qj), op m the factorization at step m (GETRF on the diagonal, the
// triangular solve for U_mj in block row m, for L_im in block column m).
struct Operands : tiled::InPlaceTiles<Operands> {
  mem::MatrixView<const double> a;
  mem::MatrixView<double> w;
  tiled::Tiling tiling;

  Operands() = default;
  Operands(mem::MatrixView<const double> a_, mem::MatrixView<double> w_, tiled::Tiling t)
      : a(a_), w(w_), tiling(t) {}

  [[nodiscard]] std::size_t n() const { return tiling.n; }
  [[nodiscard]] std::size_t tiles() const { return tiling.tiles(); }
  [[nodiscard]] mem::MatrixView<double> work() const { return w; }
  // Steps >= s write only the trailing matrix from row and column s·bs on: a checkpoint
  // copies just that.
  template <class Fn>
  void step_segments(std::size_t from, Fn&& fn) const {
    const std::size_t c0 = std::min(n(), from * tiling.bs);
    for (std::size_t r = c0; r < n(); ++r) fn(r * w.ld() + c0, n() - c0);
  }
  // A hybrid band: tile row u, whole rows.
  template <class Fn>
  void tile_row_band(std::size_t u, Fn&& fn) const {
    fn(tiling.begin(u) * w.ld(), tiling.len(u) * w.ld());
  }
  // Slots keyed by (step q, tile (i, j)) with q <= min(i, j): step q touches the trailing
  // (T-q)² tiles; sum of squares T(T+1)(2T+1)/6 in all.
  [[nodiscard]] static std::size_t squares(std::size_t m) { return m * (m + 1) * (2 * m + 1) / 6; }
  [[nodiscard]] std::size_t table_slots() const { return squares(tiles()); }
  // Every column of a tile's row belongs to it (LU's tiles are full squares, edges short).
  [[nodiscard]] std::size_t row_cols(Tile t, std::size_t /*r*/) const { return tiling.len(t.j); }
  [[nodiscard]] std::size_t slot(std::size_t q, Tile t) const {
    const std::size_t rest = tiles() - q;
    return squares(tiles()) - squares(rest) + (t.i - q) * rest + (t.j - q);
  }

  // --- the interface of tiled::recover_tiled ---
  [[nodiscard]] std::vector<Tile> group(std::size_t m) const {
    std::vector<Tile> g{{m, m}};
    for (std::size_t j = m + 1; j < tiles(); ++j) g.push_back({m, j});
    for (std::size_t i = m + 1; i < tiles(); ++i) g.push_back({i, m});
    return g;
  }
  template <mem::Backend B, class OnStored>
  void apply(B& be, Tile t, std::size_t q, OnStored&& on_stored) const;
};

// Unblocked Doolittle LU of diagonal tile k, in a scratch copy so that every element is stored
// exactly once, in canonical (row-major) order.
template <mem::Backend B>
[[gnu::noinline]] lp::StoredBlock getrf(B& be, const Operands& op, std::size_t k) {
  const std::size_t k0 = op.tiling.begin(k), m = op.tiling.len(k);
  std::vector<double> s(m * m);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t c = 0; c < m; ++c) s[r * m + c] = be.load(op.w.at(k0 + r, k0 + c));
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t c = 0; c < m; ++c) {
      double x = s[r * m + c];
      for (std::size_t p = 0; p < std::min(r, c); ++p) x -= s[r * m + p] * s[p * m + c];
      s[r * m + c] = c >= r ? x : x / s[c * m + c];
    }
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t c = 0; c < m; ++c) be.store(op.w.at(k0 + r, k0 + c), s[r * m + c]);
  return lp::StoredBlock{op.w.at(k0, k0), m, m, op.w.ld()};
}

// U_kj = L_kk^-1 · A_kj (unit lower forward substitution, reading back earlier rows of U_kj).
template <mem::Backend B>
[[gnu::noinline]] lp::StoredBlock trsm_row(B& be, const Operands& op, std::size_t k,
                                           std::size_t j) {
  const std::size_t k0 = op.tiling.begin(k), j0 = op.tiling.begin(j);
  const std::size_t mk = op.tiling.len(k), mj = op.tiling.len(j);
  for (std::size_t r = 0; r < mk; ++r) {
    const double* lkk = op.w.at(k0 + r, k0);
    for (std::size_t c = 0; c < mj; ++c) {
      double x = be.load(op.w.at(k0 + r, j0 + c));
      for (std::size_t p = 0; p < r; ++p) x -= be.load(lkk + p) * be.load(op.w.at(k0 + p, j0 + c));
      be.store(op.w.at(k0 + r, j0 + c), x);
    }
  }
  return lp::StoredBlock{op.w.at(k0, j0), mk, mj, op.w.ld()};
}

// L_ik = A_ik · U_kk^-1 (per row, reading back the row's earlier results).
template <mem::Backend B>
[[gnu::noinline]] lp::StoredBlock trsm_col(B& be, const Operands& op, std::size_t i,
                                           std::size_t k) {
  const std::size_t i0 = op.tiling.begin(i), k0 = op.tiling.begin(k);
  const std::size_t mi = op.tiling.len(i), mk = op.tiling.len(k);
  for (std::size_t r = 0; r < mi; ++r) {
    double* row = op.w.at(i0 + r, k0);
    for (std::size_t c = 0; c < mk; ++c) {
      double x = be.load(row + c);
      for (std::size_t p = 0; p < c; ++p) x -= be.load(row + p) * be.load(op.w.at(k0 + p, k0 + c));
      x /= be.load(op.w.at(k0 + c, k0 + c));
      be.store(row + c, x);
    }
  }
  return lp::StoredBlock{op.w.at(i0, k0), mi, mk, op.w.ld()};
}

// W_ij -= L_ik · U_kj.
template <mem::Backend B>
[[gnu::noinline]] lp::StoredBlock update(B& be, const Operands& op, Tile t, std::size_t k) {
  const std::size_t i0 = op.tiling.begin(t.i), j0 = op.tiling.begin(t.j), k0 = op.tiling.begin(k);
  const std::size_t mk = op.tiling.len(k), mj = op.tiling.len(t.j);
  for (std::size_t r = 0; r < op.tiling.len(t.i); ++r) {
    const double* lik = op.w.at(i0 + r, k0);
    for (std::size_t c = 0; c < mj; ++c) {
      double x = be.load(op.w.at(i0 + r, j0 + c));
      for (std::size_t p = 0; p < mk; ++p) x -= be.load(lik + p) * be.load(op.w.at(k0 + p, j0 + c));
      be.store(op.w.at(i0 + r, j0 + c), x);
    }
  }
  return lp::StoredBlock{op.w.at(i0, j0), op.tiling.len(t.i), mj, op.w.ld()};
}

// Each tile op is out of line, knows nothing of the scheme and returns the block it stored, which
// goes to `on_stored` here: base and LP run the very same machine code for every op and differ
// only by the fold (as conv2d's conv_row; each scheme compiling its own copy of the loops made
// the two differ in time beyond the fold's instructions: docs/lp-native-cost.md).
template <mem::Backend B, class OnStored>
void Operands::apply(B& be, Tile t, std::size_t q, OnStored&& on_stored) const {
  if (q < std::min(t.i, t.j))
    on_stored(update(be, *this, t, q));
  else if (t.i == t.j)
    on_stored(getrf(be, *this, q));
  else if (t.i == q)
    on_stored(trsm_row(be, *this, q, t.j));
  else
    on_stored(trsm_col(be, *this, t.i, q));
}

// Step k: GETRF(k,k); then block row and block column k in parallel; then the trailing updates.
template <mem::Backend B, class Exec>
void run_step(B& be, const Operands& op, std::size_t k, Exec&& exec) {
  const std::size_t m = op.tiles() - k - 1;
  be.parallel_for(0, 1, [&](std::size_t) { exec(Tile{k, k}); });
  be.parallel_for(0, 2 * m, [&](std::size_t x) {
    exec(x < m ? Tile{k, k + 1 + x} : Tile{k + 1 + (x - m), k});
  });
  be.parallel_for(0, m * m, [&](std::size_t x) { exec(Tile{k + 1 + x / m, k + 1 + x % m}); });
  mem::outer_step_done(be);  // every scheme's step k goes through here, recovery's never
}

// base's "recovery": W back to A, durably; restart from step 0.
template <mem::Backend B>
void restart(B& be, const Operands& op) {
  const std::size_t nt = op.tiles();
  be.parallel_for(0, nt * nt, [&](std::size_t x) {
    op.restore_input(be, Tile{x / nt, x % nt});
    op.persist_tile(be, Tile{x / nt, x % nt});
  });
}

}  // namespace pmlab::kernels::lu
