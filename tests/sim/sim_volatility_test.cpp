// Volatility duration: how long a line stays dirty before its NVM write, per ending cause.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "machine_probe.hpp"
#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::clk;
using testing::L;
using testing::ParamsBuilder;

TEST(SimVolatility, EvictionEndsTheStretchThatTheFirstStoreOpened) {
  Machine m(ParamsBuilder().l1(1, 1).llc(1, 1).build());
  m.store(0, L(1));
  const std::uint64_t dirty_at = clk(m);
  m.store(0, L(1));  // already dirty: the stretch goes on
  m.load(0, L(1));
  const std::uint64_t evict_at = clk(m);
  m.load(0, L(2));  // the eviction happens at the start of this miss
  const VolatilityStats v = m.stats().volatility;
  EXPECT_EQ(v.episodes, 1u);
  EXPECT_EQ(v.max_cycles, evict_at - dirty_at);
  EXPECT_EQ(v.total_cycles, evict_at - dirty_at);
  EXPECT_EQ(v.open_lines, 0u);
}

TEST(SimVolatility, AStoreToALineDirtyInTheLlcOnlyDoesNotRestartIt) {
  Machine m(ParamsBuilder().l1(1, 1).llc(4, 2).build());
  m.store(0, L(1));
  const std::uint64_t dirty_at = clk(m);
  m.load(0, L(2));   // L1 victim: line 1's dirtiness moves to the LLC
  m.store(0, L(1));  // L1 copy clean, LLC copy dirty: same stretch
  m.flush(0, L(1), FlushMode::kClwb);
  const std::uint64_t written_at = clk(m) + 10;  // the flush reaches the LLC after hL
  const VolatilityStats v = m.stats().volatility;
  EXPECT_EQ(v.episodes, 1u);
  EXPECT_EQ(v.max_cycles, written_at - dirty_at);
}

TEST(SimVolatility, OpenLinesAreAgedAtTheSnapshot) {
  Machine m(ParamsBuilder().l1(2, 2).llc(4, 2).build());
  m.store(0, L(1));
  const std::uint64_t a = clk(m);
  m.store(0, L(2));
  for (int i = 0; i < 50; ++i) m.load(0, L(2));
  const VolatilityStats v = m.stats().volatility;
  EXPECT_EQ(v.episodes, 0u);
  EXPECT_EQ(v.open_lines, 2u);
  EXPECT_EQ(v.open_max_cycles, clk(m) - a);
  m.write_back_all(WriteCause::kDrain);
  const VolatilityStats d = m.stats().volatility;
  EXPECT_EQ(d.episodes, 2u);
  EXPECT_EQ(d.open_lines, 0u);
  EXPECT_EQ(d.max_cycles, clk(m) - a);
}

TEST(SimVolatility, APowerFailureEndsStretchesWithoutCountingThem) {
  Machine m(ParamsBuilder().l1(2, 2).llc(4, 2).build());
  m.store(0, L(1));
  m.power_fail();
  const VolatilityStats v = m.stats().volatility;
  EXPECT_EQ(v.episodes, 0u);
  EXPECT_EQ(v.open_lines, 0u);
}

TEST(SimVolatility, NonInclusivePrivateOnlyLinesAreTracked) {
  Machine m(ParamsBuilder().l1(2, 2).llc(1, 1).inclusive(false).build());
  m.store(0, L(1));
  m.load(0, L(2));  // the LLC drops line 1 and cleans it: stretch 1 ends
  EXPECT_EQ(m.stats().volatility.episodes, 1u);
  m.store(0, L(1));  // private only
  const std::uint64_t dirty_at = clk(m);
  EXPECT_EQ(m.stats().volatility.open_lines, 1u);
  m.load(0, L(3));
  m.load(0, L(5));  // L1 set 1 (2 ways) now holds 3 and 5: line 1 leaves, written directly
  const VolatilityStats v = m.stats().volatility;
  EXPECT_EQ(v.episodes, 2u);
  EXPECT_EQ(v.open_lines, 0u);
  EXPECT_GE(v.max_cycles, 110u);
  EXPECT_LE(v.max_cycles, clk(m) - dirty_at);
}

// With cleaning every T cycles no line stays dirty much longer than T: after each op every set
// due by then has been cleaned, so a line dirtied at t is cleaned by the op that passes its
// set's next due time (<= t + T), i.e. at most one op latency (here <= one NVM read) later.
// One core: cores' clocks drift apart between barriers, and the sweep follows the fastest.
TEST(SimVolatility, PeriodicCleaningBoundsTheLongestStretch) {
  const auto run = [](std::uint64_t period) {
    Machine m(ParamsBuilder().l1(2, 2).llc(16, 4).write_queue(64, 64).periodic(period).build());
    std::mt19937_64 rng(11);
    for (int i = 0; i < 40000; ++i) {
      // A few hot lines (never evicted from their sets) and a colder tail.
      const LineAddr l = L(rng() % 4 == 0 ? rng() % 256 : rng() % 8);
      if (rng() % 3 == 0)
        m.store(0, l);
      else
        m.load(0, l);
    }
    m.write_back_all(WriteCause::kDrain);
    return m.stats().volatility;
  };
  const VolatilityStats off = run(0);
  EXPECT_GT(off.max_cycles, 100000u);  // the hot lines stay dirty for a long time
  for (std::uint64_t period : {1000u, 5000u, 20000u}) {
    const VolatilityStats on = run(period);
    EXPECT_LE(on.max_cycles, period + 110) << period;
    EXPECT_GT(on.episodes, off.episodes);
  }
}

TEST(SimVolatility, JsonKeys) {
  Machine m(ParamsBuilder().build());
  m.store(0, L(1));
  m.write_back_all(WriteCause::kDrain);
  const nlohmann::json j = to_json(m.stats()).at("volatility");
  for (const char* k : {"episodes", "max_cycles", "mean_cycles", "open_lines", "open_max_cycles"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j.at("episodes"), 1u);
}

}  // namespace
}  // namespace pmlab::sim
