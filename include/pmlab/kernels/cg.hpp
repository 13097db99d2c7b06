// Conjugate gradient shaped like the NAS CG main loop (NPB's cgit): the state z, r, p, rho
// rewritten each iteration on a generated sparse SPD matrix; every scheme via iterative.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/iterative.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::kernels::cg {

inline constexpr std::size_t kDefaultNonzeros = 7;     // NPB class S: nonzer = 7
inline constexpr std::size_t kDefaultIterations = 15;  // NPB: niter = 15 (classes S, W, A)
inline constexpr std::size_t kScalars = 4;             // rho, ||z||², alpha, beta

// Entries per row: odd (a centred band), at most n (0 = the default, narrowed on tiny n).
[[nodiscard]] inline std::size_t entries_for(std::uint64_t given, std::size_t n) {
  const std::size_t w = given != 0 ? given : kDefaultNonzeros;
  return given != 0 ? w : std::min(w, n % 2 == 1 ? n : n - 1);
}

// The matrix, in ELLPACK form (w entries per row): a symmetric band with wrap-around, row i
// holding columns (i + o) mod n for o = -h..h (h = w / 2; distinct because n >= w). The entry of
// the pair {i, j} is -(0.25 + 0.75 |x|) / w with x an input value of that pair, so A is
// symmetric; the diagonal is 1 + the sum of the row's off-diagonal magnitudes, so A is strictly
// diagonally dominant with a positive diagonal, hence positive definite. A documented stand-in
// for NPB's makea (docs/seed002.md): the same access shape (SpMV with indexed loads), a
// different sparsity pattern.
inline void make_matrix(double* vals, std::uint64_t* cols, std::size_t n, std::size_t w,
                        std::uint64_t seed) {
  const std::size_t h = w / 2;
  for (std::size_t i = 0; i < n; ++i) {
    double off = 0.0;
    for (std::size_t e = 0; e < w; ++e) {
      const std::size_t j = (i + n + e - h) % n;
      cols[i * w + e] = static_cast<std::uint64_t>(j);
      if (e == h) continue;
      const std::size_t lo = std::min(i, j), hi = std::max(i, j);
      const double v =
          -(0.25 + 0.75 * std::fabs(input_value(seed, 3, lo * n + hi))) / static_cast<double>(w);
      vals[i * w + e] = v;
      off += std::fabs(v);
    }
    vals[i * w + h] = 1.0 + off;
  }
}

// The right-hand side (NPB's x = 1, perturbed so that no two runs of different seeds agree).
inline void make_rhs(double* b, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < n; ++i) b[i] = 1.0 + 0.5 * input_value(seed, 4, i);
}

// State = [ z (n) | r (n) | p (n) | rho, ||z||², alpha, beta ]. q = A·p is a temporary, fully
// rewritten before it is read in each iteration, so it is not part of the state. Table 2 rules:
// p basic (read once, before its update), r and z post-update (read again after their update,
// by rho = r·r and ||z||²). LP regions: bs rows of one vector.
struct Operands : iterative::State {
  const double* vals = nullptr;
  const std::uint64_t* cols = nullptr;
  const double* b = nullptr;
  double* q = nullptr;
  std::size_t n = 0, w = 1, bs = 1;

  [[nodiscard]] std::size_t blocks() const { return (n + bs - 1) / bs; }
  [[nodiscard]] std::size_t first_row(std::size_t k) const { return k * bs; }
  [[nodiscard]] std::size_t end_row(std::size_t k) const { return std::min(n, (k + 1) * bs); }
  [[nodiscard]] static constexpr std::size_t state_elements(std::size_t n) {
    return 3 * n + kScalars;
  }
};

// Sets the iterative::State part from the sizes (the pointers are the caller's).
inline void set_shape(Operands& op, std::size_t iterations) {
  op.elements = Operands::state_elements(op.n);
  op.iterations = iterations;
  op.vectors = 3;  // z, r, p; then the scalars
  op.vector_elements = op.n;
  op.region_elements = op.bs;
  op.updates = scheme::IpvUpdates::kUniform;
}

// z = 0, r = b, p = b, rho = b·b (NPB's conj_grad start).
template <mem::Backend B>
void initial_state(B& be, const Operands& op) {
  const std::size_t n = op.n;
  double* const s = op.s;
  std::vector<double> part(op.blocks());
  be.parallel_for(0, op.blocks(), [&](std::size_t k) {
    double acc = 0.0;
    for (std::size_t i = op.first_row(k); i < op.end_row(k); ++i) {
      const double bi = be.load(op.b + i);
      be.store(s + i, 0.0);
      be.store(s + n + i, bi);
      be.store(s + 2 * n + i, bi);
      acc += bi * bi;
    }
    part[k] = acc;
  });
  be.store(s + 3 * n, iterative::ordered_sum(part));
  for (std::size_t e = 1; e < kScalars; ++e) be.store(s + 3 * n + e, 0.0);
}

// A cg problem in heap memory, inputs generated and the state initialized: `verify`'s fault-free
// reference and the tests' fixture. The operands point into its own arrays, so it is neither
// copied nor moved.
struct HeapProblem {
  std::vector<double> vals, b, q, s;
  std::vector<std::uint64_t> cols;
  Operands op;

  HeapProblem(const Operands& shape, std::uint64_t seed)
      : vals(shape.n * shape.w),
        b(shape.n),
        q(shape.n),
        s(shape.elements),
        cols(shape.n * shape.w),
        op(shape) {
    make_matrix(vals.data(), cols.data(), op.n, op.w, seed);
    make_rhs(b.data(), op.n, seed);
    op.vals = vals.data();
    op.cols = cols.data();
    op.b = b.data();
    op.q = q.data();
    op.s = s.data();
    mem::PlainBackend be({}, 1);
    initial_state(be, op);
  }
  HeapProblem(const HeapProblem&) = delete;
  HeapProblem& operator=(const HeapProblem&) = delete;
};

// One CG iteration: q = A·p, alpha = rho / (p·q), z += alpha·p, r -= alpha·q, rho' = r·r,
// beta = rho' / rho, p = r + beta·p. The SpMV and p·q come before the first store into `out`,
// so the IPV helper's flush of the last iteration overlaps them.
template <mem::Backend B, class Hook, class Fold = iterative::NoFold>
void iterate(B& be, const Operands& op, std::size_t, const double* in, double* out,
             Hook&& before_first_write, Fold&& fold = Fold{}) {
  const std::size_t n = op.n, w = op.w, nb = op.blocks();
  const double *z_in = in, *r_in = in + n, *p_in = in + 2 * n;
  double *z_out = out, *r_out = out + n, *p_out = out + 2 * n;
  const double rho = be.load(in + 3 * n);
  std::vector<double> part(nb), part2(nb);
  be.parallel_for(0, nb, [&](std::size_t k) {
    double pq = 0.0;
    for (std::size_t i = op.first_row(k); i < op.end_row(k); ++i) {
      double s = 0.0;
      for (std::size_t e = 0; e < w; ++e)
        s += be.load(op.vals + i * w + e) * be.load(p_in + be.load(op.cols + i * w + e));
      be.store(op.q + i, s);
      pq += be.load(p_in + i) * s;
    }
    part[k] = pq;
  });
  const double pq = iterative::ordered_sum(part);
  const double alpha = pq != 0.0 ? rho / pq : 0.0;  // p = 0 once converged exactly (tiny n)
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
      const double ri = be.load(r_out + i), zi = be.load(z_out + i);  // post-update reads
      rr += ri * ri;
      zz += zi * zi;
    }
    fold.put(op.region_of(0, k), fz);
    fold.put(op.region_of(1, k), fr);
    part[k] = rr;
    part2[k] = zz;
  });
  const double rho_new = iterative::ordered_sum(part), znorm = iterative::ordered_sum(part2);
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
  be.store(out + 3 * n, rho_new);
  be.store(out + 3 * n + 1, znorm);
  be.store(out + 3 * n + 2, alpha);
  be.store(out + 3 * n + 3, beta);
  fold.put(op.tail_region(), ft);
}

}  // namespace pmlab::kernels::cg
