// SimBackend: Backend concept, real loads/stores, op counting, static schedule and interleaving.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::LineBuffer;
using testing::ParamsBuilder;

static_assert(mem::Backend<SimBackend>);

TEST(SimBackend, LoadsAndStoresActOnRealMemory) {
  SimBackend be(ParamsBuilder().build());
  LineBuffer buf(2);
  auto* d = buf.as<double>();
  auto* u = reinterpret_cast<std::uint64_t*>(buf.line_ptr(1));
  be.store(d, 2.25);
  be.store(u, std::uint64_t{77});
  EXPECT_EQ(*d, 2.25);
  EXPECT_EQ(be.load(static_cast<const double*>(d)), 2.25);
  EXPECT_EQ(be.load(u), 77u);
  const SimStats s = be.stats();
  EXPECT_EQ(s.loads, 2u);
  EXPECT_EQ(s.stores, 2u);
  EXPECT_EQ(be.ops(), 4u);
}

TEST(SimBackend, OpsCountLoadsStoresFlushedLinesAndFences) {
  SimBackend be(ParamsBuilder().build(), FlushMode::kClflushopt);
  LineBuffer buf(4);
  be.store(buf.as<double>(), 1.0);
  be.flush(buf.line_ptr(0));
  be.fence();
  EXPECT_EQ(be.ops(), 3u);
  be.persist(buf.line_ptr(0) + 8, 3 * testing::kLine);  // spans 4 lines: 4 flushes + 1 fence
  EXPECT_EQ(be.ops(), 8u);
  EXPECT_EQ(be.stats().flushes, 5u);
  EXPECT_EQ(be.stats().fences, 2u);
}

// pause_modelling: ops still count and move real data, but no cache, clock or statistic moves;
// resume_modelling picks the model up where it was. Refused with a crash armed.
TEST(SimBackend, APausedModelCountsOpsAndTouchesNothingElse) {
  SimBackend be(ParamsBuilder().build(), FlushMode::kClflushopt);
  LineBuffer buf(4);
  be.store(buf.as<double>(), 1.0);
  const SimStats before = be.stats();
  const LineState line0 = be.machine().probe(0, buf.line(0));
  be.pause_modelling();
  be.store(reinterpret_cast<double*>(buf.line_ptr(2)), 2.5);
  be.flush(buf.line_ptr(0));
  be.fence();
  EXPECT_EQ(be.load(reinterpret_cast<const double*>(buf.line_ptr(2))), 2.5);
  EXPECT_EQ(be.ops(), 5u);
  const SimStats paused = be.stats();
  EXPECT_EQ(paused.loads, before.loads);
  EXPECT_EQ(paused.stores, before.stores);
  EXPECT_EQ(paused.flushes, before.flushes);
  EXPECT_EQ(paused.cycles, before.cycles);
  EXPECT_FALSE(be.machine().probe(0, buf.line(2)).in_llc) << "the paused store filled no line";
  EXPECT_EQ(be.machine().probe(0, buf.line(0)).dirty, line0.dirty) << "the flush did nothing";
  be.resume_modelling();
  be.store(reinterpret_cast<double*>(buf.line_ptr(2)), 3.5);
  EXPECT_EQ(be.stats().stores, before.stores + 1);
  EXPECT_TRUE(be.machine().probe(0, buf.line(2)).in_l1);
  be.arm_crash(be.ops() + 10);
  EXPECT_THROW(be.pause_modelling(), Error);
}

TEST(SimBackend, FlushModeNoneMakesFlushAndFenceFree) {
  SimBackend be(ParamsBuilder().build(), FlushMode::kNone);
  LineBuffer buf(1);
  be.store(buf.as<double>(), 1.0);
  be.flush(buf.line_ptr(0));
  be.fence();
  be.persist(buf.line_ptr(0), 64);
  EXPECT_EQ(be.ops(), 1u);
  EXPECT_EQ(be.stats().flushes, 0u);
  EXPECT_TRUE(be.machine().probe(0, buf.line(0)).dirty);
}

TEST(SimBackend, AnAccessStraddlingTwoLinesTouchesBoth) {
  SimBackend be(ParamsBuilder().build());
  LineBuffer buf(2);
  struct Packed8 {  // 8 bytes, alignment 1: may legally sit across a line boundary
    unsigned char b[8];
  };
  static_assert(alignof(Packed8) == 1 && SimScalar<Packed8>);
  auto* p = reinterpret_cast<Packed8*>(buf.line_ptr(0) + 60);  // bytes 60..67
  be.store(p, Packed8{{1, 2, 3, 4, 5, 6, 7, 8}});
  EXPECT_EQ(buf.line_ptr(1)[3], 8);
  EXPECT_EQ(be.ops(), 1u);
  EXPECT_TRUE(be.machine().probe(0, buf.line(0)).dirty);
  EXPECT_TRUE(be.machine().probe(0, buf.line(1)).dirty);
}

TEST(SimBackend, ParallelForUsesOpenMpStaticChunksAndRoundRobinInterleaving) {
  SimBackend be(ParamsBuilder().cores(3).build());
  ASSERT_EQ(be.threads(), 3);
  std::vector<std::pair<std::size_t, int>> order;
  be.parallel_for(10, 17, [&](std::size_t i) { order.emplace_back(i, be.current_thread()); });
  // n = 7, T = 3: chunks [10,13) [13,15) [15,17); one iteration per thread per round.
  const std::vector<std::pair<std::size_t, int>> expect{{10, 0}, {13, 1}, {15, 2}, {11, 0},
                                                        {14, 1}, {16, 2}, {12, 0}};
  EXPECT_EQ(order, expect);
  EXPECT_EQ(be.current_thread(), 0);
}

TEST(SimBackend, ParallelForCoversEveryIndexOnceForManyShapes) {
  for (int threads : {1, 2, 3, 8}) {
    SimBackend be(ParamsBuilder().cores(8).build(), FlushMode::kClwb, threads);
    for (std::size_t n : {0, 1, 2, 7, 8, 9, 100}) {
      std::vector<int> hits(n, 0);
      std::vector<int> owner(n, -1);
      be.parallel_for(0, n, [&](std::size_t i) {
        ++hits[i];
        owner[i] = be.current_thread();
      });
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i], 1) << threads << " " << n << " " << i;
      for (std::size_t i = 1; i < n; ++i)
        EXPECT_LE(owner[i - 1], owner[i]) << "chunks are contiguous";
    }
  }
}

TEST(SimBackend, ThreadsMapToCoresModuloAndNestedLoopsRunSerially) {
  SimBackend be(ParamsBuilder().cores(2).build(), FlushMode::kClwb, 4);
  LineBuffer buf(4);
  be.parallel_for(0, 4, [&](std::size_t i) {
    (void)be.load(reinterpret_cast<const double*>(buf.line_ptr(i)));
    const int outer = be.current_thread();
    be.parallel_for(0, 3, [&](std::size_t) { EXPECT_EQ(be.current_thread(), outer); });
  });
  // Thread t ran iteration t on core t % 2.
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(be.machine().probe(static_cast<int>(i % 2), buf.line(i)).in_l1) << i;
    EXPECT_FALSE(be.machine().probe(static_cast<int>((i + 1) % 2), buf.line(i)).in_l1) << i;
  }
}

TEST(SimBackend, ParallelForEndsWithABarrier) {
  SimBackend be(ParamsBuilder().cores(2).build());
  LineBuffer buf(2);
  be.parallel_for(0, 2, [&](std::size_t i) {
    if (i == 0) (void)be.load(buf.as<double>());  // only thread 0 misses
  });
  EXPECT_EQ(be.machine().clock(0), be.machine().clock(1));
  EXPECT_EQ(be.machine().clock(1), Cycles{110});
}

TEST(SimBackend, RegionEndRecordsCommitPoints) {
  SimBackend be(ParamsBuilder().cores(2).build());
  LineBuffer buf(2);
  be.parallel_for(0, 2, [&](std::size_t i) {
    be.region_begin({1, static_cast<std::uint32_t>(i)});
    be.store(reinterpret_cast<double*>(buf.line_ptr(i)), 1.0);
    be.region_end({1, static_cast<std::uint32_t>(i)});
  });
  ASSERT_EQ(be.commits().size(), 2u);
  EXPECT_EQ(be.region_begins(), 2u);
  EXPECT_EQ(be.commits()[0].ops, 1u);
  EXPECT_EQ(be.commits()[0].thread, 0);
  EXPECT_EQ(be.commits()[1].ops, 2u);
  EXPECT_EQ(be.commits()[1].thread, 1);
  EXPECT_EQ(be.commits()[1].region.inner, 1u);
}

TEST(SimBackend, FromPresetTakesThePresetsThreadCount) {
  SimBackend be = SimBackend::from_preset("lp-isca18", FlushMode::kClflushopt);
  EXPECT_EQ(be.threads(), 8);
  EXPECT_EQ(be.machine().cores(), 9);
  EXPECT_EQ(be.flush_mode(), FlushMode::kClflushopt);
  EXPECT_EQ(SimBackend::from_preset("pact17", FlushMode::kNone, 2).threads(), 2);
  EXPECT_THROW(SimBackend(ParamsBuilder().build(), FlushMode::kClwb, 65), Error);
  EXPECT_THROW((void)SimBackend::from_preset("nope"), Error);
}

}  // namespace
}  // namespace pmlab::sim
