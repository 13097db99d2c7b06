// Non-temporal stores in the simulator (SimParams::nt_stores): no fill, no RFO, cached copies
// removed first, write-combining buffers drained when full / complete / at sfence, lost at a
// power failure; off by default.
#include <gtest/gtest.h>

#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::LineBuffer;
using testing::ParamsBuilder;

SimParams nt_params(std::uint32_t buffers = 10) {
  SimParams p = ParamsBuilder().l1(1, 1).llc(1, 1).build();
  p.nt_stores = true;
  p.wc_buffers = buffers;
  return p;
}

TEST(SimNt, AbsentLineNoReadOneWriteAfterTheLineIsCompleteNotCached) {
  Machine m(nt_params());
  LineBuffer buf(1);
  auto* x = buf.as<double>();
  m.image().add_range(x, buf.bytes);
  for (int i = 0; i < 8; ++i) {
    x[i] = 1.0 + i;
    m.store_nt(0, buf.line(0), static_cast<unsigned>(8 * i), 8);
    EXPECT_EQ(m.stats().nvm.writes, i == 7 ? 1u : 0u) << i;
  }
  const SimStats s = m.stats();
  EXPECT_EQ(s.nvm.reads, 0u);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kNonTemporal), 1u);
  EXPECT_FALSE(m.probe(0, buf.line(0)).in_llc);
  EXPECT_FALSE(m.probe(0, buf.line(0)).in_l1);
  EXPECT_EQ(m.image().durable(x + 7), 8.0);
}

TEST(SimNt, DirtyCachedLineIsWrittenBackAndInvalidatedFirst) {
  Machine m(nt_params());
  LineBuffer buf(1);
  m.store(0, buf.line(0));
  ASSERT_TRUE(m.probe(0, buf.line(0)).dirty);
  for (int i = 0; i < 8; ++i) m.store_nt(0, buf.line(0), static_cast<unsigned>(8 * i), 8);
  const SimStats s = m.stats();
  EXPECT_EQ(s.nvm.writes, 2u);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kEviction), 1u);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kNonTemporal), 1u);
  EXPECT_FALSE(m.probe(0, buf.line(0)).in_l1);
}

TEST(SimNt, PartialLineReachesNvmOnlyAtSfenceAndIsLostAtAPowerFailureBefore) {
  for (const bool fence : {true, false}) {
    Machine m(nt_params());
    LineBuffer buf(1);
    auto* x = buf.as<double>();
    m.image().add_range(x, buf.bytes);
    x[0] = 4.0;
    m.store_nt(0, buf.line(0), 0, 8);
    EXPECT_EQ(m.stats().nvm.writes, 0u);
    if (fence) m.fence(0);
    m.power_fail();
    m.image().restore_to_live();
    EXPECT_EQ(x[0], fence ? 4.0 : 0.0);
  }
}

TEST(SimNt, FullBuffersDrainTheOldestLine) {
  Machine m(nt_params(2));
  LineBuffer buf(3);
  for (std::size_t l = 0; l < 3; ++l) m.store_nt(0, buf.line(l), 0, 8);
  EXPECT_EQ(m.stats().nvm.writes_for(WriteCause::kNonTemporal), 1u);  // line 0 made room
  m.fence(0);
  EXPECT_EQ(m.stats().nvm.writes_for(WriteCause::kNonTemporal), 3u);
}

// A checkpoint copy through the backend: with the model on, no NVM reads of the destination
// (no RFO) and no flushes; off (the default), stores + a flush per line as before.
TEST(SimNt, CheckpointCopyReadsNothingOfTheDestinationAndFlushesNothing) {
  constexpr std::size_t kElems = 64 * 8;
  LineBuffer src(64), dst(64);
  for (const bool on : {false, true}) {
    SimParams p = ParamsBuilder().build();
    p.nt_stores = on;
    SimBackend be(p, FlushMode::kClflushopt, 1);
    be.register_persistent(dst.as<double>(), dst.bytes);
    scheme::copy_durable(be, dst.as<double>(), src.as<double>(), kElems);
    const SimStats s = be.stats();
    EXPECT_EQ(s.nvm.reads, on ? 64u : 128u);  // src only, or src + dst (RFO)
    EXPECT_EQ(s.flushes, on ? 0u : 64u);
    EXPECT_EQ(s.nvm.writes, 64u);
  }
}

// tmm's checkpoint copies A, B and C every tile. As stores + flushes each destination line is
// first read from NVM (a fill for ownership); as non-temporal stores none is: cp-nt then reads
// what base reads, plus the checkpoint header.
TEST(SimNt, TmmCheckpointReadsNothingOfItsAreaUnderTheNtModel) {
  const auto reads = [](const char* scheme, std::uint32_t wc_buffers) {
    run::SimRunSpec spec;
    spec.run.kernel = "tmm";
    spec.run.scheme = scheme;
    spec.run.n = 64;
    spec.run.bs = 16;
    sim::MachineSettings o;
    o.set("wc-buffers", wc_buffers);
    spec.machine = sim::machine_from("lp-isca18", o);
    spec.run.threads = static_cast<std::uint32_t>(spec.machine.threads);
    return run::simulate(spec).stats.nvm.reads;
  };
  const std::uint64_t base = reads("base", 0), area_lines = 2 * 3 * 64 * 64 / 8;
  EXPECT_EQ(reads("base", 10), base);
  EXPECT_GE(reads("cp-nt", 0), base + area_lines / 2);  // the old model fills the area
  EXPECT_LE(reads("cp-nt", 10), base + 8);  // header words only (4 lines here), none of 3,072
}

}  // namespace
}  // namespace pmlab::sim
