// The unchanged tmm kernel through SimBackend: bit-exact result and the expected miss counts.
#include <gtest/gtest.h>

#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/tmm.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::sim {
namespace {

using pmlab::testing::bit_equal;
using pmlab::testing::TmmFixture;

TEST(SimTmm, BaseThroughTheSimulatorEqualsNativeBitForBit) {
  for (auto [preset_name, threads] : {std::pair{"lp-isca18", 8}, {"lp-isca18", 3}, {"pact17", 1}}) {
    TmmFixture f(40, 8);
    SimBackend be = SimBackend::from_preset(preset_name, FlushMode::kNone, threads);
    kernels::tmm::run_base(be, f.op);
    EXPECT_TRUE(bit_equal(f.result(), f.reference())) << preset_name << " " << threads;
  }
}

TEST(SimTmm, MissCountsAreThoseOfAWorkingSetThatFitsTheLlc) {
  constexpr std::size_t n = 64, bs = 8;  // 3 x 32 KB of matrices, 8 panels for 8 threads
  TmmFixture f(n, bs);
  SimBackend be = SimBackend::from_preset("lp-isca18", FlushMode::kNone);
  kernels::tmm::run_base(be, f.op);
  ASSERT_TRUE(bit_equal(f.result(), f.reference()));
  const SimStats s = be.stats();
  const std::uint64_t lines_per_matrix = n * n * sizeof(double) / kCacheLineBytes;
  // Per (kk tile, i, j): load C, bs x (load A, load B), store C.
  EXPECT_EQ(s.accesses(), n * n * (n / bs) * (2 * bs + 2));
  EXPECT_EQ(s.stores, n * n * (n / bs));
  // 96 KB fits the 512 KB LLC with at most 3 lines per set: only compulsory misses reach NVM.
  EXPECT_EQ(s.nvm.reads, 3 * lines_per_matrix);
  EXPECT_EQ(s.llc().misses, 3 * lines_per_matrix);
  EXPECT_EQ(s.nvm.writes, 0u);
  // Every core reads all of B: private L1 misses are at least B per active core plus A and C.
  EXPECT_GE(s.l1().misses, 8 * lines_per_matrix + 2 * lines_per_matrix);
  EXPECT_LT(s.l1().miss_rate(), 0.1);
  EXPECT_GT(s.filtered_accesses, s.accesses() / 2);  // row-major C/A reuse hits the filter
  // Draining writes back exactly the lines of C.
  be.machine().write_back_all(WriteCause::kDrain);
  EXPECT_EQ(be.stats().nvm.writes, lines_per_matrix);
}

}  // namespace
}  // namespace pmlab::sim

namespace pmlab::sim {
namespace {

// Small caches so that LP's lazily written C and checksum lines really are evicted mid-run.
SimParams small_machine() {
  SimParams p;
  p.name = "small";
  p.cores = 4;
  p.threads = 4;
  p.l1 = {"L1", 1024, 2, Cycles{2}, Replacement::kLru};
  p.llc = {"L2", 8192, 4, Cycles{10}, Replacement::kLru};
  return p;
}

// End to end: LP tmm crashes at op K inside the simulator, the crash image is applied, LP
// recovery runs on it and execution resumes; C must equal the fault-free result bit for bit.
TEST(SimTmm, LpRecoversBitExactlyFromTheCrashImageAtManyCrashPoints) {
  constexpr auto K = lp::ChecksumKind::kModular;
  constexpr std::size_t n = 32, bs = 8;
  std::vector<std::uint64_t> points;
  {
    TmmFixture f(n, bs);
    SimBackend be(small_machine(), FlushMode::kClwb);
    kernels::tmm::run_lp<K>(be, f.op, f.table);
    ASSERT_TRUE(bit_equal(f.result(), f.reference()));
    ASSERT_GT(be.stats().nvm.writes_for(WriteCause::kEviction), 0u);
    const std::uint64_t total = be.ops();
    for (std::uint64_t k = 1; k <= total; k += total / 37) points.push_back(k);
    for (std::size_t i = 0; i < be.commits().size(); i += 5) {
      points.push_back(be.commits()[i].ops);
      if (be.commits()[i].ops < total) points.push_back(be.commits()[i].ops + 1);
    }
  }
  std::uint64_t recomputed = 0;
  for (std::uint64_t k : points) {
    TmmFixture f(n, bs);
    const auto expected = f.reference();
    SimBackend be(small_machine(), FlushMode::kClwb);
    be.register_persistent(f.a.get(), n * n * sizeof(double));
    be.register_persistent(f.b.get(), n * n * sizeof(double));
    be.register_persistent(f.c.get(), n * n * sizeof(double));
    be.register_persistent(f.slots.get(), lp::ChecksumTable::bytes_for(f.op.table_slots()));
    be.arm_crash(k);
    EXPECT_THROW(kernels::tmm::run_lp<K>(be, f.op, f.table), PowerFailure) << k;
    be.apply_crash_image();
    lp::RecoveryStats st;
    const std::size_t resume = kernels::tmm::recover_lp<K>(be, f.op, f.table, st);
    kernels::tmm::run_lp<K>(be, f.op, f.table, resume);
    recomputed += st.regions_recomputed;
    EXPECT_TRUE(bit_equal(f.result(), expected)) << "crash at op " << k;
  }
  EXPECT_GT(recomputed, 0u);  // some crashes really lost work
}

}  // namespace
}  // namespace pmlab::sim
