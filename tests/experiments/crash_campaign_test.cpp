// Simulator crash campaigns: every scheme recovers bit-exactly from uniform and corner crash
// points.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "../support/crash_safe_cases.hpp"
#include "../support/test_scale.hpp"
#include "../support/test_seed.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/lp/checksum_param.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/sim_session.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::experiments;  // the crash campaign under test

SimRunSpec small_spec(const std::string& kernel, const std::string& scheme, std::uint64_t n,
                      std::uint64_t bs, std::uint32_t threads, lp::ChecksumKind kind) {
  SimRunSpec spec;
  spec.run.kernel = kernel;
  spec.run.scheme = scheme;
  spec.run.n = n;
  spec.run.bs = bs;
  spec.run.threads = threads;
  lp::set_checksum(spec.run, kind);
  sim::MachineSettings o;
  o.set("cores", 2);
  o.set("l1-size", 1024);  // tiny caches: CI-sized runs evict, so crashes leave partial state
  o.set("llc-size", 4096);
  o.set("l1-ways", 4);
  o.set("llc-ways", 8);
  o.set("l2-size", 0);
  spec.machine = sim::machine_from("lp-isca18", o);
  return spec;
}

// Empty if the simulator runs the scheme, else its refusal.
std::string sim_refusal(const std::string& kernel, const std::string& scheme) {
  try {
    validate(small_spec(kernel, scheme, 8, 4, 1, lp::ChecksumKind::kModular));
    return {};
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
}

// Random problem sizes per kernel (tiny, prime and non-multiples of bs all in range), as large
// as the CI budget allows: the fault-free run is simulated once and each trial forks at its crash
// point, but recovery and the rest of the run still grow with the run's ops (n³ for the
// factorizations); the whole suite (every kernel x scheme, 300 trials each) takes
// well under a minute of CPU in a release build (docs/crash-campaigns.md). `large` draws from
// the upper half, where the data exceeds the test machine's caches: crashes then leave partly
// persisted state and recovery has work to do.
std::uint64_t random_n(const std::string& kernel, bool large, std::mt19937_64& rng) {
  if (kernel == "fft") {  // 2 .. 1024 points (large: 128 .. 1024)
    const std::uint64_t log2n = large ? 7 + rng() % 4 : 1 + rng() % 10;
    return std::uint64_t{1} << log2n;
  }
  const std::uint64_t max_n = kernel == "tmm" ? 37 : 64, min_n = large ? max_n / 2 : 2;
  return min_n + rng() % (max_n - min_n + 1);
}

// conv2d's width parameter: odd, <= n; 0 (absent: the default) a quarter of the time.
std::uint64_t random_extra(const std::string& kernel, std::uint64_t n, std::mt19937_64& rng) {
  if (kernel != "conv2d" || rng() % 4 == 0) return 0;
  const std::uint64_t widest = std::min<std::uint64_t>(n % 2 == 1 ? n : n - 1, 7);
  return 1 + 2 * (rng() % ((widest + 1) / 2));
}

using Case = pmlab::test::CrashSafeCase;

std::vector<Case> cases() {
  return pmlab::test::crash_safe_cases();
}

class CrashCampaign : public ::testing::TestWithParam<Case> {};

// Property: a fixed seed (PMLAB_TEST_SEED to explore), random sizes (non-multiples of bs, tiny,
// prime), random thread counts and checksum kinds; every trial must end bit-exact.
TEST_P(CrashCampaign, EveryTrialRecoversBitExactly) {
  const auto& [kernel, scheme] = GetParam();
  if (const std::string why = sim_refusal(kernel, scheme); !why.empty()) {
    // Native-only schemes (tmm's pmemobj) are refused up front, saying why.
    EXPECT_NE(why.find("runs natively only"), std::string::npos) << why;
    return;
  }
  const std::uint64_t seed = pmlab::test::test_seed();
  SCOPED_TRACE(pmlab::test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  std::uint64_t total = 0, recovery_crashes = 0, recomputed = 0, nonempty_recoveries = 0;
  std::set<CrashPointKind> kinds_seen;
  // 75 trials a size; the sanitizer run (PMLAB_TEST_SCALE < 1) takes fewer to look for memory
  // errors on every kernel x scheme, and leaves the statistical checks below to the full run.
  const std::uint64_t per_size = pmlab::test::scaled_trials(75, 15);
  const bool full = per_size == 75;
  for (int size = 0; size < 4; ++size) {
    const std::uint64_t n = random_n(kernel, /*large=*/size == 0, rng), bs = 1 + rng() % 7;
    CampaignOptions opt;
    opt.spec = small_spec(kernel, scheme, n, bs, 1 + static_cast<std::uint32_t>(rng() % 3),
                          lp::kAllChecksumKinds[rng() % 5]);
    if (const auto w = random_extra(kernel, n, rng); w != 0)
      opt.spec.run.set_kernel_param("width", w);
    opt.trials = per_size;
    opt.seed = rng();
    auto r = run_campaign(opt);
    for (const auto& t : r.results) {
      EXPECT_TRUE(t.passed) << "seed " << seed << " n=" << n << " bs=" << bs
                            << " threads=" << opt.spec.run.threads
                            << " checksum=" << opt.spec.run.checksum
                            << " width=" << opt.spec.run.kernel_param("width", 0)
                            << " campaign seed " << opt.seed << " trial " << t.index << " crash_op "
                            << t.crash_op << " recovery crashes " << t.recovery_crashes.size()
                            << ": " << t.failure;
      recomputed += t.recovery.regions_recomputed;
      kinds_seen.insert(t.kind);
      recovery_crashes += t.crashes_in_recovery;  // inside a recovery, not the resumed run
      for (auto len : t.recovery_lengths) nonempty_recoveries += len > 0 ? 1 : 0;
    }
    total += r.trials;
  }
  EXPECT_EQ(total, 4 * per_size);    // in full, "a campaign of at least a few hundred trials"
  EXPECT_GE(kinds_seen.size(), 3u);  // uniform, first-op, last-op at least
  if (!full) return;
  // Some crashed inside a recovery (not only in the resumed run), unless every recovery was
  // empty (conv2d's and fft's base: write-once outputs, nothing to restore before starting over).
  if (nonempty_recoveries > 0) {
    EXPECT_GT(recovery_crashes, 0u) << "seed " << seed;
  }
  // The recompute schemes really repaired regions after some crashes.
  if (scheme == "lp" || scheme.starts_with("ep")) {
    EXPECT_GT(recomputed, 0u) << "seed " << seed;
  }
}

// The native restart (SimSession::restart_native) of every simulable kernel x scheme: run from
// the start it gives the bit-exact result and commits the very regions the simulated run
// commits; and a forked campaign with it (recovery included: its ops, its statistics) reports
// exactly what one without it does, trial by trial.
TEST_P(CrashCampaign, TheNativeTailEqualsTheSimulatedOne) {
  const auto& [kernel, scheme] = GetParam();
  if (!sim_refusal(kernel, scheme).empty()) return;
  const std::uint64_t seed = pmlab::test::test_seed();
  SCOPED_TRACE(pmlab::test::seed_trace(seed));
  std::mt19937_64 rng(seed ^ 0x7a11);
  const std::uint64_t n = random_n(kernel, /*large=*/true, rng), bs = 1 + rng() % 7;
  CampaignOptions opt;
  opt.spec = small_spec(kernel, scheme, n, bs, 1 + static_cast<std::uint32_t>(rng() % 3),
                        lp::kAllChecksumKinds[rng() % 5]);
  SimSession native(opt.spec);
  RunReport report;
  const auto rest = native.restart_native(false, 0, report);
  ASSERT_TRUE(rest.has_value()) << "no native restart";
  const VerifyResult v = native.verify();
  EXPECT_TRUE(v.ok()) << v.first_mismatch;
  SimSession simulated(opt.spec);
  simulated.run(0);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> got, want;
  for (const auto& r : rest->regions) got.emplace_back(r.outer, r.inner);
  for (const auto& c : simulated.backend().commits())
    want.emplace_back(c.region.outer, c.region.inner);
  // With several logical threads the simulator takes their chunks in turns; only which regions
  // commit (how often) counts for the regions redone, not their order.
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);

  opt.trials = 16;
  opt.seed = rng();
  opt.recovery_crash_rate = 0.5;
  const CampaignResult fast = run_campaign(opt);
  opt.native_tail = false;
  const CampaignResult slow = run_campaign(opt);
  ASSERT_EQ(fast.results.size(), slow.results.size());
  for (std::size_t i = 0; i < fast.results.size(); ++i) {
    const TrialResult &a = fast.results[i], &b = slow.results[i];
    EXPECT_EQ(a.crash_op, b.crash_op) << i;
    EXPECT_EQ(a.passed, b.passed) << i << ": " << a.failure << " / " << b.failure;
    EXPECT_TRUE(a.passed) << i << ": " << a.failure;
    EXPECT_EQ(a.regions_redone, b.regions_redone) << i;
    EXPECT_EQ(a.outer_redone, b.outer_redone) << i;
    EXPECT_EQ(a.recovery_ops, b.recovery_ops) << i;
    EXPECT_EQ(a.recovery_lengths, b.recovery_lengths) << i;
    EXPECT_EQ(a.recovery.regions_validated, b.recovery.regions_validated) << i;
    EXPECT_EQ(a.recovery.regions_recomputed, b.recovery.regions_recomputed) << i;
    EXPECT_EQ(a.recovery.regions_unnecessary, b.recovery.regions_unnecessary) << i;
    EXPECT_EQ(a.crashes_in_recovery, b.crashes_in_recovery) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllSimulable, CrashCampaign, ::testing::ValuesIn(cases()),
                         pmlab::test::CrashSafeCaseName{});

TEST(CrashCampaignReplay, ATrialReplaysExactly) {
  CampaignOptions opt;
  opt.spec = small_spec("tmm", "lp", 31, 5, 2, lp::ChecksumKind::kModular);
  opt.trials = 12;
  opt.seed = 99;
  opt.recovery_crash_rate = 0.5;
  auto r = run_campaign(opt);
  for (const auto& t : r.results) {
    auto again = replay_trial(opt.spec, t.crash_op, t.recovery_crashes,
                              {t.image, t.image_seed, opt.mutation});
    EXPECT_EQ(again.passed, t.passed);
    EXPECT_EQ(again.recovery_ops, t.recovery_ops);
    EXPECT_EQ(again.recovery.regions_recomputed, t.recovery.regions_recomputed);
  }
  // LP needs to recompute after some crashes with these tiny caches: recovery is exercised.
  std::uint64_t recomputed = 0;
  for (const auto& t : r.results) recomputed += t.recovery.regions_recomputed;
  EXPECT_GT(recomputed, 0u);
}

TEST(CrashCampaignReplay, CrashPointBeyondTheRunIsReportedNotPassed) {
  auto spec = small_spec("tmm", "lp", 8, 4, 1, lp::ChecksumKind::kModular);
  auto t = replay_trial(spec, 1'000'000'000, {});
  EXPECT_FALSE(t.passed);
  EXPECT_NE(t.failure.find("finished before the crash point"), std::string::npos);
}

// ipv-nf (in-place versioning without its flushes, seed 002 Fig. 12) is a measurement row:
// campaigns refuse it, and the flag is honest — its crash trials do lose data, where ipv's pass.
TEST(CrashCampaignSafety, RowsThatAreNotCrashSafeAreRefusedAndReallyUnsafe) {
  for (const char* kernel : {"tmm", "cg", "jacobi"}) {
    EXPECT_FALSE(find_kernel(kernel).crash_safe("ipv-nf")) << kernel;
    EXPECT_TRUE(find_kernel(kernel).crash_safe("ipv")) << kernel;
    CampaignOptions opt;
    opt.spec = small_spec(kernel, "ipv-nf", 24, 4, 2, lp::ChecksumKind::kModular);
    opt.trials = 4;
    try {
      (void)run_campaign(opt);
      ADD_FAILURE() << kernel << ": a campaign of ipv-nf ran";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("crash consistency"), std::string::npos) << e.what();
    }
  }
  // Replays bypass the refusal: crash ipv-nf and ipv at the same points (adversarial images).
  const auto spec_nf = small_spec("tmm", "ipv-nf", 24, 4, 2, lp::ChecksumKind::kModular);
  const auto spec_ipv = small_spec("tmm", "ipv", 24, 4, 2, lp::ChecksumKind::kModular);
  SimRunSpec fault_free = spec_nf;
  fault_free.verify = true;
  const std::uint64_t ops = simulate(fault_free).ops, ipv_ops = simulate(spec_ipv).ops;
  int nf_failed = 0, ipv_failed = 0;
  for (std::uint64_t i = 1; i <= 40; ++i) {
    const std::uint64_t at = 1 + i * (ops - 1) / 41;
    const TrialSetup setup{ImageModel::kAnyDirty, i, mem::Mutation::kNone};
    nf_failed += replay_trial(spec_nf, at, {}, setup).passed ? 0 : 1;
    ipv_failed += replay_trial(spec_ipv, std::min(at, ipv_ops), {}, setup).passed ? 0 : 1;
  }
  EXPECT_GT(nf_failed, 0) << "ipv-nf survived every crash: then it need not be a measurement row";
  EXPECT_EQ(ipv_failed, 0);
}

}  // namespace
}  // namespace pmlab::run
