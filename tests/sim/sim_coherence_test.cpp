// Multi-core rules: private L1s, shared inclusive LLC, invalidation, downgrade, back-invalidation.
#include <gtest/gtest.h>

#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::ParamsBuilder;

TEST(SimCoherence, SecondCoreMissesInItsL1AndHitsTheSharedLlc) {
  Machine m(ParamsBuilder().cores(2).build());
  const LineAddr a(3);
  m.load(0, a);
  m.load(1, a);
  m.load(0, a);
  const SimStats s = m.stats();
  EXPECT_EQ(s.l1().misses, 2u);
  EXPECT_EQ(s.l1().hits, 1u);
  EXPECT_EQ(s.llc().misses, 1u);
  EXPECT_EQ(s.llc().hits, 1u);
  EXPECT_EQ(s.nvm.reads, 1u);
  EXPECT_EQ(m.probe(0, a).private_copies, 2);
}

TEST(SimCoherence, StoreInvalidatesOtherCopies) {
  Machine m(ParamsBuilder().cores(3).build());
  const LineAddr a(3);
  for (int c = 0; c < 3; ++c) m.load(c, a);
  m.store(1, a);  // upgrade: Shared -> Modified
  EXPECT_FALSE(m.probe(0, a).in_l1);
  EXPECT_TRUE(m.probe(1, a).in_l1);
  EXPECT_FALSE(m.probe(2, a).in_l1);
  EXPECT_EQ(m.probe(1, a).private_copies, 1);
  const SimStats s = m.stats();
  EXPECT_EQ(s.coherence.upgrades, 1u);
  EXPECT_EQ(s.coherence.invalidations, 2u);
  m.load(0, a);  // core 0 misses again
  EXPECT_EQ(m.stats().l1().misses, 4u);
}

TEST(SimCoherence, ReadOfARemoteDirtyLineDowngradesItWithoutAWrite) {
  Machine m(ParamsBuilder().cores(2).build());
  const LineAddr a(3);
  m.store(0, a);
  m.load(1, a);
  EXPECT_EQ(m.stats().coherence.interventions, 1u);
  EXPECT_TRUE(m.probe(0, a).in_l1);
  EXPECT_TRUE(m.probe(1, a).dirty);  // the LLC copy now carries the dirtiness
  EXPECT_EQ(m.stats().nvm.writes, 0u);
  m.store(0, a);  // core 0 lost write permission: upgrade, core 1 invalidated
  EXPECT_EQ(m.stats().coherence.upgrades, 1u);
  EXPECT_FALSE(m.probe(1, a).in_l1);
}

TEST(SimCoherence, StoreMissTakesARemoteModifiedLine) {
  Machine m(ParamsBuilder().cores(2).build());
  const LineAddr a(3);
  m.store(0, a);
  m.store(1, a);
  EXPECT_FALSE(m.probe(0, a).in_l1);
  EXPECT_EQ(m.stats().coherence.interventions, 1u);
  m.write_back_all(WriteCause::kDrain);
  EXPECT_EQ(m.stats().nvm.writes, 1u);  // one line, one write, though two cores wrote it
}

TEST(SimCoherence, LlcEvictionBackInvalidatesPrivateCopiesAndWritesDirtyOnce) {
  Machine m(ParamsBuilder().cores(2).l1(1, 2).llc(1, 2).build());
  m.store(0, LineAddr(1));  // dirty in core 0's L1 only
  m.load(1, LineAddr(2));
  m.load(1, LineAddr(3));  // the LLC (2 ways) evicts line 1, the LRU, from core 0's L1 too
  const LineState st = m.probe(0, LineAddr(1));
  EXPECT_FALSE(st.in_l1);
  EXPECT_FALSE(st.in_llc);
  const SimStats s = m.stats();
  EXPECT_EQ(s.coherence.back_invalidations, 1u);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kEviction), 1u);
}

TEST(SimCoherence, PrivateL2sAreKeptCoherent) {
  Machine m(ParamsBuilder().cores(2).l1(1, 1).l2(2, 2).llc(8, 4).build());
  const LineAddr a(2);
  m.store(0, a);
  m.load(0, LineAddr(4));  // a's dirty copy moves from core 0's L1 to its L2
  ASSERT_TRUE(m.probe(0, a).in_l2);
  m.load(1, a);  // downgrade reaches core 0's L2
  EXPECT_EQ(m.stats().coherence.interventions, 1u);
  m.store(1, a);
  EXPECT_FALSE(m.probe(0, a).in_l2);
  m.write_back_all(WriteCause::kDrain);
  EXPECT_EQ(m.stats().nvm.writes, 1u);
}

}  // namespace
}  // namespace pmlab::sim
