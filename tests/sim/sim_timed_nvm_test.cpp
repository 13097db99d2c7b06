// The NVM controller timed by banks, rows and bus (nvm.write_queue = banks): row hits and
// misses, write recovery on a dirty row's close, merging, the untimed model's row writes, and
// bookings by time whatever the simulation order.
#include <gtest/gtest.h>

#include "../../src/sim/busy_calendar.hpp"
#include "../../src/sim/timed_nvm.hpp"
#include "machine_probe.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/presets.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

// 1 channel, 1 rank, 2 banks, 1 KiB rows (16 lines: lines 0-15 are bank 0's row 0, 16-31 bank
// 1's row 0, 32-47 bank 0's row 1); a 16-entry queue that drains all 16 when it fills.
RowBufferParams geometry() {
  RowBufferParams g;
  g.enabled = true;
  g.channels = 1;
  g.ranks = 1;
  g.banks = 2;
  g.row_bytes = 1024;
  g.wq_entries = 16;
  g.wq_high = 1.0;
  g.wq_low = 0.5;
  g.min_writes_per_drain = 16;
  return g;
}
constexpr NvmTiming kCycles{/*rcd=*/20, /*cl=*/5, /*wr=*/50, /*rp=*/6, /*burst=*/4};

TEST(BusyCalendar, TakesTheFirstGapLongEnoughAtOrAfterTheRequest) {
  BusyCalendar c;
  EXPECT_EQ(c.book(100, 10), 100u);
  EXPECT_EQ(c.book(0, 50), 0u);     // before it, in time
  EXPECT_EQ(c.book(40, 20), 50u);   // 40 is busy: from 50, and [50, 70) fits before 100
  EXPECT_EQ(c.book(60, 40), 110u);  // [70, 100) is 30 long: after [100, 110)
  EXPECT_EQ(c.book(70, 30), 70u);   // exactly the gap
  EXPECT_EQ(c.intervals(), 1u);     // touching bookings merged: [0, 150)
}

TEST(SimTimedNvm, AClosedRowReadActivatesAnOpenOneOnlyAccessesTheColumn) {
  TimedNvm nvm(geometry(), kCycles);
  EXPECT_EQ(nvm.read(0, 0), 29u);    // t_rcd + t_cl + t_burst
  EXPECT_EQ(nvm.read(1, 29), 38u);   // row hit: t_cl + t_burst
  EXPECT_EQ(nvm.read(32, 38), 73u);  // clean conflict: t_rp + t_rcd + t_cl + t_burst
}

TEST(SimTimedNvm, ADirtyRowPaysWriteRecoveryBeforeTheNextRowOpens) {
  TimedNvm nvm(geometry(), kCycles);
  for (std::uint64_t line = 0; line < 16; ++line) EXPECT_EQ(nvm.write(line, line), line);
  // The 16th write (at 15) starts the drain: line 0 activates (20) and bursts (4) by 39, the
  // other 15 are row hits bursting back to back: the bank frees at 39 + 15 x 4 = 99.
  const RowBufferStats s = nvm.snapshot();
  EXPECT_EQ(s.drains, 1u);
  EXPECT_EQ(s.device_writes, 16u);
  EXPECT_EQ(
      s.write_service_cycles, (39u - 0) + [] {
        std::uint64_t sum = 0;
        for (std::uint64_t k = 1; k < 16; ++k) sum += 39 + 4 * k - k;
        return sum;
      }());
  // Line 32, arriving when the bank frees: same bank, other row, the open one written last at
  // 99: write recovery, then t_rp + t_rcd + t_cl + t_burst.
  EXPECT_EQ(nvm.read(32, 99), 99u + 50 + 6 + 20 + 5 + 4);
  EXPECT_EQ(nvm.snapshot().row_writes, 1u);
}

TEST(SimTimedNvm, WriteRecoveryOverlapsTheTimeSinceTheLastWrite) {
  TimedNvm nvm(geometry(), kCycles);
  for (std::uint64_t line = 0; line < 16; ++line) (void)nvm.write(line, line);
  // 1,000 cycles after the last burst (99) the recovery is long over: t_rp + t_rcd + t_cl +
  // t_burst only.
  EXPECT_EQ(nvm.read(32, 1099), 1099u + 6 + 20 + 5 + 4);
}

TEST(SimTimedNvm, AReadBeforeTheDrainInTimeDoesNotWaitForItsRecovery) {
  TimedNvm nvm(geometry(), kCycles);
  for (std::uint64_t line = 0; line < 16; ++line) (void)nvm.write(line, 1000 + line);
  // Simulated after the drain (1015-1099) but arriving at 0: it fits before the drain's first
  // booking, and the writes that follow it in time delay it by nothing.
  EXPECT_EQ(nvm.read(32, 0), 0u + 6 + 20 + 5 + 4);
}

TEST(SimTimedNvm, ASecondWriteToAQueuedLineMergesAndIsAcceptedAtOnce) {
  TimedNvm nvm(geometry(), kCycles);
  EXPECT_EQ(nvm.write(3, 10), 10u);
  EXPECT_EQ(nvm.write(3, 12), 12u);
  EXPECT_EQ(nvm.snapshot().wq_merges, 1u);
  EXPECT_EQ(nvm.read(3, 20), 24u);  // forwarded from the queue: one burst
  EXPECT_EQ(nvm.snapshot().wq_read_hits, 1u);
}

TEST(SimTimedNvm, AFullQueueAcceptsWhenItsEarliestWriteCompletes) {
  RowBufferParams g = geometry();
  g.wq_entries = 4;  // drains at 4 entries, all of them; a write finds 4 in flight until one ends
  g.min_writes_per_drain = 4;
  TimedNvm nvm(g, kCycles);
  for (std::uint64_t line = 0; line < 4; ++line) EXPECT_EQ(nvm.write(line, 0), 0u);
  // The drain at 0: line 0 at 20 + 4 = 24, lines 1-3 row hits at 28, 32, 36.
  EXPECT_EQ(nvm.write(4, 0), 24u);
  EXPECT_EQ(nvm.snapshot().wq_full_events, 1u);
  EXPECT_EQ(nvm.snapshot().wq_full_cycles, 24u);
}

TEST(SimTimedNvm, RowWritesAreTheUntimedModelsWhateverTheTimes) {
  RowBufferParams g = geometry();
  g.wq_entries = 8;
  g.min_writes_per_drain = 2;
  TimedNvm timed(g, kCycles);
  RowBufferModel untimed(g);
  std::uint64_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    const std::uint64_t line = (x >> 33) % 128;
    const std::uint64_t t = static_cast<std::uint64_t>(i) * 7;
    if ((x >> 20) % 3 == 0) {
      (void)timed.read(line, t);
      (void)untimed.on_read(line);
    } else {
      (void)timed.write(line, t);
      (void)untimed.on_write(line);
    }
  }
  const RowBufferStats a = timed.snapshot(), b = untimed.snapshot();
  EXPECT_GT(b.row_writes_total(), 100u);
  EXPECT_EQ(a.row_writes_total(), b.row_writes_total());
  EXPECT_EQ(a.activations_read, b.activations_read);
  EXPECT_EQ(a.device_writes, b.device_writes);
  EXPECT_EQ(a.wq_merges, b.wq_merges);
}

// Two cores writing bursts in disjoint stretches of time: one booked first in simulation
// order sees the same acceptances as the other way round (a FIFO in simulation order would
// make the earlier stretch wait for the later one's writes).
TEST(SimTimedNvm, BookingsFollowTimeNotSimulationOrder) {
  RowBufferParams g = geometry();
  g.wq_entries = 4;
  g.min_writes_per_drain = 4;
  const auto burst = [](TimedNvm& nvm, std::uint64_t first_line, std::uint64_t t) {
    std::vector<std::uint64_t> acc;
    for (std::uint64_t k = 0; k < 8; ++k) acc.push_back(nvm.write(first_line + k, t));
    return acc;
  };
  TimedNvm early_first(g, kCycles), late_first(g, kCycles);
  const auto e1 = burst(early_first, 0, 0);
  const auto l1 = burst(early_first, 16, 100000);
  const auto l2 = burst(late_first, 16, 100000);
  const auto e2 = burst(late_first, 0, 0);
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(l1, l2);
  EXPECT_GT(e1.back(), 0u);  // the burst filled the queue: some write waited
}

TEST(SimTimedNvm, TheMachineTimesItsMissesByRowWithTheOptionOn) {
  SimParams p = testing::ParamsBuilder().build();  // 1 GHz: ns = cycles
  p.nvm.row_buffer = geometry();
  p.nvm.row_buffer.t_rcd_ns = 20;
  p.nvm.row_buffer.t_cl_ns = 5;
  p.nvm.row_buffer.t_wr_ns = 50;
  p.nvm.row_buffer.t_rp_ns = 6;
  p.nvm.row_buffer.t_burst_ns = 4;
  p.nvm.write_queue = WriteQueueModel::kBanks;
  Machine m(p);
  m.load(0, LineAddr(0));  // LLC 10, then 29 at the controller
  EXPECT_EQ(testing::clk(m), 10u + 29);
  m.load(0, LineAddr(1));  // row hit
  EXPECT_EQ(testing::clk(m), 39u + 10 + 9);
  ASSERT_TRUE(m.stats().nvm.row_buffer.has_value());
  EXPECT_TRUE(m.stats().nvm.row_buffer->timed);
  EXPECT_EQ(m.stats().nvm.row_buffer->read_cycles, 29u + 9);
}

TEST(SimTimedNvm, BanksWithoutTheRowBufferModelAreRefusedNamingTheOption) {
  SimParams p = preset("lp-isca18");
  p.nvm.write_queue = WriteQueueModel::kBanks;
  try {
    p.validate();
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--row-buffer on"), std::string::npos) << e.what();
  }
}

TEST(SimTimedNvm, NoPresetTimesItsBanksByDefault) {
  for (const auto name : preset_names())
    EXPECT_NE(preset(name).nvm.write_queue, WriteQueueModel::kBanks) << name;
}

}  // namespace
}  // namespace pmlab::sim
