// The BEP benchmarks under the simulator's hardware persist barriers (lb, lb-idt, lb-pf, lb++):
// fault-free runs verify, the program is the same as under sw, and crash campaigns all pass.
#include <gtest/gtest.h>

#include "bep_test_util.hpp"
#include "pmlab/core/error.hpp"

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

// Spec D8 end to end: more threads than cores under a hardware barrier is refused.
TEST(BepHardwareBarrier, MoreThreadsThanCoresIsRefused) {
  auto spec = test::bench_spec("hash", "tx", 48, 6, 4, sim::Barrier::kLb);
  spec.verify = true;
  EXPECT_THROW((void)run::simulate(spec), Error);
}

}  // namespace
}  // namespace pmlab::bep
