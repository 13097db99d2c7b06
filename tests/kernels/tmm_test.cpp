// tmm: LP equals base bit for bit; LP recovery is exact from random crash points under any eviction
// order.
#include <gtest/gtest.h>

#include <random>

#include "../support/eviction_model_backend.hpp"
#include "../support/test_seed.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/tmm.hpp"

namespace pmlab::testing {
namespace {

using kernels::tmm::recover_lp;
using kernels::tmm::run_lp;

TEST(KernelTmm, BaseMatchesNaiveTripleLoopForNonMultipleSizes) {
  for (auto [n, bs] : {std::pair{1, 1}, {5, 2}, {17, 4}, {33, 40}, {64, 16}}) {
    TmmFixture f(n, bs);
    mem::PlainBackend be;
    kernels::tmm::run_base(be, f.op);
    // Same per-element order as the tiled loop: sum over k ascending, starting from 0.
    for (std::size_t i = 0; i < f.n; ++i)
      for (std::size_t j = 0; j < f.n; ++j) {
        double s = 0.0;
        for (std::size_t k = 0; k < f.n; ++k) s += f.a[i * f.n + k] * f.b[k * f.n + j];
        ASSERT_EQ(f.c[i * f.n + j], s) << n << " " << bs << " " << i << "," << j;
      }
  }
}

TEST(KernelTmm, LpEqualsBaseBitForBitForEveryChecksumAndThreadCount) {
  for (auto k : lp::kAllChecksumKinds) {
    for (int threads : {1, 2}) {
      TmmFixture f(45, 7);
      mem::PlainBackend be({}, threads);
      lp::with_checksum_kind(k,
                             [&](auto kind) { run_lp<decltype(kind)::value>(be, f.op, f.table); });
      EXPECT_TRUE(bit_equal(f.result(), f.reference())) << lp::to_string(k) << " " << threads;
      for (std::size_t s = 0; s < f.op.table_slots(); ++s)
        EXPECT_EQ(f.slots[s].tag, lp::ChecksumTable::tag_for(s));
    }
  }
}

TEST(KernelTmm, RecoveryOfCompletedRunRecomputesNothing) {
  TmmFixture f(40, 6);
  mem::PlainBackend be;
  run_lp<lp::ChecksumKind::kModular>(be, f.op, f.table);
  lp::RecoveryStats st;
  auto resume = recover_lp<lp::ChecksumKind::kModular>(be, f.op, f.table, st);
  EXPECT_EQ(resume, f.op.tiles());
  EXPECT_EQ(st.regions_recomputed, 0u);
  EXPECT_EQ(st.regions_inconsistent, 0u);
}

TEST(KernelTmm, RecoveryDetectsACorruptedElementAndRepairsIt) {
  TmmFixture f(40, 6);
  mem::PlainBackend be;
  run_lp<lp::ChecksumKind::kModular>(be, f.op, f.table);
  f.c[7 * 40 + 3] = 0.5;  // a lost write in panel 1
  lp::RecoveryStats st;
  auto resume = recover_lp<lp::ChecksumKind::kModular>(be, f.op, f.table, st);
  EXPECT_EQ(resume, f.op.tiles());
  EXPECT_GE(st.regions_inconsistent, 1u);
  EXPECT_GE(st.regions_recomputed, 1u);
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
}

// Property: for random sizes, checksum kinds and crash points (including crashes during
// recovery), LP recovery + resumed execution reproduce the fault-free C bit for bit under any
// legal eviction order.
TEST(KernelTmm, LpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  std::uint64_t recoveries_with_work = 0, trials = 400;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const std::size_t n = 1 + rng() % 30, bs = 1 + rng() % 9;
    const auto kind = lp::kAllChecksumKinds[rng() % 5];
    SCOPED_TRACE(::testing::Message() << "trial " << t << " n=" << n << " bs=" << bs << " checksum "
                                      << lp::to_string(kind));
    TmmFixture f(n, bs, rng());
    const auto expected = f.reference();
    EvictionModelBackend be(rng());
    // A fault-free store count bounds the crash point.
    std::uint64_t total_stores;
    {
      TmmFixture probe(n, bs);
      EvictionModelBackend counter(1);
      lp::with_checksum_kind(
          kind, [&](auto k) { run_lp<decltype(k)::value>(counter, probe.op, probe.table); });
      total_stores = counter.stores();
    }
    lp::with_checksum_kind(kind, [&](auto k) {
      constexpr auto K = decltype(k)::value;
      std::size_t resume = 0;
      bool done = false;
      be.arm(1 + rng() % total_stores);
      for (int attempt = 0; attempt < 10 && !done; ++attempt) {
        try {
          if (attempt > 0) {
            lp::RecoveryStats st;
            resume = recover_lp<K>(be, f.op, f.table, st);
            if (st.regions_recomputed > 0) ++recoveries_with_work;
          }
          run_lp<K>(be, f.op, f.table, resume);
          done = true;
        } catch (const PowerCut&) {
          be.apply_crash_image(0.4);
          // Half of the restarts crash again, possibly inside recovery.
          if (rng() % 2) be.arm(1 + rng() % total_stores);
        }
      }
      if (!done) {
        be.arm(0);
        lp::RecoveryStats st;
        resume = recover_lp<K>(be, f.op, f.table, st);
        run_lp<K>(be, f.op, f.table, resume);
      }
    });
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  // Not vacuous: many crashes really required recomputation. About 10-15% of trials do (a crash
  // early in a region, or a region that never committed); a bound at 10% failed 1 run in ~100
  // (40 of 400, seed 9316164026337048501), so the bound is half of that.
  EXPECT_GT(recoveries_with_work, trials / 20);
}

}  // namespace
}  // namespace pmlab::testing
