// SPS (seed 004 BEP): fault-free runs on every backend, crash campaigns under the software
// barrier, and the negative control without barriers.
#include <gtest/gtest.h>

#include <vector>

#include "bep_test_util.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/sps.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/persist/persister.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::bep {
namespace {

using EpNative = mem::NativeBackend<persist::CpuPersist<persist::FlushKind::kClflush>>;

template <mem::Backend B>
sps::Check run_native(B& be, const sps::Shape& s, bool tx) {
  std::vector<Entry> a(s.n);
  std::vector<TxLog> logs(s.threads);
  sps::init(a.data(), s);
  if (tx) {
    EpochTracked<B> et(be, configured_barrier(be));
    sps::run_tx(et, a.data(), logs.data(), s);
    for (std::size_t t = 0; t < s.threads; ++t) EXPECT_EQ(tx_done(be, logs[t]), s.ops);
  } else {
    sps::run_base(be, a.data(), s);
  }
  return sps::check(a.data(), s);
}

TEST(BepSps, FaultFreeOnPlainBackendMatchesTheReplay) {
  mem::PlainBackend be;
  const sps::Shape s{64, 1, 300, 3};
  for (const bool tx : {true, false}) {
    const auto c = run_native(be, s, tx);
    EXPECT_EQ(c.bad, 0u) << c.first;
    EXPECT_EQ(c.entries, 64u);
  }
}

// Real threads, real flushes: the same content as the replay whatever the interleaving.
TEST(BepSps, NativeEpochPersistencyWithFourThreads) {
  EpNative be({}, 4);
  const sps::Shape s{256, 4, 2000, 9};
  const auto c = run_native(be, s, true);
  EXPECT_EQ(c.bad, 0u) << c.first;
}

TEST(BepSps, NativeEpochPersistencyStressEightThreads) {
  EpNative be({}, 8);
  const sps::Shape s{1024, 8, 10000, 11};
  const auto c = run_native(be, s, true);
  EXPECT_EQ(c.bad, 0u) << c.first;
}

TEST(BepSps, SimulatedRunsVerifyUnderEveryBarrierWithoutCrash) {
  for (const auto b : {sim::Barrier::kSoftware, sim::Barrier::kNone})
    for (const char* scheme : {"tx", "base"})
      test::expect_simulated_run_verifies(test::bench_spec("sps", scheme, 48, 4, 12, b));
}

TEST(BepSps, CrashCampaignUnderTheSoftwareBarrierAllPass) {
  const auto r = test::campaign(test::bench_spec("sps", "tx", 40, 4, 10), 200);
  test::expect_all_pass(r);
}

// Negative control: the same campaign with the barriers off must fail some trials.
TEST(BepSps, CrashCampaignWithoutBarriersFails) {
  const auto r = test::campaign(test::bench_spec("sps", "tx", 40, 4, 10, sim::Barrier::kNone), 200);
  EXPECT_LT(r.passed, r.trials);
}

// Spec D8: a hardware barrier tags lines by core, so thread t must be core t.
TEST(BepEpochTracked, HardwareBarrierRefusesMoreThreadsThanCores) {
  auto params = test::bench_spec("sps", "tx", 8, 4, 1).machine;
  params.cores = 2;
  params.persistency.barrier = sim::Barrier::kLb;
  sim::SimBackend be(params, sim::FlushMode::kNone, 4);
  try {
    EpochTracked<sim::SimBackend> et(be, sim::Barrier::kLb);
    FAIL() << "accepted 4 threads on 2 cores";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("one thread per core"), std::string::npos) << e.what();
  }
}

// Natively only the software barrier exists.
TEST(BepEpochTracked, NativeRefusesAHardwareBarrier) {
  mem::PlainBackend be;
  EXPECT_THROW(EpochTracked<mem::PlainBackend>(be, sim::Barrier::kLbPlusPlus), Error);
}

}  // namespace
}  // namespace pmlab::bep
