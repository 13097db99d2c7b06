// A user's own kernel outside the catalog (examples/stencil): native runs on a pool, crash
// campaigns through the same engine (with a mutant the campaign must catch), user parameters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../../examples/stencil/stencil.hpp"
#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/pool/user_params.hpp"
#include "pmlab/run/user_kernel.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("pmlab-user-kernel-" + std::to_string(getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

pool::RunParams stencil_params(const std::string& scheme, std::uint64_t n, std::uint64_t bs,
                               std::uint64_t steps, std::uint32_t threads) {
  pool::RunParams p;
  p.kernel = "stencil";
  p.scheme = scheme;
  p.n = n;
  p.bs = bs;
  p.set_kernel_param("steps", steps);
  p.threads = threads;
  return p;
}

TEST(UserKernel, StencilRunsOnAPoolUnderEachSchemeAndResumesADonePool) {
  TempDir dir;
  for (const char* scheme : {"base", "lp"}) {
    const auto pool = (dir.path / (std::string(scheme) + ".pool")).string();
    const auto p = stencil_params(scheme, 40, 7, 5, 2);
    run::VerifyResult v;
    const auto first = run::run_on_pool<stencil::Stencil>(pool, p, {}, &v);
    EXPECT_FALSE(first.resumed);
    EXPECT_TRUE(v.ok()) << scheme << ": " << v.first_mismatch;
    EXPECT_EQ(v.elements, 40u * 40u);
    const auto again = run::run_on_pool<stencil::Stencil>(pool, p, {}, &v);
    EXPECT_EQ(again.recovery_action, "none (run already complete)");
    EXPECT_TRUE(v.ok());
    // Other parameters on the same pool are refused, never mixed.
    try {
      (void)run::run_on_pool<stencil::Stencil>(pool, stencil_params(scheme, 40, 7, 6, 2));
      ADD_FAILURE() << "a pool with other parameters was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPoolMismatch);
    }
  }
}

experiments::CampaignOptions stencil_campaign(std::shared_ptr<const run::UserKernel> kernel) {
  experiments::CampaignOptions opt;
  opt.spec.run = stencil_params("lp", 20, 3, 5, 2);
  opt.spec.user = std::move(kernel);
  sim::MachineSettings o;
  o.set("cores", 2);
  o.set("l1-size", 1024);  // tiny caches: the grids (3 KiB each) are evicted part by part
  o.set("llc-size", 4096);
  o.set("l1-ways", 4);
  o.set("llc-ways", 8);
  o.set("l2-size", 0);
  opt.spec.machine = sim::machine_from("lp-isca18", o);
  opt.trials = 120;
  opt.seed = 7;
  return opt;
}

TEST(UserKernel, CrashCampaignOverTheStencilPassesAndCatchesAMutantRecovery) {
  const auto kernel = run::make_user_kernel<stencil::Stencil>();
  const auto ok = experiments::run_campaign(stencil_campaign(kernel));
  EXPECT_EQ(ok.passed, ok.trials) << experiments::to_json(ok, false).dump(2);
  EXPECT_GT(ok.commits, 0u);
  std::uint64_t recomputed = 0;
  for (const auto& t : ok.results) recomputed += t.recovery.regions_recomputed;
  EXPECT_GT(recomputed, 0u) << "no trial needed any repair: the campaign proves nothing";

  // Negative control: a recovery that trusts every band of the step in flight (no validation,
  // no repair) must fail trials of the same campaign.
  auto mutant = std::make_shared<run::UserKernel>(*kernel);
  mutant->sim.recover = [](sim::SimBackend& be, pool::Pool& pool, run::RunReport&) {
    return static_cast<std::size_t>(be.load(pool.array<const std::uint64_t>("durable_steps"))) + 1;
  };
  const auto bad = experiments::run_campaign(stencil_campaign(mutant));
  EXPECT_LT(bad.passed, bad.trials);
}

TEST(UserKernel, ValidationNamesTheUsersKernel) {
  run::SimRunSpec spec;
  spec.run = stencil_params("lp", 2, 1, 1, 1);  // n must be >= 3
  spec.user = run::make_user_kernel<stencil::Stencil>();
  try {
    run::validate(spec);
    ADD_FAILURE() << "n = 2 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("stencil"), std::string::npos) << e.what();
  }
}

struct Axpy {
  std::uint64_t n;
  double a;
  std::uint64_t chunk;
};

TEST(UserParams, StoredOnCreateAndCheckedOnOpen) {
  TempDir dir;
  const auto path = (dir.path / "u.pool").string();
  pool::RunParams id;
  id.kernel = "axpy";
  bool created = false;
  {
    auto pool =
        pool::open_or_create_with(path, id, Axpy{100, 2.5, 10}, {{"x", 800}}, nullptr, &created);
    EXPECT_TRUE(created);
    EXPECT_EQ(pool::user_params<Axpy>(pool).chunk, 10u);
  }
  {
    auto pool =
        pool::open_or_create_with(path, id, Axpy{100, 2.5, 10}, {{"x", 800}}, nullptr, &created);
    EXPECT_FALSE(created);
  }
  try {
    (void)pool::open_or_create_with(path, id, Axpy{100, 3.0, 10}, {{"x", 800}}, nullptr);
    ADD_FAILURE() << "other user parameters were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPoolMismatch);
  }
}

}  // namespace
}  // namespace pmlab::testing

namespace pmlab::testing {
namespace {

// A CPU without the flush instruction: schemes that flush nothing run, the first flush refuses.
TEST(UnsupportedFlush, RunsWhatFlushesNothingAndRefusesTheFirstFlush) {
  std::vector<double> g0(16 * 16), g1(16 * 16), g2(16 * 16);
  std::uint64_t durable = 0;
  std::vector<lp::ChecksumSlot> slots(2 * 14);
  stencil::Operands op{{g0.data(), g1.data(), g2.data()}, 16, 1, 3, &durable, slots.data()};
  mem::NativeBackend<persist::RunCpuPersist> be(
      persist::RunCpuPersist{persist::FlushKind::kClwb, &run::refuse_unsupported_flush}, 1);
  stencil::run_base(be, op, 0);  // no flush: runs
  be.fence();                    // sfence exists everywhere
  be.persist(g0.data(), 0);      // nothing to write back: not refused
  try {
    stencil::run_lp<lp::ChecksumKind::kModular>(be, op, 0);  // persists at each step boundary
    ADD_FAILURE() << "a flush was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("clwb"), std::string::npos) << e.what();
  }
}

// The run's CPU persister issues the instruction --flush names, whichever it is: every one this
// CPU supports writes a dirty range back and leaves its bytes as they were.
TEST(RunCpuPersist, EverySupportedInstructionPersistsARange) {
  alignas(64) static double buf[1024];
  for (const auto k :
       {persist::FlushKind::kClflush, persist::FlushKind::kClflushopt, persist::FlushKind::kClwb}) {
    if (!persist::cpu_supports(k)) continue;
    const persist::RunCpuPersist p{k};
    for (std::size_t i = 0; i < 1024; ++i) buf[i] = static_cast<double>(i) + 0.5;
    p.persist(buf, sizeof buf);
    p.flush(buf + 3);
    p.fence();
    for (std::size_t i = 0; i < 1024; ++i) ASSERT_EQ(buf[i], static_cast<double>(i) + 0.5);
  }
}

}  // namespace
}  // namespace pmlab::testing
