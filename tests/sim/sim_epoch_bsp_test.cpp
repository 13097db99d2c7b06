// Seed 004 §7.2 BSP bulk mode: hardware epochs every N stores, the log writes, write-through.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::ParamsBuilder;

SimParams bsp(Barrier b, std::uint64_t n, bool log, bool write_through = false) {
  SimParams p = ParamsBuilder().build();
  p.persistency.barrier = b;
  p.persistency.bsp_epoch_stores = n;
  p.persistency.bsp_log = log;
  p.persistency.bsp_write_through = write_through;
  return p;
}

// 10 rounds over 16 words of 8 lines: 160 stores, every line rewritten in each round.
SimStats run(SimParams p, bool check_order = true) {
  p.persistency.check_order = check_order;
  SimBackend be(std::move(p), FlushMode::kNone);
  alignas(64) std::array<std::uint64_t, 64> v{};
  be.register_persistent(v.data(), sizeof v);
  for (std::uint64_t r = 0; r < 10; ++r)
    for (std::size_t i = 0; i < 16; ++i) be.store(&v[i * 4], r * 100 + i);
  be.machine().write_back_all(WriteCause::kDrain);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(be.image().durable(&v[i * 4]), 900 + i);
  return be.stats();
}

TEST(SimEpochBsp, HardwareEndsTheEpochEveryNStoresWithoutAFence) {
  const SimStats s = run(bsp(Barrier::kLb, 16, false));
  ASSERT_TRUE(s.epochs.has_value());
  EXPECT_EQ(s.epochs->bsp_barriers, 10u);  // 160 stores / 16
  EXPECT_EQ(s.epochs->barriers, 0u);       // no program barrier ran
  EXPECT_EQ(s.epochs->log_writes, 0u);
  // Each round rewrites the previous epoch's 8 lines: intra conflicts flush them, in order.
  EXPECT_GE(s.epochs->flushed_by[static_cast<std::size_t>(EpochCause::kIntra)], 8u);
}

TEST(SimEpochBsp, LogWritesOnePerFirstModifiedLinePerEpoch) {
  const SimStats off = run(bsp(Barrier::kLbPlusPlus, 16, false));
  const SimStats on = run(bsp(Barrier::kLbPlusPlus, 16, true));
  EXPECT_EQ(on.epochs->log_writes, 10u * 8u);  // 8 lines first stored to in each of 10 epochs
  // Log entries queue at the controller, never as line writes, and cost time only.
  EXPECT_EQ(on.nvm.writes, off.nvm.writes);
  EXPECT_GE(on.cycles.value(), off.cycles.value());
}

TEST(SimEpochBsp, WriteThroughWritesEveryStoreAndWaits) {
  const SimStats wt = run(bsp(Barrier::kLb, 0, false, true));
  const SimStats lb = run(bsp(Barrier::kLb, 16, false));
  EXPECT_EQ(wt.epochs->write_through, 160u);
  EXPECT_EQ(wt.nvm.writes, 160u);
  EXPECT_GT(wt.cycles.value(), lb.cycles.value());
}

TEST(SimEpochBsp, RefusedOutsideTheHardwareBarriers) {
  EXPECT_THROW(bsp(Barrier::kSoftware, 300, false).validate(), Error);
  EXPECT_THROW(bsp(Barrier::kNone, 0, false, true).validate(), Error);
  EXPECT_THROW(bsp(Barrier::kLb, 0, true).validate(), Error);           // a log without epochs
  EXPECT_THROW(bsp(Barrier::kLb, 300, false, true).validate(), Error);  // both at once
  EXPECT_NO_THROW(bsp(Barrier::kLbIdt, 300, true).validate());
}

}  // namespace
}  // namespace pmlab::sim
