// Single-core cache rules: 1-set / 1-way caches, write-back eviction, LRU / SRRIP / random victims.
#include <gtest/gtest.h>

#include "machine_probe.hpp"
#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::L;
using testing::LineBuffer;
using testing::ParamsBuilder;

TEST(SimCache, OneSetOneWayMissHitAndCleanEviction) {
  Machine m(ParamsBuilder().l1(1, 1).llc(1, 1).build());
  m.load(0, L(1));
  m.load(0, L(1));
  m.load(0, L(2));  // evicts line 1 everywhere; it was clean: no write
  const SimStats s = m.stats();
  EXPECT_EQ(s.l1().hits, 1u);
  EXPECT_EQ(s.l1().misses, 2u);
  EXPECT_EQ(s.llc().misses, 2u);
  EXPECT_EQ(s.llc().evictions, 1u);
  EXPECT_EQ(s.llc().dirty_evictions, 0u);
  EXPECT_EQ(s.nvm.reads, 2u);
  EXPECT_EQ(s.nvm.writes, 0u);
  EXPECT_FALSE(m.probe(0, L(1)).in_llc);
  EXPECT_TRUE(m.probe(0, L(2)).in_l1);
}

TEST(SimCache, DirtyEvictionIsOneEvictionWriteAndUpdatesTheShadow) {
  Machine m(ParamsBuilder().l1(1, 1).llc(1, 1).build());
  LineBuffer buf(2);
  auto* x = reinterpret_cast<std::uint64_t*>(buf.line_ptr(0));
  *x = 5;
  m.image().add_range(buf.line_ptr(0), buf.bytes);  // durable: 5
  *x = 42;
  m.store(0, buf.line(0));
  EXPECT_TRUE(m.probe(0, buf.line(0)).dirty);
  EXPECT_EQ(m.image().durable(x), 5u);  // still only in the cache
  m.load(0, buf.line(1));               // evicts the dirty line
  const SimStats s = m.stats();
  EXPECT_EQ(s.nvm.writes, 1u);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kEviction), 1u);
  EXPECT_EQ(s.llc().dirty_evictions, 1u);
  // The LLC chose its victim first and back-invalidated the L1 copy (inclusion).
  EXPECT_EQ(s.coherence.back_invalidations, 1u);
  EXPECT_EQ(s.l1().dirty_evictions, 0u);
  EXPECT_EQ(m.image().durable(x), 42u);
}

TEST(SimCache, L1VictimMovesDirtinessToTheLlcWithoutAnNvmWrite) {
  Machine m(ParamsBuilder().l1(1, 1).llc(4, 2).build());
  m.store(0, L(1));
  m.load(0, L(2));  // L1 evicts line 1 (dirty) into the LLC
  LineState st = m.probe(0, L(1));
  EXPECT_FALSE(st.in_l1);
  EXPECT_TRUE(st.in_llc);
  EXPECT_TRUE(st.dirty);
  EXPECT_EQ(m.stats().nvm.writes, 0u);
  EXPECT_EQ(m.stats().l1().dirty_evictions, 1u);
}

TEST(SimCache, LruEvictsTheLeastRecentlyUsedWay) {
  Machine m(ParamsBuilder().l1(1, 4).build());
  for (std::uint64_t l : {1, 2, 3, 4}) m.load(0, L(l));
  m.load(0, L(1));
  m.load(0, L(2));
  m.load(0, L(5));  // LRU order now 3 < 4 < 1 < 2: evicts 3
  EXPECT_FALSE(m.probe(0, L(3)).in_l1);
  for (std::uint64_t l : {1, 2, 4, 5}) EXPECT_TRUE(m.probe(0, L(l)).in_l1) << l;
  m.load(0, L(6));  // then 4
  EXPECT_FALSE(m.probe(0, L(4)).in_l1);
  EXPECT_TRUE(m.probe(0, L(3)).in_llc);  // the LLC is larger and still holds it
}

TEST(SimCache, SrripKeepsAReusedLineThatLruWouldEvict) {
  // A, B, A (reuse), C, D: LRU evicts B then A; SRRIP (A at RRPV 0) evicts B then C.
  for (Replacement r : {Replacement::kLru, Replacement::kSrrip}) {
    Machine m(ParamsBuilder().l1(1, 2, r).build());
    for (std::uint64_t l : {1, 2, 1, 3, 4}) m.load(0, L(l));
    const bool a_kept = m.probe(0, L(1)).in_l1;
    EXPECT_EQ(a_kept, r == Replacement::kSrrip) << to_string(r);
    EXPECT_FALSE(m.probe(0, L(2)).in_l1);
    EXPECT_EQ(m.probe(0, L(3)).in_l1, r == Replacement::kLru);
  }
}

TEST(SimCache, RandomReplacementIsReproducibleForASeed) {
  auto run = [](std::uint64_t seed) {
    Machine m(ParamsBuilder()
                  .l1(2, 4, Replacement::kRandom)
                  .llc(4, 8, Replacement::kRandom)
                  .seed(seed)
                  .build());
    std::uint64_t x = 12345;
    for (int i = 0; i < 5000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const LineAddr line((x >> 33) % 64);
      if ((x >> 20) & 1)
        m.store(0, line);
      else
        m.load(0, line);
    }
    return m.stats();
  };
  const SimStats a = run(7), b = run(7), c = run(8);
  EXPECT_EQ(a.l1().misses, b.l1().misses);
  EXPECT_EQ(a.llc().misses, b.llc().misses);
  EXPECT_EQ(a.nvm.writes, b.nvm.writes);
  EXPECT_NE(a.l1().misses + a.llc().misses, c.l1().misses + c.llc().misses);
}

TEST(SimCache, RandomReplacementHitsWhenTheWorkingSetFits) {
  Machine m(ParamsBuilder().l1(1, 4, Replacement::kRandom).build());
  for (int rep = 0; rep < 3; ++rep)
    for (std::uint64_t l : {1, 2, 3, 4}) m.load(0, L(l));
  EXPECT_EQ(m.stats().l1().misses, 4u);
  EXPECT_EQ(m.stats().l1().hits, 8u);
}

TEST(SimCache, NonPowerOfTwoSetCountIndexesByModulo) {
  Machine m(ParamsBuilder().l1(3, 1).llc(3, 4).build());
  m.load(0, L(0));
  m.load(0, L(1));
  m.load(0, L(3));  // same set as 0 (3 % 3): evicts it; line 1 stays
  EXPECT_FALSE(m.probe(0, L(0)).in_l1);
  EXPECT_TRUE(m.probe(0, L(1)).in_l1);
}

TEST(SimCache, EveryDirtyLineIsWrittenExactlyOnce) {
  Machine m(ParamsBuilder().l1(2, 2).llc(4, 2).build());
  for (std::uint64_t l = 0; l < 100; ++l) m.store(0, L(l));
  const std::uint64_t evicted = m.stats().nvm.writes_for(WriteCause::kEviction);
  EXPECT_EQ(evicted, 100u - 8u);  // the LLC keeps 8 lines
  m.write_back_all(WriteCause::kDrain);
  SimStats s = m.stats();
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kDrain), 8u);
  EXPECT_EQ(s.nvm.writes, 100u);
  m.write_back_all(WriteCause::kPeriodic);  // nothing dirty is left
  EXPECT_EQ(m.stats().nvm.writes, 100u);
  EXPECT_TRUE(m.probe(0, L(99)).in_l1);  // cleaning keeps the copies
  EXPECT_FALSE(m.probe(0, L(99)).dirty);
}

TEST(SimCache, PrivateL2IsInclusiveOfL1) {
  Machine m(ParamsBuilder().l1(1, 1).l2(1, 2).llc(4, 4).build());
  m.store(0, L(1));
  m.load(0, L(2));  // L1 victim 1 -> L2 (dirty there)
  m.load(0, L(1));  // L2 hit
  SimStats s = m.stats();
  ASSERT_EQ(s.levels.size(), 3u);
  EXPECT_EQ(s.levels[1].hits, 1u);
  EXPECT_EQ(s.levels[1].misses, 2u);
  m.load(0, L(3));  // L2 (2 ways: 1, 2) evicts 2, the LRU; L1 holds 3
  m.load(0, L(4));  // L2 evicts 1 (dirty) -> LLC dirty, not NVM
  LineState st = m.probe(0, L(1));
  EXPECT_FALSE(st.in_l1);
  EXPECT_FALSE(st.in_l2);
  EXPECT_TRUE(st.in_llc);
  EXPECT_TRUE(st.dirty);
  EXPECT_EQ(m.stats().nvm.writes, 0u);
}

}  // namespace
}  // namespace pmlab::sim
