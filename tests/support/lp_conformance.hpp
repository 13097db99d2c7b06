// LP and EagerRecompute conformance suite, written once and instantiated per kernel trait.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>

#include "eviction_model_backend.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "test_scale.hpp"
#include "test_seed.hpp"
#include "tmm_fixture.hpp"

namespace pmlab::testing {

// Problem sizes (n, bs) of the fault-free tests; the defaults are the matrix kernels' ones.
struct ConformanceSizes {
  std::pair<std::size_t, std::size_t> threads{50, 7};    // base with 1 vs 2 threads
  std::pair<std::size_t, std::size_t> lp{45, 6};         // LP == base for every checksum
  std::pair<std::size_t, std::size_t> completed{40, 6};  // recovering a completed run
  std::pair<std::size_t, std::size_t> sim{37, 5};        // through the simulator; EP == base
};

// Sizes for the matrix kernels' property tests: a third tiny primes, the rest 1..40; bs 1..9.
inline std::pair<std::size_t, std::size_t> random_matrix_size(std::mt19937_64& rng) {
  constexpr std::size_t kPrimes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23};
  const std::size_t n = rng() % 3 == 0 ? kPrimes[rng() % 9] : 1 + rng() % 40;
  return {n, 1 + rng() % 9};
}

// Asserts that every one of a table's slots carries its tag (was written at least once).
inline void expect_every_slot_tagged(const lp::ChecksumSlot* slots, std::size_t count) {
  for (std::size_t s = 0; s < count; ++s)
    ASSERT_EQ(slots[s].tag, lp::ChecksumTable::tag_for(s)) << "slot " << s << " never written";
}

// Defaults shared by the matrix kernels' traits (cholesky, lu, gauss).
struct MatrixKernelDefaults {
  static constexpr ConformanceSizes kSizes{};
  static constexpr std::uint64_t kLpTrials = 3000;
  static std::pair<std::size_t, std::size_t> random_size(std::mt19937_64& rng) {
    return random_matrix_size(rng);
  }
};

// A kernel trait K provides (the kernel's scheme functions are found by argument-dependent
// lookup on K::Fixture::op, like the kernels' own drivers do):
//   Fixture          built as Fixture(n, bs) or Fixture(n, bs, seed); members op, table, n,
//                    result(), reference() (base's result on a fresh working array)
//   kName            "cholesky", ... (printed with the non-vacuity counts)
//   kSizes           ConformanceSizes
//   kLpTrials        LP crash-property trials before PMLAB_TEST_SCALE (EP: 600 for all)
//   random_size(rng) (n, bs) of one property trial
//   ep_records(op)   number of EagerRecompute index records
//   completed(f)     what recover_lp/ep return for a completed run
//   expect_every_slot_written(f)  after a fault-free LP run, every live checksum slot tagged
template <class K>
class LpConformance : public ::testing::Test {};
TYPED_TEST_SUITE_P(LpConformance);

struct EvictionTally {
  std::uint64_t crashes = 0, recoveries_with_work = 0, resumed_mid_run = 0;
};

// One property trial: a power cut before store 1..total of the run; the crash image keeps any
// version of each line since its last flush + fence, from "every line may be stale" to "only
// the lines in flight" (the partial-recovery paths need images where most of the data did
// reach NVM); half of the restarts crash again, often early, i.e. inside recovery. After 12
// attempts a last restart runs without power cuts.
template <class Run, class Recover>
void crash_until_done(std::mt19937_64& rng, std::uint64_t total_stores, Run&& run,
                      Recover&& recover, EvictionTally& tally) {
  using Step = std::invoke_result_t<Recover&, EvictionModelBackend&, lp::RecoveryStats&>;
  constexpr double kBiases[] = {0.4, 0.9, 0.99, 1.0};
  EvictionModelBackend be(rng());
  be.arm(1 + rng() % total_stores);
  bool done = false;
  for (int attempt = 0; attempt < 12 && !done; ++attempt) {
    try {
      Step resume = 0;
      if (attempt > 0) {
        lp::RecoveryStats st;
        resume = recover(be, st);
        if (st.regions_recomputed > 0) ++tally.recoveries_with_work;
        if (resume > 0) ++tally.resumed_mid_run;
      }
      run(be, resume);
      done = true;
    } catch (const PowerCut&) {
      ++tally.crashes;
      be.apply_crash_image(kBiases[rng() % 4]);
      if (rng() % 2) be.arm(1 + rng() % (rng() % 2 ? 64 : total_stores));
    }
  }
  if (!done) {
    be.arm(0);
    lp::RecoveryStats st;
    run(be, recover(be, st));
  }
}

inline void print_tally(const std::string& name, std::uint64_t trials, const EvictionTally& t) {
  std::printf(
      "[ crashes  ] %s: %llu trials, %llu power cuts, %llu recoveries recomputed work, %llu "
      "resumed mid-run\n",
      name.c_str(), static_cast<unsigned long long>(trials),
      static_cast<unsigned long long>(t.crashes),
      static_cast<unsigned long long>(t.recoveries_with_work),
      static_cast<unsigned long long>(t.resumed_mid_run));
}

// The test's fixed seed (PMLAB_TEST_SEED to replay or explore: tests/support/test_seed.hpp).
inline std::uint64_t conformance_seed() {
  return test::test_seed();
}

// Zeroed EagerRecompute index records for f's operands, and the table over them.
template <class K>
struct EpRecords {
  std::size_t count;
  std::unique_ptr<scheme::IndexRecordLayout<1>[], FreeDeleter> records;
  scheme::IndexRecordTable<1> table;
  explicit EpRecords(const typename K::Fixture& f)
      : count(K::ep_records(f.op)),
        records(aligned_zeroed<scheme::IndexRecordLayout<1>>(count)),
        table(records.get(), count) {}
};

TYPED_TEST_P(LpConformance, ResultDoesNotDependOnThreadsButOnBlockSize) {
  using K = TypeParam;
  const auto [n, bs] = K::kSizes.threads;
  typename K::Fixture f(n, bs);
  auto ref = f.reference();
  mem::PlainBackend be2({}, 2);
  run_base(be2, f.op);
  EXPECT_TRUE(bit_equal(f.result(), ref));
}

TYPED_TEST_P(LpConformance, LpEqualsBaseBitForBitForEveryChecksumAndThreadCount) {
  using K = TypeParam;
  const auto [n, bs] = K::kSizes.lp;
  for (auto k : lp::kAllChecksumKinds) {
    for (int threads : {1, 2}) {
      typename K::Fixture f(n, bs);
      mem::PlainBackend be({}, threads);
      lp::with_checksum_kind(k,
                             [&](auto kind) { run_lp<decltype(kind)::value>(be, f.op, f.table); });
      EXPECT_TRUE(bit_equal(f.result(), f.reference())) << lp::to_string(k) << " " << threads;
      K::expect_every_slot_written(f);
    }
  }
}

TYPED_TEST_P(LpConformance, RecoveryOfCompletedRunRecomputesNothing) {
  using K = TypeParam;
  const auto [n, bs] = K::kSizes.completed;
  typename K::Fixture f(n, bs);
  mem::PlainBackend be;
  run_lp<lp::ChecksumKind::kModular>(be, f.op, f.table);
  lp::RecoveryStats st;
  EXPECT_EQ(recover_lp<lp::ChecksumKind::kModular>(be, f.op, f.table, st), K::completed(f));
  EXPECT_EQ(st.regions_recomputed, 0u);
  EXPECT_EQ(st.regions_inconsistent, 0u);
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
}

// One kernel source, two worlds: the same templates through the simulator's backend
// (round-robin interleaving of 3 logical threads) give the native result bit for bit.
TYPED_TEST_P(LpConformance, LpThroughTheSimulatorEqualsNativeBitForBit) {
  using K = TypeParam;
  const auto [n, bs] = K::kSizes.sim;
  typename K::Fixture f(n, bs);
  auto be = sim::SimBackend::from_preset("lp-isca18", sim::FlushMode::kClflushopt, 3);
  run_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table);
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
  lp::RecoveryStats st;
  EXPECT_EQ(recover_lp<lp::ChecksumKind::kAdler32>(be, f.op, f.table, st), K::completed(f));
  EXPECT_EQ(st.regions_recomputed, 0u);
}

// Property: random sizes (the kernel's: tiny, prime, non-multiples of bs), checksum kinds and
// crash points, including crashes during recovery; LP recovery + resumed execution reproduce
// the fault-free result bit for bit under any legal eviction order.
TYPED_TEST_P(LpConformance, LpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  using K = TypeParam;
  const std::uint64_t seed = conformance_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const std::uint64_t trials = pmlab::test::scaled_trials(K::kLpTrials);
  EvictionTally tally;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const auto size = K::random_size(rng);
    const std::size_t n = size.first, bs = size.second;
    auto kind = lp::kAllChecksumKinds[rng() % 5];
    // A one-value tile (bs = 1) is Adler-32's blind spot: a stale value shares its checksum
    // about once in 10^5 (LpChecksum.Adler32MissesSomeStaleValues..., docs/lp-checksums.md), so
    // such trials use CRC32C; larger regions keep Adler-32 in the draw.
    if (kind == lp::ChecksumKind::kAdler32 && bs == 1) kind = lp::ChecksumKind::kCrc32c;
    SCOPED_TRACE(::testing::Message()
                 << "trial " << t << " n=" << n << " bs=" << bs << " " << lp::to_string(kind));
    typename K::Fixture f(n, bs, rng());
    const auto expected = f.reference();
    lp::with_checksum_kind(kind, [&](auto k) {
      constexpr auto C = decltype(k)::value;
      std::uint64_t total_stores;
      {
        typename K::Fixture probe(n, bs);
        EvictionModelBackend counter(1);
        run_lp<C>(counter, probe.op, probe.table);
        total_stores = std::max<std::uint64_t>(1, counter.stores());
      }
      crash_until_done(
          rng, total_stores,
          [&](EvictionModelBackend& be, auto first) { run_lp<C>(be, f.op, f.table, first); },
          [&](EvictionModelBackend& be, lp::RecoveryStats& st) {
            return recover_lp<C>(be, f.op, f.table, st);
          },
          tally);
    });
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  print_tally(K::kName, trials, tally);
  // Not vacuous: many crashes really required recomputation.
  EXPECT_GE(tally.crashes, trials);
  EXPECT_GT(tally.recoveries_with_work, trials / 4);
  EXPECT_GT(tally.resumed_mid_run, trials / 10);
}

// EagerRecompute: each region flushed and recorded, in-place ones marked in flight first.
TYPED_TEST_P(LpConformance, EpEqualsBaseBitForBitAndRecordsEveryRegion) {
  using K = TypeParam;
  const auto [n, bs] = K::kSizes.sim;
  for (int threads : {1, 2}) {
    typename K::Fixture f(n, bs);
    const EpRecords<K> rec(f);
    mem::PlainBackend be({}, threads);
    run_ep(be, f.op, rec.table);
    EXPECT_TRUE(bit_equal(f.result(), f.reference())) << threads;
    lp::RecoveryStats st;
    EXPECT_EQ(recover_ep(be, f.op, rec.table, st), K::completed(f));
    EXPECT_EQ(st.regions_recomputed, 0u);
    EXPECT_EQ(st.regions_inconsistent, 0u);
  }
}

TYPED_TEST_P(LpConformance, EpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder) {
  using K = TypeParam;
  const std::uint64_t seed = conformance_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const std::uint64_t trials = pmlab::test::scaled_trials(600);
  EvictionTally tally;
  for (std::uint64_t t = 0; t < trials; ++t) {
    const auto size = K::random_size(rng);
    const std::size_t n = size.first, bs = size.second;
    SCOPED_TRACE(::testing::Message() << "trial " << t << " n=" << n << " bs=" << bs);
    typename K::Fixture f(n, bs, rng());
    const auto expected = f.reference();
    const EpRecords<K> rec(f);
    std::uint64_t total_stores;
    {
      typename K::Fixture probe(n, bs);
      const EpRecords<K> probe_rec(probe);
      EvictionModelBackend counter(1);
      run_ep(counter, probe.op, probe_rec.table);
      total_stores = std::max<std::uint64_t>(1, counter.stores());
    }
    crash_until_done(
        rng, total_stores,
        [&](EvictionModelBackend& be, auto first) { run_ep(be, f.op, rec.table, first); },
        [&](EvictionModelBackend& be, lp::RecoveryStats& st) {
          return recover_ep(be, f.op, rec.table, st);
        },
        tally);
    ASSERT_TRUE(bit_equal(f.result(), expected));
  }
  print_tally(std::string(K::kName) + " ep", trials, tally);
  EXPECT_GE(tally.crashes, trials);
  EXPECT_GT(tally.recoveries_with_work, trials / 4);
  EXPECT_GT(tally.resumed_mid_run, trials / 4);
}

REGISTER_TYPED_TEST_SUITE_P(LpConformance, ResultDoesNotDependOnThreadsButOnBlockSize,
                            LpEqualsBaseBitForBitForEveryChecksumAndThreadCount,
                            RecoveryOfCompletedRunRecomputesNothing,
                            LpThroughTheSimulatorEqualsNativeBitForBit,
                            LpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder,
                            EpEqualsBaseBitForBitAndRecordsEveryRegion,
                            EpRecoveryIsExactFromRandomCrashPointsUnderAnyEvictionOrder);

// Names the instantiation's single type by the kernel, e.g. KernelCholesky/LpConformance/cholesky.
struct KernelNameOf {
  template <class K>
  static std::string GetName(int) {
    return K::kName;
  }
};

}  // namespace pmlab::testing
