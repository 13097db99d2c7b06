// `pmlab crash` end to end: the shared machine flags, --periodic-flush, --jobs, JSON keys.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"

namespace pmlab::testing {
namespace {

ProcessResult crash(std::vector<std::string> args) {
  args.insert(args.begin(), {PMLAB_BINARY, "crash", "tmm"});
  const auto scratch =
      std::filesystem::temp_directory_path() / ("pmlab-crashcli-" + std::to_string(getpid()));
  return run_process(args, scratch.string());
}

nlohmann::json crash_json(std::vector<std::string> args) {
  args.insert(args.end(), {"--json", "--n", "24", "--bs", "4", "--trials", "30", "--seed", "9"});
  const ProcessResult r = crash(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(CrashCli, ForkedAndSequentialCampaignsReportTheSameWork) {
  const auto forked = crash_json({"--jobs", "2"});
  const auto sequential = crash_json({"--jobs", "0"});
  EXPECT_EQ(forked["jobs"], 2);
  EXPECT_EQ(sequential["jobs"], 0);
  for (const char* k :
       {"passed", "fault_free_ops", "commits", "fences", "recovery_ops", "regions_recomputed",
        "regions_redone", "crashes_during_recovery", "unnecessary_recomputations"})
    EXPECT_EQ(forked[k], sequential[k]) << k;
  EXPECT_EQ(forked["passed"], 30);
}

TEST(CrashCli, TakesEveryMachineFlagAndAPeriodicFlush) {
  const auto j = crash_json({"--scheme", "ep-ii", "--llc-ways", "4", "--replacement", "srrip",
                             "--wq-entries", "8", "--periodic-flush", "1%"});
  EXPECT_EQ(j["passed"], 30);
  EXPECT_GT(j["fences"].get<std::uint64_t>(), 0u);  // the eager protocol's steps
  const auto period = j["periodic_flush_cycles"].get<std::uint64_t>();
  const auto cycles = j["fault_free_cycles"].get<double>();
  EXPECT_NEAR(static_cast<double>(period), cycles / 100, cycles / 1000);  // of the run without it
  const auto lp = crash_json({"--periodic-flush", "1%"});
  EXPECT_GT(lp["max_commits_per_period"].get<std::uint64_t>(), 0u);
  EXPECT_LE(lp["max_commits_per_period"], lp["commits"]);
}

TEST(CrashCli, BadJobsAndPeriodsExitTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--jobs", "-1"},
                                               {"--jobs", "65"},
                                               {"--periodic-flush", "x%"},
                                               {"--l1-size", "1000"}}) {
    const ProcessResult r = crash(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1] << ": " << r.err;
  }
}

}  // namespace
}  // namespace pmlab::testing
