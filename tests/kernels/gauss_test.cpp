// Gauss: textbook loop bit for bit, LP == base, exact LP recovery from any crash point.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "../support/test_seed.hpp"
#include "../support/eviction_model_backend.hpp"
#include "../support/test_scale.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/gauss.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::testing {
namespace {

namespace ch = kernels::gauss;

struct GaussFixture {
  std::size_t n, bs;
  std::unique_ptr<double[], FreeDeleter> a, l;
  std::unique_ptr<lp::ChecksumSlot[], FreeDeleter> slots;
  ch::Operands op;
  lp::ChecksumTable table;

  GaussFixture(std::size_t n_, std::size_t bs_, std::uint64_t seed = 3)
      : n(n_),
        bs(bs_),
        a(aligned_zeroed<double>(n * (n + 1))),
        l(aligned_zeroed<double>(n * (n + 1))) {
    ch::fill_input(a.get(), n, seed);
    std::copy(a.get(), a.get() + n * (n + 1), l.get());
    op = ch::Operands{{a.get(), n, n + 1}, {l.get(), n, n + 1}, n, bs};
    slots = aligned_zeroed<lp::ChecksumSlot>(op.table_slots());
    table = lp::ChecksumTable(slots.get(), op.table_slots());
  }
  [[nodiscard]] std::vector<double> result() const { return {l.get(), l.get() + n * (n + 1)}; }
  [[nodiscard]] std::vector<double> reference() const {
    std::vector<double> out(a.get(), a.get() + n * (n + 1));
    mem::PlainBackend be;
    ch::run_base(be, ch::Operands{{a.get(), n, n + 1}, {out.data(), n, n + 1}, n, bs});
    return out;
  }
};

TEST(KernelGauss, BaseEqualsTextbookLoopBitForBitAndSolvesTheSystem) {
  for (auto [n, bs] : {std::pair{1, 1}, {2, 1}, {7, 3}, {17, 4}, {33, 40}, {64, 16}, {97, 10}}) {
    GaussFixture f(n, bs);
    mem::PlainBackend be;
    ch::run_base(be, f.op);
    const std::size_t ld = f.n + 1;
    std::vector<double> t(f.a.get(), f.a.get() + f.n * ld);  // the textbook triple loop
    for (std::size_t k = 0; k + 1 < f.n; ++k)
      for (std::size_t i = k + 1; i < f.n; ++i) {
        const double m = t[i * ld + k] / t[k * ld + k];
        t[i * ld + k] = 0.0;
        for (std::size_t j = k + 1; j < ld; ++j) t[i * ld + j] -= m * t[k * ld + j];
      }
    ASSERT_TRUE(bit_equal(f.result(), t)) << n << " " << bs;
    // Back substitution on [U | y] solves the original system.
    std::vector<double> x(f.n);
    for (std::size_t i = f.n; i-- > 0;) {
      double s = f.l[i * ld + f.n];
      for (std::size_t j = i + 1; j < f.n; ++j) s -= f.l[i * ld + j] * x[j];
      x[i] = s / f.l[i * ld + i];
    }
    for (std::size_t i = 0; i < f.n; ++i) {
      double r = -f.a[i * ld + f.n];
      for (std::size_t j = 0; j < f.n; ++j) r += f.a[i * ld + j] * x[j];
      ASSERT_NEAR(r, 0.0, 1e-13 * static_cast<double>(f.n) * static_cast<double>(f.n))
          << n << " row " << i;
      for (std::size_t j = 0; j < i; ++j)
        ASSERT_EQ(std::bit_cast<std::uint64_t>(f.l[i * ld + j]), 0u);
    }
  }
}

TEST(KernelGauss, ResultDoesNotDependOnThreadsButOnBlockSize) {
  GaussFixture f(50, 7);
  auto ref = f.reference();
  mem::PlainBackend be2({}, 2);
  ch::run_base(be2, f.op);
  EXPECT_TRUE(bit_equal(f.result(), ref));
}

TEST(KernelGauss, LpEqualsBaseBitForBitForEveryChecksumAndThreadCount) {
  for (auto k : lp::kAllChecksumKinds) {
    for (int threads : {1, 2}) {
      GaussFixture f(45, 6);
      mem::PlainBackend be({}, threads);
      lp::with_checksum_kind(
          k, [&](auto kind) { ch::run_lp<decltype(kind)::value>(be, f.op, f.table); });
      EXPECT_TRUE(bit_equal(f.result(), f.reference())) << lp::to_string(k) << " " << threads;
      for (std::size_t step = 0; step + 1 < f.n; ++step)
        for (std::size_t b = 0; b < f.op.blocks(); ++b)
          if (step + 2 < f.op.end_row(b)) {  // block b has rows below row step+1
            ASSERT_EQ(f.slots[f.op.live_slot(step, b)].tag,
                      lp::ChecksumTable::tag_for(f.op.live_slot(step, b)));
          }
      for (std::size_t i = 1; i < f.n; ++i)
        ASSERT_EQ(f.slots[f.op.row_slot(i)].tag, lp::ChecksumTable::tag_for(f.op.row_slot(i)));
    }
  }
}

TEST(KernelGauss, SlotsAreACollisionFreeNumberingOfRegions) {
  GaussFixture f(70, 9);
  std::vector<int> seen(f.op.table_slots(), 0);
  for (std::size_t k = 0; k + 1 < f.n; ++k)
    for (std::size_t b = 0; b < f.op.blocks(); ++b) ++seen.at(f.op.live_slot(k, b));
  for (std::size_t i = 1; i < f.n; ++i) ++seen.at(f.op.row_slot(i));
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(KernelGauss, RecoveryOfCompletedRunRecomputesNothing) {
  GaussFixture f(40, 6);
  mem::PlainBackend be;
  ch::run_lp<lp::ChecksumKind::kModular>(be, f.op, f.table);
  lp::RecoveryStats st;
  EXPECT_EQ(ch::recover_lp<lp::ChecksumKind::kModular>(be, f.op, f.table, st), f.n - 1);
  EXPECT_EQ(st.regions_recomputed, 0u);
  EXPECT_EQ(st.regions_inconsistent, 0u);
}

TEST(KernelGauss, RecoveryRepairsALostFinalRowAndALostZero) {
  GaussFixture f(40, 6);
  mem::PlainBackend be;
  ch::run_lp<lp::ChecksumKind::kCrc32c>(be, f.op, f.table);
  const std::size_t ld = 41;
  f.l[2 * ld + 5] = 0.5;    // row 2 (final since step 1): its block (rows 0-5) must be redone
  f.l[30 * ld + 4] = 0.25;  // a zero below the diagonal
  lp::RecoveryStats st;
  EXPECT_EQ(ch::recover_lp<lp::ChecksumKind::kCrc32c>(be, f.op, f.table, st), f.n - 1);
  EXPECT_EQ(st.regions_recomputed, 5u);  // block 0 matches no state: from the input, steps 0..4
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
}

// One kernel source, two worlds: the same templates through the simulator's backend
// (round-robin interleaving of 3 logical threads) give the native result bit for bit.
TEST(KernelGauss, LpThroughTheSimulatorEqualsNativeBitForBit) {
  GaussFixture f(37, 5);
  auto be = sim::SimBackend::from_preset("lp-isca18", sim::FlushMode::kClflushopt, 3);
  ch::run_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table);
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
  lp::RecoveryStats st;
  EXPECT_EQ(ch::recover_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table, st), f.n - 1);
  EXPECT_EQ(st.regions_recomputed, 0u);
}

// Property: random sizes (tiny, prime, non-multiples of bs), checksum kinds and crash points,
// including crashes during recovery; LP recovery + resumed execution reproduce the fault-free
// factor bit for bit under any legal eviction order.
TEST(KernelGauss, LpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const std::size_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23};
  constexpr double kBiases[] = {0.4, 0.9, 0.99, 1.0};
  std::uint64_t trials = pmlab::test::scaled_trials(3000), crashes = 0, recoveries_with_work = 0,
                resumed_mid_run = 0;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const std::size_t n = rng() % 3 == 0 ? primes[rng() % 9] : 1 + rng() % 40, bs = 1 + rng() % 9;
    const auto kind = lp::kAllChecksumKinds[rng() % 5];
    SCOPED_TRACE(::testing::Message()
                 << "trial " << t << " n=" << n << " bs=" << bs << " " << lp::to_string(kind));
    GaussFixture f(n, bs, rng());
    const auto expected = f.reference();
    lp::with_checksum_kind(kind, [&](auto k) {
      constexpr auto K = decltype(k)::value;
      std::uint64_t total_stores;
      {
        GaussFixture probe(n, bs);
        EvictionModelBackend counter(1);
        ch::run_lp<K>(counter, probe.op, probe.table);
        total_stores = std::max<std::uint64_t>(1, counter.stores());
      }
      EvictionModelBackend be(rng());
      be.arm(1 + rng() % total_stores);
      bool done = false;
      for (int attempt = 0; attempt < 12 && !done; ++attempt) {
        try {
          std::size_t resume = 0;
          if (attempt > 0) {
            lp::RecoveryStats st;
            resume = ch::recover_lp<K>(be, f.op, f.table, st);
            if (st.regions_recomputed > 0) ++recoveries_with_work;
            if (resume > 0) ++resumed_mid_run;
          }
          ch::run_lp<K>(be, f.op, f.table, resume);
          done = true;
        } catch (const PowerCut&) {
          ++crashes;
          // From "every line may be stale" to "only the lines in flight": the partial-recovery
          // paths need crash images where most of the data did reach NVM.
          be.apply_crash_image(kBiases[rng() % 4]);
          // Half of the restarts crash again: often early, i.e. inside recovery.
          if (rng() % 2) be.arm(1 + rng() % (rng() % 2 ? 64 : total_stores));
        }
      }
      if (!done) {
        be.arm(0);
        lp::RecoveryStats st;
        ch::run_lp<K>(be, f.op, f.table, ch::recover_lp<K>(be, f.op, f.table, st));
      }
    });
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  std::printf(
      "[ crashes  ] gauss: %llu trials, %llu power cuts, %llu recoveries recomputed work, %llu "
      "resumed mid-run\n",
      static_cast<unsigned long long>(trials), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(recoveries_with_work),
      static_cast<unsigned long long>(resumed_mid_run));
  // Not vacuous: many crashes really required recomputation.
  EXPECT_GE(crashes, trials);
  EXPECT_GT(recoveries_with_work, trials / 4);
  EXPECT_GT(resumed_mid_run, trials / 10);
}

// EagerRecompute: each region flushed and recorded, in-place ones marked in flight first.
TEST(KernelGauss, EpEqualsBaseBitForBitAndRecordsEveryRegion) {
  for (int threads : {1, 2}) {
    GaussFixture f(37, 5);
    auto records = aligned_zeroed<scheme::IndexRecordLayout<1>>(f.op.blocks());
    const scheme::IndexRecordTable<1> rec(records.get(), f.op.blocks());
    mem::PlainBackend be({}, threads);
    ch::run_ep(be, f.op, rec);
    EXPECT_TRUE(bit_equal(f.result(), f.reference())) << threads;
    lp::RecoveryStats st;
    (void)ch::recover_ep(be, f.op, rec, st);
    EXPECT_EQ(st.regions_recomputed, 0u);
    EXPECT_EQ(st.regions_inconsistent, 0u);
  }
}

TEST(KernelGauss, EpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  [[maybe_unused]] const std::size_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23};
  constexpr double kBiases[] = {0.4, 0.9, 0.99, 1.0};
  std::uint64_t trials = pmlab::test::scaled_trials(600), crashes = 0, recoveries_with_work = 0,
                resumed_mid_run = 0;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const std::size_t n = rng() % 3 == 0 ? primes[rng() % 9] : 1 + rng() % 40, bs = 1 + rng() % 9;
    SCOPED_TRACE(::testing::Message() << "trial " << t << " n=" << n << " bs=" << bs);
    GaussFixture f(n, bs, rng());
    const auto expected = f.reference();
    auto records = aligned_zeroed<scheme::IndexRecordLayout<1>>(f.op.blocks());
    const scheme::IndexRecordTable<1> rec(records.get(), f.op.blocks());
    std::uint64_t total_stores;
    {
      GaussFixture probe(n, bs);
      auto probe_records = aligned_zeroed<scheme::IndexRecordLayout<1>>(probe.op.blocks());
      EvictionModelBackend counter(1);
      ch::run_ep(counter, probe.op,
                 scheme::IndexRecordTable<1>(probe_records.get(), probe.op.blocks()));
      total_stores = std::max<std::uint64_t>(1, counter.stores());
    }
    EvictionModelBackend be(rng());
    be.arm(1 + rng() % total_stores);
    bool done = false;
    for (int attempt = 0; attempt < 12 && !done; ++attempt) {
      try {
        std::size_t resume = 0;
        if (attempt > 0) {
          lp::RecoveryStats st;
          resume = ch::recover_ep(be, f.op, rec, st);
          if (st.regions_recomputed > 0) ++recoveries_with_work;
          if (resume > 0) ++resumed_mid_run;
        }
        ch::run_ep(be, f.op, rec, resume);
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
      ch::run_ep(be, f.op, rec, ch::recover_ep(be, f.op, rec, st));
    }
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  std::printf(
      "[ crashes  ] gauss ep: %llu trials, %llu power cuts, %llu recoveries recomputed work, %llu "
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
