// jacobi: base equals the direct definition bit for bit (both shapes), the residual falls, and
// in place == out of place == any thread count (the schemes rely on it).
#include <gtest/gtest.h>

#include <vector>

#include "pmlab/kernels/jacobi.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::testing {
namespace {

namespace jk = kernels::jacobi;

struct JacobiFixture {
  std::size_t n;
  std::vector<double> f, res, s;
  jk::Operands op;

  JacobiFixture(std::size_t n_, std::size_t bs, std::size_t iters, bool mg_like,
                std::uint64_t seed = 9)
      : n(n_), f(n * n), res(n * n) {
    jk::fill_inputs(f.data(), n, seed);
    op.n = n;
    op.bs = bs;
    op.mg_like = mg_like;
    op.seed = seed;
    jk::set_shape(op, iters);
    s.assign(op.elements, 0.0);
    op.f = f.data();
    op.res = res.data();
    op.s = s.data();
    mem::PlainBackend be({}, 1);
    jk::initial_state(be, op);
  }
};

// Written out with signed indices; the residual's sum in the kernel's order, per block of bs rows.
std::vector<double> direct(const JacobiFixture& x, std::size_t bs, std::size_t iters,
                           bool mg_like) {
  const long n = static_cast<long>(x.n);
  std::vector<double> u(x.s.begin(), x.s.begin() + n * n), r(n * n);
  double norm = 0.0;
  const auto at = [&](long i, long j) { return i < 0 || j < 0 || i >= n || j >= n ? 0.0 : 1.0; };
  for (std::size_t t = 0; t < iters; ++t) {
    for (long i = 0; i < n; ++i)
      for (long j = 0; j < n; ++j) {
        double lu = 4.0 * u[i * n + j];
        if (at(i - 1, j) != 0.0) lu -= u[(i - 1) * n + j];
        if (at(i + 1, j) != 0.0) lu -= u[(i + 1) * n + j];
        if (at(i, j - 1) != 0.0) lu -= u[i * n + j - 1];
        if (at(i, j + 1) != 0.0) lu -= u[i * n + j + 1];
        r[i * n + j] = x.f[i * n + j] - lu;
      }
    norm = 0.0;
    for (long i0 = 0; i0 < n; i0 += static_cast<long>(bs)) {
      double part = 0.0;
      for (long i = i0; i < std::min(n, i0 + static_cast<long>(bs)); ++i)
        for (long j = 0; j < n; ++j) part += r[i * n + j] * r[i * n + j];
      norm += part;
    }
    for (long i = 0; i < n; ++i)
      for (long j = 0; j < n; ++j) {
        const bool border = i == 0 || j == 0 || i == n - 1 || j == n - 1;
        if (!mg_like || !border) u[i * n + j] += jk::kOmega4 * r[i * n + j];
        if (mg_like) u[i * n + j] *= jk::kDamp;
      }
  }
  u.push_back(norm);
  u.push_back(static_cast<double>(iters));
  return u;
}

TEST(KernelJacobi, BaseEqualsTheDirectDefinitionBitForBitOnAnyThreadCount) {
  for (bool mg : {false, true})
    for (auto [n, bs, it] : {std::tuple{1, 1, 2}, {2, 1, 3}, {17, 4, 5}, {40, 16, 8}})
      for (int threads : {1, 3}) {
        JacobiFixture x(n, bs, it, mg);
        const auto want = direct(x, bs, it, mg);
        mem::PlainBackend be({}, threads);
        kernels::iterative::run_base(be, x.op, 0);
        EXPECT_EQ(x.s, want) << "n=" << n << " mg=" << mg << " threads=" << threads;
      }
}

TEST(KernelJacobi, TheResidualFalls) {
  JacobiFixture x(24, 8, 1, false);
  mem::PlainBackend be({}, 1);
  kernels::iterative::run_base(be, x.op, 0);
  const double first = x.s[24 * 24];
  JacobiFixture y(24, 8, 60, false);
  kernels::iterative::run_base(be, y.op, 0);
  EXPECT_LT(y.s[24 * 24], 0.1 * first);
}

TEST(KernelJacobi, OutOfPlaceGivesTheInPlaceBitsAndMgLikeNeedsTheCopy) {
  for (bool mg : {false, true}) {
    JacobiFixture x(19, 4, 1, mg);
    mem::PlainBackend be({}, 2);
    std::vector<double> out(x.op.elements, 0.0);
    int hooks = 0;
    if (mg)  // non-uniform: out must first hold `in` (the IPV / LP fallback)
      out = x.s;
    jk::iterate(be, x.op, 0, x.s.data(), out.data(), [&] { ++hooks; });
    EXPECT_EQ(hooks, 1);
    jk::iterate(be, x.op, 0, x.s.data(), x.s.data(), [] {});
    EXPECT_EQ(out, x.s) << "mg=" << mg;
  }
  // Without the copy, --mg-like's border would be scaled from whatever `out` held.
  JacobiFixture x(19, 4, 1, true);
  mem::PlainBackend be({}, 1);
  std::vector<double> out(x.op.elements, 0.0);
  jk::iterate(be, x.op, 0, x.s.data(), out.data(), [] {});
  jk::iterate(be, x.op, 0, x.s.data(), x.s.data(), [] {});
  EXPECT_NE(out, x.s);
  EXPECT_EQ(x.op.updates, scheme::IpvUpdates::kNonUniform);
}

}  // namespace
}  // namespace pmlab::testing
