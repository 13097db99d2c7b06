// tmm's four-column tile step (backends whose access order nothing observes: a crash trial's
// native restart) gives every element the bits, and the run the op count, of the one-column loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "pmlab/kernels/tmm.hpp"
#include "pmlab/run/native_tail.hpp"

namespace pmlab::kernels::tmm {
namespace {

// TailBackend with the one-column loop: the same backend, declaring its order observed.
struct OrderedTail : run::TailBackend {
  using TailBackend::TailBackend;
  static constexpr bool kAccessOrderUnobserved = false;
};
static_assert(mem::AccessOrderUnobserved<run::TailBackend>);
static_assert(!mem::AccessOrderUnobserved<OrderedTail>);

// Matrices of values whose sums round differently when added in another order: magnitudes
// spread over 2^-20 .. 2^20, both signs.
std::vector<double> random_matrix(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<double> m(n * n);
  for (double& x : m) x = std::ldexp(mantissa(rng), exponent(rng));
  return m;
}

struct Product {
  std::vector<double> c;
  std::uint64_t ops = 0;
};

// Every tile step of the multiplication in the kernel's order, on backend B.
template <class B>
Product multiply(std::size_t n, std::size_t bs, const std::vector<double>& a,
             const std::vector<double>& b, const std::vector<double>& c0) {
  Product r{c0, 0};
  B be(1);
  const Operands op{{a.data(), n, n, n}, {b.data(), n, n, n}, {r.c.data(), n, n, n}, n, bs};
  for (std::size_t kt = 0; kt < op.tiles(); ++kt)
    for (std::size_t it = 0; it < op.tiles(); ++it)
      for (std::size_t jj = 0; jj < n; jj += bs) (void)tile_step(be, op, kt, it, jj);
  r.ops = be.ops();
  return r;
}

TEST(TmmTileStep, FourColumnsGiveTheOneColumnBitsAndOps) {
  std::mt19937_64 rng(20261129);
  int cases = 0;
  for (std::size_t n = 1; n <= 37; n += 3)
    for (const std::size_t bs : {1, 3, 4, 5, 8, 16}) {
      const auto a = random_matrix(n, rng), b = random_matrix(n, rng), c0 = random_matrix(n, rng);
      const Product fast = multiply<run::TailBackend>(n, bs, a, b, c0);
      const Product ordered = multiply<OrderedTail>(n, bs, a, b, c0);
      EXPECT_EQ(fast.ops, ordered.ops) << "n " << n << " bs " << bs;
      EXPECT_EQ(std::memcmp(fast.c.data(), ordered.c.data(), n * n * sizeof(double)), 0)
          << "n " << n << " bs " << bs;
      ++cases;
    }
  EXPECT_EQ(cases, 13 * 6);
}

}  // namespace
}  // namespace pmlab::kernels::tmm
