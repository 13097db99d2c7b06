// Seed 002's helper core in the simulator: flush_async runs on its own clock, interleaved with
// the main thread by simulated time, each flush a crash point; WBINVD and the 10 x LLC rule;
// campaigns on tmm ipv aim inside the helper's flushes and catch the ipv mutants.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/scheme/async_flush.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::LineBuffer;
using testing::ParamsBuilder;

constexpr std::size_t kHelperLines = 16;

// Two cores (the helper takes core 1), one thread; caches large enough to keep every line.
SimParams helper_params() {
  return ParamsBuilder().cores(2).l1(8, 4).llc(64, 8).build();
}

// Every line of `buf` dirty with value 1 + i in its first word.
void dirty_all(SimBackend& be, const LineBuffer& buf) {
  for (std::size_t i = 0; i < kHelperLines; ++i)
    be.store(reinterpret_cast<std::uint64_t*>(buf.line_ptr(i)), std::uint64_t{1 + i});
}

TEST(SimHelper, OffUntilAFlushIsHandedOver) {
  SimBackend be(helper_params(), FlushMode::kClwb, 1);
  LineBuffer buf(kHelperLines);
  be.register_persistent(buf.mem.get(), buf.bytes);
  dirty_all(be, buf);
  EXPECT_FALSE(be.stats().helper.has_value());
}

TEST(SimHelper, FlushesInterleaveWithTheMainThreadAndHideBehindItsWork) {
  SimBackend be(helper_params(), FlushMode::kClwb, 1);
  LineBuffer buf(kHelperLines), other(4);
  be.register_persistent(buf.mem.get(), buf.bytes);
  dirty_all(be, buf);
  be.helper_flush_async(buf.mem.get(), buf.bytes);
  const std::uint64_t ops0 = be.ops();
  // Main-thread work long enough for the helper to finish in its shadow.
  for (int r = 0; r < 2000; ++r) (void)be.load(other.as<std::uint64_t>() + (r % 32));
  const SimStats mid = be.stats();
  ASSERT_TRUE(mid.helper);
  EXPECT_EQ(mid.helper->flush_ops, kHelperLines) << "the helper ran while the main thread worked";
  EXPECT_EQ(mid.helper->fences, 1u);
  EXPECT_EQ(be.ops() - ops0, 2000 + kHelperLines + 1) << "every helper op is a counted op";
  be.helper_barrier();
  const SimStats s = be.stats();
  EXPECT_EQ(s.helper->exposed_cycles, 0u);
  EXPECT_GT(s.helper->busy_cycles, 0u);
  EXPECT_DOUBLE_EQ(s.helper->overlap(), 1.0);
  for (std::size_t i = 0; i < kHelperLines; ++i)
    EXPECT_EQ(be.image().durable(reinterpret_cast<std::uint64_t*>(buf.line_ptr(i))), 1 + i);
}

// A paused model (a crash campaign measuring a recovery's length) skips the helper's work and
// says so: the helper's ops are paced by the clocks, so the op count would differ from the
// modelled one, and the campaign measures again with the model.
TEST(SimHelper, APausedModelCountsTheAsyncRequestsItSkips) {
  SimBackend be(helper_params(), FlushMode::kClwb, 1);
  LineBuffer buf(kHelperLines);
  be.register_persistent(buf.mem.get(), buf.bytes);
  dirty_all(be, buf);
  be.pause_modelling();
  const std::uint64_t ops0 = be.ops();
  be.helper_flush_async(buf.mem.get(), buf.bytes);
  be.helper_barrier();
  EXPECT_EQ(be.ops(), ops0) << "no helper op ran while paused";
  EXPECT_EQ(be.async_requests_skipped(), 1u);
  be.resume_modelling();
  be.helper_flush_async(buf.mem.get(), buf.bytes);
  be.helper_barrier();
  EXPECT_EQ(be.ops() - ops0, kHelperLines + 1) << "modelled again: every helper op counts";
  EXPECT_EQ(be.async_requests_skipped(), 1u);
}

TEST(SimHelper, ABarrierRightAfterTheRequestWaitsForAllOfIt) {
  SimBackend be(helper_params(), FlushMode::kClwb, 1);
  LineBuffer buf(kHelperLines);
  be.register_persistent(buf.mem.get(), buf.bytes);
  dirty_all(be, buf);
  const Cycles before = be.machine().clock(0);
  be.helper_flush_async(buf.mem.get(), buf.bytes);
  be.helper_barrier();
  const SimStats s = be.stats();
  EXPECT_EQ(s.helper->exposed_cycles, s.helper->busy_cycles);
  EXPECT_DOUBLE_EQ(s.helper->overlap(), 0.0);
  EXPECT_EQ(be.machine().clock(0).value(), before.value() + s.helper->busy_cycles);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kFlush), kHelperLines);
}

// A crash at each op of the helper's request leaves exactly the lines flushed before it durable.
TEST(SimHelper, ACrashBetweenTwoHelperFlushesLeavesExactlyThePrefixDurable) {
  std::uint64_t start = 0;
  {
    SimBackend be(helper_params(), FlushMode::kClwb, 1);
    LineBuffer buf(kHelperLines);
    be.register_persistent(buf.mem.get(), buf.bytes);
    dirty_all(be, buf);
    start = be.ops();
  }
  for (std::uint64_t j = 0; j <= kHelperLines; ++j) {
    SimBackend be(helper_params(), FlushMode::kClwb, 1);
    LineBuffer buf(kHelperLines);
    be.register_persistent(buf.mem.get(), buf.bytes);
    dirty_all(be, buf);
    be.helper_flush_async(buf.mem.get(), buf.bytes);
    be.arm_crash(start + j + 1);  // helper op j + 1 (line j, or the fence) does not happen
    EXPECT_THROW(be.helper_barrier(), PowerFailure) << j;
    for (std::size_t i = 0; i < kHelperLines; ++i)
      EXPECT_EQ(be.image().durable(reinterpret_cast<std::uint64_t*>(buf.line_ptr(i))),
                i < j ? 1 + i : 0u)
          << "crash before helper op " << j + 1 << ", line " << i;
    be.apply_crash_image();
    EXPECT_EQ(be.stats().helper->requests, 1u);
    be.helper_barrier();  // the lost request is gone: nothing runs
    EXPECT_EQ(be.stats().helper->flush_ops, j);
  }
}

TEST(SimHelper, WbinvdWritesBackAndInvalidatesEverything) {
  SimParams p = helper_params();
  p.whole_cache_flush = WholeCacheFlush::kAlways;
  SimBackend be(p, FlushMode::kClwb, 1);
  LineBuffer buf(kHelperLines);
  be.register_persistent(buf.mem.get(), buf.bytes);
  dirty_all(be, buf);
  be.helper_flush_async(buf.mem.get(), 64);  // one line asked for: WBINVD takes them all
  be.helper_barrier();
  const SimStats s = be.stats();
  EXPECT_EQ(s.helper->wbinvd_requests, 1u);
  EXPECT_EQ(s.helper->flush_ops, 0u);
  EXPECT_EQ(s.helper->wbinvd_ops, (64u * 8u + 63) / 64);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kFlush), kHelperLines);
  for (std::size_t i = 0; i < kHelperLines; ++i) {
    EXPECT_FALSE(be.machine().probe(0, buf.line(i)).in_llc) << i;
    EXPECT_EQ(be.image().durable(reinterpret_cast<std::uint64_t*>(buf.line_ptr(i))), 1 + i);
  }
  // Priced per LLC line walked, on top of the writes.
  EXPECT_GE(s.helper->busy_cycles, 64u * 8u * p.wbinvd_cycles_per_line);
}

TEST(SimHelper, AutoUsesWbinvdFromTenTimesTheLlc) {
  SimParams p = helper_params();  // LLC 64 sets x 8 ways = 32 KiB
  const std::uint64_t llc = p.llc.size_bytes;
  LineBuffer big(10 * llc / 64);
  for (const std::uint64_t bytes : {10 * llc - 64, 10 * llc}) {
    SimBackend be(p, FlushMode::kClwb, 1);
    be.helper_flush_async(big.mem.get(), bytes);
    be.helper_barrier();
    EXPECT_EQ(be.stats().helper->wbinvd_requests, bytes >= 10 * llc ? 1u : 0u) << bytes;
  }
}

TEST(SimHelper, WbinvdIsRefusedNatively) {
  try {
    scheme::refuse_native_wbinvd();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("kernel module"), std::string::npos);
  }
}

// --- Campaigns on tmm ipv with the helper core ---------------------------------------------

// Two threads on lp-isca18 with a third core for the helper; `o` sets the rest.
run::SimRunSpec helper_spec(const std::string& kernel, const std::string& scheme, std::uint64_t n,
                            std::uint64_t bs, sim::MachineSettings o = {}) {
  run::SimRunSpec spec;
  spec.run.kernel = kernel;
  spec.run.scheme = scheme;
  spec.run.n = n;
  spec.run.bs = bs;
  spec.run.threads = 2;
  o.set("cores", 3);  // two threads, the helper on core 2
  spec.machine = sim::machine_from("lp-isca18", o);
  return spec;
}

run::SimRunSpec ipv_spec(const std::string& wcf = "never") {
  sim::MachineSettings o;
  o.set("l1-size", 1024);
  o.set("llc-size", 4096);
  auto spec = helper_spec("tmm", "ipv", 32, 8, o);
  spec.machine.whole_cache_flush = whole_cache_flush_from_string(wcf);
  return spec;
}

TEST(SimHelper, TmmIpvCampaignCrashesInsideTheHelperAndIsBitExact) {
  for (const char* wcf : {"never", "always"}) {
    experiments::CampaignOptions opt;
    opt.spec = ipv_spec(wcf);
    opt.trials = 120;
    const auto r = experiments::run_campaign(opt);
    EXPECT_EQ(r.passed, r.trials) << wcf;
    EXPECT_EQ(r.helper_requests, 4u) << wcf;
    EXPECT_GT(r.in_helper.trials, 0u) << wcf;
    EXPECT_GT(r.near_fence.trials, 0u) << wcf;
    EXPECT_EQ(r.in_helper.trials + r.near_fence.trials + r.elsewhere.trials, r.trials);
    for (const auto& t : r.results) EXPECT_LE(t.recovery.regions_recomputed, 1u);
  }
}

// cp-nt-async's copies on the helper core: crashes land inside them, every trial recovers bit
// for bit, and the helper's copy ops are counted one per destination line.
TEST(SimHelper, JacobiAsyncCopyCampaignCrashesInsideTheCopiesAndIsBitExact) {
  const auto spec = helper_spec("jacobi", "cp-nt-async", 16, 4);
  const auto fault_free = run::simulate(spec);
  ASSERT_TRUE(fault_free.stats.helper.has_value());
  const std::uint64_t lines = (16 * 16 + 2) * sizeof(double) / 64 + 1;
  EXPECT_EQ(fault_free.stats.helper->copy_requests, 10u);  // iterations 1..10 of 11
  EXPECT_GE(fault_free.stats.helper->copy_ops, 10 * (lines - 1));
  EXPECT_LE(fault_free.stats.helper->copy_ops, 10 * (lines + 1));
  experiments::CampaignOptions opt;
  opt.spec = spec;
  opt.trials = 120;
  const auto r = experiments::run_campaign(opt);
  EXPECT_EQ(r.passed, r.trials);
  EXPECT_GT(r.in_helper.trials, 0u);
  for (const auto& t : r.results) EXPECT_LE(t.outer_redone, 1u);
}

TEST(SimHelper, TmmIpvMutantsFailWithTheHelperOn) {
  for (const mem::Mutation m :
       {mem::Mutation::kIpvCommitBeforeFlush, mem::Mutation::kIpvBarrierAfterWrite}) {
    experiments::CampaignOptions opt;
    opt.spec = ipv_spec();
    opt.trials = 120;
    const auto r = experiments::run_campaign(experiments::control_options(opt, m));
    EXPECT_LT(r.passed, r.trials) << mem::to_string(m);
    EXPECT_GT(r.helper_requests, 0u);
  }
}

}  // namespace
}  // namespace pmlab::sim
