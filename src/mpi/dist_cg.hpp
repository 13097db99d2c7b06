// Conjugate gradient distributed by row blocks: the rank's rows of A, b and the state vectors;
// p gathered whole and the dot products' block partials gathered from every rank each
// iteration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm.hpp"
#include "pmlab/kernels/cg.hpp"
#include "pmlab/kernels/iterative.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::dist::cg {

namespace cgk = kernels::cg;

// The rank's rows are whole blocks of bs rows (see dist_jacobi.hpp: the partial sums are the
// single-process run's). State = [ z | r | p (the rank's rows each) | rho, ||z||², alpha, beta ].
struct Operands : kernels::iterative::State {
  const double* vals = nullptr;         // rows r0..r1 of A (ELLPACK, w per row)
  const std::uint64_t* cols = nullptr;  // their global column indices
  const double* b = nullptr;
  double* q = nullptr;
  std::size_t n = 0, w = 1, bs = 1;
  std::size_t r0 = 0, r1 = 0;
  std::vector<std::size_t> blocks_of, rows_of;  // per rank (the gathers' counts)
  const Comm* comm = nullptr;
  std::shared_ptr<std::vector<double>> p_all;  // n: p gathered (volatile)

  [[nodiscard]] std::size_t rows() const { return r1 - r0; }
  [[nodiscard]] std::size_t blocks() const { return (rows() + bs - 1) / bs; }
  [[nodiscard]] std::size_t first_row(std::size_t k) const { return k * bs; }
  [[nodiscard]] std::size_t end_row(std::size_t k) const { return std::min(rows(), (k + 1) * bs); }
  [[nodiscard]] std::size_t total_blocks() const { return (n + bs - 1) / bs; }
};

inline Operands shape(std::size_t n, std::size_t w, std::size_t bs, std::size_t iterations,
                      int ranks, int r) {
  Operands op;
  op.n = n;
  op.w = w;
  op.bs = bs;
  const std::size_t nb = (n + bs - 1) / bs;
  const Share s = share_of(nb, ranks, r);
  op.r0 = s.begin * bs;
  op.r1 = std::min(n, s.end * bs);
  for (int q = 0; q < ranks; ++q) {
    const Share sq = share_of(nb, ranks, q);
    op.blocks_of.push_back(sq.end - sq.begin);
    op.rows_of.push_back(std::min(n, sq.end * bs) - sq.begin * bs);
  }
  op.elements = 3 * op.rows() + cgk::kScalars;
  op.iterations = iterations;
  op.vectors = 3;
  op.vector_elements = op.rows();
  op.region_elements = bs;
  op.updates = scheme::IpvUpdates::kUniform;
  return op;
}

// The rank's rows of the single-process matrix and right-hand side (generated whole, then cut:
// one formula, so the same bits).
inline void fill_inputs(double* vals, std::uint64_t* cols, double* b, const Operands& op,
                        std::uint64_t seed) {
  std::vector<double> all_vals(op.n * op.w), all_b(op.n);
  std::vector<std::uint64_t> all_cols(op.n * op.w);
  cgk::make_matrix(all_vals.data(), all_cols.data(), op.n, op.w, seed);
  cgk::make_rhs(all_b.data(), op.n, seed);
  std::copy_n(all_vals.begin() + op.r0 * op.w, op.rows() * op.w, vals);
  std::copy_n(all_cols.begin() + op.r0 * op.w, op.rows() * op.w, cols);
  std::copy_n(all_b.begin() + op.r0, op.rows(), b);
}

// Sums every rank's block partials in global block order (the single-process bits, for any
// number of ranks); `step` checks that every rank is at the same iteration.
inline double global_sum(const Operands& op, const std::vector<double>& mine, std::uint64_t step) {
  return op.comm->ordered_block_sum(mine, op.blocks_of, step);
}

template <mem::Backend B>
void initial_state(B& be, const Operands& op) {
  const std::size_t m = op.rows();
  double* const s = op.s;
  std::vector<double> part(op.blocks());
  be.parallel_for(0, op.blocks(), [&](std::size_t k) {
    double acc = 0.0;
    for (std::size_t i = op.first_row(k); i < op.end_row(k); ++i) {
      const double bi = be.load(op.b + i);
      be.store(s + i, 0.0);
      be.store(s + m + i, bi);
      be.store(s + 2 * m + i, bi);
      acc += bi * bi;
    }
    part[k] = acc;
  });
  be.store(s + 3 * m, global_sum(op, part, UINT64_MAX));  // before iteration 0
  for (std::size_t e = 1; e < cgk::kScalars; ++e) be.store(s + 3 * m + e, 0.0);
}

// cg::iterate on the rank's rows, with p gathered before the SpMV (read from `in` before any
// rank stores into its `out`) and each dot product summed over every rank's blocks.
template <mem::Backend B, class Hook, class Fold = kernels::iterative::NoFold>
void iterate(B& be, const Operands& op, std::size_t t, const double* in, double* out,
             Hook&& before_first_write, Fold&& fold = Fold{}) {
  const std::size_t m = op.rows(), w = op.w, nb = op.blocks();
  const double *z_in = in, *r_in = in + m, *p_in = in + 2 * m;
  double *z_out = out, *r_out = out + m, *p_out = out + 2 * m;
  const double rho = be.load(in + 3 * m);
  std::vector<double>& p_all = *op.p_all;
  op.comm->allgather({p_in, m}, op.rows_of, p_all);
  std::vector<double> part(nb), part2(nb);
  be.parallel_for(0, nb, [&](std::size_t k) {
    double pq = 0.0;
    for (std::size_t i = op.first_row(k); i < op.end_row(k); ++i) {
      double s = 0.0;
      for (std::size_t e = 0; e < w; ++e)
        s += be.load(op.vals + i * w + e) * p_all[be.load(op.cols + i * w + e)];
      be.store(op.q + i, s);
      pq += be.load(p_in + i) * s;
    }
    part[k] = pq;
  });
  const double pq = global_sum(op, part, t);
  const double alpha = pq != 0.0 ? rho / pq : 0.0;
  before_first_write();
  be.parallel_for(0, nb, [&](std::size_t k) {
    double rr = 0.0, zz = 0.0;
    auto fz = fold.local(op.region_of(0, k));
    auto fr = fold.local(op.region_of(1, k));
    for (std::size_t i = op.first_row(k); i < op.end_row(k); ++i) {
      const double pi = be.load(p_in + i);
      const double z = be.load(z_in + i) + alpha * pi;
      be.store(z_out + i, z);
      fz.add(z);
      const double r = be.load(r_in + i) - alpha * be.load(op.q + i);
      be.store(r_out + i, r);
      fr.add(r);
      const double ri = be.load(r_out + i), zi = be.load(z_out + i);
      rr += ri * ri;
      zz += zi * zi;
    }
    fold.put(op.region_of(0, k), fz);
    fold.put(op.region_of(1, k), fr);
    part[k] = rr;
    part2[k] = zz;
  });
  const double rho_new = global_sum(op, part, t), znorm = global_sum(op, part2, t);
  const double beta = rho != 0.0 ? rho_new / rho : 0.0;
  be.parallel_for(0, nb, [&](std::size_t k) {
    auto fp = fold.local(op.region_of(2, k));
    for (std::size_t i = op.first_row(k); i < op.end_row(k); ++i) {
      const double p = be.load(r_out + i) + beta * be.load(p_in + i);
      be.store(p_out + i, p);
      fp.add(p);
    }
    fold.put(op.region_of(2, k), fp);
  });
  auto ft = fold.local(op.tail_region());
  for (const double v : {rho_new, znorm, alpha, beta}) ft.add(v);
  be.store(out + 3 * m, rho_new);
  be.store(out + 3 * m + 1, znorm);
  be.store(out + 3 * m + 2, alpha);
  be.store(out + 3 * m + 3, beta);
  fold.put(op.tail_region(), ft);
}

}  // namespace pmlab::dist::cg
