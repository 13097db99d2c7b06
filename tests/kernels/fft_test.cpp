// fft: naive DFT within roundoff, its LP repair order; the LP/EP conformance suite on fft.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "../support/eviction_model_backend.hpp"
#include "../support/lp_conformance.hpp"
#include "../support/test_scale.hpp"
#include "../support/test_seed.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/fft.hpp"

namespace pmlab::testing {
namespace {

namespace ff = kernels::fft;

struct FftFixture {
  std::size_t n, bs;
  std::unique_ptr<double[], FreeDeleter> x, tw, y, z;
  std::unique_ptr<lp::ChecksumSlot[], FreeDeleter> slots;
  ff::Operands op;
  lp::ChecksumTable table;

  FftFixture(std::size_t n_, std::size_t bs_, std::uint64_t seed = 9)
      : n(n_),
        bs(bs_),
        x(aligned_zeroed<double>(2 * n)),
        tw(aligned_zeroed<double>(2 * n)),
        y(aligned_zeroed<double>(2 * n)),
        z(aligned_zeroed<double>(2 * n)) {
    ff::fill_input(x.get(), n, seed);
    ff::fill_twiddles(tw.get(), n);
    op = ff::Operands{x.get(), tw.get(), y.get(), z.get(), n, bs};
    slots = aligned_zeroed<lp::ChecksumSlot>(op.table_slots());
    table = lp::ChecksumTable(slots.get(), op.table_slots());
  }
  [[nodiscard]] std::vector<double> result() const { return {z.get(), z.get() + 2 * n}; }
  [[nodiscard]] std::vector<double> reference() const {
    std::vector<double> yy(2 * n), zz(2 * n);
    mem::PlainBackend be;
    ff::run_base(be, ff::Operands{x.get(), tw.get(), yy.data(), zz.data(), n, bs});
    return zz;
  }
};

// The conformance suites' view of fft (tests/support/lp_conformance.hpp): power-of-two sizes
// and group sizes, non-dividing ones included.
struct Fft {
  using Fixture = FftFixture;
  static constexpr const char* kName = "fft";
  static constexpr ConformanceSizes kSizes{
      .threads = {512, 5}, .lp = {512, 5}, .completed = {256, 4}, .sim = {512, 3}};
  static constexpr std::uint64_t kLpTrials = 2500;
  static std::pair<std::size_t, std::size_t> random_size(std::mt19937_64& rng) {
    const std::size_t n = std::size_t{1} << (rng() % 12);
    return {n, 1 + rng() % 7};
  }
  static std::size_t ep_records(const ff::Operands& op) { return op.table_slots(); }
  static int completed(const Fixture&) { return 2; }
  static void expect_every_slot_written(const Fixture& f) {
    expect_every_slot_tagged(f.slots.get(), f.op.table_slots());
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(KernelFft, LpConformance, Fft, KernelNameOf);

TEST(KernelFft, SplitsIntoTwoPassesOfPowerOfTwoSubFfts) {
  for (std::size_t m = 0; m < 20; ++m) {
    FftFixture f(std::size_t{1} << m, 3);
    EXPECT_EQ(f.op.n1() * f.op.n2(), f.n);
    EXPECT_TRUE(f.op.n1() == f.op.n2() || f.op.n1() == 2 * f.op.n2());
  }
}

TEST(KernelFft, BaseMatchesANaiveDftWithinRoundoff) {
  for (auto [n, bs] :
       {std::pair{1, 1}, {2, 1}, {4, 3}, {8, 2}, {32, 5}, {128, 16}, {512, 7}, {1024, 64}}) {
    FftFixture f(n, bs);
    mem::PlainBackend be;
    ff::run_base(be, f.op);
    double norm = 0.0, worst = 0.0;
    for (std::size_t k = 0; k < f.n; ++k) {
      std::complex<long double> s = 0;  // O(n²) DFT in long double, angles reduced exactly mod n
      for (std::size_t j = 0; j < f.n; ++j) {
        const long double angle = -2.0L * std::numbers::pi_v<long double> *
                                  static_cast<long double>((j * k) % f.n) /
                                  static_cast<long double>(f.n);
        s += std::complex<long double>(f.x[2 * j], f.x[2 * j + 1]) * std::polar(1.0L, angle);
      }
      norm = std::max(norm, static_cast<double>(std::abs(s)));
      const std::complex<double> got(f.z[2 * k], f.z[2 * k + 1]);
      worst = std::max(worst, std::abs(got - std::complex<double>(static_cast<double>(s.real()),
                                                                  static_cast<double>(s.imag()))));
    }
    EXPECT_LE(worst, 1e-14 * (1.0 + norm) * (1.0 + std::log2(static_cast<double>(f.n))))
        << n << " " << bs;
  }
}

TEST(KernelFft, RecoveryRepairsPassOneAfterRepairingThePassZeroItReads) {
  FftFixture f(256, 4);  // 16 x 16: 4 regions per pass
  mem::PlainBackend be;
  ff::run_lp<lp::ChecksumKind::kParity>(be, f.op, f.table);
  lp::RecoveryStats st;
  EXPECT_EQ(ff::recover_lp<lp::ChecksumKind::kParity>(be, f.op, f.table, st), 2);
  EXPECT_EQ(st.regions_recomputed, 0u);
  EXPECT_EQ(st.regions_validated, 4u);  // pass 0 is not even looked at
  f.z[2 * (1 + 16 * 3)] = 7.0;          // pass 1, region 0 (k1 = 1)
  f.y[2 * (5 * 16 + 2) + 1] = -7.0;     // pass 0, region 1 (j2 = 5)
  lp::RecoveryStats st2;
  EXPECT_EQ(ff::recover_lp<lp::ChecksumKind::kParity>(be, f.op, f.table, st2), 2);
  EXPECT_EQ(st2.regions_inconsistent, 2u);
  EXPECT_EQ(st2.regions_recomputed, 2u);
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
}

}  // namespace
}  // namespace pmlab::testing
