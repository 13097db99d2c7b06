// First-order timing rules: hit/miss latencies, flush completion, sfence stalls, bounded write
// queue.
#include <gtest/gtest.h>

#include "machine_probe.hpp"
#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::clk;
using testing::ParamsBuilder;

// ParamsBuilder: L1 2, L2 (private) 5, LLC 10 cycles, NVM read 100 / write 200 cycles,
// flush issue 1, fence 1.

TEST(SimTiming, AccessLatencyIsThatOfTheLevelThatServesIt) {
  Machine m(ParamsBuilder().l1(1, 1).l2(1, 2).llc(4, 4).build());
  m.load(0, LineAddr(1));
  EXPECT_EQ(clk(m), 10u + 100u);  // LLC miss: LLC latency + NVM read
  m.load(0, LineAddr(1));
  EXPECT_EQ(clk(m), 112u);  // L1 hit
  m.load(0, LineAddr(2));
  m.load(0, LineAddr(1));  // L1 miss, private L2 hit
  EXPECT_EQ(clk(m), 112u + 110u + 5u);
  m.load(0, LineAddr(3));
  m.load(0, LineAddr(4));  // L2 (2 ways) now holds 3 and 4; 1 is only in the LLC
  const std::uint64_t before = clk(m);
  m.load(0, LineAddr(1));
  EXPECT_EQ(clk(m) - before, 10u);  // LLC hit
}

TEST(SimTiming, FenceWithNothingOutstandingCostsFenceLatency) {
  Machine m(ParamsBuilder().build());
  m.fence(0);
  EXPECT_EQ(clk(m), 1u);
  const SimStats s = m.stats();
  EXPECT_EQ(s.fences, 1u);
  EXPECT_EQ(s.fence_stall_cycles, 0u);
}

TEST(SimTiming, FenceStallsUntilAnAsynchronousFlushCompletes) {
  for (FlushMode mode : {FlushMode::kClflushopt, FlushMode::kClwb}) {
    Machine m(ParamsBuilder().build());
    m.store(0, LineAddr(1));
    const std::uint64_t t0 = clk(m);
    m.flush(0, LineAddr(1), mode);
    EXPECT_EQ(clk(m), t0 + 1) << "flush issue only";
    m.fence(0);
    // Done when accepted by the controller: issue (1) + trip to the LLC (10); empty queue.
    EXPECT_EQ(clk(m), t0 + 1 + 10);
    EXPECT_EQ(m.stats().fence_stall_cycles,
              10u - 1u);  // 10 after issue, minus the fence's own cycle
  }
}

TEST(SimTiming, ClflushIsSynchronous) {
  Machine m(ParamsBuilder().build());
  m.store(0, LineAddr(1));
  const std::uint64_t t0 = clk(m);
  m.flush(0, LineAddr(1), FlushMode::kClflush);
  EXPECT_EQ(clk(m), t0 + 1 + 10);
  m.fence(0);
  EXPECT_EQ(clk(m), t0 + 12);
  EXPECT_EQ(m.stats().fence_stall_cycles, 0u);
}

TEST(SimTiming, FlushOfACleanLineStillTravelsToTheLlc) {
  Machine m(ParamsBuilder().build());
  const std::uint64_t t0 = clk(m);
  m.flush(0, LineAddr(1), FlushMode::kClflushopt);  // absent
  m.fence(0);
  EXPECT_EQ(clk(m), t0 + 11);
}

TEST(SimTiming, FullWriteQueueDelaysFlushCompletion) {
  // One queue entry, one write unit, 200-cycle writes: the queue holds one write while the
  // unit is busy with another, so a third write is accepted only when the first finishes.
  Machine m(ParamsBuilder().write_queue(1, 1).build());
  for (std::uint64_t l : {1, 2, 3}) m.store(0, LineAddr(l));
  const std::uint64_t t0 = clk(m);
  for (std::uint64_t l : {1, 2, 3}) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  m.fence(0);
  // Write 1 arrives (and starts) at t0+11 and finishes at t0+211; write 2 waits in the queue
  // from t0+12 and starts at t0+211, freeing the slot for write 3, which is accepted then.
  EXPECT_EQ(clk(m), t0 + 11 + 200);
}

TEST(SimTiming, DirtyEvictionsStallTheCoreOnlyWhenTheQueueIsFull) {
  // Each store misses (110 cycles) and evicts the previous dirty line. Write k starts when
  // write k-1 finishes (one unit, 200 cycles), and it waits in the one-entry queue until then.
  Machine m(ParamsBuilder().l1(1, 1).llc(1, 1).write_queue(1, 1).build());
  for (std::uint64_t l = 1; l <= 4; ++l) m.store(0, LineAddr(l));
  // Writes of 1, 2, 3 arrive at 110, 220, 330 and start at 110, 310, 510.
  EXPECT_EQ(m.stats().nvm.write_queue_stall_cycles, 0u);
  EXPECT_EQ(clk(m), 440u);
  m.store(0, LineAddr(5));  // write of 4 arrives at 440, the slot frees when 3 starts (510)
  EXPECT_EQ(m.stats().nvm.write_queue_stall_cycles, 70u);
  EXPECT_EQ(clk(m), 510u + 110u);
}

TEST(SimTiming, ParallelRegionsJoinAtTheSlowestCore) {
  Machine m(ParamsBuilder().cores(2).build());
  m.fork_clocks(0);
  m.load(0, LineAddr(1));  // 110
  m.load(1, LineAddr(1));  // LLC hit (10) + downgrade of core 0's exclusive copy (10)
  EXPECT_EQ(clk(m, 0), 110u);
  EXPECT_EQ(clk(m, 1), 20u);
  m.join_clocks();
  EXPECT_EQ(clk(m, 1), 110u);
  EXPECT_EQ(m.stats().cycles, Cycles{110});
}

TEST(SimTiming, ResetStatsStartsANewWindowWithWarmCaches) {
  Machine m(ParamsBuilder().build());
  m.load(0, LineAddr(1));
  m.reset_stats();
  m.load(0, LineAddr(2));
  m.load(0, LineAddr(1));
  const SimStats s = m.stats();
  EXPECT_EQ(s.cycles, Cycles{110 + 2});
  EXPECT_EQ(s.l1().hits, 1u);
  EXPECT_EQ(s.nvm.reads, 1u);
}

}  // namespace
}  // namespace pmlab::sim
