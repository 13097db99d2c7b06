// `pmlab bench --aa`: base timed against base on its own pool, a row of its own (base-aa),
// verified like every scheme; too few pairs leave it unresolved; `--statistic` picks the ratio.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "pmlab/experiments/paired_ratio.hpp"

namespace pmlab::testing {
namespace {

// `pmlab bench tmm` on a tiny problem with two pairs, its pools in a directory of its own.
ProcessResult run_tiny_bench(const std::string& tag, std::vector<std::string> extra) {
  const auto dir = std::filesystem::temp_directory_path() / (tag + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::vector<std::string> args{
      PMLAB_BINARY, "bench",     "tmm",     "--n",    "32",        "--bs",
      "8",          "--schemes", "lp",      "--reps", "2",         "--rep-seconds",
      "0",          "--json",    "--quiet", "--dir",  dir.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_process(args, dir.string());
  std::filesystem::remove_all(dir);
  return r;
}

TEST(BenchAa, TheAaRowRunsBaseOnItsOwnPoolAndIsReportedLikeAScheme) {
  const auto r = run_tiny_bench("pmlab-aa-", {"--aa"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& s : j.at("schemes")) names.push_back(s.at("scheme"));
  EXPECT_EQ(names, (std::vector<std::string>{"base", "base-aa", "lp"}));
  const auto& aa = j.at("schemes").at(1);
  EXPECT_TRUE(aa.at("bit_exact_vs_base").get<bool>());
  EXPECT_FALSE(aa.at("resolved").get<bool>()) << "2 pairs cannot resolve a ratio";
  // The default statistic is the trimmed mean, and both statistics are reported on the same
  // pairs (the floor has no interval below 42 pairs).
  const auto& lp = j.at("schemes").at(2);
  EXPECT_EQ(lp.at("statistic"), "trimmed");
  EXPECT_DOUBLE_EQ(lp.at("ratio").get<double>(), lp.at("trimmed_ratio").get<double>());
  EXPECT_TRUE(lp.at("floor_ratio").is_number());
  EXPECT_TRUE(lp.at("floor_ci95").is_null());
}

TEST(BenchAa, StatisticFloorIsChosenByFlagAndUnknownOnesAreRefused) {
  const auto r = run_tiny_bench("pmlab-stat-", {"--statistic", "floor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& lp = j.at("schemes").at(1);
  EXPECT_EQ(lp.at("statistic"), "floor");
  EXPECT_DOUBLE_EQ(lp.at("ratio").get<double>(), lp.at("floor_ratio").get<double>());
  // The floor has no interval below 42 pairs, so the verdict has none either. Why it is
  // unresolved names the 42 pairs, unless the machine was busy (CI runs two tests at once),
  // which is checked first and named instead.
  EXPECT_TRUE(lp.at("ci95").is_null());
  const auto reason = lp.at("reason").get<std::string>();
  const bool machine_busy = reason.starts_with("machine busy");
  EXPECT_EQ(machine_busy, lp.at("median_cpu_fraction").get<double>() <
                              experiments::PairedRatioOptions{}.healthy_cpu_fraction)
      << reason;
  if (!machine_busy) {
    EXPECT_NE(reason.find("need 42"), std::string::npos) << reason;
  }
  const auto bad = run_tiny_bench("pmlab-stat-bad-", {"--statistic", "mean"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--statistic"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace pmlab::testing
