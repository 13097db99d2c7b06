// The persist-barrier report's LB+IDT table: inter-thread share, stall removed and gain per
// benchmark, computed from the measured rows it is given.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "pmlab/experiments/barrier_study.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

json row(const std::string& config, double vs_lb, std::uint64_t inter_raw, std::uint64_t intra,
         std::uint64_t stall) {
  return {{"config", config},
          {"barrier", config},
          {"vs_lb", vs_lb},
          {"cycles", 1000},
          {"epochs",
           {{"conflict_pct", 50.0},
            {"conflicting", inter_raw + intra},
            {"epochs", 2 * (inter_raw + intra)},
            {"stall_cycles", stall},
            {"splits", 0},
            {"idt_deps", 0},
            {"flushed_by", {{"intra", intra}, {"inter_raw", inter_raw}, {"inter_waw", 0}}}}}};
}

json bench(const std::string& name, double idt_gain, std::uint64_t inter, std::uint64_t intra,
           std::uint64_t lb_stall, std::uint64_t idt_stall) {
  return {{"bench", name},
          {"label", "persist barriers " + name},
          {"threads", 4},
          {"ops", 10},
          {"rows",
           {row("lb", 1.0, inter, intra, lb_stall), row("lb-idt", idt_gain, 0, intra, idt_stall),
            row("lb-pf", 1.1, inter, intra, lb_stall), row("lb++", 1.2, 0, intra, idt_stall)}}};
}

TEST(BarrierReport, IdtTableShowsTheInterThreadShareAndTheStallItRemoves) {
  const json benches = json::array(
      {bench("alpha", 1.25, 30, 70, 10'000, 4'000), bench("beta", 1.0, 0, 50, 8'000, 8'000)});
  const std::string md = barrier_section(benches);
  // alpha: 30 of 100 conflicting epochs inter-thread, (10,000 − 4,000) / 30 = 200 per conflict.
  EXPECT_NE(md.find("| alpha | 30 of 100 (30%) | 200 | 1.250x |"), std::string::npos) << md;
  // beta: none inter-thread, nothing for IDT to remove.
  EXPECT_NE(md.find("| beta | 0 of 50 (0%) | – | 1.000x |"), std::string::npos) << md;
}

TEST(BarrierReport, NoIdtTableWithoutAnIdtRun) {
  json b = bench("alpha", 1.25, 30, 70, 10'000, 4'000);
  b["rows"].erase(1);  // no lb-idt row
  const std::string md = barrier_section(json::array({b}));
  EXPECT_EQ(md.find("LB+IDT by benchmark"), std::string::npos) << md;
}

}  // namespace
}  // namespace pmlab::experiments
