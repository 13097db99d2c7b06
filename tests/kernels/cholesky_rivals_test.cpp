// Cholesky under WAL / checkpoint / hybrid: bit-exact vs base, write accounting, crash properties.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../support/rival_conformance.hpp"
#include "../support/rival_crash.hpp"
#include "pmlab/kernels/cholesky.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::testing {
namespace {

namespace ch = kernels::cholesky;

// Input A, working matrix L (lower(A) at "pool creation"), the scheme's arrays, base's factor.
struct CholData {
  static constexpr bool kHasHybrid = true;
  std::size_t n, bs;
  std::unique_ptr<double[], scheme_test::FreeDeleter> a, l;
  ch::Operands op;
  PoolArrays pool;
  std::vector<double> expected;

  CholData(std::size_t n_, std::size_t bs_, std::uint64_t seed)
      : n(n_),
        bs(bs_),
        a(scheme_test::zeroed<double>(n * n)),
        l(scheme_test::zeroed<double>(n * n)) {
    ch::fill_input(a.get(), n, seed);
    op = ch::Operands{{a.get(), n, n}, {l.get(), n, n}, {n, bs}};
    expected.resize(n * n);
    ch::fill_work(expected.data(), a.get(), n);
    mem::PlainBackend be;
    ch::run_base(be, ch::Operands{{a.get(), n, n}, {expected.data(), n, n}, {n, bs}});
    reset();
  }
  void reset() {
    ch::fill_work(l.get(), a.get(), n);
    pool.zero();
  }
  [[nodiscard]] bool exact() const { return same_bits(l.get(), expected); }
  [[nodiscard]] std::string label() const {
    return "cholesky n=" + std::to_string(n) + " bs=" + std::to_string(bs);
  }
  [[nodiscard]] double* work_data() const { return l.get(); }
  [[nodiscard]] std::size_t work_elems() const { return n * n; }
};

std::shared_ptr<CholData> cholesky_data(std::size_t n, std::size_t bs, std::uint64_t seed = 3) {
  return std::make_shared<CholData>(n, bs, seed);
}

// The conformance suites' view of cholesky under the rivals (tests/support/rival_conformance.hpp).
struct CholeskyRivals : MatrixRivalDefaults {
  using Data = CholData;
  static constexpr const char* kName = "cholesky";
  static std::shared_ptr<Data> data(std::size_t n, std::size_t bs) {
    return pmlab::testing::cholesky_data(n, bs);
  }
  static std::shared_ptr<Data> random_data(std::mt19937_64& rng) {
    const std::size_t n = random_n(rng, 40), bs = 1 + rng() % 9;
    return pmlab::testing::cholesky_data(n, bs, rng());
  }
  static constexpr std::pair<std::size_t, std::size_t> kEveryOpSizes[] = {{4, 3}, {7, 3}};
  // Late crashes where hybrid's copies must save work over EagerRecompute.
  static constexpr std::tuple<std::size_t, std::size_t, std::size_t> kLateCrashCases[] = {
      {40, 4, 2}, {29, 3, 4}};
};
INSTANTIATE_TYPED_TEST_SUITE_P(KernelCholeskyRivals, RivalConformance, CholeskyRivals,
                               RivalKernelName);
INSTANTIATE_TYPED_TEST_SUITE_P(KernelCholeskyRivals, HybridConformance, CholeskyRivals,
                               RivalKernelName);

// Per op on tile (i, j): the tile (len(i)·len(j) doubles, diagonal tiles whole) and the
// progress word are logged, then progress, flag set and clear: tile + 4 extra stores, and
// 4 fences (log, flag, data, flag), where base has none.
TEST(KernelCholeskyRivals, WalWritesTheTileLogPlusFourWordsAndFourFencesPerRegion) {
  for (auto [n, bs] : {std::pair{1, 1}, {9, 2}, {30, 7}}) {
    auto d = cholesky_data(n, bs);
    CountingBackend base, wal;
    ch::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kWal, 0);
    c.run(wal, 0);
    ASSERT_TRUE(d->exact());
    std::uint64_t regions = 0, extra = 0;
    const kernels::tiled::Tiling& tl = d->op.tiling;
    for (std::size_t i = 0; i < tl.tiles(); ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        regions += j + 1;
        extra += (j + 1) * (tl.len(i) * tl.len(j) + 4);
      }
    EXPECT_EQ(wal.regions, regions);
    EXPECT_EQ(wal.stores - base.stores, extra) << n << " " << bs;
    EXPECT_EQ(wal.fences, 4 * regions);
  }
}

// Every step but the last copies the trailing lower triangle from the slot's previous
// checkpoint on (two steps back) plus two header words; the end persists L in place and
// publishes completion (one word). Fences: two per checkpoint, two at the end.
TEST(KernelCholeskyRivals, CheckpointCopiesOnlyTheTrailingTriangleSinceTheSlotsLastState) {
  for (auto [n, bs] : {std::pair{1, 1}, {9, 2}, {30, 7}, {31, 3}}) {
    auto d = cholesky_data(n, bs);
    CountingBackend base, cp;
    ch::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kCp, 1);
    c.run(cp, 0);
    ASSERT_TRUE(d->exact());
    const std::size_t nt = d->op.tiles();
    std::uint64_t extra = 1;
    for (std::size_t done = 1; done < nt; ++done) {
      const std::size_t m = n - (done >= 3 ? done - 2 : 0) * bs;
      extra += m * (m + 1) / 2 + 2;
    }
    EXPECT_EQ(cp.stores - base.stores, extra) << n << " " << bs;
    EXPECT_EQ(cp.fences, 2 * (nt - 1) + 2);
  }
}

// Hybrid = EP + after each step but the last, part (k mod X) of the tile rows (lower triangle)
// copied, framed by two state-word stores and three fences.
TEST(KernelCholeskyRivals, HybridAddsOnePartialCopyPerStepToEagerRecompute) {
  for (auto [n, bs, parts] : {std::tuple{9, 2, 2}, {30, 7, 3}, {31, 3, 4}, {20, 5, 8}}) {
    auto d = cholesky_data(n, bs);
    CountingBackend ep, hr;
    auto records = scheme_test::zeroed<scheme::IndexRecordLayout<1>>(ch::ep_records(d->op));
    ch::run_ep(ep, d->op, scheme::IndexRecordTable<1>(records.get(), ch::ep_records(d->op)));
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kHr, parts);
    c.run(hr, 0);
    ASSERT_TRUE(d->exact());
    const std::size_t nt = d->op.tiles();
    std::uint64_t extra = 0, saves = 0;
    for (std::size_t k = 0; k + 1 < nt; ++k) {
      const std::size_t p = k % parts, u0 = nt * p / parts, u1 = nt * (p + 1) / parts;
      if (u0 == u1) continue;
      ++saves;
      extra += 2;
      for (std::size_t r = u0 * bs; r < std::min<std::size_t>(n, u1 * bs); ++r) extra += r + 1;
    }
    EXPECT_EQ(hr.stores - ep.stores, extra) << n << " " << bs << " " << parts;
    EXPECT_EQ(hr.fences - ep.fences, 3 * saves);
  }
}

}  // namespace
}  // namespace pmlab::testing
