// Flush latency by line state (SimParams::home_agent, seed 002 Table 1): a dirty line's round
// trip, a clean line's remote snoop, an uncached line's directory lookup in memory.
#include <gtest/gtest.h>

#include "machine_probe.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/presets.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::clk;
using testing::ParamsBuilder;

// ParamsBuilder: LLC 10 cycles, flush issue 1, fence 1; an empty write queue accepts at once.
SimParams machine(bool home_agent) {
  SimParams p = ParamsBuilder().build();
  p.flush_mc_hop = 20;
  p.home_agent = home_agent;
  p.dir_lookup_cycles = 100;
  p.remote_snoop_cycles = 15;
  return p;
}

enum class State { kDirty, kClean, kAbsent };

// Cycles from a restarted clock to the flush's completion (a fence after the non-serialising
// flushes).
std::uint64_t flush_cycles(bool home_agent, State state, FlushMode mode) {
  Machine m(machine(home_agent));
  if (state == State::kDirty) m.store(0, LineAddr(1));
  if (state == State::kClean) m.load(0, LineAddr(1));
  m.reset_stats();
  m.flush(0, LineAddr(1), mode);
  if (mode != FlushMode::kClflush) m.fence(0);
  return clk(m);
}

TEST(SimFlushState, TheHomeAgentOrdersDirtyBeforeCleanBeforeUncached) {
  for (const FlushMode mode : {FlushMode::kClflush, FlushMode::kClflushopt, FlushMode::kClwb}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    // Dirty: 1 + 10 + 20 to the controller, accepted at once, 20 + 10 back.
    EXPECT_EQ(flush_cycles(true, State::kDirty, mode), 61u);
    EXPECT_EQ(flush_cycles(true, State::kClean, mode), 1u + 20 + 40 + 15);
    EXPECT_EQ(flush_cycles(true, State::kAbsent, mode), 1u + 20 + 40 + 100);
  }
}

TEST(SimFlushState, WithoutItTheDirectoryAnswersAtOnce) {
  for (const FlushMode mode : {FlushMode::kClflush, FlushMode::kClflushopt, FlushMode::kClwb}) {
    EXPECT_EQ(flush_cycles(false, State::kDirty, mode), 61u);
    EXPECT_EQ(flush_cycles(false, State::kClean, mode), 21u);
    EXPECT_EQ(flush_cycles(false, State::kAbsent, mode), 21u);
  }
}

TEST(SimFlushState, OnlyTheSeed002MachineHasIt) {
  for (const auto name : preset_names())
    EXPECT_EQ(preset(name).home_agent, name == "haswell-ep") << name;
  const SimParams h = haswell_ep();
  EXPECT_LT(0u, h.remote_snoop_cycles);
  EXPECT_LT(h.remote_snoop_cycles, h.dir_lookup_cycles);  // the order seed 002 measured
}

}  // namespace
}  // namespace pmlab::sim
