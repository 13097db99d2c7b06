// The interval core's store queue (CoreParams::store_queue): flushes and store misses hold an
// entry until acknowledged, TSO serialises them, a full queue stalls dispatch, sfence drains it.
#include <gtest/gtest.h>

#include "machine_probe.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/machine_params.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::clk;
using testing::ParamsBuilder;

// ParamsBuilder: L1 2 cycles, LLC 10, NVM read 100 (a miss takes 110), 1-wide dispatch of one
// instruction per access; a dirty flush's round trip with flush_mc_hop 20 is 2 x 10 + 2 x 20 = 60
// cycles (an empty write queue accepts at once).
SimParams sq_machine(bool tso, std::uint32_t entries = 48) {
  SimParams p = ParamsBuilder().interval(1, 1024, 16).build();
  p.flush_mc_hop = 20;
  p.core.store_queue = true;
  p.core.sq_entries = entries;
  p.core.sq_tso = tso;
  return p;
}

// Lines 0-3 dirty in L1, statistics and clocks restarted.
void dirty_four(Machine& m) {
  for (std::uint64_t l = 0; l < 4; ++l) m.store(0, LineAddr(l));
  m.fence(0);
  m.reset_stats();
}

TEST(SimStoreQueue, UnderTsoFlushesCompleteOneAtATime) {
  Machine m(sq_machine(true));
  dirty_four(m);
  for (std::uint64_t l = 0; l < 4; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  EXPECT_EQ(clk(m), 4u) << "dispatch does not wait for a free entry";
  m.fence(0);
  // Sent at 1, 61, 121, 181: done at 61, 121, 181, 241.
  EXPECT_EQ(clk(m), 241u);
  EXPECT_EQ(m.stats().cycles, Cycles{241});
}

TEST(SimStoreQueue, WithoutTsoFlushesOverlap) {
  Machine m(sq_machine(false));
  dirty_four(m);
  for (std::uint64_t l = 0; l < 4; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  m.fence(0);
  EXPECT_EQ(clk(m), 64u);  // sent at 1-4, done at 61-64
}

TEST(SimStoreQueue, AFullQueueStallsDispatch) {
  Machine m(sq_machine(true, 2));
  dirty_four(m);
  for (std::uint64_t l = 0; l < 4; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  // Flush 3 waits 3 -> 61 for flush 1's entry, flush 4 waits 62 -> 121 for flush 2's.
  EXPECT_EQ(m.stats().sq_full_stall_cycles, 117u);
  EXPECT_EQ(m.stats().sq_full_events, 2u);
  m.fence(0);
  EXPECT_EQ(clk(m), 241u);
}

TEST(SimStoreQueue, StoreMissesHoldEntriesAndSfenceWaitsForThem) {
  for (const bool tso : {true, false}) {
    Machine m(sq_machine(tso));
    m.store(0, LineAddr(100));  // dispatched at 1, miss done at 111
    m.store(0, LineAddr(200));  // dispatched at 2: TSO sends it at 111
    m.fence(0);
    EXPECT_EQ(clk(m), tso ? 221u : 112u) << tso;
  }
}

TEST(SimStoreQueue, LoadsBypassIt) {
  Machine m(sq_machine(true));
  dirty_four(m);
  for (std::uint64_t l = 0; l < 4; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
  m.load(0, LineAddr(300));  // dispatched at 5, not behind the flushes
  EXPECT_EQ(clk(m), 5u);
  EXPECT_EQ(m.stats().rob_stall_cycles, 0u);
  m.fence(0);
  EXPECT_EQ(clk(m), 241u);
}

TEST(SimStoreQueue, OffLeavesEveryFigureAsItWas) {
  SimParams off = sq_machine(true);
  off.core.store_queue = false;
  SimParams plain = ParamsBuilder().interval(1, 1024, 16).build();
  plain.flush_mc_hop = 20;
  for (const SimParams& p : {off, plain}) {
    Machine m(p);
    dirty_four(m);
    for (std::uint64_t l = 0; l < 4; ++l) m.flush(0, LineAddr(l), FlushMode::kClflushopt);
    m.fence(0);
    EXPECT_EQ(clk(m), 64u);
    EXPECT_EQ(m.stats().sq_full_events, 0u);
  }
}

TEST(SimStoreQueue, NeedsTheIntervalCoreAndIsDeclaredOnce) {
  SimParams p;
  p.core.store_queue = true;
  EXPECT_THROW(p.validate(), Error);
  // The flags come from the declarations (machine_params.cpp): nothing else names them.
  ASSERT_NE(find_machine_param("store-queue"), nullptr);
  EXPECT_EQ(find_machine_param("sq-entries")->key, "core.sq_entries");
  EXPECT_EQ(find_machine_param("sq-tso")->key, "core.sq_tso");
}

}  // namespace
}  // namespace pmlab::sim
