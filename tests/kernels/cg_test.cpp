// cg: the generated matrix is symmetric positive definite, base equals a direct CG bit for bit,
// CG converges, and in place == out of place == any thread count (the schemes rely on it).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "pmlab/kernels/cg.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::testing {
namespace {

namespace cgk = kernels::cg;

struct CgFixture {
  std::size_t n, w, bs;
  cgk::HeapProblem problem;  // the inputs and the initialized state, as `verify` builds them
  const std::vector<double>& vals = problem.vals;
  const std::vector<double>& b = problem.b;
  std::vector<double>& s = problem.s;
  const std::vector<std::uint64_t>& cols = problem.cols;
  cgk::Operands& op = problem.op;

  CgFixture(std::size_t n_, std::size_t w_, std::size_t bs_, std::size_t iters,
            std::uint64_t seed = 3)
      : n(n_), w(w_), bs(bs_), problem(shape(n_, w_, bs_, iters), seed) {}
  CgFixture(const CgFixture&) = delete;
  CgFixture& operator=(const CgFixture&) = delete;
  static cgk::Operands shape(std::size_t n, std::size_t w, std::size_t bs, std::size_t iters) {
    cgk::Operands op;
    op.n = n;
    op.w = w;
    op.bs = bs;
    cgk::set_shape(op, iters);
    return op;
  }
  [[nodiscard]] double a(std::size_t i, std::size_t j) const {
    for (std::size_t e = 0; e < w; ++e)
      if (cols[i * w + e] == j) return vals[i * w + e];
    return 0.0;
  }
};

TEST(KernelCg, TheMatrixIsSymmetricAndStrictlyDiagonallyDominant) {
  for (auto [n, w] : {std::pair{1, 1}, {7, 7}, {9, 7}, {40, 11}}) {
    CgFixture f(n, w, 4, 1);
    for (std::size_t i = 0; i < f.n; ++i) {
      double off = 0.0;
      for (std::size_t j = 0; j < f.n; ++j) {
        EXPECT_EQ(f.a(i, j), f.a(j, i)) << i << "," << j;
        if (j != i) off += std::fabs(f.a(i, j));
      }
      EXPECT_GT(f.a(i, i), off) << "row " << i;
    }
  }
}

// The textbook CG, written out with the same block-ordered reductions.
std::vector<double> direct_cg(const CgFixture& f, std::size_t iters) {
  const std::size_t n = f.n, nb = (n + f.bs - 1) / f.bs;
  const auto dot = [&](const std::vector<double>& x, const std::vector<double>& y) {
    double total = 0.0;
    for (std::size_t k = 0; k < nb; ++k) {
      double part = 0.0;
      for (std::size_t i = k * f.bs; i < std::min(n, (k + 1) * f.bs); ++i) part += x[i] * y[i];
      total += part;
    }
    return total;
  };
  std::vector<double> z(n, 0.0), r = f.b, p = f.b, q(n);
  double rho = dot(r, r), zz = 0.0, alpha = 0.0, beta = 0.0;
  for (std::size_t it = 0; it < iters; ++it) {
    for (std::size_t i = 0; i < n; ++i) {
      double s = 0.0;
      for (std::size_t e = 0; e < f.w; ++e) s += f.vals[i * f.w + e] * p[f.cols[i * f.w + e]];
      q[i] = s;
    }
    const double pq = dot(p, q);
    alpha = pq != 0.0 ? rho / pq : 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      z[i] += alpha * p[i];
      r[i] -= alpha * q[i];
    }
    const double rho_new = dot(r, r);
    zz = dot(z, z);
    beta = rho != 0.0 ? rho_new / rho : 0.0;
    for (std::size_t i = 0; i < n; ++i) p[i] = r[i] + beta * p[i];
    rho = rho_new;
  }
  std::vector<double> out = z;
  out.insert(out.end(), r.begin(), r.end());
  out.insert(out.end(), p.begin(), p.end());
  out.insert(out.end(), {rho, zz, alpha, beta});
  return out;
}

TEST(KernelCg, BaseEqualsTheDirectDefinitionBitForBitOnAnyThreadCount) {
  for (auto [n, w, bs, it] : {std::tuple{1, 1, 1, 3}, {13, 5, 4, 6}, {64, 7, 16, 15}}) {
    for (int threads : {1, 3}) {
      CgFixture f(n, w, bs, it);
      mem::PlainBackend be({}, threads);
      kernels::iterative::run_base(be, f.op, 0);
      EXPECT_EQ(f.s, direct_cg(f, it)) << "n=" << n << " threads=" << threads;
    }
  }
}

TEST(KernelCg, ConvergesOnTheSpdMatrix) {
  CgFixture f(200, 7, 32, 40);
  const double rho0 = f.s[3 * f.n];
  mem::PlainBackend be({}, 1);
  kernels::iterative::run_base(be, f.op, 0);
  EXPECT_LT(f.s[3 * f.n], 1e-20 * rho0);
  // A·z = b: z solves the system.
  for (std::size_t i = 0; i < f.n; ++i) {
    double az = 0.0;
    for (std::size_t e = 0; e < f.w; ++e) az += f.vals[i * f.w + e] * f.s[f.cols[i * f.w + e]];
    EXPECT_NEAR(az, f.b[i], 1e-9) << i;
  }
}

TEST(KernelCg, OutOfPlaceGivesTheInPlaceBits) {
  CgFixture f(29, 5, 4, 1);
  std::vector<double> out(f.op.elements, -1.0);
  mem::PlainBackend be({}, 2);
  int hooks = 0;
  cgk::iterate(be, f.op, 0, f.s.data(), out.data(), [&] { ++hooks; });
  EXPECT_EQ(hooks, 1);
  cgk::iterate(be, f.op, 0, f.s.data(), f.s.data(), [] {});
  EXPECT_EQ(out, f.s);
}

}  // namespace
}  // namespace pmlab::testing
