// Per-core shares of the write queue: cores running a loop never wait for writes from each other's
// future.
#include <gtest/gtest.h>

#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::ParamsBuilder;

// Each store misses a 1-way L1 and a 1-way LLC and evicts the previous dirty line.
SimParams two_cores(std::uint32_t entries, std::uint32_t units) {
  return ParamsBuilder().cores(2).l1(1, 1).llc(1, 2).write_queue(entries, units).build();
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

}  // namespace
}  // namespace pmlab::sim
