// The report's native cells: intervals shown, unresolved marked, never a bare point estimate;
// the statistic and the time per section named.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "pmlab/experiments/eval.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

json native_block(const std::string& kernel, double ratio, double low, double high, bool resolved) {
  return {{"kernel", kernel},
          {"n", 512},
          {"bs", 16},
          {"threads", 1},
          {"executions_per_rep", 4},
          {"target", 0.01},
          {"budget_seconds", 20.0},
          {"machine", {{"load_before", 0.5}, {"load_after", 2.5}, {"cores", 2}}},
          {"warnings", json::array()},
          {"schemes",
           {{{"scheme", "base"},
             {"median_rep_seconds", 0.2},
             {"ratio", 1.0},
             {"ci95", {1.0, 1.0}},
             {"resolved", true},
             {"bit_exact_vs_base", true}},
            {{"scheme", "lp"},
             {"median_rep_seconds", 0.21},
             {"ratio", ratio},
             {"ci95", {low, high}},
             {"resolved", resolved},
             {"reason", resolved ? "" : "machine busy: CPU time/wall time 0.40"},
             {"pairs_used", 9},
             {"pairs_measured", 9},
             {"median_cpu_fraction", resolved ? 0.99 : 0.4},
             {"bit_exact_vs_base", true}}}}};
}

json native_results_with(const json& native) {
  return {{"mode", "quick"}, {"complete", true}, {"native", native}};
}

TEST(ReportNative, ResolvedCellShowsEstimateAndInterval) {
  const auto md = render_headline(
      native_results_with(json::array({native_block("tmm", 1.004, 0.998, 1.010, true)})));
  EXPECT_NE(md.find("+0.4% [-0.2%, +1.0%]"), std::string::npos) << md;
  EXPECT_EQ(md.find("unresolved"), std::string::npos) << md;
}

TEST(ReportNative, UnresolvedCellIsMarkedWithItsInterval) {
  const auto md = render_headline(
      native_results_with(json::array({native_block("gauss", 1.15, 0.71, 1.69, false)})));
  EXPECT_NE(md.find("unresolved: +15% [-29%, +69%]"), std::string::npos) << md;
}

TEST(ReportNative, ReportCountsResolvedCellsAndStatesTheLoad) {
  const auto md = render_report(
      native_results_with(json::array({native_block("tmm", 1.004, 0.998, 1.010, true),
                                       native_block("gauss", 1.15, 0.71, 1.69, false)})));
  EXPECT_NE(md.find("1 of 2 kernels resolved"), std::string::npos) << md;
  EXPECT_NE(md.find("load average 0.50–2.50"), std::string::npos) << md;
  // Table VII beside the paper's column, and a geometric mean that says it is unresolved.
  EXPECT_NE(md.find("LP paper Table VII"), std::string::npos) << md;
  EXPECT_NE(md.find("the mean is unresolved too"), std::string::npos) << md;
  // The unresolved reason reaches the per-kernel section.
  EXPECT_NE(md.find("lp unresolved: machine busy"), std::string::npos) << md;
}

TEST(ReportNative, MissingIntervalPrintsNoNumber) {
  json block = native_block("lu", 1.2, 1.0, 1.4, false);
  block["schemes"][1]["ci95"] = nullptr;
  const auto md = render_headline(native_results_with(json::array({block})));
  EXPECT_NE(md.find("unresolved: no interval"), std::string::npos) << md;
  EXPECT_EQ(md.find("+20"), std::string::npos) << md;
}

// The ratio's definition follows the statistic the results name, and the wall time per section
// (where make run's minutes went) is stated when recorded.
TEST(ReportNative, NamesTheStatisticAndTheTimePerSection) {
  json block = native_block("tmm", 1.004, 0.998, 1.010, true);
  json r = native_results_with(json::array({block}));
  EXPECT_NE(render_report(r).find("20%-trimmed mean"), std::string::npos);
  EXPECT_EQ(render_report(r).find("Wall time per section"), std::string::npos);
  r["native"][0]["schemes"][1]["statistic"] = "floor";
  r["section_seconds"] = {{"native", 211.4}, {"sim", 95.6}};
  const auto md = render_report(r);
  EXPECT_NE(md.find("10th-percentile repetition time over base's"), std::string::npos) << md;
  EXPECT_NE(md.find("Wall time per section: native 211 s, sim 96 s."), std::string::npos) << md;
}

TEST(ReportNative, InstructionCountsSkippedWithANote) {
  json r = native_results_with(json::array());
  r["instructions"] = json::array({{{"skipped", "valgrind not found"}}});
  const auto md = render_report(r);
  EXPECT_NE(md.find("Not measured: valgrind not found"), std::string::npos) << md;
}

}  // namespace
}  // namespace pmlab::experiments
