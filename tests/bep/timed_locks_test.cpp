// --timed-locks: a BEP critical section waits for its lock's previous release, so threads under
// one global lock serialise in time (off, the default, they run in parallel in time); the
// figures stay deterministic, and crash campaigns still recover and still catch the lock-order
// mutant with it on.
#include <gtest/gtest.h>

#include "bep_test_util.hpp"
#include "pmlab/run/sim_session.hpp"

namespace pmlab::bep {
namespace {

std::uint64_t cycles(run::SimRunSpec spec, bool timed) {
  spec.machine.persistency.timed_locks = timed;
  return run::simulate(spec).stats.cycles.value();
}

// rbtree takes one global lock per operation: with time in the lock, 8x the threads (each with
// the same operations) take several times longer; without it they barely do.
TEST(TimedLocks, OneGlobalLockSerialisesTheThreadsInTime) {
  for (const auto b : {sim::Barrier::kSoftware, sim::Barrier::kNone}) {
    auto two = test::bench_spec("rbtree", "tx", 256, 2, 12, b);
    auto sixteen = test::bench_spec("rbtree", "tx", 256, 16, 12, b);
    two.machine.cores = sixteen.machine.cores = 16;
    const double timed =
        static_cast<double>(cycles(sixteen, true)) / static_cast<double>(cycles(two, true));
    const double untimed =
        static_cast<double>(cycles(sixteen, false)) / static_cast<double>(cycles(two, false));
    EXPECT_GT(timed, 4.0) << sim::to_string(b);
    EXPECT_LT(untimed, 2.0) << sim::to_string(b);
  }
}

// The option changes time only: the same run twice gives the same cycles, and it is off by
// default (SimGolden's figures need no change).
TEST(TimedLocks, DeterministicAndOffByDefault) {
  const auto spec = test::bench_spec("sdg", "tx", 64, 4, 12, sim::Barrier::kLbPlusPlus);
  EXPECT_FALSE(spec.machine.persistency.timed_locks);
  EXPECT_EQ(cycles(spec, true), cycles(spec, true));
  EXPECT_GE(cycles(spec, true), cycles(spec, false));
}

// Crash campaigns of the lock-ordered benchmarks recover with time in the locks, and the
// lock-order mutant is still caught (timing must not hide it).
TEST(TimedLocks, CampaignsRecoverAndTheLockOrderMutantIsStillCaught) {
  for (const auto b : {sim::Barrier::kLb, sim::Barrier::kLbPlusPlus}) {
    auto spec = test::bench_spec("rbtree", "tx", 48, 4, 12, b, 4096, 4);
    spec.machine.persistency.timed_locks = true;
    test::expect_all_pass(test::campaign(spec, 80));
    spec.machine.persistency.debug.no_lock_order = true;
    const auto r = test::campaign(spec, 200);
    EXPECT_LT(r.passed, r.trials) << sim::to_string(b);
  }
}

}  // namespace
}  // namespace pmlab::bep
