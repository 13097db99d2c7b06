// PreFlush (thesis Ch. 5): the predictor's rules on hand-made streams, and its hooks in the
// machine.
#include <gtest/gtest.h>

#include <random>

#include "../../src/sim/preflush.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/presets.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::LineBuffer;
using testing::ParamsBuilder;

constexpr std::uint32_t kX = 0x1234, kY = 0x5678;

PreflushParams small() {
  PreflushParams p;
  p.enabled = true;
  p.signatures = 4;
  p.flushed_tags = 2;
  p.sample_every = 2;
  return p;
}

// L1 of 4 sets x 2 ways: slots 0-1 are set 0 (sampled), 2-3 set 1 (not sampled).
TEST(PreflushPredictor, TrainsOnSampledFlushThenPredicts) {
  Preflusher pf(small(), 4, 2);
  EXPECT_FALSE(pf.on_store(100, 0, kX).preflush);  // nothing trained yet
  EXPECT_FALSE(pf.on_flush(100, 0, true).has_value());
  EXPECT_EQ(pf.stats().signatures_inserted, 1u);
  const auto pr = pf.on_store(200, 1, kX);  // same PC, new line: weak-high predicts
  EXPECT_TRUE(pr.preflush);
  EXPECT_TRUE(pr.clwb);
  pf.preflushed(200, kX, 77);
  const auto ack = pf.on_flush(200, 1, true);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(*ack, 77u);
  EXPECT_EQ(pf.stats().correct, 1u);
  EXPECT_EQ(pf.stats().issued, 1u);
}

TEST(PreflushPredictor, UnsampledSetsDoNotTrain) {
  Preflusher pf(small(), 4, 2);
  pf.on_store(100, 2, kX);
  EXPECT_FALSE(pf.on_flush(100, 2, true).has_value());
  EXPECT_EQ(pf.stats().signatures_inserted, 0u);
  EXPECT_FALSE(pf.on_store(101, 0, kX).preflush);
}

TEST(PreflushPredictor, OwnStoreMispredictsAndConfidenceSaturates) {
  Preflusher pf(small(), 4, 2);
  pf.on_store(100, 0, kX);
  pf.on_flush(100, 0, false);  // signature X at 2, type clflushopt
  auto pr = pf.on_store(200, 0, kX);
  ASSERT_TRUE(pr.preflush);
  EXPECT_FALSE(pr.clwb);
  pf.preflushed(200, kX, 10);
  EXPECT_FALSE(pf.on_store(200, 0, kX).preflush);  // misprediction: X drops to 1, entry gone
  EXPECT_EQ(pf.stats().mispredicted_store, 1u);
  EXPECT_FALSE(pf.on_store(300, 1, kX).preflush);        // weak-low: no prediction
  EXPECT_FALSE(pf.on_flush(200, 0, false).has_value());  // trains X back to 2
  EXPECT_EQ(pf.stats().uncovered_flushes, 2u);
  for (int i = 0; i < 5; ++i) {  // up to 3 and no further
    pf.on_store(400, 0, kY);
    pf.on_flush(400, 0, true);
  }
  // Y at 3: two mispredictions leave it at 1 (not predicting); had it passed 3, it would still.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(pf.on_store(500, 1, kY).preflush);
    pf.preflushed(500, kY, 0);
    EXPECT_FALSE(pf.on_store(500, 1, kY).preflush);
  }
  EXPECT_FALSE(pf.on_store(501, 2, kY).preflush);
}

TEST(PreflushPredictor, NackDropsTheEntryAndFifoEvicts) {
  Preflusher pf(small(), 4, 2);
  pf.on_store(100, 0, kX);
  pf.on_flush(100, 0, true);
  pf.preflushed(1, kX, 0);
  pf.nack(1);
  EXPECT_EQ(pf.stats().nacked, 1u);
  EXPECT_FALSE(pf.on_flush(1, Preflusher::kNoSlot, true).has_value());
  pf.preflushed(2, kX, 0);
  pf.preflushed(3, kX, 0);
  pf.preflushed(4, kX, 0);  // 2 entries: line 2 is pushed out
  EXPECT_EQ(pf.stats().tag_evictions, 1u);
  EXPECT_FALSE(pf.on_flush(2, Preflusher::kNoSlot, true).has_value());
  EXPECT_TRUE(pf.on_flush(4, Preflusher::kNoSlot, true).has_value());
}

// Fig. 5.7's loop: one PC stores each line several times, then moves on. The thesis' design
// mispredicts on the second store; line-change PreFlushes a line when the PC leaves it.
TEST(PreflushPredictor, LineChangeCoversALoopThatRestoresEachLine) {
  PreflushParams p = small();
  p.line_change = true;
  Preflusher pf(p, 4, 2);
  pf.on_store(100, 0, kX);
  pf.on_flush(100, 0, true);  // X trained at weak-high
  for (std::uint64_t line = 200; line < 204; ++line)
    for (int k = 0; k < 4; ++k) {
      const auto pr = pf.on_store(line, 1, kX);
      const bool moved = k == 0 && line > 200;
      ASSERT_EQ(pr.preflush, moved) << line << " " << k;
      if (pr.preflush) {
        EXPECT_EQ(pr.line, line - 1);
        pf.preflushed(pr.line, kX, 0);
      }
    }
  EXPECT_EQ(pf.stats().mispredicted_store, 0u);
  EXPECT_TRUE(pf.on_flush(201, 1, true).has_value());
  EXPECT_TRUE(pf.on_flush(202, 1, true).has_value());
  EXPECT_FALSE(pf.on_flush(203, 1, true).has_value());  // the last line: not left yet
}

// pmlab's L1 marks: a region PreFlushes more lines than FlushedTags holds (2 here); the marks
// keep them all until the real flushes, and a line that leaves L1 takes its mark along.
TEST(PreflushPredictor, L1MarksHoldEveryPreflushedLineUntilItLeavesL1) {
  for (const bool marks : {false, true}) {
    PreflushParams p = small();
    p.l1_marks = marks;
    Preflusher pf(p, 4, 2);
    pf.on_store(100, 0, kX);
    pf.on_flush(100, 0, true);  // X trained
    for (std::uint64_t line = 200; line < 204; ++line) {
      ASSERT_TRUE(pf.on_store(line, 1, kX).preflush);
      pf.preflushed(line, kX, 0);
    }
    pf.line_left(201, false);
    std::uint64_t acked = 0;
    for (std::uint64_t line = 200; line < 204; ++line) acked += pf.on_flush(line, 1, true) ? 1 : 0;
    EXPECT_EQ(acked, marks ? 3u : 2u) << marks;  // the FIFO keeps the last 2
    EXPECT_EQ(pf.stats().tag_evictions, marks ? 0u : 2u);
    EXPECT_EQ(pf.stats().marks_lost, marks ? 1u : 0u);
  }
}

TEST(PreflushPredictor, L1MarksFitTheThesisBudgetWithSixtyFourSignatures) {
  const SimParams p = preset("pact17");
  PreflushParams q = p.preflush;
  q.line_change = true;
  const std::uint64_t table = q.storage_bytes(p.l1.sets(), p.l1.ways);
  q.l1_marks = true;
  q.signatures = 64;
  const std::uint64_t marks = q.storage_bytes(p.l1.sets(), p.l1.ways);
  // LastStore 512 x 35 + 64 signatures x 77 + 1024 L1 lines x (1 + 6) bits.
  EXPECT_EQ(marks, (512u * 35 + 64 * 77 + 1024 * 7 + 7) / 8);
  EXPECT_LE(marks, 3800u);
  EXPECT_GT(table, 3800u);  // line-change with the thesis' tables: over budget
}

TEST(PreflushPredictor, DefaultStorageIsTheThesisBudget) {
  const SimParams p = preset("pact17");
  const std::uint64_t b = p.preflush.storage_bytes(p.l1.sets(), p.l1.ways);
  EXPECT_NEAR(static_cast<double>(b), 3800.0, 190.0) << b;
}

// The baseline design (§5.3.3): the signature is the line's XOR trace of store PCs, so a line
// stored by X then Y trains X^Y, and only that sequence predicts; a lone X does not.
TEST(PreflushPredictor, TraceDesignKeysOnTheStoreSequence) {
  PreflushParams p = small();
  p.trace = true;
  Preflusher pf(p, 4, 2);
  pf.on_store(100, 2, kX);  // every set keeps a trace (no sampling in the baseline)
  pf.on_store(100, 2, kY);
  EXPECT_FALSE(pf.on_flush(100, 2, true).has_value());
  EXPECT_EQ(pf.stats().signatures_inserted, 1u);
  EXPECT_FALSE(pf.on_store(200, 3, kX).preflush);  // trace X: no signature
  const auto pr = pf.on_store(200, 3, kY);         // trace X^Y: trained
  ASSERT_TRUE(pr.preflush);
  EXPECT_EQ(pr.key, kX ^ kY);
  pf.preflushed(200, pr.key, 5);
  EXPECT_TRUE(pf.on_flush(200, 3, true).has_value());
  EXPECT_EQ(pf.stats().correct, 1u);
  const PreflushParams opt = small();
  EXPECT_GT(p.storage_bytes(1024 / 16, 16), opt.storage_bytes(1024 / 16, 16));
}

// The directory's PreFlushers table is FIFO; a pushed-out entry returns its cores (to NACK),
// a store returns the other cores and forgets them, an early-ACKed flush forgets its core.
TEST(PreflushPredictor, DirectoryTableEvictsOldestAndReportsCores) {
  PreflushDirectory d(2);
  EXPECT_FALSE(d.record(10, 0).has_value());
  EXPECT_FALSE(d.record(10, 1).has_value());  // same line: one entry, two cores
  EXPECT_FALSE(d.record(11, 0).has_value());
  const auto v = d.record(12, 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->line, 10u);
  EXPECT_EQ(v->cores, 0b11u);
  EXPECT_EQ(d.evictions(), 1u);
  EXPECT_EQ(d.store(12, 0), 0b100u);  // core 2's PreFlush of 12 is NACKed and forgotten
  EXPECT_EQ(d.store(12, 1), 0u);
  d.flushed(11, 0);
  EXPECT_EQ(d.store(11, 1), 0u);
  EXPECT_FALSE(d.record(13, 0).has_value());  // room again: 11 and 12 were forgotten
}

SimParams machine_params(std::uint64_t hop = 0) {
  SimParams p = ParamsBuilder().l1(1, 4).build();
  p.preflush.enabled = true;
  p.preflush.sample_every = 1;
  p.flush_mc_hop = hop;
  return p;
}

// Train X on line 0, then X's store to line 1 PreFlushes it: the real flush is ACKed early and
// writes nothing more, and the line is durable.
TEST(PreflushMachine, PredictedFlushIsAckedEarlyWithoutASecondWrite) {
  Machine m(machine_params());
  LineBuffer buf(2);
  m.image().add_range(buf.mem.get(), buf.bytes);
  auto* d = reinterpret_cast<double*>(buf.line_ptr(1));
  buf.line_ptr(0)[0] = 1;
  m.store(0, buf.line(0), kX);
  m.flush(0, buf.line(0), FlushMode::kClwb);
  *d = 2.5;
  m.store(0, buf.line(1), kX);
  EXPECT_EQ(m.image().durable(d), 2.5);  // PreFlushed behind the store
  EXPECT_EQ(m.stats().nvm.writes, 2u);
  m.flush(0, buf.line(1), FlushMode::kClwb);
  m.fence(0);
  const SimStats s = m.stats();
  EXPECT_EQ(s.nvm.writes, 2u);
  ASSERT_TRUE(s.preflush.has_value());
  EXPECT_EQ(s.preflush->issued, 1u);
  EXPECT_EQ(s.preflush->nvm_writes, 1u);
  EXPECT_EQ(s.preflush->correct, 1u);
  EXPECT_EQ(s.preflush->transparency_violations, 0u);
}

TEST(PreflushMachine, OwnStoreAfterPreflushIsWrittenByTheRealFlush) {
  Machine m(machine_params());
  LineBuffer buf(2);
  m.image().add_range(buf.mem.get(), buf.bytes);
  auto* d = reinterpret_cast<double*>(buf.line_ptr(1));
  m.store(0, buf.line(0), kX);
  m.flush(0, buf.line(0), FlushMode::kClwb);
  *d = 1.0;
  m.store(0, buf.line(1), kX);  // PreFlushed
  d[1] = 2.0;
  m.store(0, buf.line(1), kY);  // misprediction
  m.flush(0, buf.line(1), FlushMode::kClwb);
  EXPECT_EQ(m.image().durable(d + 1), 2.0);
  EXPECT_EQ(m.stats().preflush->mispredicted_store, 1u);
  EXPECT_EQ(m.stats().preflush->correct, 0u);
}

TEST(PreflushMachine, WithoutTheOwnStoreCheckTransparencyBreaks) {
  SimParams p = machine_params();
  p.preflush.own_store_check = false;
  Machine m(p);
  LineBuffer buf(2);
  m.image().add_range(buf.mem.get(), buf.bytes);
  auto* d = reinterpret_cast<double*>(buf.line_ptr(1));
  m.store(0, buf.line(0), kX);
  m.flush(0, buf.line(0), FlushMode::kClwb);
  *d = 1.0;
  m.store(0, buf.line(1), kX);
  d[1] = 2.0;
  m.store(0, buf.line(1), kY);
  m.flush(0, buf.line(1), FlushMode::kClwb);  // wrongly ACKed early
  EXPECT_EQ(m.image().durable(d + 1), 0.0);
  EXPECT_EQ(m.stats().preflush->transparency_violations, 1u);
}

// Fig. 5.6: core 0 PreFlushes a line, core 1 stores to it: NACK, so core 0's flush is real.
// With pmlab's L1 marks there is no directory table: core 1's store invalidates core 0's copy,
// and the mark goes with it. The no-nack mutant keeps the entry (or mark) and ACKs a stale line.
TEST(PreflushMachine, AnotherCoresStoreIsNacked) {
  for (const bool marks : {false, true})
    for (const bool nack : {true, false}) {
      SimParams p = machine_params();
      p.cores = p.threads = 2;
      p.preflush.l1_marks = marks;
      p.preflush.nack = nack;
      Machine m(p);
      LineBuffer buf(2);
      m.image().add_range(buf.mem.get(), buf.bytes);
      auto* d = reinterpret_cast<double*>(buf.line_ptr(1));
      m.store(0, buf.line(0), kX);
      m.flush(0, buf.line(0), FlushMode::kClwb);
      *d = 1.0;
      m.store(0, buf.line(1), kX);  // PreFlushed by core 0
      d[1] = 2.0;
      m.store(1, buf.line(1), kY);
      m.flush(0, buf.line(1), FlushMode::kClwb);
      EXPECT_EQ(m.image().durable(d + 1), nack ? 2.0 : 0.0) << marks << nack;
      EXPECT_EQ(m.stats().preflush->nacked, nack ? 1u : 0u) << marks;
      EXPECT_EQ(m.stats().preflush->transparency_violations, nack ? 0u : 1u) << marks;
      EXPECT_EQ(m.stats().preflush->dir_evictions, 0u);
    }
}

// The any-dirty crash image: a PreFlush no fence has waited for may not have landed, so the
// image may lose it (half of the draws); once a fence waited for it (after the real flush it
// ACKed early), it cannot be lost any more.
TEST(PreflushMachine, AnUnfencedPreflushMayBeLostByTheAdversarialImage) {
  const auto lost_in = [](bool fenced) {
    int lost = 0;
    for (std::uint64_t seed = 0; seed < 64; ++seed) {
      Machine m(machine_params());
      LineBuffer buf(2);
      m.image().add_range(buf.mem.get(), buf.bytes);
      m.image().track_preflushes(true);
      auto* d = reinterpret_cast<double*>(buf.line_ptr(1));
      m.store(0, buf.line(0), kX);
      m.flush(0, buf.line(0), FlushMode::kClwb);
      m.fence(0);
      *d = 4.0;
      m.store(0, buf.line(1), kX);  // PreFlushed: in the image at once
      if (fenced) {
        m.flush(0, buf.line(1), FlushMode::kClwb);  // ACKed early
        m.fence(0);                                 // waits for the PreFlush
      }
      EXPECT_EQ(m.image().durable(d), 4.0);
      std::mt19937_64 rng(seed);
      m.image().perturb(rng);
      lost += m.image().durable(d) == 0.0 ? 1 : 0;
    }
    return lost;
  };
  EXPECT_GT(lost_in(false), 8);
  EXPECT_LT(lost_in(false), 56);
  EXPECT_EQ(lost_in(true), 0);
}

// A clflushopt ACKed by an L1 mark still removes the line (the PreFlush kept it cached).
TEST(PreflushMachine, L1MarkedClflushoptStillRemovesTheLine) {
  SimParams p = machine_params();
  p.preflush.l1_marks = true;
  Machine m(p);
  LineBuffer buf(2);
  m.image().add_range(buf.mem.get(), buf.bytes);
  m.store(0, buf.line(0), kX);
  m.flush(0, buf.line(0), FlushMode::kClflushopt);  // trains X, type clflushopt
  buf.line_ptr(1)[0] = 7;
  m.store(0, buf.line(1), kX);  // PreFlushed, kept in L1 for its mark
  EXPECT_TRUE(m.probe(0, buf.line(1)).in_l1);
  m.flush(0, buf.line(1), FlushMode::kClflushopt);
  EXPECT_EQ(m.stats().preflush->correct, 1u);
  EXPECT_FALSE(m.probe(0, buf.line(1)).in_l1);
  EXPECT_EQ(m.stats().preflush->transparency_violations, 0u);
}

// One directory entry per core (two in all): core 0's third PreFlush pushes out the first one's
// entry, whose PreFlush must then be NACKed at once (no later store could NACK it), so its real
// flush is not ACKed early and core 1's store reaches NVM.
TEST(PreflushMachine, DirectoryEvictionNacksAtOnce) {
  SimParams p = machine_params();
  p.cores = p.threads = 2;
  p.preflush.dir_entries = 1;
  p.preflush.flushed_tags = 4;
  p.l1 = ParamsBuilder().l1(4, 4).build().l1;
  Machine m(p);
  LineBuffer buf(4);
  m.image().add_range(buf.mem.get(), buf.bytes);
  m.store(0, buf.line(0), kX);
  m.flush(0, buf.line(0), FlushMode::kClwb);  // trains X
  m.store(0, buf.line(1), kX);                // PreFlushes line 1
  m.store(0, buf.line(2), kX);                // PreFlushes line 2
  m.store(0, buf.line(3), kX);                // PreFlushes line 3: line 1's entry pushed out
  EXPECT_EQ(m.stats().preflush->dir_evictions, 1u);
  EXPECT_EQ(m.stats().preflush->dir_back_invalidations, 1u);
  auto* d = reinterpret_cast<double*>(buf.line_ptr(1));
  *d = 3.0;
  m.store(1, buf.line(1), kY);
  m.flush(0, buf.line(1), FlushMode::kClwb);
  EXPECT_EQ(m.image().durable(d), 3.0);
  EXPECT_EQ(m.stats().preflush->transparency_violations, 0u);
}

TEST(PreflushMachine, RoundTripTiming) {
  constexpr std::uint64_t kHop = 20, kLlc = 10;
  SimParams p = ParamsBuilder().build();
  p.flush_mc_hop = kHop;
  Machine m(p);
  m.flush(0, LineAddr(5), FlushMode::kClwb);  // absent line: still to the directory and back
  const std::uint64_t t0 = m.clock(0).value();
  m.fence(0);
  EXPECT_EQ(m.clock(0).value(), t0 + 2 * kLlc);  // fence latency 1 overlaps the wait
  SimParams q = ParamsBuilder().build();
  Machine off(q);
  off.flush(0, LineAddr(5), FlushMode::kClwb);
  off.fence(0);
  EXPECT_EQ(off.clock(0).value(), 1 + kLlc);
  EXPECT_FALSE(off.stats().preflush.has_value());
}

}  // namespace
}  // namespace pmlab::sim
