// The report's crash table: per campaign the image models used and the negative controls
// measured in that run, taken from the campaign's own results (never a fixed sentence).
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/experiments/eval.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

// A real campaign and its controls, as eval's crash step records them in results.json.
json measured_campaign(const std::string& kernel, const std::string& scheme) {
  experiments::CampaignOptions c;
  c.spec.run.kernel = kernel;
  c.spec.run.scheme = scheme;
  c.spec.run.n = 16;
  c.spec.run.bs = 8;
  c.spec.run.threads = 2;
  sim::MachineSettings o;
  o.set("cores", 2);
  o.set("l1-size", 1024);
  o.set("llc-size", 4096);
  o.set("l1-ways", 4);
  o.set("l2-size", 0);
  c.spec.machine = sim::machine_from("lp-isca18", o);
  c.trials = 20;
  c.seed = 11;
  json j = experiments::to_json(experiments::run_campaign(c), false);
  j["n"] = c.spec.run.n;
  j["controls"] = experiments::to_json(experiments::run_controls(c));
  return j;
}

json crash_results_with(const json& crash) {
  return {{"mode", "quick"}, {"complete", true}, {"crash", crash}};
}

TEST(ReportCrash, TableStatesTheImageModelsAndTheMeasuredControls) {
  const json wal = measured_campaign("tmm", "wal-ii");
  const json base = measured_campaign("tmm", "base");
  const std::string md = render_report(crash_results_with(json::array({wal, base})));
  // The cells are what this run measured: recomputed here from the campaign's own fields.
  std::string models;
  for (const auto& m : wal["image_models"])
    models += fmt::format("{}{} {}/{}", models.empty() ? "" : ", ", m["model"].get<std::string>(),
                          m["passed"].get<int>(), m["trials"].get<int>());
  EXPECT_NE(models.find("any-dirty"), std::string::npos);
  EXPECT_NE(md.find(models), std::string::npos) << md;
  const auto& k = wal["controls"];
  ASSERT_EQ(k["mutants"], 3);
  // commit-early runs 4x the campaign's trials (control_options).
  EXPECT_NE(md.find(fmt::format("detects {}/3 (20–80 trials each)", k["detected"].get<int>())),
            std::string::npos)
      << md;
  EXPECT_EQ(base["controls"]["mutants"], 0);
  EXPECT_NE(md.find("none declared"), std::string::npos) << md;
}

TEST(ReportCrash, AMissedMutantIsNamedAndTheHeadlineCountsIt) {
  json c = measured_campaign("tmm", "lp");
  // As a run that missed it would record it.
  c["controls"]["detected"] = 0;
  c["controls"]["runs"][0]["detected"] = false;
  c["controls"]["runs"][0]["failed"] = 0;
  const json results = crash_results_with(json::array({c}));
  EXPECT_NE(render_report(results).find("detects 0/1 (20 trials each); missed: no-validate"),
            std::string::npos);
  EXPECT_NE(render_headline(results).find(
                fmt::format("{} / 20; detects 0/1 mutants", c["passed"].get<int>())),
            std::string::npos)
      << render_headline(results);
}

}  // namespace
}  // namespace pmlab::experiments
