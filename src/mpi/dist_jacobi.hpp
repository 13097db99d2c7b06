// Damped 2-D Jacobi distributed by row bands: the rank's band of u plus one halo row above and
// below, exchanged every iteration; the residual norm gathered from every rank's block partials.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm.hpp"
#include "pmlab/kernels/iterative.hpp"
#include "pmlab/kernels/jacobi.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::dist::jacobi {

namespace jk = kernels::jacobi;

// The rank's share: whole blocks of bs rows, so that each block's partial sums are the
// single-process run's and the norm (summed over all blocks in block order on every rank) has
// its bits, for any number of ranks. State = [ u rows r0..r1 | ||res||², iterations done ].
struct Operands : kernels::iterative::State {
  const double* f = nullptr;  // rows r0..r1 of f
  double* res = nullptr;      // rows r0..r1 of the residual (a temporary)
  std::size_t n = 0, bs = 1;
  std::size_t r0 = 0, r1 = 0;          // global rows of the band
  std::size_t block0 = 0;              // global index of the band's first block
  std::vector<std::size_t> blocks_of;  // blocks per rank (the gathers' counts)
  std::uint64_t seed = 0;
  const Comm* comm = nullptr;
  std::shared_ptr<std::vector<double>> halo;  // 2n: the rows above and below (volatile)

  [[nodiscard]] std::size_t rows() const { return r1 - r0; }
  [[nodiscard]] std::size_t blocks() const { return (rows() + bs - 1) / bs; }
  [[nodiscard]] std::size_t first_row(std::size_t k) const { return k * bs; }  // local
  [[nodiscard]] std::size_t end_row(std::size_t k) const { return std::min(rows(), (k + 1) * bs); }
  [[nodiscard]] std::size_t total_blocks() const { return (n + bs - 1) / bs; }
};

// Shape of rank r of `ranks` (no arrays).
inline Operands shape(std::size_t n, std::size_t bs, std::size_t iterations, std::uint64_t seed,
                      int ranks, int r) {
  Operands op;
  op.n = n;
  op.bs = bs;
  op.seed = seed;
  const std::size_t nb = (n + bs - 1) / bs;
  const Share s = share_of(nb, ranks, r);
  op.block0 = s.begin;
  op.r0 = s.begin * bs;
  op.r1 = std::min(n, s.end * bs);
  for (int q = 0; q < ranks; ++q) {
    const Share sq = share_of(nb, ranks, q);
    op.blocks_of.push_back(sq.end - sq.begin);
  }
  op.elements = op.rows() * n + jk::kScalars;
  op.iterations = iterations;
  op.vectors = 1;
  op.vector_elements = op.rows() * n;
  op.region_elements = bs * n;
  op.updates = scheme::IpvUpdates::kUniform;
  return op;
}

inline void fill_inputs(double* f, const Operands& op) {
  for (std::size_t i = 0; i < op.rows() * op.n; ++i)
    f[i] = kernels::input_value(op.seed, 5, op.r0 * op.n + i);
}

template <mem::Backend B>
void initial_state(B& be, const Operands& op) {
  const std::size_t cells = op.rows() * op.n;
  be.parallel_for(0, op.blocks(), [&](std::size_t k) {
    for (std::size_t i = op.first_row(k) * op.n; i < op.end_row(k) * op.n; ++i)
      be.store(op.s + i, jk::u0_value(op.seed, op.r0 * op.n + i));
  });
  for (std::size_t e = 0; e < jk::kScalars; ++e) be.store(op.s + cells + e, 0.0);
}

// Sums every rank's block partials in global block order (the single-process bits, for any
// number of ranks); `step` checks that every rank is at the same iteration.
inline double global_sum(const Operands& op, const std::vector<double>& mine, std::uint64_t step) {
  return op.comm->ordered_block_sum(mine, op.blocks_of, step);
}

// jacobi::iterate on the band: the halo rows come first (read from `in` before any rank stores
// into its `out`), then the residual and the update with the single-process expressions in
// global coordinates, then the norm over every rank's blocks.
template <mem::Backend B, class Hook, class Fold = kernels::iterative::NoFold>
void iterate(B& be, const Operands& op, std::size_t t, const double* in, double* out,
             Hook&& before_first_write, Fold&& fold = Fold{}) {
  const std::size_t n = op.n, m = op.rows(), nb = op.blocks();
  double* above = op.halo->data();
  double* below = above + n;
  op.comm->exchange_rows(in, in + (m - 1) * n, above, below, n);
  // Row i (global) of `in`, from the band or the halo.
  const auto row = [&](std::size_t i) -> const double* {
    if (i < op.r0) return above;
    if (i >= op.r1) return below;
    return in + (i - op.r0) * n;
  };
  be.parallel_for(0, nb, [&](std::size_t k) {
    for (std::size_t li = op.first_row(k); li < op.end_row(k); ++li) {
      const std::size_t i = op.r0 + li;
      const double* c = row(i);
      const double* north = i > 0 ? row(i - 1) : nullptr;
      const double* south = i + 1 < n ? row(i + 1) : nullptr;
      for (std::size_t j = 0; j < n; ++j) {
        double lu = 4.0 * be.load(c + j);
        if (i > 0) lu -= be.load(north + j);
        if (i + 1 < n) lu -= be.load(south + j);
        if (j > 0) lu -= be.load(c + j - 1);
        if (j + 1 < n) lu -= be.load(c + j + 1);
        be.store(op.res + li * n + j, be.load(op.f + li * n + j) - lu);
      }
    }
  });
  before_first_write();
  std::vector<double> part(nb);
  be.parallel_for(0, nb, [&](std::size_t k) {
    double rr = 0.0;
    auto fu = fold.local(op.region_of(0, k));
    for (std::size_t li = op.first_row(k); li < op.end_row(k); ++li)
      for (std::size_t j = 0; j < n; ++j) {
        const double r = be.load(op.res + li * n + j);
        rr += r * r;
        const double u = be.load(in + li * n + j) + jk::kOmega4 * r;
        be.store(out + li * n + j, u);
        fu.add(u);
      }
    fold.put(op.region_of(0, k), fu);
    part[k] = rr;
  });
  const double norm = global_sum(op, part, t), done = static_cast<double>(t + 1);
  be.store(out + m * n, norm);
  be.store(out + m * n + 1, done);
  auto ft = fold.local(op.tail_region());
  ft.add(norm);
  ft.add(done);
  fold.put(op.tail_region(), ft);
}

}  // namespace pmlab::dist::jacobi
