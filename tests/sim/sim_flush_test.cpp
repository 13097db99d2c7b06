// Flush rules for clflush / clflushopt / clwb on clean, dirty and absent lines (ADR durability).
#include <gtest/gtest.h>

#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::LineBuffer;
using testing::ParamsBuilder;

class SimFlush : public ::testing::TestWithParam<FlushMode> {
 protected:
  [[nodiscard]] bool keeps_copy() const { return GetParam() == FlushMode::kClwb; }
};

TEST_P(SimFlush, CleanLineCostsNoWrite) {
  Machine m(ParamsBuilder().build());
  m.load(0, LineAddr(7));
  m.flush(0, LineAddr(7), GetParam());
  const SimStats s = m.stats();
  EXPECT_EQ(s.nvm.writes, 0u);
  EXPECT_EQ(s.flushes, 1u);
  EXPECT_EQ(s.dirty_flushes, 0u);
  const LineState st = m.probe(0, LineAddr(7));
  EXPECT_EQ(st.in_l1, keeps_copy());
  EXPECT_EQ(st.in_llc, keeps_copy());
  EXPECT_FALSE(st.dirty);
}

TEST_P(SimFlush, AbsentLineCostsNoWrite) {
  Machine m(ParamsBuilder().build());
  m.flush(0, LineAddr(7), GetParam());
  EXPECT_EQ(m.stats().nvm.writes, 0u);
  EXPECT_FALSE(m.probe(0, LineAddr(7)).in_llc);
}

TEST_P(SimFlush, DirtyLineIsOneFlushWriteAndBecomesDurable) {
  Machine m(ParamsBuilder().build());
  LineBuffer buf(1);
  auto* x = buf.as<double>();
  m.image().add_range(x, buf.bytes);
  *x = 3.5;
  m.store(0, buf.line(0));
  EXPECT_EQ(m.image().durable(x), 0.0);
  m.flush(0, buf.line(0), GetParam());
  const SimStats s = m.stats();
  EXPECT_EQ(s.nvm.writes, 1u);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kFlush), 1u);
  EXPECT_EQ(s.dirty_flushes, 1u);
  EXPECT_EQ(m.image().durable(x), 3.5);  // accepted by the controller = durable (ADR)
  const LineState st = m.probe(0, buf.line(0));
  EXPECT_EQ(st.in_l1, keeps_copy());
  EXPECT_FALSE(st.dirty);
  m.flush(0, buf.line(0), GetParam());  // now clean (or absent): free
  EXPECT_EQ(m.stats().nvm.writes, 1u);
}

TEST_P(SimFlush, LineDirtyInSeveralPlacesCostsExactlyOneWrite) {
  // Core 0 dirties the line, core 1 reads it (dirtiness moves to the LLC), core 1 writes it
  // (dirty again in core 1's L1): dirty in the LLC and in an L1 at once.
  Machine m(ParamsBuilder().cores(2).build());
  const LineAddr a(9);
  m.store(0, a);
  m.load(1, a);
  m.store(1, a);
  EXPECT_TRUE(m.probe(1, a).dirty);
  m.flush(0, a, GetParam());  // any core may flush any line
  EXPECT_EQ(m.stats().nvm.writes, 1u);
  EXPECT_FALSE(m.probe(1, a).dirty);
  EXPECT_EQ(m.probe(1, a).in_l1, keeps_copy());
  EXPECT_FALSE(m.probe(0, a).in_l1);  // invalidated by core 1's store
}

TEST_P(SimFlush, LineDirtyOnlyInTheLlcOrPrivateL2IsWrittenOnce) {
  Machine m(ParamsBuilder().l1(1, 1).l2(1, 2).llc(4, 4).build());
  m.store(0, LineAddr(1));
  m.load(0, LineAddr(2));  // dirty copy now in L2 only
  m.load(0, LineAddr(3));
  m.load(0, LineAddr(4));  // ... and now in the LLC only
  ASSERT_TRUE(m.probe(0, LineAddr(1)).dirty);
  ASSERT_FALSE(m.probe(0, LineAddr(1)).in_l2);
  m.flush(0, LineAddr(1), GetParam());
  EXPECT_EQ(m.stats().nvm.writes, 1u);
  m.store(0, LineAddr(4));
  m.load(0, LineAddr(5));  // 4 dirty in L2 only (L1 holds 5)
  ASSERT_TRUE(m.probe(0, LineAddr(4)).in_l2);
  ASSERT_FALSE(m.probe(0, LineAddr(4)).in_l1);
  m.flush(0, LineAddr(4), GetParam());
  EXPECT_EQ(m.stats().nvm.writes, 2u);
  EXPECT_EQ(m.probe(0, LineAddr(4)).in_l2, keeps_copy());
}

TEST_P(SimFlush, StoreAfterFlushDirtiesTheLineAgain) {
  // The same-line filter must not hide the second store after the flush cleaned the line.
  Machine m(ParamsBuilder().build());
  m.store(0, LineAddr(4));
  m.flush(0, LineAddr(4), GetParam());
  m.store(0, LineAddr(4));
  EXPECT_TRUE(m.probe(0, LineAddr(4)).dirty);
  m.flush(0, LineAddr(4), GetParam());
  EXPECT_EQ(m.stats().nvm.writes, 2u);
}

INSTANTIATE_TEST_SUITE_P(SimKinds, SimFlush,
                         ::testing::Values(FlushMode::kClflush, FlushMode::kClflushopt, FlushMode::kClwb),
                         [](const auto& param_info) { return std::string(to_string(param_info.param)); });

TEST(SimFlushNone, NoneIsANoOp) {
  Machine m(ParamsBuilder().build());
  m.store(0, LineAddr(1));
  m.flush(0, LineAddr(1), FlushMode::kNone);
  EXPECT_EQ(m.stats().flushes, 0u);
  EXPECT_TRUE(m.probe(0, LineAddr(1)).dirty);
}

}  // namespace
}  // namespace pmlab::sim
