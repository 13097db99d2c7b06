// The write queue's two models: per-core shares (default) and one shared queue booked by time;
// under both, cores running a loop never wait for writes from each other's future.
#include <gtest/gtest.h>

#include "../../src/sim/shared_write_queue.hpp"
#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::ParamsBuilder;

// Each store misses a 1-way L1 and a 1-way LLC and evicts the previous dirty line.
SimParams two_cores(std::uint32_t entries, std::uint32_t units,
                    WriteQueueModel model = WriteQueueModel::kPerCore) {
  SimParams p = ParamsBuilder().cores(2).l1(1, 1).llc(1, 2).write_queue(entries, units).build();
  p.nvm.write_queue = model;
  return p;
}

TEST(SimWriteQueue, ACoreDoesNotWaitForAnotherCoresFutureWrites) {
  Machine m(two_cores(2, 2));
  m.fork_clocks(0, 2);
  // Core 0 runs far ahead in simulated time, filling its share of the queue with writes.
  for (std::uint64_t l = 10; l < 60; ++l) m.store(0, LineAddr(l));
  const std::uint64_t stalls_core0 = m.stats().nvm.write_queue_stall_cycles;
  EXPECT_GT(stalls_core0, 0u);  // one entry, one unit: 200-cycle writes every 110 cycles
  // Core 1 is still near time 0; its evictions use its own share and are accepted at once.
  for (std::uint64_t l = 100; l < 103; ++l) m.store(1, LineAddr(l));
  EXPECT_EQ(m.stats().nvm.write_queue_stall_cycles, stalls_core0);
  EXPECT_LT(m.clock(1).value(), 400u);
  m.join_clocks();
}

TEST(SimWriteQueue, OutsideLoopsOneCoreHasTheWholeController) {
  // Serial code: 2 units drain 2 writes per 200 cycles, so 110-cycle misses never stall.
  Machine serial(two_cores(1, 2));
  for (std::uint64_t l = 10; l < 40; ++l) serial.store(0, LineAddr(l));
  EXPECT_EQ(serial.stats().nvm.write_queue_stall_cycles, 0u);
  // In a 2-core loop the same core has 1 entry and 1 unit: it stalls.
  Machine loop(two_cores(1, 2));
  loop.fork_clocks(0, 2);
  for (std::uint64_t l = 10; l < 40; ++l) loop.store(0, LineAddr(l));
  EXPECT_GT(loop.stats().nvm.write_queue_stall_cycles, 0u);
  loop.join_clocks();
}

// --- The shared queue (WriteQueueModel::kShared) ---

TEST(SharedWriteQueue, DrainsUnitsWritesPerWriteTimeAndAcceptsEntriesAhead) {
  // 4 entries, 2 units, 100-cycle writes: a burst at t = 0 starts 2 writes per 100 cycles.
  // Write k starts at 100 * (k / 2); it is accepted 200 cycles (4 entries / 2 units slots)
  // before its start, so the first 6 are accepted at once and the next two 100 cycles later.
  SharedWriteQueue q(4, 2, 100);
  std::vector<std::uint64_t> accepted;
  for (int k = 0; k < 10; ++k) accepted.push_back(q.accept(0));
  EXPECT_EQ(accepted, (std::vector<std::uint64_t>{0, 0, 0, 0, 0, 0, 100, 100, 200, 200}));
}

TEST(SharedWriteQueue, AWriteInTheFutureDoesNotDelayOneInThePast) {
  SharedWriteQueue q(1, 1, 100);
  // One core far ahead fills every slot from t = 10,000 on.
  for (int k = 0; k < 50; ++k) (void)q.accept(10'000);
  EXPECT_GT(q.accept(10'000), 10'000u);  // the leader now waits for its own writes
  // A core still near t = 0 finds the controller free there, whatever was booked later.
  EXPECT_EQ(q.accept(50), 50u);
  EXPECT_EQ(q.accept(250), 250u);
  // Slot 2 is taken now: a write arriving in it starts at the next free slot (300), within one
  // slot (1 entry / 1 unit) of its arrival, so it is accepted at once; the one after starts at
  // 400 and is accepted at 300.
  EXPECT_EQ(q.accept(260), 260u);
  EXPECT_EQ(q.accept(260), 300u);
}

TEST(SharedWriteQueue, ResetEmptiesTheQueue) {
  SharedWriteQueue q(1, 1, 100);
  for (int k = 0; k < 10; ++k) (void)q.accept(0);
  EXPECT_GT(q.accept(0), 0u);
  q.reset();
  EXPECT_EQ(q.accept(0), 0u);
}

TEST(SimWriteQueue, SharedQueueGivesOneCoresBurstEveryUnit) {
  // The per-core test above, with the shared queue: a core's burst in a 2-core loop has both
  // units and the whole queue, as in serial code, so it does not stall.
  Machine loop(two_cores(1, 2, WriteQueueModel::kShared));
  loop.fork_clocks(0, 2);
  for (std::uint64_t l = 10; l < 40; ++l) loop.store(0, LineAddr(l));
  EXPECT_EQ(loop.stats().nvm.write_queue_stall_cycles, 0u);
  loop.join_clocks();
  // And the controller is shared: two cores bursting at once do stall.
  Machine both(two_cores(1, 2, WriteQueueModel::kShared));
  both.fork_clocks(0, 2);
  for (std::uint64_t l = 10; l < 40; ++l) {
    both.store(0, LineAddr(l));
    both.store(1, LineAddr(l + 1000));
  }
  EXPECT_GT(both.stats().nvm.write_queue_stall_cycles, 0u);
  both.join_clocks();
}

}  // namespace
}  // namespace pmlab::sim
