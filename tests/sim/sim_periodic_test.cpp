// Periodic cleaning (LP §III-E hardware): once per period, spread over the LLC sets, durable.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "machine_probe.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::L;
using testing::LineBuffer;
using testing::ParamsBuilder;

std::uint64_t periodic(const Machine& m) {
  return m.stats().nvm.writes_for(WriteCause::kPeriodic);
}
// Moves `core`'s clock to exactly t with fences (1 cycle each, nothing outstanding); a fence
// is an op that checks the cleaning deadline and changes no cache state.
void advance_to(Machine& m, std::uint64_t t, int core = 0) {
  while (m.clock(core).value() < t) m.fence(core);
}

TEST(SimPeriodic, ADirtyLineIsWrittenBackOncePerPeriodAndStaysCachedClean) {
  Machine m(ParamsBuilder().l1(1, 2).llc(1, 4).periodic(1000).build());
  m.store(0, L(1));  // miss: 110 cycles; dirty from here
  EXPECT_TRUE(m.probe(0, L(1)).dirty);
  advance_to(m, 999);
  EXPECT_EQ(periodic(m), 0u);
  advance_to(m, 1000);  // the single set is due at every multiple of 1000
  EXPECT_EQ(periodic(m), 1u);
  const LineState st = m.probe(0, L(1));
  EXPECT_TRUE(st.in_l1);
  EXPECT_TRUE(st.in_llc);
  EXPECT_FALSE(st.dirty);
  advance_to(m, 2500);  // clean at 2000: nothing to write
  EXPECT_EQ(periodic(m), 1u);
  m.store(0, L(1));  // L1 hit on a clean line: dirty again
  EXPECT_TRUE(m.probe(0, L(1)).dirty);
  advance_to(m, 3000);
  EXPECT_EQ(periodic(m), 2u);
  const SimStats s = m.stats();
  EXPECT_EQ(s.nvm.writes, 2u);
  EXPECT_EQ(s.nvm.reads, 1u);  // never evicted, never re-read
  EXPECT_EQ(s.llc().evictions, 0u);
}

TEST(SimPeriodic, CleanLinesAreNeverWritten) {
  Machine m(ParamsBuilder().l1(1, 2).llc(1, 4).periodic(50).build());
  for (int i = 0; i < 2000; ++i) m.load(0, L(static_cast<std::uint64_t>(i % 3)));
  EXPECT_GT(m.clock(0).value(), 50u * 20);
  EXPECT_EQ(m.stats().nvm.writes, 0u);
}

TEST(SimPeriodic, OffMeansNoPeriodicWrites) {
  Machine m(ParamsBuilder().l1(1, 2).llc(1, 4).build());
  m.store(0, L(1));
  advance_to(m, 100000);
  EXPECT_EQ(m.stats().nvm.writes, 0u);
  EXPECT_TRUE(m.probe(0, L(1)).dirty);
}

TEST(SimPeriodic, SetsAreCleanedOneByOneSpreadOverThePeriod) {
  // 4 LLC sets, T = 4000: set s is due at 1000 (s + 1) + 4000 p.
  Machine m(ParamsBuilder().l1(4, 2).llc(4, 2).periodic(4000).build());
  for (std::uint64_t s = 0; s < 4; ++s) m.store(0, L(s));  // line s lives in set s
  const LineAddr tick = L(4);                              // set 0, never stored
  m.load(0, tick);
  EXPECT_LT(m.clock(0).value(), 1000u);
  advance_to(m, 999);
  EXPECT_EQ(periodic(m), 0u);
  for (std::uint64_t s = 0; s < 4; ++s) {
    advance_to(m, 1000 * (s + 1));
    EXPECT_EQ(periodic(m), s + 1);
    for (std::uint64_t l = 0; l < 4; ++l) EXPECT_EQ(m.probe(0, L(l)).dirty, l > s) << s << l;
  }
  advance_to(m, 20000);  // everything is clean now
  EXPECT_EQ(periodic(m), 4u);
}

TEST(SimPeriodic, PeriodShorterThanAnOpWritesEveryStoreThrough) {
  Machine m(ParamsBuilder().l1(2, 2).llc(4, 2).periodic(1).build());
  for (int i = 1; i <= 5; ++i) {
    m.store(0, L(3));
    EXPECT_EQ(periodic(m), static_cast<std::uint64_t>(i));
    EXPECT_FALSE(m.probe(0, L(3)).dirty);
    m.load(0, L(3));  // filtered or not, a clean line is not written again
    EXPECT_EQ(periodic(m), static_cast<std::uint64_t>(i));
  }
}

TEST(SimPeriodic, WritesAreDurableInTheCrashImage) {
  Machine m(ParamsBuilder().l1(1, 2).llc(1, 4).periodic(1000).build());
  LineBuffer buf(2);
  auto* x = buf.as<std::uint64_t>();
  m.image().add_range(buf.line_ptr(0), buf.bytes);
  *x = 7;
  m.store(0, buf.line(0));
  advance_to(m, 999);
  EXPECT_EQ(m.image().durable(x), 0u);
  advance_to(m, 1000);
  EXPECT_EQ(m.image().durable(x), 7u);
  *x = 8;  // dirty again, then the power fails before the next period
  m.store(0, buf.line(0));
  m.power_fail();
  m.image().restore_to_live();
  EXPECT_EQ(*x, 7u);
}

TEST(SimPeriodic, CleansTheOwnersPrivateCopyAndClearsItsFilterEntry) {
  Machine m(ParamsBuilder().cores(2).l1(2, 2).llc(4, 2).periodic(2000).build());
  m.store(1, L(5));        // dirty only in core 1's L1
  m.store(1, L(5));        // now a filter entry (dirty)
  advance_to(m, 2000, 0);  // core 0's clock drives the sweep
  EXPECT_EQ(periodic(m), 1u);
  EXPECT_FALSE(m.probe(1, L(5)).dirty);
  EXPECT_TRUE(m.probe(1, L(5)).in_l1);
  const std::uint64_t before = m.stats().filtered_accesses;
  m.store(1, L(5));  // must not be filtered: the line is clean now
  EXPECT_EQ(m.stats().filtered_accesses, before);
  EXPECT_TRUE(m.probe(1, L(5)).dirty);
}

TEST(SimPeriodic, NonInclusiveLlcAlsoCleansPrivateOnlyLines) {
  // LLC of 1 line: line 1 is dropped from it (and cleaned) when line 2 comes in; a store
  // then dirties the private-only copy, which the sweep must still find.
  Machine m(ParamsBuilder().l1(2, 2).llc(1, 1).inclusive(false).periodic(1000).build());
  m.store(0, L(1));
  m.load(0, L(2));  // LLC evicts 1: one eviction write; L1 keeps 1, clean
  EXPECT_EQ(m.stats().nvm.writes_for(WriteCause::kEviction), 1u);
  m.store(0, L(1));  // private only, dirty
  EXPECT_FALSE(m.probe(0, L(1)).in_llc);
  EXPECT_TRUE(m.probe(0, L(1)).dirty);
  advance_to(m, 1000);
  EXPECT_EQ(periodic(m), 1u);
  EXPECT_FALSE(m.probe(0, L(1)).dirty);
  EXPECT_TRUE(m.probe(0, L(1)).in_l1);
}

TEST(SimPeriodic, LoadHitsLeaveTheCleaningToTheNextOtherOp) {
  Machine m(ParamsBuilder().l1(1, 2).llc(1, 4).periodic(1000).build());
  m.store(0, L(1));
  while (m.clock(0).value() < 3000) m.load(0, L(1));  // filtered L1 hits only
  EXPECT_EQ(periodic(m), 0u);
  EXPECT_TRUE(m.probe(0, L(1)).dirty);
  m.load(0, L(2));  // a miss: every due set is cleaned now, once
  EXPECT_EQ(periodic(m), 1u);
  EXPECT_FALSE(m.probe(0, L(1)).dirty);
}

TEST(SimPeriodic, CostsTheCoresNoCyclesWithAQueueThatKeepsUp) {
  const auto trace = [](Machine& m) {
    std::mt19937_64 rng(3);
    for (int i = 0; i < 20000; ++i) {
      const LineAddr l = L(rng() % 64);
      if (rng() % 4 == 0)
        m.store(0, l);
      else
        m.load(0, l);
    }
  };
  Machine off(ParamsBuilder().l1(2, 2).llc(8, 4).write_queue(64, 64).build());
  Machine on(ParamsBuilder().l1(2, 2).llc(8, 4).write_queue(64, 64).periodic(3000).build());
  trace(off);
  trace(on);
  EXPECT_GT(on.stats().nvm.writes_for(WriteCause::kPeriodic), 100u);
  // Same hits and misses (cleaning never evicts), same cycles (it never stalls a core).
  EXPECT_EQ(on.stats().cycles, off.stats().cycles);
  EXPECT_EQ(on.stats().llc().misses, off.stats().llc().misses);
  EXPECT_EQ(on.stats().l1().misses, off.stats().l1().misses);
  // Cleaned lines leave the LLC clean: fewer (or equal) eviction writes.
  EXPECT_LE(on.stats().nvm.writes_for(WriteCause::kEviction),
            off.stats().nvm.writes_for(WriteCause::kEviction));
}

TEST(SimPeriodic, ResetStatsRestartsTheSweepWithTheClocks) {
  Machine m(ParamsBuilder().l1(1, 2).llc(1, 4).periodic(1000).build());
  advance_to(m, 5000);
  m.reset_stats();
  m.store(0, L(1));
  advance_to(m, 999);
  EXPECT_EQ(periodic(m), 0u);
  advance_to(m, 1000);
  EXPECT_EQ(periodic(m), 1u);
}

// Cleaning can run at the end of the very store that dirtied the line: the backend writes the
// bytes before the model sees the access, so the write-back carries the new value (found by a
// crash campaign: ep-ii lost a C element when the value was stored after the cleaning).
TEST(SimPeriodic, CleaningAtAStoreWritesTheStoredValueBack) {
  SimBackend be(ParamsBuilder().l1(2, 2).llc(4, 2).periodic(1).build(), FlushMode::kClwb, 1);
  LineBuffer buf(4);
  auto* x = buf.as<double>();
  be.register_persistent(x, buf.bytes);
  for (int i = 1; i <= 20; ++i) {
    be.store(x + (i % 3) * 8, 1.5 * i);  // T = 1: every store is cleaned before the next op
    EXPECT_EQ(be.image().durable(x + (i % 3) * 8), 1.5 * i) << i;
  }
  be.store(x, 99.0);  // a filtered store (same line, dirty): checked on the fast path
  be.store(x, 100.0);
  EXPECT_EQ(be.image().durable(x), 100.0);
  be.arm_crash(be.ops() + 1);
  try {
    be.store(x, -1.0);
  } catch (const PowerFailure&) {
  }
  be.apply_crash_image();
  EXPECT_EQ(*x, 100.0);  // the cut store never happened
}

TEST(SimPeriodic, ParamsJsonHasThePeriod) {
  SimParams p = ParamsBuilder().periodic(1234).build();
  EXPECT_EQ(to_json(p).at("periodic_flush_cycles"), 1234u);
}

}  // namespace
}  // namespace pmlab::sim
