// conv2d: the definition bit for bit, LP == base, exact LP recovery from any crash point.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "../support/eviction_model_backend.hpp"
#include "../support/test_scale.hpp"
#include "../support/test_seed.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/conv2d.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::testing {
namespace {

namespace cv = kernels::conv2d;

struct ConvFixture {
  std::size_t n, bs, w;
  std::unique_ptr<double[], FreeDeleter> in, ker, out;
  std::unique_ptr<lp::ChecksumSlot[], FreeDeleter> slots;
  cv::Operands op;
  lp::ChecksumTable table;

  ConvFixture(std::size_t n_, std::size_t bs_, std::size_t w_, std::uint64_t seed = 5)
      : n(n_),
        bs(bs_),
        w(w_),
        in(aligned_zeroed<double>(n * n)),
        ker(aligned_zeroed<double>(w * w)),
        out(aligned_zeroed<double>(n * n)) {
    cv::fill_input(in.get(), n, ker.get(), w, seed);
    op = cv::Operands{{in.get(), n, n}, ker.get(), w, {out.get(), n, n}, n, bs};
    slots = aligned_zeroed<lp::ChecksumSlot>(op.table_slots());
    table = lp::ChecksumTable(slots.get(), op.table_slots());
  }
  [[nodiscard]] std::vector<double> result() const { return {out.get(), out.get() + n * n}; }
  // The definition, written independently: signed indices, explicit bounds checks.
  [[nodiscard]] std::vector<double> direct() const {
    std::vector<double> y(n * n);
    const auto sn = static_cast<long>(n), r = static_cast<long>(w / 2);
    for (long i = 0; i < sn; ++i)
      for (long j = 0; j < sn; ++j) {
        double s = 0.0;
        for (long p = 0; p < static_cast<long>(w); ++p)
          for (long q = 0; q < static_cast<long>(w); ++q) {
            const long ii = i + r - p, jj = j + r - q;
            if (ii >= 0 && ii < sn && jj >= 0 && jj < sn)
              s += ker[p * static_cast<long>(w) + q] * in[ii * sn + jj];
          }
        y[i * sn + j] = s;
      }
    return y;
  }
};

TEST(KernelConv2d, BaseEqualsTheDirectDefinitionBitForBit) {
  for (auto [n, bs, w] : {std::tuple{1, 1, 1},
                          {2, 1, 1},
                          {3, 2, 3},
                          {5, 2, 5},
                          {7, 3, 7},
                          {17, 4, 5},
                          {33, 40, 9},
                          {64, 16, 3},
                          {31, 5, 31}}) {
    ConvFixture f(n, bs, w);
    mem::PlainBackend be;
    cv::run_base(be, f.op);
    EXPECT_TRUE(bit_equal(f.result(), f.direct())) << n << " " << bs << " " << w;
  }
}

TEST(KernelConv2d, DefaultWidthIsFiveNarrowedToTheImage) {
  EXPECT_EQ(cv::width_for(0, 100), 5u);
  EXPECT_EQ(cv::width_for(0, 5), 5u);
  EXPECT_EQ(cv::width_for(0, 4), 3u);
  EXPECT_EQ(cv::width_for(0, 2), 1u);
  EXPECT_EQ(cv::width_for(0, 1), 1u);
  EXPECT_EQ(cv::width_for(7, 100), 7u);
}

TEST(KernelConv2d, LpEqualsBaseBitForBitForEveryChecksumAndThreadCount) {
  for (auto k : lp::kAllChecksumKinds) {
    for (int threads : {1, 2}) {
      ConvFixture f(45, 6, 5);
      mem::PlainBackend be({}, threads);
      lp::with_checksum_kind(
          k, [&](auto kind) { cv::run_lp<decltype(kind)::value>(be, f.op, f.table); });
      EXPECT_TRUE(bit_equal(f.result(), f.direct())) << lp::to_string(k) << " " << threads;
      for (std::size_t s = 0; s < f.op.table_slots(); ++s)
        ASSERT_EQ(f.slots[s].tag, lp::ChecksumTable::tag_for(s));
    }
  }
}

TEST(KernelConv2d, RecoveryRecomputesExactlyTheBadAndTheMissingBlocks) {
  ConvFixture f(40, 6, 5);  // 7 blocks
  mem::PlainBackend be;
  cv::run_lp<lp::ChecksumKind::kModular>(be, f.op, f.table);
  lp::RecoveryStats st;
  cv::recover_lp<lp::ChecksumKind::kModular>(be, f.op, f.table, st);
  EXPECT_EQ(st.regions_recomputed, 0u);
  f.out[13 * 40 + 7] = 1.5;  // block 2
  f.slots[5].tag = 0;        // block 5's checksum never reached NVM
  lp::RecoveryStats st2;
  cv::recover_lp<lp::ChecksumKind::kModular>(be, f.op, f.table, st2);
  EXPECT_EQ(st2.regions_inconsistent, 1u);
  EXPECT_EQ(st2.regions_unwritten, 1u);
  EXPECT_EQ(st2.regions_recomputed, 2u);
  EXPECT_TRUE(bit_equal(f.result(), f.direct()));
}

// The same templates through the simulator's backend give the native result bit for bit.
TEST(KernelConv2d, LpThroughTheSimulatorEqualsNativeBitForBit) {
  ConvFixture f(37, 5, 5);
  auto be = sim::SimBackend::from_preset("lp-isca18", sim::FlushMode::kClflushopt, 3);
  cv::run_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table);
  EXPECT_TRUE(bit_equal(f.result(), f.direct()));
  lp::RecoveryStats st;
  cv::recover_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table, st);
  EXPECT_EQ(st.regions_recomputed, 0u);
}

// Property: random sizes (tiny, prime, non-multiples of bs), widths, checksum kinds and crash
// points, crashes during recovery included: the result is the fault-free one, bit for bit.
TEST(KernelConv2d, LpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const std::size_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23};
  constexpr double kBiases[] = {0.4, 0.9, 0.99, 1.0};
  std::uint64_t trials = pmlab::test::scaled_trials(2500), crashes = 0, recoveries_with_work = 0,
                partial = 0;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const std::size_t n = rng() % 3 == 0 ? primes[rng() % 9] : 1 + rng() % 32, bs = 1 + rng() % 8;
    const std::size_t w = std::min<std::size_t>(2 * (rng() % 4) + 1, n % 2 ? n : n - 1);
    const auto kind = lp::kAllChecksumKinds[rng() % 5];
    SCOPED_TRACE(::testing::Message() << "trial " << t << " n=" << n << " bs=" << bs << " w=" << w
                                      << " " << lp::to_string(kind));
    ConvFixture f(n, bs, w, rng());
    const auto expected = f.direct();
    lp::with_checksum_kind(kind, [&](auto k) {
      constexpr auto K = decltype(k)::value;
      std::uint64_t total_stores;
      {
        ConvFixture probe(n, bs, w);
        EvictionModelBackend counter(1);
        cv::run_lp<K>(counter, probe.op, probe.table);
        total_stores = std::max<std::uint64_t>(1, counter.stores());
      }
      EvictionModelBackend be(rng());
      be.arm(1 + rng() % total_stores);
      bool done = false;
      for (int attempt = 0; attempt < 12 && !done; ++attempt) {
        try {
          if (attempt == 0) {
            cv::run_lp<K>(be, f.op, f.table);
          } else {
            lp::RecoveryStats st;
            cv::recover_lp<K>(be, f.op, f.table, st);
            if (st.regions_recomputed > 0) ++recoveries_with_work;
            if (st.regions_recomputed > 0 && st.regions_recomputed < f.op.blocks()) ++partial;
          }
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
        cv::recover_lp<K>(be, f.op, f.table, st);
      }
    });
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  std::printf(
      "[ crashes  ] conv2d: %llu trials, %llu power cuts, %llu recoveries recomputed work, %llu "
      "only part\n",
      static_cast<unsigned long long>(trials), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(recoveries_with_work),
      static_cast<unsigned long long>(partial));
  EXPECT_GE(crashes, trials);
  EXPECT_GT(recoveries_with_work, trials / 4);
  EXPECT_GT(partial, trials / 10);  // recovery kept blocks that had reached NVM whole
}

// EagerRecompute: each block flushed, then recorded as done.
TEST(KernelConv2d, EpEqualsBaseBitForBitAndRecordsEveryBlock) {
  for (int threads : {1, 2}) {
    ConvFixture f(45, 6, 5);
    auto records = aligned_zeroed<scheme::IndexRecordLayout<1>>(f.op.blocks());
    const scheme::IndexRecordTable<1> rec(records.get(), f.op.blocks());
    mem::PlainBackend be({}, threads);
    cv::run_ep(be, f.op, rec);
    EXPECT_TRUE(bit_equal(f.result(), f.direct())) << threads;
    lp::RecoveryStats st;
    cv::recover_ep(be, f.op, rec, st);
    EXPECT_EQ(st.regions_recomputed, 0u);
  }
}

TEST(KernelConv2d, EpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  constexpr double kBiases[] = {0.4, 0.9, 0.99, 1.0};
  std::uint64_t trials = pmlab::test::scaled_trials(600), crashes = 0, partial = 0;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const std::size_t n = 1 + rng() % 32, bs = 1 + rng() % 8;
    const std::size_t w = std::min<std::size_t>(2 * (rng() % 4) + 1, n % 2 ? n : n - 1);
    SCOPED_TRACE(::testing::Message() << "trial " << t << " n=" << n << " bs=" << bs << " w=" << w);
    ConvFixture f(n, bs, w, rng());
    const auto expected = f.direct();
    auto records = aligned_zeroed<scheme::IndexRecordLayout<1>>(f.op.blocks());
    const scheme::IndexRecordTable<1> rec(records.get(), f.op.blocks());
    std::uint64_t total_stores;
    {
      ConvFixture probe(n, bs, w);
      auto probe_records = aligned_zeroed<scheme::IndexRecordLayout<1>>(probe.op.blocks());
      EvictionModelBackend counter(1);
      cv::run_ep(counter, probe.op,
                 scheme::IndexRecordTable<1>(probe_records.get(), probe.op.blocks()));
      total_stores = std::max<std::uint64_t>(1, counter.stores());
    }
    EvictionModelBackend be(rng());
    be.arm(1 + rng() % total_stores);
    bool done = false;
    for (int attempt = 0; attempt < 12 && !done; ++attempt) {
      try {
        if (attempt == 0) {
          cv::run_ep(be, f.op, rec);
        } else {
          lp::RecoveryStats st;
          cv::recover_ep(be, f.op, rec, st);
          if (st.regions_recomputed > 0 && st.regions_recomputed < f.op.blocks()) ++partial;
        }
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
      cv::recover_ep(be, f.op, rec, st);
    }
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  std::printf("[ crashes  ] conv2d ep: %llu trials, %llu power cuts, %llu recoveries kept part\n",
              static_cast<unsigned long long>(trials), static_cast<unsigned long long>(crashes),
              static_cast<unsigned long long>(partial));
  EXPECT_GE(crashes, trials);
  EXPECT_GT(partial, trials / 4);
}

}  // namespace
}  // namespace pmlab::testing
