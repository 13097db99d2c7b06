// The BEP benchmarks under the simulator's hardware persist barriers (lb, lb-idt, lb-pf, lb++):
// fault-free runs verify, the program is the same as under sw, and crash campaigns all pass.
#include <gtest/gtest.h>

#include "bep_test_util.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/sim/crash_image.hpp"

namespace pmlab::bep {
namespace {

constexpr sim::Barrier kHardware[] = {sim::Barrier::kLb, sim::Barrier::kLbIdt, sim::Barrier::kLbPf,
                                      sim::Barrier::kLbPlusPlus};

TEST(BepHardwareBarrier, RunsVerifyAndCrashCampaignsAllPass) {
  for (const char* k : {"hash", "queue", "sps"})
    for (const auto b : kHardware) {
      SCOPED_TRACE(std::string(k) + " " + std::string(sim::to_string(b)));
      test::expect_simulated_run_verifies(test::bench_spec(k, "tx", 48, 4, 12, b));
      test::expect_all_pass(test::campaign(test::bench_spec(k, "tx", 48, 4, 12, b), 100));
    }
}

// The hardware barriers change when lines reach NVM, never what the program does: the same
// loads and stores as with no persistency (--barrier none), for the benchmarks whose every
// transaction is one-word commits or a Tx; and BSP bulk mode on the base scheme likewise.
TEST(BepHardwareBarrier, SameLoadsAndStoresAsNoPersistency) {
  for (const char* k : {"hash", "queue", "sps"}) {
    const auto np = run::simulate(test::bench_spec(k, "tx", 48, 4, 12, sim::Barrier::kNone)).stats;
    for (const auto b : kHardware) {
      SCOPED_TRACE(std::string(k) + " " + std::string(sim::to_string(b)));
      const auto st = run::simulate(test::bench_spec(k, "tx", 48, 4, 12, b)).stats;
      EXPECT_EQ(st.loads, np.loads);
      EXPECT_EQ(st.stores, np.stores);
    }
    const auto base =
        run::simulate(test::bench_spec(k, "base", 48, 4, 12, sim::Barrier::kNone)).stats;
    auto bsp = test::bench_spec(k, "base", 48, 4, 12, sim::Barrier::kLbPlusPlus);
    bsp.machine.persistency.bsp_epoch_stores = 50;
    bsp.machine.persistency.bsp_log = true;
    bsp.machine.persistency.check_order = true;  // and BSP's epochs keep the persist order
    const auto st = run::simulate(bsp).stats;
    EXPECT_EQ(st.loads, base.loads);
    EXPECT_EQ(st.stores, base.stores);
    ASSERT_TRUE(st.epochs.has_value());
    EXPECT_GT(st.epochs->bsp_barriers, 0u);  // each core's own count: at most stores / 50
    EXPECT_LE(st.epochs->bsp_barriers, st.stores / 50);
  }
}

// Issue 18's acceptance: zero persist-order violations over every benchmark x mechanism. The
// oracle (--check-order) checks each NVM write of a persistent line against the program's epoch
// order, independently of the engine's tags; a violation throws OrderViolation. Its control:
// the same runs with no ordering at all (--barrier none) must violate on some benchmark.
TEST(BepHardwareBarrier, NoPersistOrderViolationOnAnyBenchmarkUnderAnyMechanism) {
  int violating_controls = 0;
  for (const char* k : {"hash", "queue", "rbtree", "sdg", "sps"}) {
    for (const auto b : kHardware) {
      SCOPED_TRACE(std::string(k) + " " + std::string(sim::to_string(b)));
      auto spec = test::bench_spec(k, "tx", 48, 4, 12, b);
      spec.machine.persistency.check_order = true;
      EXPECT_NO_THROW((void)run::simulate(spec));
    }
    auto none = test::bench_spec(k, "tx", 48, 4, 12, sim::Barrier::kNone);
    none.machine.persistency.check_order = true;
    try {
      (void)run::simulate(none);
    } catch (const sim::OrderViolation&) {
      ++violating_controls;
    }
  }
  EXPECT_GT(violating_controls, 0);
}

// Spec D8 end to end: more threads than cores under a hardware barrier is refused.
TEST(BepHardwareBarrier, MoreThreadsThanCoresIsRefused) {
  auto spec = test::bench_spec("hash", "tx", 48, 6, 4, sim::Barrier::kLb);
  spec.verify = true;
  EXPECT_THROW((void)run::simulate(spec), Error);
}

}  // namespace
}  // namespace pmlab::bep
