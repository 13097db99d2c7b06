// WAL / checkpoint / hybrid conformance suites, written once and instantiated per kernel trait.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "pmlab/mem/native_backend.hpp"
#include "rival_crash.hpp"
#include "test_scale.hpp"

namespace pmlab::testing {

// A kernel trait R provides (the schemes are built by rival_crash.hpp's make_case from
// R::Data, see there):
//   Data                 the kernel's data for make_case (kHasHybrid, op, pool, reset, exact...)
//   kName                "cholesky", ...
//   data(n, bs)          std::shared_ptr<Data> with the kernel's default seed
//   random_data(rng)     one property trial's instance (the kernel's size/shape distribution)
//   kFaultFreeSizes      (n, bs) pairs for the fault-free test
//   kEveryOpSizes        (n, bs) pairs of the small runs cut before every op
//   kWalResumedDivisor   WAL property: mid-run resumes must exceed trials / this
//   cp_every(rng)        checkpoint interval of one property trial (0 = the kernel's default)
// and for kernels with a hybrid scheme (HybridConformance):
//   kLateCrashCases      (n, bs, parts) of the hybrid-vs-eager late-crash comparison
// Defaults shared by the matrix-shaped kernels' traits (cholesky, lu, gauss, conv2d).
struct MatrixRivalDefaults {
  static constexpr std::pair<std::size_t, std::size_t> kFaultFreeSizes[] = {
      {1, 1}, {2, 1}, {7, 3}, {17, 4}, {33, 40}, {45, 6}};
  static constexpr std::uint64_t kWalResumedDivisor = 4;
  static std::size_t cp_every(std::mt19937_64& rng) { return rng() % 4; }
};

template <class R>
class RivalConformance : public ::testing::Test {};
TYPED_TEST_SUITE_P(RivalConformance);

template <class R>
class HybridConformance : public ::testing::Test {};
TYPED_TEST_SUITE_P(HybridConformance);

// Every scheme on the native backend gives base's result bit for bit (1 and 2 threads), and
// recovering the completed run rolls back and recomputes nothing.
TYPED_TEST_P(RivalConformance, EverySchemeEqualsBaseBitForBitAndACompletedRunNeedsNoRecovery) {
  using R = TypeParam;
  for (auto [n, bs] : R::kFaultFreeSizes)
    for (int threads : {1, 2}) {
      mem::PlainBackend be({}, threads);
      expect_fault_free_exact(be, R::data(n, bs), Rival::kWal, 0);
      for (std::size_t every : {1, 2, 0})
        expect_fault_free_exact(be, R::data(n, bs), Rival::kCp, every);
      if constexpr (R::Data::kHasHybrid) {
        for (std::size_t parts : {1, 3, 8})
          expect_fault_free_exact(be, R::data(n, bs), Rival::kHr, parts);
      }
    }
}

TYPED_TEST_P(RivalConformance, EverySchemeRecoversExactlyFromAPowerCutAtEveryOp) {
  using R = TypeParam;
  for (auto [n, bs] : R::kEveryOpSizes) {
    EXPECT_GT(crash_at_every_op(make_case<CrashBackend>(R::data(n, bs), Rival::kWal, 0)), 10u);
    for (std::size_t every : {1, 2})
      EXPECT_GT(crash_at_every_op(make_case<CrashBackend>(R::data(n, bs), Rival::kCp, every)), 10u);
    if constexpr (R::Data::kHasHybrid) {
      for (std::size_t parts : {1, 2})
        EXPECT_GT(crash_at_every_op(make_case<CrashBackend>(R::data(n, bs), Rival::kHr, parts)),
                  10u);
    }
  }
}

TYPED_TEST_P(RivalConformance, WalRecoveryIsExactFromRandomCrashPoints) {
  using R = TypeParam;
  const std::uint64_t trials = pmlab::test::scaled_trials(2000, 400);
  const auto t =
      crash_property((std::string(R::kName) + " wal").c_str(), trials, [](std::mt19937_64& rng) {
        return make_case<CrashBackend>(R::random_data(rng), Rival::kWal, 0);
      });
  EXPECT_EQ(t.trials, trials);
  EXPECT_GE(t.cuts, trials);
  EXPECT_GT(t.rolled_back, trials / 10);
  EXPECT_GT(t.resumed_mid_run, trials / R::kWalResumedDivisor);
}

TYPED_TEST_P(RivalConformance, CheckpointRecoveryIsExactFromRandomCrashPoints) {
  using R = TypeParam;
  const std::uint64_t trials = pmlab::test::scaled_trials(2000, 400);
  const auto t =
      crash_property((std::string(R::kName) + " cp").c_str(), trials, [](std::mt19937_64& rng) {
        auto d = R::random_data(rng);
        return make_case<CrashBackend>(d, Rival::kCp, R::cp_every(rng));
      });
  EXPECT_EQ(t.trials, trials);
  EXPECT_GE(t.cuts, trials);
  EXPECT_GT(t.resumed_mid_run, trials / 10);
}

REGISTER_TYPED_TEST_SUITE_P(RivalConformance,
                            EverySchemeEqualsBaseBitForBitAndACompletedRunNeedsNoRecovery,
                            EverySchemeRecoversExactlyFromAPowerCutAtEveryOp,
                            WalRecoveryIsExactFromRandomCrashPoints,
                            CheckpointRecoveryIsExactFromRandomCrashPoints);

TYPED_TEST_P(HybridConformance, HybridRedoesLessWorkThanEagerRecomputeAfterLateCrashes) {
  using R = TypeParam;
  for (auto [n, bs, parts] : R::kLateCrashCases)
    expect_hybrid_redoes_less_than_eager(R::data(n, bs), parts, 12);
}

TYPED_TEST_P(HybridConformance, HybridRecoveryIsExactFromRandomCrashPoints) {
  using R = TypeParam;
  const std::uint64_t trials = pmlab::test::scaled_trials(2000, 400);
  const auto t =
      crash_property((std::string(R::kName) + " hr").c_str(), trials, [](std::mt19937_64& rng) {
        constexpr std::size_t kParts[] = {1, 2, 3, 4, 8};
        auto d = R::random_data(rng);
        return make_case<CrashBackend>(d, Rival::kHr, kParts[rng() % 5]);
      });
  EXPECT_EQ(t.trials, trials);
  EXPECT_GE(t.cuts, trials);
  EXPECT_GT(t.rolled_back, trials / 10);
  EXPECT_GT(t.recomputed, trials / 10);
  EXPECT_GT(t.resumed_mid_run, trials / 4);
}

REGISTER_TYPED_TEST_SUITE_P(HybridConformance,
                            HybridRedoesLessWorkThanEagerRecomputeAfterLateCrashes,
                            HybridRecoveryIsExactFromRandomCrashPoints);

// Names the instantiation's single type by the kernel, e.g. KernelLuRivals/RivalConformance/lu.
struct RivalKernelName {
  template <class R>
  static std::string GetName(int) {
    return R::kName;
  }
};

}  // namespace pmlab::testing
