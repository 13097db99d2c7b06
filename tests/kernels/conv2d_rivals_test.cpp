// conv2d under WAL / checkpoint: bit-exact vs base, write accounting, crash properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../support/rival_conformance.hpp"
#include "../support/rival_crash.hpp"
#include "pmlab/kernels/conv2d_rivals.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::testing {
namespace {

namespace cv = kernels::conv2d;

// Inputs (image, kernel), the output (zero at "pool creation"), the scheme's arrays, base's out.
struct ConvData {
  static constexpr bool kHasHybrid = false;
  std::size_t n, bs, width;
  std::unique_ptr<double[], scheme_test::FreeDeleter> in, ker, out;
  cv::Operands op;
  PoolArrays pool;
  std::vector<double> expected;

  ConvData(std::size_t n_, std::size_t bs_, std::size_t width_, std::uint64_t seed)
      : n(n_),
        bs(bs_),
        width(width_),
        in(scheme_test::zeroed<double>(n * n)),
        ker(scheme_test::zeroed<double>(width * width)),
        out(scheme_test::zeroed<double>(n * n)) {
    cv::fill_input(in.get(), n, ker.get(), width, seed);
    op = cv::Operands{{in.get(), n, n}, ker.get(), width, {out.get(), n, n}, n, bs};
    expected.assign(n * n, 0.0);
    mem::PlainBackend be;
    cv::run_base(be,
                 cv::Operands{{in.get(), n, n}, ker.get(), width, {expected.data(), n, n}, n, bs});
    reset();
  }
  void reset() {
    std::fill(out.get(), out.get() + n * n, 0.0);
    pool.zero();
  }
  [[nodiscard]] bool exact() const { return same_bits(out.get(), expected); }
  [[nodiscard]] std::string label() const {
    return "conv2d n=" + std::to_string(n) + " bs=" + std::to_string(bs) +
           " w=" + std::to_string(width);
  }
};

std::shared_ptr<ConvData> conv2d_data(std::size_t n, std::size_t bs, std::size_t width = 0,
                                      std::uint64_t seed = 5) {
  return std::make_shared<ConvData>(n, bs, width == 0 ? cv::width_for(0, n) : width, seed);
}

// The conformance suites' view of conv2d under the rivals (tests/support/rival_conformance.hpp).
struct Conv2dRivals : MatrixRivalDefaults {
  using Data = ConvData;
  static constexpr const char* kName = "conv2d";
  static std::shared_ptr<Data> data(std::size_t n, std::size_t bs) {
    return pmlab::testing::conv2d_data(n, bs);
  }
  static std::shared_ptr<Data> random_data(std::mt19937_64& rng) {
    const std::size_t n = random_n(rng, 40), bs = 1 + rng() % 8;
    const std::size_t width = 1 + 2 * (rng() % ((std::min<std::size_t>(n, 7) + 1) / 2));
    return pmlab::testing::conv2d_data(n, bs, width, rng());
  }
  static constexpr std::pair<std::size_t, std::size_t> kEveryOpSizes[] = {{4, 3}, {7, 2}};
};
INSTANTIATE_TYPED_TEST_SUITE_P(KernelConv2dRivals, RivalConformance, Conv2dRivals, RivalKernelName);

// Per block: its rows of out logged (rows·n doubles) plus 4 words; 4 fences.
TEST(KernelConv2dRivals, WalLogsTheBlockPlusFourWordsAndFourFencesPerRegion) {
  for (auto [n, bs] : {std::pair{1, 1}, {9, 2}, {30, 7}}) {
    auto d = conv2d_data(n, bs);
    CountingBackend base, wal;
    cv::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kWal, 0);
    c.run(wal, 0);
    ASSERT_TRUE(d->exact());
    const std::uint64_t regions = d->op.blocks();
    EXPECT_EQ(wal.regions, regions);
    EXPECT_EQ(wal.stores - base.stores, d->n * d->n + 4 * regions) << n << " " << bs;
    EXPECT_EQ(wal.fences, 4 * regions);
  }
}

// Append-only: every output row is copied at most once (all rows but the last wave's, which
// is persisted in place at the end), one header word per checkpoint and one at the end. Fences:
// two per checkpoint, two at the end.
TEST(KernelConv2dRivals, CheckpointCopiesEachRowOnceExceptTheLastWave) {
  for (auto [n, bs, every] : {std::tuple{1, 1, 1}, {9, 2, 1}, {30, 7, 2}, {31, 3, 0}}) {
    auto d = conv2d_data(n, bs);
    CountingBackend base, cp;
    cv::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kCp, every);
    c.run(cp, 0);
    ASSERT_TRUE(d->exact());
    const std::size_t nb = d->op.blocks(), e = every == 0 ? cv::cp_default_every(d->op) : every;
    const std::size_t saves = (nb + e - 1) / e - 1;
    const std::size_t copied_rows = std::min<std::size_t>(d->n, saves * e * d->bs);
    EXPECT_EQ(cp.stores - base.stores, copied_rows * d->n + saves + 1) << n << " " << bs;
    EXPECT_EQ(cp.fences, 2 * saves + 2);
  }
}

}  // namespace
}  // namespace pmlab::testing
