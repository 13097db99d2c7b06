// Simulator crash campaigns: every scheme recovers bit-exactly from uniform and corner crash
// points.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "pmlab/driver/crash_campaign.hpp"
#include "pmlab/driver/kernel_driver.hpp"

namespace pmlab::driver {
namespace {

SimRunSpec small_spec(const std::string& kernel, const std::string& scheme, std::uint64_t n,
                      std::uint64_t bs, std::uint32_t threads, lp::ChecksumKind kind) {
  SimRunSpec spec;
  spec.run.kernel = kernel;
  spec.run.scheme = scheme;
  spec.run.n = n;
  spec.run.bs = bs;
  spec.run.threads = threads;
  spec.run.checksum = kind;
  MachineOverrides o;
  o.cores = 2;
  o.l1_size = 1024;  // tiny caches: CI-sized runs evict, so crashes leave partial state
  o.llc_size = 4096;
  o.l1_ways = 4;
  o.llc_ways = 8;
  o.l2_size = 0;
  spec.machine = machine_from("lp-isca18", o);
  return spec;
}

bool simulable(const std::string& kernel, const std::string& scheme) {
  try {
    validate(small_spec(kernel, scheme, 8, 4, 1, lp::ChecksumKind::kModular));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

struct Case {
  std::string kernel, scheme;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.kernel << " " << c.scheme; }
};

// Evaluated during static initialization, so only the (function-local static) kernel list is
// used here; whether the simulator can run a case is asked inside the test.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& k : kernel_drivers())
    for (const auto& s : k.schemes) out.push_back({k.name, s});
  return out;
}

class CrashCampaign : public ::testing::TestWithParam<Case> {};

// Property: a fresh seed every run, random sizes (non-multiples of bs, tiny, prime), random
// thread counts and checksum kinds; every trial must end bit-exact.
TEST_P(CrashCampaign, EveryTrialRecoversBitExactly) {
  const auto& [kernel, scheme] = GetParam();
  if (!simulable(kernel, scheme))
    GTEST_SKIP() << kernel << " " << scheme << " has no simulator entry point (native only)";
  std::random_device rd;
  const std::uint64_t seed = (static_cast<std::uint64_t>(rd()) << 32) | rd();
  std::mt19937_64 rng(seed);
  const std::uint64_t max_n = std::min<std::uint64_t>(find_kernel(kernel).crash_test_max_n, 37);
  std::uint64_t total = 0, recovery_crashes = 0;
  std::set<CrashPointKind> kinds_seen;
  for (int size = 0; size < 4; ++size) {
    std::uint64_t n = 2 + rng() % (max_n - 1);
    if (kernel == "fft") n = std::uint64_t{1} << (1 + rng() % 5);
    const std::uint64_t bs = 1 + rng() % 7;
    CampaignOptions opt;
    opt.spec = small_spec(kernel, scheme, n, bs, 1 + static_cast<std::uint32_t>(rng() % 3),
                          lp::kAllChecksumKinds[rng() % 5]);
    opt.trials = 75;
    opt.seed = rng();
    auto r = run_campaign(opt);
    for (const auto& t : r.results) {
      EXPECT_TRUE(t.passed) << "seed " << seed << " n=" << n << " bs=" << bs << " trial " << t.index
                            << " crash_op " << t.crash_op << ": " << t.failure;
      kinds_seen.insert(t.kind);
      recovery_crashes += t.recovery_crashes.size();
    }
    total += r.trials;
  }
  EXPECT_EQ(total, 300u);            // "a campaign of at least a few hundred trials"
  EXPECT_GE(kinds_seen.size(), 3u);  // uniform, first-op, last-op at least
  EXPECT_GT(recovery_crashes, 0u);   // some trials really crashed inside recovery
}

INSTANTIATE_TEST_SUITE_P(AllSimulable, CrashCampaign, ::testing::ValuesIn(cases()),
                         [](const auto& info) {
                           std::string s = info.param.kernel + "_" + info.param.scheme;
                           for (auto& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

TEST(CrashCampaignReplay, ATrialReplaysExactly) {
  CampaignOptions opt;
  opt.spec = small_spec("tmm", "lp", 31, 5, 2, lp::ChecksumKind::kModular);
  opt.trials = 12;
  opt.seed = 99;
  opt.recovery_crash_rate = 0.5;
  auto r = run_campaign(opt);
  for (const auto& t : r.results) {
    auto again = replay_trial(opt.spec, t.crash_op, t.recovery_crashes);
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

}  // namespace
}  // namespace pmlab::driver
