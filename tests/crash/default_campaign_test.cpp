// `pmlab crash K --scheme S` with no other option detects every control its row declares, and a
// control that fails no trial is extended with fresh trials up to kControlTrialCap.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "../support/crash_safe_cases.hpp"
#include "../support/process.hpp"
#include "../support/test_scale.hpp"
#include "negative_control_machine.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/experiments/crash_campaign.hpp"

namespace pmlab::run::default_campaigns {
namespace {

using namespace pmlab::experiments;

// --- The command a newcomer types -------------------------------------------------------------

class DefaultCrashCommand : public ::testing::TestWithParam<pmlab::test::CrashSafeCase> {};

// Before b37cb2d this failed for cg lp (no-validate: 0 of 200 trials at every seed tried, the
// default images lacked skewed), jacobi lp (no-flush missed at some seeds) and jacobi
// cp-nt-async (cp-barrier-after-write: the CLI's small caches hid it).
TEST_P(DefaultCrashCommand, DetectsEveryControlItsRowDeclares) {
  if (!pmlab::test::full_scale()) GTEST_SKIP() << "statistical: the release run's";
  const pmlab::test::CrashSafeCase& c = GetParam();
  const auto scratch =
      std::filesystem::temp_directory_path() /
      ("pmlab-default-crash-" + std::to_string(getpid()) + "-" + c.kernel + "-" + c.scheme);
  std::filesystem::create_directories(scratch);
  const auto r =
      pmlab::testing::run_process({PMLAB_BINARY, "crash", c.kernel, "--scheme", c.scheme, "--seed",
                                   std::to_string(test::evidence_seed()), "--quiet", "--json"},
                                  scratch.string());
  std::filesystem::remove_all(scratch);
  if (r.exit_code == 2 && r.err.find("natively") != std::string::npos)
    GTEST_SKIP() << "runs natively only";
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], j["trials"]);
  EXPECT_EQ(j["controls"]["detected"], j["controls"]["mutants"]) << j["controls"].dump();
}

INSTANTIATE_TEST_SUITE_P(AllSimulable, DefaultCrashCommand,
                         ::testing::ValuesIn(pmlab::test::crash_safe_cases()),
                         pmlab::test::CrashSafeCaseName{});

// --- Extended controls ------------------------------------------------------------------------

// cp-no-sfence under cache images alone cannot fail: the cache image keeps every flush, fenced or
// not. Its control therefore runs its first campaign and three extensions, to the cap.
TEST(ControlExtension, AMissedControlRunsToTheCapInFourCampaigns) {
  CampaignOptions opt;
  opt.spec = test::negative_control_spec("tmm", "cp-clflush");
  opt.trials = 10;
  opt.seed = test::evidence_seed();
  opt.images = {ImageModel::kCache};
  const auto controls = run_controls(opt);
  bool saw_sfence = false;
  for (const ControlResult& c : controls) {
    SCOPED_TRACE(mem::to_string(c.mutation));
    const std::uint64_t first = control_options(opt, c.mutation).trials;
    const std::uint64_t by_image =
        std::accumulate(c.by_image.begin(), c.by_image.end(), std::uint64_t{0},
                        [](std::uint64_t s, const ImageTally& t) { return s + t.trials; });
    EXPECT_EQ(by_image, c.trials);
    if (c.detected()) {
      // Detected by the campaign that ran last; the ones before it (if any) doubled the total.
      EXPECT_EQ(c.trials, first << (c.campaigns - 1));
    } else {
      EXPECT_EQ(c.trials, first * kControlTrialCap);
      EXPECT_EQ(c.campaigns, 4u);
    }
    if (c.mutation == mem::Mutation::kCpNoSfence) {
      saw_sfence = true;
      EXPECT_FALSE(c.detected());
      EXPECT_EQ(c.trials, opt.trials * kNarrowWindowTrialFactor * kControlTrialCap);
    }
  }
  EXPECT_TRUE(saw_sfence);
}

// A control that fails in its first campaign is not extended.
TEST(ControlExtension, ADetectedControlRunsOnce) {
  CampaignOptions opt;
  opt.spec = test::negative_control_spec("tmm", "lp");
  opt.trials = 60;
  opt.seed = test::evidence_seed();
  const auto controls = run_controls(opt);
  ASSERT_EQ(controls.size(), 1u);  // no-validate
  EXPECT_TRUE(controls[0].detected());
  EXPECT_EQ(controls[0].campaigns, 1u);
  EXPECT_EQ(controls[0].trials, 60u);
}

}  // namespace
}  // namespace pmlab::run::default_campaigns
