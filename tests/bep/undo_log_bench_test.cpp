// rbtree and sdg (seed 004 BEP), the two lock-based benchmarks with an undo log, through the
// catalog: simulated runs under every barrier, fibers, and crash campaigns with their control.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "bep_test_util.hpp"

namespace pmlab::bep {
namespace {

class BepUndoLogBench : public ::testing::TestWithParam<const char*> {
 protected:
  [[nodiscard]] std::string kernel() const { return GetParam(); }
};

TEST_P(BepUndoLogBench, SimulatedRunsVerifyWithoutCrash) {
  for (const auto b : {sim::Barrier::kSoftware, sim::Barrier::kNone})
    for (const char* scheme : {"tx", "base"})
      test::expect_simulated_run_verifies(test::bench_spec(kernel(), scheme, 64, 4, 16, b));
}

// Fine-grained interleaving (fibers switching every few ops): the lock is a simulated atomic
// section (SimBackend::atomically), so ops of different threads never interleave inside it.
TEST_P(BepUndoLogBench, FiberInterleavingKeepsTheLockAtomic) {
  for (const char* scheme : {"tx", "base"}) {
    auto spec = test::bench_spec(kernel(), scheme, 64, 4, 16);
    spec.machine.interleave_quantum = 3;
    test::expect_simulated_run_verifies(spec);
  }
}

// The barrier mode changes when lines persist, never the program: the same loads and stores
// (and, the simulator being deterministic, the same final content) under sw and none.
TEST_P(BepUndoLogBench, BarrierModeDoesNotChangeTheProgram) {
  const auto sw = run::simulate(test::bench_spec(kernel(), "tx", 64, 4, 16));
  const auto none = run::simulate(test::bench_spec(kernel(), "tx", 64, 4, 16, sim::Barrier::kNone));
  EXPECT_EQ(sw.stats.loads, none.stats.loads);
  EXPECT_EQ(sw.stats.stores, none.stats.stores);
  EXPECT_GT(sw.stats.fences, 0u);
  EXPECT_EQ(none.stats.fences, 0u);
}

// The hardware barriers (the epoch engine): the same program as sw, and the same final content.
TEST_P(BepUndoLogBench, HardwareBarriersRunTheSameProgramAndVerify) {
  const auto sw = run::simulate(test::bench_spec(kernel(), "tx", 64, 4, 16));
  for (const auto b :
       {sim::Barrier::kLb, sim::Barrier::kLbIdt, sim::Barrier::kLbPf, sim::Barrier::kLbPlusPlus}) {
    const auto spec = test::bench_spec(kernel(), "tx", 64, 4, 16, b);
    const auto hw = run::simulate(spec);
    EXPECT_EQ(hw.stats.loads, sw.stats.loads) << sim::to_string(b);
    EXPECT_EQ(hw.stats.stores, sw.stats.stores) << sim::to_string(b);
    test::expect_simulated_run_verifies(spec);
  }
}

TEST_P(BepUndoLogBench, CrashCampaignUnderTheSoftwareBarrierAllPass) {
  const auto r = test::campaign(test::bench_spec(kernel(), "tx", 48, 4, 12), 200);
  test::expect_all_pass(r);
  std::uint64_t in_recovery = 0, undone = 0;
  for (const auto& t : r.results) {
    in_recovery += t.crashes_in_recovery;
    undone += t.recovery.regions_recomputed;
  }
  EXPECT_GT(in_recovery, 0u);  // some restarts were cut inside the rollback
  EXPECT_GT(undone, 0u);       // and some crashes left an ACTIVE log to undo
}

// A lock carries the dependence on its previous holder's commit: at a 4 KiB LLC, which persists a
// whole later transaction while the holder's commit epoch is still cached, every hardware
// barrier recovers bit-exactly. Before the critical section read the holder's commit word
// (EpochTracked::order_critical_sections_after), rbtree failed 3 of 80 of these trials under each
// barrier (docs/bep.md), which the same campaign with `debug.no_lock_order` must show again.
TEST_P(BepUndoLogBench, HardwareBarriersAtASmallLlcRecoverWithTheLockOrder) {
  for (const auto b : {sim::Barrier::kLb, sim::Barrier::kLbPlusPlus}) {
    // docs/bep.md's small machine: 4 cores, 1 KiB L1s, a 4 KiB 4-way LLC.
    const auto spec = test::bench_spec(kernel(), "tx", 48, 4, 12, b, 4096, 4);
    test::expect_all_pass(test::campaign(spec, 80));
    if (kernel() == "rbtree") {
      // Negative control: the same campaign without the lock order fails some trials again
      // (7 of 200 under lb, 8 under lb++ at these seeds).
      auto unordered = spec;
      unordered.machine.persistency.debug.no_lock_order = true;
      const auto r = test::campaign(unordered, 200);
      EXPECT_LT(r.passed, r.trials) << sim::to_string(b);
    }
  }
}

// Negative control: the same campaign with the barriers off must fail some trials.
TEST_P(BepUndoLogBench, CrashCampaignWithoutBarriersFails) {
  const auto r =
      test::campaign(test::bench_spec(kernel(), "tx", 48, 4, 12, sim::Barrier::kNone), 200);
  EXPECT_LT(r.passed, r.trials);
}

INSTANTIATE_TEST_SUITE_P(RbtreeAndSdg, BepUndoLogBench, ::testing::Values("rbtree", "sdg"),
                         [](const auto& param_info) { return std::string(param_info.param); });

}  // namespace
}  // namespace pmlab::bep
