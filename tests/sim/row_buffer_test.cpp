// The NVM row-buffer model on hand-made access streams: mapping, row writes, merging, drain
// thresholds, FR-FCFS order; and the hierarchy hook (off = no statistic, power failure clears).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/row_buffer.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

// Table 4.1 defaults: 16 lines per row, 8 banks, 2 ranks; lines per row-set = 16 x 8 x 2 = 256.
constexpr std::uint64_t kRowLines = 16;
constexpr std::uint64_t kBankStride = 16;  // next bank
constexpr std::uint64_t kRowStride = 256;  // same bank, next row

TEST(RowBuffer, MapsRoRaBaChCo) {
  RowBufferModel m;
  const auto at = [&](std::uint64_t l) {
    const RowAddress a = m.map(l);
    return std::tuple{a.row, a.rank, a.bank, a.column};
  };
  EXPECT_EQ(at(0), (std::tuple{0u, 0u, 0u, 0u}));
  EXPECT_EQ(at(15), (std::tuple{0u, 0u, 0u, 15u}));
  EXPECT_EQ(at(16), (std::tuple{0u, 0u, 1u, 0u}));
  EXPECT_EQ(at(127), (std::tuple{0u, 0u, 7u, 15u}));
  EXPECT_EQ(at(128), (std::tuple{0u, 1u, 0u, 0u}));
  EXPECT_EQ(at(255), (std::tuple{0u, 1u, 7u, 15u}));
  EXPECT_EQ(at(256), (std::tuple{1u, 0u, 0u, 0u}));
  EXPECT_EQ(m.map(128).bank_id, 8u);
  EXPECT_EQ(m.map(256).bank_id, 0u);
}

TEST(RowBuffer, OneDirtyRowClosedIsOneRowWrite) {
  RowBufferModel m;
  for (std::uint64_t l = 0; l < kRowLines; ++l) m.on_write(l);
  EXPECT_EQ(m.counters().row_writes, 0u);  // still queued: no drain below the high mark
  const RowBufferStats s = m.snapshot();
  EXPECT_EQ(s.device_writes, kRowLines);
  EXPECT_EQ(s.activations_write, 1u);
  EXPECT_EQ(s.row_hits_write, kRowLines - 1);
  EXPECT_EQ(s.row_writes, 0u);
  EXPECT_EQ(s.rows_dirty_at_end, 1u);
  EXPECT_EQ(s.row_writes_total(), 1u);
  // Reading another row of that bank closes the dirty row: counted at the read.
  m.drain_all();
  m.on_read(kRowStride);
  EXPECT_EQ(m.counters().row_writes, 1u);
  EXPECT_EQ(m.snapshot().rows_dirty_at_end, 0u);
}

TEST(RowBuffer, SixteenRowsOfOneBankAreSixteenRowWrites) {
  RowBufferModel m;
  for (std::uint64_t r = 0; r < 16; ++r) m.on_write(r * kRowStride);
  EXPECT_EQ(m.snapshot().row_writes_total(), 16u);
}

TEST(RowBuffer, ReadsOnlyWriteNoRow) {
  RowBufferModel m;
  for (std::uint64_t l = 0; l < 10'000; l += 7) m.on_read(l);
  const RowBufferStats s = m.snapshot();
  EXPECT_EQ(s.row_writes_total(), 0u);
  EXPECT_GT(s.activations_read, 0u);
  EXPECT_GT(s.row_hits_read, 0u);
}

TEST(RowBuffer, MergesWritesToAQueuedLineAndServesReadsFromTheQueue) {
  RowBufferModel m;
  m.on_write(5);
  m.on_write(5);
  m.on_read(5);
  const RowBufferStats s = m.snapshot();
  EXPECT_EQ(s.device_writes, 1u);
  EXPECT_EQ(s.wq_merges, 1u);
  EXPECT_EQ(s.wq_read_hits, 1u);
  EXPECT_EQ(s.activations_read, 0u);

  RowBufferParams no_merge;
  no_merge.merge = false;
  RowBufferModel n(no_merge);
  n.on_write(5);
  n.on_write(5);
  EXPECT_EQ(n.snapshot().device_writes, 2u);
}

TEST(RowBuffer, DrainsAtEightyFivePercentDownToFifty) {
  RowBufferModel m;  // 64 entries: high mark ceil(54.4) = 55, low mark 32
  for (std::uint64_t l = 0; l < 54; ++l) m.on_write(l * kRowStride);
  EXPECT_EQ(m.counters().drains, 0u);
  EXPECT_EQ(m.queued(), 54u);
  m.on_write(54 * kRowStride);
  EXPECT_EQ(m.counters().drains, 1u);
  EXPECT_EQ(m.queued(), 32u);
  EXPECT_EQ(m.counters().device_writes, 23u);  // >= 16 and down to the low mark
}

TEST(RowBuffer, ADrainDoesAtLeastTheMinimumWrites) {
  RowBufferParams p;
  p.wq_entries = 20;
  p.wq_high = 0.5;  // drain at 10 queued
  p.wq_low = 0.4;   // down to 8 would be 2 writes; the minimum asks for 6
  p.min_writes_per_drain = 6;
  RowBufferModel m(p);
  for (std::uint64_t l = 0; l < 10; ++l) m.on_write(l);
  EXPECT_EQ(m.counters().drains, 1u);
  EXPECT_EQ(m.counters().device_writes, 6u);
  EXPECT_EQ(m.queued(), 4u);
}

TEST(RowBuffer, FrFcfsServesOpenRowHitsFirst) {
  RowBufferParams p;
  p.merge = false;  // two rows hold 32 lines; repeats keep the queue at 55 entries
  RowBufferModel m(p);
  // 55 writes alternating rows r0/r1 of bank 0: the drain (23 writes) opens r0, serves every
  // queued r0 write, then r1; FCFS would open a row per write.
  for (std::uint64_t i = 0; i < 55; ++i) m.on_write((i % 2) * kRowStride + (i / 2) % kRowLines);
  const RowBufferStats s = m.counters();
  EXPECT_EQ(s.drains, 1u);
  EXPECT_EQ(s.activations_write, 1u);  // 23 writes: all of them to r0 (28 queued)
  EXPECT_EQ(s.row_hits_write, 22u);
  const RowBufferStats end = m.snapshot();
  EXPECT_EQ(end.activations_write, 2u);  // then r0's rest, then all of r1
  EXPECT_EQ(end.row_writes_total(), 2u);
}

TEST(RowBuffer, AContiguousWriteStreamWritesEachRowOnce) {
  RowBufferModel m;
  const std::uint64_t kib = 300;  // 300 KiB = 300 rows of 1 KiB
  for (std::uint64_t l = 0; l < kib * kRowLines; ++l) m.on_write(l);
  EXPECT_EQ(m.snapshot().row_writes_total(), kib);
}

TEST(RowBuffer, RejectsImpossibleGeometry) {
  RowBufferParams p;
  p.banks = 6;
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.row_bytes = 32;
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.wq_low = 0.9;
  EXPECT_THROW(p.validate(), Error);
}

// The hook: with the model off the statistics carry no row-buffer object; on, every NVM write
// the hierarchy makes reaches it, and a power failure clears queued state.
TEST(RowBuffer, HierarchyFeedsTheModelOnlyWhenOn) {
  auto params = testing::ParamsBuilder().l1(1, 1).llc(1, 2).build();
  for (const bool on : {false, true}) {
    params.nvm.row_buffer.enabled = on;
    Machine m(params);
    for (std::uint64_t l = 0; l < 64; ++l) m.store(0, LineAddr(l * 3));
    m.write_back_all(WriteCause::kDrain);
    const SimStats s = m.stats();
    EXPECT_EQ(s.nvm.row_buffer.has_value(), on);
    EXPECT_EQ(to_json(s).contains("row_buffer"), on);
    if (on) {
      EXPECT_EQ(s.nvm.row_buffer->writes, s.nvm.writes);
      EXPECT_EQ(s.nvm.row_buffer->device_writes + s.nvm.row_buffer->wq_merges, s.nvm.writes);
      EXPECT_LE(s.nvm.row_buffer->row_writes_total(), s.nvm.row_buffer->device_writes);
    }
  }
}

TEST(RowBuffer, ThesisPresetHasTableFourOneValues) {
  const SimParams p = preset("thesis-ch4");
  EXPECT_TRUE(p.nvm.row_buffer.enabled);
  EXPECT_EQ(p.cores, 5);
  EXPECT_EQ(p.threads, 4);
  EXPECT_EQ(p.llc.size_bytes, 8u << 20);
  EXPECT_EQ(p.llc.ways, 16u);
  EXPECT_EQ(p.nvm.row_buffer.bank_count(), 16u);
  EXPECT_EQ(p.nvm.row_buffer.high_mark(), 55u);
  EXPECT_EQ(p.nvm.row_buffer.low_mark(), 32u);
  EXPECT_FALSE(preset("pact17").nvm.row_buffer.enabled);
}

TEST(RowBuffer, PowerFailureClearsQueueAndRows) {
  RowBufferModel m;
  m.on_write(0);
  m.power_fail();
  EXPECT_EQ(m.queued(), 0u);
  EXPECT_EQ(m.snapshot().rows_dirty_at_end, 0u);
}

}  // namespace
}  // namespace pmlab::sim
