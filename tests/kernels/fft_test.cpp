// fft: naive DFT within roundoff, LP == base, exact LP recovery from any crash point.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "../support/test_seed.hpp"
#include "../support/eviction_model_backend.hpp"
#include "../support/test_scale.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/fft.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/sim/sim_backend.hpp"

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

TEST(KernelFft, LpEqualsBaseBitForBitForEveryChecksumAndThreadCount) {
  for (auto k : lp::kAllChecksumKinds) {
    for (int threads : {1, 2}) {
      FftFixture f(512, 5);
      mem::PlainBackend be({}, threads);
      lp::with_checksum_kind(
          k, [&](auto kind) { ff::run_lp<decltype(kind)::value>(be, f.op, f.table); });
      EXPECT_TRUE(bit_equal(f.result(), f.reference())) << lp::to_string(k) << " " << threads;
      for (std::size_t s = 0; s < f.op.table_slots(); ++s)
        ASSERT_EQ(f.slots[s].tag, lp::ChecksumTable::tag_for(s));
    }
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

// The same templates through the simulator's backend give the native result bit for bit.
TEST(KernelFft, LpThroughTheSimulatorEqualsNativeBitForBit) {
  FftFixture f(512, 3);
  auto be = sim::SimBackend::from_preset("lp-isca18", sim::FlushMode::kClflushopt, 3);
  ff::run_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table);
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
  lp::RecoveryStats st;
  EXPECT_EQ(ff::recover_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table, st), 2);
  EXPECT_EQ(st.regions_recomputed, 0u);
}

// Property: random power-of-two sizes and group sizes (non-dividing ones included), checksum
// kinds and crash points, crashes during recovery included: the result is bit-exact.
TEST(KernelFft, LpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  constexpr double kBiases[] = {0.4, 0.9, 0.99, 1.0};
  std::uint64_t trials = pmlab::test::scaled_trials(2500), crashes = 0, recoveries_with_work = 0,
                resumed_mid_run = 0;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const std::size_t n = std::size_t{1} << (rng() % 12), bs = 1 + rng() % 7;
    const auto kind = lp::kAllChecksumKinds[rng() % 5];
    SCOPED_TRACE(::testing::Message()
                 << "trial " << t << " n=" << n << " bs=" << bs << " " << lp::to_string(kind));
    FftFixture f(n, bs, rng());
    const auto expected = f.reference();
    lp::with_checksum_kind(kind, [&](auto k) {
      constexpr auto K = decltype(k)::value;
      std::uint64_t total_stores;
      {
        FftFixture probe(n, bs);
        EvictionModelBackend counter(1);
        ff::run_lp<K>(counter, probe.op, probe.table);
        total_stores = std::max<std::uint64_t>(1, counter.stores());
      }
      EvictionModelBackend be(rng());
      be.arm(1 + rng() % total_stores);
      bool done = false;
      for (int attempt = 0; attempt < 12 && !done; ++attempt) {
        try {
          int resume = 0;
          if (attempt > 0) {
            lp::RecoveryStats st;
            resume = ff::recover_lp<K>(be, f.op, f.table, st);
            if (st.regions_recomputed > 0) ++recoveries_with_work;
            if (resume > 0) ++resumed_mid_run;
          }
          ff::run_lp<K>(be, f.op, f.table, resume);
          done = true;
        } catch (const PowerCut&) {
          ++crashes;
          be.apply_crash_image(kBiases[rng() % 4]);
          if (rng() % 2) be.arm(1 + rng() % (rng() % 2 ? 64 : total_stores));
        }
      }
      if (!done) {
        be.arm(0);
        lp::RecoveryStats st;
        ff::run_lp<K>(be, f.op, f.table, ff::recover_lp<K>(be, f.op, f.table, st));
      }
    });
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  std::printf(
      "[ crashes  ] fft: %llu trials, %llu power cuts, %llu recoveries recomputed work, %llu "
      "resumed mid-run\n",
      static_cast<unsigned long long>(trials), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(recoveries_with_work),
      static_cast<unsigned long long>(resumed_mid_run));
  EXPECT_GE(crashes, trials);
  EXPECT_GT(recoveries_with_work, trials / 4);
  EXPECT_GT(resumed_mid_run, trials / 10);
}

// EagerRecompute: each region flushed and recorded, in-place ones marked in flight first.
TEST(KernelFft, EpEqualsBaseBitForBitAndRecordsEveryRegion) {
  for (int threads : {1, 2}) {
    FftFixture f(512, 3);
    auto records = aligned_zeroed<scheme::IndexRecordLayout<1>>(f.op.table_slots());
    const scheme::IndexRecordTable<1> rec(records.get(), f.op.table_slots());
    mem::PlainBackend be({}, threads);
    ff::run_ep(be, f.op, rec);
    EXPECT_TRUE(bit_equal(f.result(), f.reference())) << threads;
    lp::RecoveryStats st;
    (void)ff::recover_ep(be, f.op, rec, st);
    EXPECT_EQ(st.regions_recomputed, 0u);
    EXPECT_EQ(st.regions_inconsistent, 0u);
  }
}

TEST(KernelFft, EpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  [[maybe_unused]] const std::size_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23};
  constexpr double kBiases[] = {0.4, 0.9, 0.99, 1.0};
  std::uint64_t trials = pmlab::test::scaled_trials(600), crashes = 0, recoveries_with_work = 0,
                resumed_mid_run = 0;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const std::size_t n = std::size_t{1} << (rng() % 12), bs = 1 + rng() % 7;
    SCOPED_TRACE(::testing::Message() << "trial " << t << " n=" << n << " bs=" << bs);
    FftFixture f(n, bs, rng());
    const auto expected = f.reference();
    auto records = aligned_zeroed<scheme::IndexRecordLayout<1>>(f.op.table_slots());
    const scheme::IndexRecordTable<1> rec(records.get(), f.op.table_slots());
    std::uint64_t total_stores;
    {
      FftFixture probe(n, bs);
      auto probe_records = aligned_zeroed<scheme::IndexRecordLayout<1>>(probe.op.table_slots());
      EvictionModelBackend counter(1);
      ff::run_ep(counter, probe.op,
                 scheme::IndexRecordTable<1>(probe_records.get(), probe.op.table_slots()));
      total_stores = std::max<std::uint64_t>(1, counter.stores());
    }
    EvictionModelBackend be(rng());
    be.arm(1 + rng() % total_stores);
    bool done = false;
    for (int attempt = 0; attempt < 12 && !done; ++attempt) {
      try {
        int resume = 0;
        if (attempt > 0) {
          lp::RecoveryStats st;
          resume = ff::recover_ep(be, f.op, rec, st);
          if (st.regions_recomputed > 0) ++recoveries_with_work;
          if (resume > 0) ++resumed_mid_run;
        }
        ff::run_ep(be, f.op, rec, resume);
        done = true;
      } catch (const PowerCut&) {
        ++crashes;
        be.apply_crash_image(kBiases[rng() % 4]);
        if (rng() % 2) be.arm(1 + rng() % (rng() % 2 ? 64 : total_stores));
      }
    }
    if (!done) {
      be.arm(0);
      lp::RecoveryStats st;
      ff::run_ep(be, f.op, rec, ff::recover_ep(be, f.op, rec, st));
    }
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  std::printf(
      "[ crashes  ] fft ep: %llu trials, %llu power cuts, %llu recoveries recomputed work, %llu "
      "resumed mid-run\n",
      static_cast<unsigned long long>(trials), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(recoveries_with_work),
      static_cast<unsigned long long>(resumed_mid_run));
  EXPECT_GE(crashes, trials);
  EXPECT_GT(recoveries_with_work, trials / 4);
  EXPECT_GT(resumed_mid_run, trials / 4);
}

}  // namespace
}  // namespace pmlab::testing
