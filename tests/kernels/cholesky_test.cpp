// Cholesky: L·Lᵀ ≈ A, LP == base bit for bit, exact LP recovery from any crash point.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "../support/test_seed.hpp"
#include "../support/eviction_model_backend.hpp"
#include "../support/test_scale.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/cholesky.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::testing {
namespace {

namespace ch = kernels::cholesky;

struct CholFixture {
  std::size_t n, bs;
  std::unique_ptr<double[], FreeDeleter> a, l;
  std::unique_ptr<lp::ChecksumSlot[], FreeDeleter> slots;
  ch::Operands op;
  lp::ChecksumTable table;

  CholFixture(std::size_t n_, std::size_t bs_, std::uint64_t seed = 3)
      : n(n_), bs(bs_), a(aligned_zeroed<double>(n * n)), l(aligned_zeroed<double>(n * n)) {
    ch::fill_input(a.get(), n, seed);
    ch::fill_work(l.get(), a.get(), n);
    op = ch::Operands{{a.get(), n, n}, {l.get(), n, n}, {n, bs}};
    slots = aligned_zeroed<lp::ChecksumSlot>(op.table_slots());
    table = lp::ChecksumTable(slots.get(), op.table_slots());
  }
  [[nodiscard]] std::vector<double> result() const { return {l.get(), l.get() + n * n}; }
  [[nodiscard]] std::vector<double> reference() const {
    std::vector<double> out(n * n);
    ch::fill_work(out.data(), a.get(), n);
    mem::PlainBackend be;
    ch::run_base(be, ch::Operands{{a.get(), n, n}, {out.data(), n, n}, {n, bs}});
    return out;
  }
};

TEST(KernelCholesky, BaseFactorReproducesTheInputWithinRoundoff) {
  for (auto [n, bs] : {std::pair{1, 1}, {2, 1}, {7, 3}, {17, 4}, {33, 40}, {64, 16}, {97, 10}}) {
    CholFixture f(n, bs);
    mem::PlainBackend be;
    ch::run_base(be, f.op);
    for (std::size_t i = 0; i < f.n; ++i) {
      ASSERT_GT(f.l[i * f.n + i], 0.0);
      for (std::size_t j = 0; j < f.n; ++j) {
        if (j > i) {
          ASSERT_EQ(f.l[i * f.n + j], 0.0) << "upper triangle touched";
          continue;
        }
        double s = 0.0;  // (L·Lᵀ)_ij, an independent plain triple loop
        for (std::size_t k = 0; k <= j; ++k) s += f.l[i * f.n + k] * f.l[j * f.n + k];
        ASSERT_NEAR(s, f.a[i * f.n + j], 1e-13 * static_cast<double>(f.n) * f.a[i * f.n + i])
            << n << " " << bs << " " << i << "," << j;
      }
    }
  }
}

TEST(KernelCholesky, ResultDoesNotDependOnThreadsButOnBlockSize) {
  CholFixture f(50, 7);
  auto ref = f.reference();
  mem::PlainBackend be2({}, 2);
  ch::run_base(be2, f.op);
  EXPECT_TRUE(bit_equal(f.result(), ref));
}

TEST(KernelCholesky, LpEqualsBaseBitForBitForEveryChecksumAndThreadCount) {
  for (auto k : lp::kAllChecksumKinds) {
    for (int threads : {1, 2}) {
      CholFixture f(45, 6);
      mem::PlainBackend be({}, threads);
      lp::with_checksum_kind(
          k, [&](auto kind) { ch::run_lp<decltype(kind)::value>(be, f.op, f.table); });
      EXPECT_TRUE(bit_equal(f.result(), f.reference())) << lp::to_string(k) << " " << threads;
      for (std::size_t s = 0; s < f.op.table_slots(); ++s)
        ASSERT_EQ(f.slots[s].tag, lp::ChecksumTable::tag_for(s))
            << "slot " << s << " never written";
    }
  }
}

TEST(KernelCholesky, SlotsAreACollisionFreeNumberingOfStepTilePairs) {
  CholFixture f(70, 9);  // 8 tiles
  std::vector<int> seen(f.op.table_slots(), 0);
  const std::size_t nt = f.op.tiles();
  for (std::size_t q = 0; q < nt; ++q)
    for (std::size_t j = q; j < nt; ++j)
      for (std::size_t i = j; i < nt; ++i) ++seen.at(f.op.slot(q, {i, j}));
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(KernelCholesky, RecoveryOfCompletedRunRecomputesNothing) {
  CholFixture f(40, 6);
  mem::PlainBackend be;
  ch::run_lp<lp::ChecksumKind::kModular>(be, f.op, f.table);
  lp::RecoveryStats st;
  EXPECT_EQ(ch::recover_lp<lp::ChecksumKind::kModular>(be, f.op, f.table, st), f.op.tiles());
  EXPECT_EQ(st.regions_recomputed, 0u);
  EXPECT_EQ(st.regions_inconsistent, 0u);
}

TEST(KernelCholesky, RecoveryRepairsALostFinalTileFromTheInput) {
  CholFixture f(40, 6);
  mem::PlainBackend be;
  ch::run_lp<lp::ChecksumKind::kCrc32c>(be, f.op, f.table);
  f.l[1 * 40 + 0] = 0.5;  // a lost write in tile (0, 0), which every other tile depends on
  lp::RecoveryStats st;
  EXPECT_EQ(ch::recover_lp<lp::ChecksumKind::kCrc32c>(be, f.op, f.table, st), f.op.tiles());
  EXPECT_EQ(st.regions_recomputed, 1u);  // only POTRF(0, 0): nothing else read the bad value
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
}

// One kernel source, two worlds: the same templates through the simulator's backend
// (round-robin interleaving of 3 logical threads) give the native result bit for bit.
TEST(KernelCholesky, LpThroughTheSimulatorEqualsNativeBitForBit) {
  CholFixture f(37, 5);
  auto be = sim::SimBackend::from_preset("lp-isca18", sim::FlushMode::kClflushopt, 3);
  ch::run_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table);
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
  lp::RecoveryStats st;
  EXPECT_EQ(ch::recover_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table, st), f.op.tiles());
  EXPECT_EQ(st.regions_recomputed, 0u);
}

// Property: random sizes (tiny, prime, non-multiples of bs), checksum kinds and crash points,
// including crashes during recovery; LP recovery + resumed execution reproduce the fault-free
// factor bit for bit under any legal eviction order.
TEST(KernelCholesky, LpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
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
    CholFixture f(n, bs, rng());
    const auto expected = f.reference();
    lp::with_checksum_kind(kind, [&](auto k) {
      constexpr auto K = decltype(k)::value;
      std::uint64_t total_stores;
      {
        CholFixture probe(n, bs);
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
      "[ crashes  ] cholesky: %llu trials, %llu power cuts, %llu recoveries recomputed work, %llu "
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
TEST(KernelCholesky, EpEqualsBaseBitForBitAndRecordsEveryRegion) {
  for (int threads : {1, 2}) {
    CholFixture f(37, 5);
    auto records = aligned_zeroed<scheme::IndexRecordLayout<1>>(ch::ep_records(f.op));
    const scheme::IndexRecordTable<1> rec(records.get(), ch::ep_records(f.op));
    mem::PlainBackend be({}, threads);
    ch::run_ep(be, f.op, rec);
    EXPECT_TRUE(bit_equal(f.result(), f.reference())) << threads;
    lp::RecoveryStats st;
    (void)ch::recover_ep(be, f.op, rec, st);
    EXPECT_EQ(st.regions_recomputed, 0u);
    EXPECT_EQ(st.regions_inconsistent, 0u);
  }
}

TEST(KernelCholesky, EpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
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
    CholFixture f(n, bs, rng());
    const auto expected = f.reference();
    auto records = aligned_zeroed<scheme::IndexRecordLayout<1>>(ch::ep_records(f.op));
    const scheme::IndexRecordTable<1> rec(records.get(), ch::ep_records(f.op));
    std::uint64_t total_stores;
    {
      CholFixture probe(n, bs);
      auto probe_records = aligned_zeroed<scheme::IndexRecordLayout<1>>(ch::ep_records(probe.op));
      EvictionModelBackend counter(1);
      ch::run_ep(counter, probe.op,
                 scheme::IndexRecordTable<1>(probe_records.get(), ch::ep_records(probe.op)));
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
      "[ crashes  ] cholesky ep: %llu trials, %llu power cuts, %llu recoveries recomputed work, "
      "%llu resumed mid-run\n",
      static_cast<unsigned long long>(trials), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(recoveries_with_work),
      static_cast<unsigned long long>(resumed_mid_run));
  EXPECT_GE(crashes, trials);
  EXPECT_GT(recoveries_with_work, trials / 4);
  EXPECT_GT(resumed_mid_run, trials / 4);
}

}  // namespace
}  // namespace pmlab::testing
