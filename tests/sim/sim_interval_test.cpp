// Interval core model on hand-made access streams: dispatch slots, MSHR and ROB limits on miss
// overlap, flushes that stall only at sfence, write-queue back-pressure.
#include <gtest/gtest.h>

#include "machine_probe.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/presets.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::clk;
using testing::ParamsBuilder;

// ParamsBuilder: L1 4 sets x 2 ways (2 cycles), LLC 10 cycles, NVM read 100 / write 200 cycles,
// fence 1. An NVM miss therefore takes 110 cycles.

TEST(SimInterval, MemoryModelIsTheDefaultEverywhere) {
  EXPECT_EQ(SimParams{}.core.model, CoreModel::kMemory);
  for (auto name : preset_names()) EXPECT_EQ(preset(name).core.model, CoreModel::kMemory) << name;
  EXPECT_EQ(lp_isca18().core.issue_width, 4u);  // LP paper Table II
  EXPECT_EQ(lp_isca18().core.rob_entries, 196u);
  EXPECT_EQ(pact17().core.issue_width, 8u);  // thesis Table 3.1
  EXPECT_EQ(pact17().core.rob_entries, 192u);
  EXPECT_EQ(core_model_from_string("interval"), CoreModel::kInterval);
  EXPECT_THROW((void)core_model_from_string("pipeline"), Error);
  SimParams bad;
  bad.core.mshrs = 0;
  EXPECT_THROW(bad.validate(), Error);
}

TEST(SimInterval, L1HitsCostOnlyTheirDispatchSlots) {
  // 4-wide, 2 instructions per access: two L1 hits per cycle; the miss's 110 cycles overlap.
  Machine m(ParamsBuilder().interval(4, 1024, 16, 2).build());
  m.load(0, LineAddr(1));  // miss, completes at 110
  for (int i = 0; i < 100; ++i) m.load(0, LineAddr(1));
  EXPECT_EQ(clk(m), 202u / 4);  // 202 instructions dispatched
  EXPECT_EQ(m.stats().cycles, Cycles{110}) << "the run ends when the miss completes";
  for (int i = 0; i < 400; ++i) m.store(0, LineAddr(1));
  EXPECT_EQ(clk(m), 1002u / 4);
  const SimStats s = m.stats();
  EXPECT_EQ(s.cycles, Cycles{1002 / 4});
  EXPECT_EQ(s.instructions, 1002u);
  EXPECT_EQ(s.rob_stall_cycles, 0u);
  EXPECT_EQ(s.mshr_stall_cycles, 0u);
}

TEST(SimInterval, IndependentMissesOverlapUpToTheMshrLimit) {
  // 1-wide, 1 instruction per access: miss k is dispatched at cycle k.
  {
    Machine m(ParamsBuilder().interval(1, 1024, 8).build());
    for (std::uint64_t l = 1; l <= 8; ++l) m.load(0, LineAddr(l));
    EXPECT_EQ(m.stats().cycles, Cycles{8 + 110}) << "all eight in flight together";
    EXPECT_EQ(m.stats().mshr_stall_cycles, 0u);
  }
  {
    Machine m(ParamsBuilder().interval(1, 1024, 4).build());
    for (std::uint64_t l = 1; l <= 8; ++l) m.load(0, LineAddr(l));
    // Misses 1-4 complete at 111-114; miss 5 waits for the first MSHR (cycle 5 -> 111), then
    // misses 5-8 are dispatched at 111-114 and complete 110 cycles later.
    EXPECT_EQ(m.stats().mshr_stall_cycles, 111u - 5u);
    EXPECT_EQ(m.stats().cycles, Cycles{114 + 110});
  }
  {
    Machine m(ParamsBuilder().build());  // the memory model: no overlap at all
    for (std::uint64_t l = 1; l <= 8; ++l) m.load(0, LineAddr(l));
    EXPECT_EQ(m.stats().cycles, Cycles{8 * 110});
  }
}

TEST(SimInterval, TheReorderBufferBoundsHowFarDispatchRunsAheadOfAMiss) {
  // ROB of 4: the load at instruction 5 cannot dispatch before the load at instruction 1 retires.
  Machine m(ParamsBuilder().interval(1, 4, 16).build());
  for (std::uint64_t l = 1; l <= 5; ++l) m.load(0, LineAddr(l));
  const SimStats s = m.stats();
  EXPECT_EQ(s.rob_stall_cycles, 111u - 5u);
  EXPECT_EQ(s.cycles, Cycles{111 + 110});
  EXPECT_EQ(s.mshr_stall_cycles, 0u);
}

TEST(SimInterval, StoreMissesDoNotBlockRetirement) {
  Machine m(ParamsBuilder().interval(1, 4, 16).build());
  for (std::uint64_t l = 1; l <= 8; ++l) m.store(0, LineAddr(l));
  EXPECT_EQ(clk(m), 8u) << "stores retire into the store buffer";
  EXPECT_EQ(m.stats().rob_stall_cycles, 0u);
  EXPECT_EQ(m.stats().cycles, Cycles{8 + 110});
}

TEST(SimInterval, FlushesStallNothingAndAFenceWaitsForThemOnly) {
  Machine m(ParamsBuilder().interval(1, 1024, 16).build());
  for (std::uint64_t l = 1; l <= 4; ++l) m.store(0, LineAddr(l));  // misses in flight to 111-114
  for (std::uint64_t l = 1; l <= 4; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  EXPECT_EQ(clk(m), 8u) << "four flushes took four dispatch slots, no stall";
  m.fence(0);
  // Flush k (cycle 4 + k) reaches the LLC 10 cycles later and the empty queue accepts it: the
  // last one at 18. The fence (dispatch 9, latency 1) waits for it, not for the store misses.
  EXPECT_EQ(clk(m), 18u);
  EXPECT_EQ(m.stats().fence_stall_cycles, 18u - 10u);
  EXPECT_EQ(m.stats().dirty_flushes, 4u);
}

// CoreParams::flush_after_fill (off by default, the test above): a flush of a line whose store
// miss is in flight starts when that fill completes; a flush of an owned line does not wait.
TEST(SimInterval, WithFlushAfterFillAFlushWaitsForItsLinesStoreMiss) {
  SimParams p = ParamsBuilder().interval(1, 1024, 16).build();
  p.core.flush_after_fill = true;
  Machine m(p);
  for (std::uint64_t l = 1; l <= 4; ++l) m.store(0, LineAddr(l));  // fills complete at 111-114
  for (std::uint64_t l = 1; l <= 4; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  EXPECT_EQ(clk(m), 8u) << "the core still does not stall at the flushes";
  m.fence(0);
  // Flush k starts at its fill (110 + k), reaches the LLC 10 cycles later and is accepted: the
  // last at 124.
  EXPECT_EQ(clk(m), 124u);
  // clflushopt dropped line 1: a new store misses again (fill at 125 + 110), and its clwb waits.
  m.store(0, LineAddr(1));
  m.flush(0, LineAddr(1), FlushMode::kClwb);
  m.fence(0);
  EXPECT_EQ(clk(m), 235u + 10);
  // clwb kept it: this store hits, and its flush waits for nothing but the LLC trip.
  m.store(0, LineAddr(1));
  m.flush(0, LineAddr(1), FlushMode::kClwb);
  m.fence(0);
  EXPECT_EQ(clk(m), 245u + 2 + 10);
  // Only under the interval model.
  SimParams bad;
  bad.core.flush_after_fill = true;
  EXPECT_THROW(bad.validate(), Error);
}

TEST(SimInterval, AFenceAfterNFlushesWaitsForTheLastAcceptance) {
  // One queue entry, one 200-cycle write unit: write 1 starts at once, write 2 waits in the
  // queue, write 3 is accepted only when write 2 starts (when write 1 is done).
  Machine m(ParamsBuilder().interval(1, 1024, 16).write_queue(1, 1).build());
  for (std::uint64_t l = 1; l <= 3; ++l) m.store(0, LineAddr(l));
  for (std::uint64_t l = 1; l <= 3; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  EXPECT_EQ(clk(m), 6u);
  m.fence(0);
  // Write 1 arrives at 4 + 10 = 14 and is written 14-214; write 3 is accepted at 214.
  EXPECT_EQ(clk(m), 214u);
  EXPECT_EQ(m.stats().fence_stall_cycles, 214u - 8u);
}

TEST(SimInterval, AFullWriteQueueStallsDispatchThroughTheMshrs) {
  // Two MSHRs, one queue entry, one unit: flushes waiting for a queue slot keep their MSHRs,
  // so the fifth flush stalls the core although no fence was issued.
  Machine m(ParamsBuilder().interval(1, 1024, 2).write_queue(1, 1).build());
  for (std::uint64_t l = 1; l <= 5; ++l) m.store(0, LineAddr(l));
  m.fork_clocks(0);
  m.join_clocks();  // a barrier: every store miss has completed
  const std::uint64_t t0 = clk(m);
  const std::uint64_t s0 = m.stats().mshr_stall_cycles;  // the store misses' own
  for (std::uint64_t l = 1; l <= 4; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  // Flush 3 found both MSHRs busy until flush 1's acceptance (t0 + 11).
  EXPECT_EQ(m.stats().mshr_stall_cycles - s0, 11u - 3u);
  const std::uint64_t before = m.stats().mshr_stall_cycles;
  m.flush(0, LineAddr(5), FlushMode::kClflushopt);
  // Writes 3 and 4 are accepted when writes 2 and 3 start, both at t0 + 211 (write 1 occupies
  // the unit until then): flush 5 (dispatched at t0 + 13) waits for an MSHR until t0 + 211.
  EXPECT_EQ(clk(m), t0 + 211);
  EXPECT_EQ(m.stats().mshr_stall_cycles - before, 211u - 13u);
  EXPECT_EQ(m.stats().fences, 0u);
}

TEST(SimInterval, DirtyEvictionsIntoAFullQueueStallDispatch) {
  // As SimTiming.DirtyEvictionsStallTheCoreOnlyWhenTheQueueIsFull, with overlapping misses:
  // every store evicts the previous dirty line into a one-entry queue drained every 200 cycles.
  Machine m(ParamsBuilder().interval(1, 1024, 16).l1(1, 1).llc(1, 1).write_queue(1, 1).build());
  for (std::uint64_t l = 1; l <= 5; ++l) m.store(0, LineAddr(l));
  // The write of line k leaves when store k + 1 misses (before it dispatches): 1 at cycle 1
  // starts at once, 2 at 2 waits in the queue, 3 at 3 is accepted only when 2 starts (201),
  // 4 at 202 when 3 starts (401).
  EXPECT_EQ(m.stats().nvm.write_queue_stall_cycles, (201u - 3u) + (401u - 202u));
  EXPECT_EQ(clk(m), 402u);
}

TEST(SimInterval, BarriersWaitForEverythingInFlight) {
  Machine m(ParamsBuilder().cores(2).interval(1, 1024, 16).build());
  m.fork_clocks(0);
  m.load(0, LineAddr(1));
  m.store(1, LineAddr(2));
  m.flush(1, LineAddr(2), FlushMode::kClwb);
  EXPECT_EQ(m.clock(0).value(), 1u);
  m.join_clocks();
  // Core 1's flush of line 2 waits for nothing in this model (its store's miss is in flight).
  EXPECT_EQ(m.clock(0).value(), 111u);
  EXPECT_EQ(m.clock(1).value(), 111u);
}

TEST(SimInterval, PowerFailureAndResetForgetOperationsInFlight) {
  Machine m(ParamsBuilder().interval(1, 4, 1).build());
  m.load(0, LineAddr(1));
  m.power_fail();
  m.load(0, LineAddr(2));  // the MSHR is free again: no stall
  EXPECT_EQ(m.stats().mshr_stall_cycles, 0u);
  m.reset_stats();
  EXPECT_EQ(m.stats().cycles, Cycles{0});
  EXPECT_EQ(m.stats().instructions, 0u);
}

// The reorder-buffer rule worked by hand: a load miss of `lat` cycles dispatched at cycle 1
// (1-wide core, 1 instruction per access), then ten hits. The fourth fills the 4-entry ROB
// behind the miss, so dispatch waits until the miss completes (1 + lat), and the last six hits
// add a cycle each. Reading the clock after every hit must not change that.
TEST(SimInterval, TheReorderBufferFillsBehindAMissDuringHits) {
  Machine memory(ParamsBuilder().l1(1, 8).llc(2, 8).build());
  memory.load(0, LineAddr(1));
  const std::uint64_t lat = memory.clock(0).value();  // the memory model charges the miss alone
  for (bool observe : {false, true}) {
    Machine m(ParamsBuilder().l1(1, 8).llc(2, 8).interval(1, 4, 4, 1).build());
    m.load(0, LineAddr(1));
    for (int i = 0; i < 10; ++i) {
      m.load(0, LineAddr(1));
      if (observe) (void)m.clock(0);
    }
    EXPECT_EQ(m.clock(0).value(), lat + 7) << observe;
  }
}

}  // namespace
}  // namespace pmlab::sim
