// Gauss under WAL / checkpoint / hybrid: bit-exact vs base, write accounting, crash properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../support/rival_conformance.hpp"
#include "../support/rival_crash.hpp"
#include "pmlab/kernels/gauss_rivals.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::testing {
namespace {

namespace ga = kernels::gauss;

// Input [A | b], working matrix W ([A | b] at "pool creation"), the scheme's arrays, base's [U |
// y].
struct GaussData {
  static constexpr bool kHasHybrid = true;
  std::size_t n, bs;
  std::unique_ptr<double[], scheme_test::FreeDeleter> a, w;
  ga::Operands op;
  PoolArrays pool;
  std::vector<double> expected;

  GaussData(std::size_t n_, std::size_t bs_, std::uint64_t seed)
      : n(n_),
        bs(bs_),
        a(scheme_test::zeroed<double>(n * (n + 1))),
        w(scheme_test::zeroed<double>(n * (n + 1))) {
    ga::fill_input(a.get(), n, seed);
    op = ga::Operands{{a.get(), n, n + 1}, {w.get(), n, n + 1}, n, bs};
    expected.assign(a.get(), a.get() + n * (n + 1));
    mem::PlainBackend be;
    ga::run_base(be, ga::Operands{{a.get(), n, n + 1}, {expected.data(), n, n + 1}, n, bs});
    reset();
  }
  void reset() {
    std::copy(a.get(), a.get() + n * (n + 1), w.get());
    pool.zero();
  }
  [[nodiscard]] bool exact() const { return same_bits(w.get(), expected); }
  [[nodiscard]] std::string label() const {
    return "gauss n=" + std::to_string(n) + " bs=" + std::to_string(bs);
  }
  [[nodiscard]] double* work_data() const { return w.get(); }
  [[nodiscard]] std::size_t work_elems() const { return n * (n + 1); }
};

std::shared_ptr<GaussData> gauss_data(std::size_t n, std::size_t bs, std::uint64_t seed = 3) {
  return std::make_shared<GaussData>(n, bs, seed);
}

// The conformance suites' view of gauss under the rivals (tests/support/rival_conformance.hpp).
struct GaussRivals : MatrixRivalDefaults {
  using Data = GaussData;
  static constexpr const char* kName = "gauss";
  static std::shared_ptr<Data> data(std::size_t n, std::size_t bs) {
    return pmlab::testing::gauss_data(n, bs);
  }
  static std::shared_ptr<Data> random_data(std::mt19937_64& rng) {
    const std::size_t n = random_n(rng, 40), bs = 1 + rng() % 9;
    return pmlab::testing::gauss_data(n, bs, rng());
  }
  static constexpr std::pair<std::size_t, std::size_t> kEveryOpSizes[] = {{4, 3}, {8, 3}};
  // Late crashes where hybrid's copies must save work over EagerRecompute; with one row block
  // (13, 13), EP loses all progress when that block is torn, the copies keep it.
  static constexpr std::tuple<std::size_t, std::size_t, std::size_t> kLateCrashCases[] = {
      {24, 4, 2}, {13, 13, 1}};
};
INSTANTIATE_TYPED_TEST_SUITE_P(KernelGaussRivals, RivalConformance, GaussRivals, RivalKernelName);
INSTANTIATE_TYPED_TEST_SUITE_P(KernelGaussRivals, HybridConformance, GaussRivals, RivalKernelName);

// Region (k, b) logs exactly what it overwrites: the block's rows below k, columns k..n; plus
// the progress word, progress, flag set and clear (4 stores), and costs 4 fences.
TEST(KernelGaussRivals, WalLogsTheRegionsTrailingRowsPlusFourWordsAndFourFencesPerRegion) {
  for (auto [n, bs] : {std::pair{2, 1}, {9, 2}, {30, 7}, {23, 40}}) {
    auto d = gauss_data(n, bs);
    CountingBackend base, wal;
    ga::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kWal, 0);
    c.run(wal, 0);
    ASSERT_TRUE(d->exact());
    std::uint64_t regions = 0, extra = 0;
    for (std::size_t k = 0; k + 1 < d->op.n; ++k)
      for (std::size_t b = (k + 1) / d->op.bs; b < d->op.blocks(); ++b) {
        ++regions;
        const std::size_t rows = d->op.end_row(b) - std::max(k + 1, d->op.first_row(b));
        extra += rows * (d->op.n + 1 - k) + 4;
      }
    EXPECT_EQ(wal.regions, regions);
    EXPECT_EQ(wal.stores - base.stores, extra) << n << " " << bs;
    EXPECT_EQ(wal.fences, 4 * regions);
  }
}

// Checkpoint j (after `every`·j steps, alternating slots) copies rows > c, columns >= c, where
// c is what the slot held before (checkpoint j - 2, or 0), plus two header words; the end
// persists W in place and publishes completion (one word). Fences: two per checkpoint, two at
// the end.
TEST(KernelGaussRivals, CheckpointCopiesOnlyTheTrailingMatrixSinceTheSlotsLastState) {
  for (auto [n, bs, every] : {std::tuple{2, 1, 1}, {9, 2, 1}, {30, 7, 7}, {31, 3, 2}, {17, 4, 0}}) {
    auto d = gauss_data(n, bs);
    CountingBackend base, cp;
    ga::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kCp, every);
    c.run(cp, 0);
    ASSERT_TRUE(d->exact());
    const std::size_t steps = d->op.n - 1, e = every == 0 ? d->op.bs : every;
    std::vector<std::size_t> saves;
    for (std::size_t done = e; done < steps; done += e) saves.push_back(done);
    std::uint64_t extra = 1;
    for (std::size_t j = 0; j < saves.size(); ++j) {
      const std::size_t from = j >= 2 ? saves[j - 2] : 0, m = d->op.n;
      extra += (m - 1 - from) * (m + 1 - from) + 2;
    }
    EXPECT_EQ(cp.stores - base.stores, extra) << n << " " << bs << " " << every;
    EXPECT_EQ(cp.fences, 2 * saves.size() + 2);
  }
}

// Hybrid = EP + after each step but the last, part (k mod X) of the row blocks (whole rows)
// copied, framed by two state-word stores and three fences.
TEST(KernelGaussRivals, HybridAddsOnePartialCopyPerStepToEagerRecompute) {
  for (auto [n, bs, parts] : {std::tuple{9, 2, 2}, {30, 7, 3}, {31, 3, 4}, {20, 5, 8}}) {
    auto d = gauss_data(n, bs);
    CountingBackend ep, hr;
    auto records = scheme_test::zeroed<scheme::IndexRecordLayout<1>>(d->op.blocks());
    ga::run_ep(ep, d->op, scheme::IndexRecordTable<1>(records.get(), d->op.blocks()));
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kHr, parts);
    c.run(hr, 0);
    ASSERT_TRUE(d->exact());
    const std::size_t nb = d->op.blocks(), steps = d->op.n - 1;
    std::uint64_t extra = 0, saves = 0;
    for (std::size_t k = 0; k + 1 < steps; ++k) {
      const std::size_t p = k % parts, u0 = nb * p / parts, u1 = nb * (p + 1) / parts;
      if (u0 == u1) continue;
      ++saves;
      extra += 2 + (d->op.end_row(u1 - 1) - d->op.first_row(u0)) * (d->op.n + 1);
    }
    EXPECT_EQ(hr.stores - ep.stores, extra) << n << " " << bs << " " << parts;
    EXPECT_EQ(hr.fences - ep.fences, 3 * saves);
  }
}

}  // namespace
}  // namespace pmlab::testing
