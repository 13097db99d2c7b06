// FFT under WAL / checkpoint: bit-exact vs base, write accounting, crash properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../support/rival_conformance.hpp"
#include "../support/rival_crash.hpp"
#include "pmlab/kernels/fft_rivals.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::testing {
namespace {

namespace ff = kernels::fft;

// Inputs x and twiddles, y and z (zero at "pool creation"), the scheme's arrays, base's z.
struct FftData {
  static constexpr bool kHasHybrid = false;
  std::size_t n, bs;
  std::unique_ptr<double[], scheme_test::FreeDeleter> x, tw, y, z;
  ff::Operands op;
  PoolArrays pool;
  std::vector<double> expected;

  FftData(std::size_t n_, std::size_t bs_, std::uint64_t seed)
      : n(n_),
        bs(bs_),
        x(scheme_test::zeroed<double>(2 * n)),
        tw(scheme_test::zeroed<double>(2 * n)),
        y(scheme_test::zeroed<double>(2 * n)),
        z(scheme_test::zeroed<double>(2 * n)) {
    ff::fill_input(x.get(), n, seed);
    ff::fill_twiddles(tw.get(), n);
    op = ff::Operands{x.get(), tw.get(), y.get(), z.get(), n, bs};
    std::vector<double> yy(2 * n);
    expected.assign(2 * n, 0.0);
    mem::PlainBackend be;
    ff::run_base(be, ff::Operands{x.get(), tw.get(), yy.data(), expected.data(), n, bs});
    reset();
  }
  void reset() {
    std::fill(y.get(), y.get() + 2 * n, 0.0);
    std::fill(z.get(), z.get() + 2 * n, 0.0);
    pool.zero();
  }
  [[nodiscard]] bool exact() const { return same_bits(z.get(), expected); }
  [[nodiscard]] std::string label() const {
    return "fft n=" + std::to_string(n) + " bs=" + std::to_string(bs);
  }
};

std::shared_ptr<FftData> fft_data(std::size_t n, std::size_t bs, std::uint64_t seed = 9) {
  return std::make_shared<FftData>(n, bs, seed);
}

// The conformance suites' view of fft under the rivals (tests/support/rival_conformance.hpp).
struct FftRivals {
  using Data = FftData;
  static constexpr const char* kName = "fft";
  static std::shared_ptr<Data> data(std::size_t n, std::size_t bs) {
    return pmlab::testing::fft_data(n, bs);
  }
  static std::shared_ptr<Data> random_data(std::mt19937_64& rng) {
    const std::size_t n = std::size_t{1} << (rng() % 11), bs = 1 + rng() % 7;
    return pmlab::testing::fft_data(n, bs, rng());
  }
  static constexpr std::pair<std::size_t, std::size_t> kFaultFreeSizes[] = {
      {1, 1}, {2, 1}, {8, 3}, {64, 4}, {512, 40}, {2048, 6}};
  static constexpr std::pair<std::size_t, std::size_t> kEveryOpSizes[] = {{4, 1}, {16, 3}};
  static constexpr std::uint64_t kWalResumedDivisor = 10;
  static std::size_t cp_every(std::mt19937_64& rng) { return 1 + rng() % 2; }
};
INSTANTIATE_TYPED_TEST_SUITE_P(KernelFftRivals, RivalConformance, FftRivals, RivalKernelName);

// Each region logs its 2·g·len output doubles: 2n per pass, 4n in all, plus 4 words per region;
// 4 fences per region.
TEST(KernelFftRivals, WalLogsEachRegionsOutputPlusFourWordsAndFourFencesPerRegion) {
  for (auto [n, bs] : {std::pair{1, 1}, {32, 3}, {256, 5}}) {
    auto d = fft_data(n, bs);
    CountingBackend base, wal;
    ff::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kWal, 0);
    c.run(wal, 0);
    ASSERT_TRUE(d->exact());
    const std::uint64_t regions = d->op.regions(0) + d->op.regions(1);
    EXPECT_EQ(wal.regions, regions);
    EXPECT_EQ(wal.stores - base.stores, 4 * d->n + 4 * regions) << n << " " << bs;
    EXPECT_EQ(wal.fences, 4 * regions);
  }
}

// One checkpoint (y, 2n doubles, after pass 0) and its header word, z persisted in place and
// one word at the end; 2 + 2 fences.
TEST(KernelFftRivals, CheckpointCopiesYOnceAndPersistsZInPlace) {
  for (auto [n, bs] : {std::pair{1, 1}, {32, 3}, {256, 5}}) {
    auto d = fft_data(n, bs);
    CountingBackend base, cp;
    ff::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kCp, 1);
    c.run(cp, 0);
    ASSERT_TRUE(d->exact());
    EXPECT_EQ(cp.stores - base.stores, 2 * d->n + 2) << n << " " << bs;
    EXPECT_EQ(cp.fences, 4u);
  }
}

}  // namespace
}  // namespace pmlab::testing
