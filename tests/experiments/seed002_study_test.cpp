// Seed 002's eval section: Table 1 in the simulator and natively, the per-kernel figures on tmm,
// and the report rendering them beside the paper.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "pmlab/experiments/seed002_study.hpp"

namespace pmlab::experiments {
namespace {

TEST(Seed002Study, PicksTheCatalogKernelsWithIpvRows) {
  const auto k = seed002_kernels();
  EXPECT_NE(std::find(k.begin(), k.end(), "tmm"), k.end());
}

TEST(Seed002Study, TmmFiguresAreVerifiedAndComplete) {
  Seed002Options o;
  o.n = 32;
  const auto j = seed002_kernel("tmm", o);
  ASSERT_TRUE(j.contains("rows")) << j.dump();
  EXPECT_EQ(j["n"], 32);
  for (const auto& r : j["rows"]) EXPECT_TRUE(r["verified"].get<bool>()) << r.dump();
  EXPECT_TRUE(j["fig6"]["nt_gain_over_clflush"].is_number());
  // Fig. 7: the copy is part of each clflush design's loss, not all of it (the flush is the rest).
  for (const char* k : {"copy_share_cp_clflush", "copy_share_cp_par_clflush"}) {
    ASSERT_TRUE(j["fig7"][k].is_number()) << j["fig7"].dump();
    EXPECT_GT(j["fig7"][k].get<double>(), 0.0);
    EXPECT_LT(j["fig7"][k].get<double>(), 1.0);
  }
  EXPECT_TRUE(j["fig12"]["ipv_overhead"].is_number());
  EXPECT_TRUE(j["fig13"].contains("overlap"));
  EXPECT_TRUE(j["fig14"]["difference_points"].is_number());
  // tmm's next tile overwrites the buffer just handed to the helper: nothing to hide behind.
  EXPECT_DOUBLE_EQ(j["fig13"]["overlap"].get<double>(), 0.0);
  const std::string md = seed002_section(nlohmann::json::array({seed002_flush_states(o), j}));
  EXPECT_NE(md.find("Table 1"), std::string::npos);
  EXPECT_NE(md.find("9.6% avg, 16% max"), std::string::npos);
  EXPECT_NE(md.find("Fig. 7"), std::string::npos);
  EXPECT_NE(md.find(">= 41%"), std::string::npos);
}

// Fig. 12's dotted bar on jacobi: cp-nt-async is simulated, verified, and its copy overlaps the
// next iteration's residual (work before its first store), which tmm's ipv has none of.
TEST(Seed002Study, JacobiAsyncCopyIsVerifiedAndOverlapsTheResidual) {
  Seed002Options o;
  o.n = 64;
  const auto j = seed002_kernel("jacobi", o);
  ASSERT_TRUE(j.contains("rows")) << j.dump();
  bool seen = false;
  for (const auto& r : j["rows"]) {
    EXPECT_TRUE(r["verified"].get<bool>()) << r.dump();
    if (r["config"] == "cp-nt-async") {
      seen = true;
      EXPECT_GT(r["helper"]["copy_ops"].get<std::uint64_t>(), 0u) << r.dump();
    }
  }
  EXPECT_TRUE(seen) << j.dump();
  ASSERT_TRUE(j["fig12"]["async_copy_gain_over_cp_nt"].is_number()) << j["fig12"].dump();
  const double hidden = j["fig13"]["overlap_copy"].get<double>();
  EXPECT_GT(hidden, 0.0);
  EXPECT_LE(hidden, 1.0);
  const std::string md = seed002_section(nlohmann::json::array({j}));
  EXPECT_NE(md.find("cp-nt-async"), std::string::npos) << md;
}

// Table 2 (pmlab) in eval: the profiler's rows, every declaration agreeing, in the report.
TEST(Seed002Study, RulesTableComesFromTheProfiler) {
  const auto t = seed002_rules({});
  ASSERT_EQ(t["table"], "ipv-rules");
  std::map<std::string, std::string> rule;
  for (const auto& r : t["rows"]) {
    EXPECT_TRUE(r["matches_declaration"].get<bool>()) << r.dump();
    rule[r["kernel"].get<std::string>() + " " + r["object"].get<std::string>()] = r["rule"];
  }
  EXPECT_EQ(rule["cg r"], "post-update");
  EXPECT_EQ(rule["cg p"], "basic");
  EXPECT_EQ(rule["jacobi --mg-like u"], "non-uniform");
  EXPECT_EQ(rule["lu output"], "non-uniform");
  const std::string md = seed002_section(nlohmann::json::array({t}));
  EXPECT_NE(md.find("Table 2 (pmlab)"), std::string::npos) << md;
  EXPECT_EQ(md.find("**no**"), std::string::npos) << md;
}

// eval's plot script draws the seed-002 figure from the section as eval writes it: per-kernel
// entries beside the tables (Table 2 has "rows" too, but no configurations), kernels whose
// configurations differ (cp-nt-async on jacobi only).
TEST(Seed002Study, ThePlotScriptDrawsFromTheSectionsEntries) {
  std::string py;  // as eval finds it (src/experiments/eval.cpp, python_with_matplotlib)
  for (const char* p : {"/usr/bin/python3", "python3"})
    if (py.empty() &&
        std::system((std::string(p) + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0)
      py = p;
  if (py.empty()) GTEST_SKIP() << "no python3 with matplotlib (scripts/setup-deps installs it)";
  Seed002Options o;
  o.n = 32;
  const nlohmann::json results = {
      {"seed002", nlohmann::json::array(
                      {seed002_rules(o), seed002_kernel("tmm", o), seed002_kernel("jacobi", o)})}};
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("pmlab-plot-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "results.json") << results.dump();
  const std::string cmd = py + " '" PMLAB_TEST_SOURCE_DIR "/../tools/plot_results.py' '" +
                          (dir / "results.json").string() + "' '" + dir.string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_TRUE(fs::exists(dir / "seed002.png"));
  fs::remove_all(dir);
}

TEST(Seed002Study, SimulatedFlushCostsCoverEveryStateAndKind) {
  const auto t = seed002_flush_states({});
  RecordProperty("table1", t["sim"].dump());
  ASSERT_EQ(t["sim"].size(), 24u);  // 2 machines x 3 instructions x 4 states
  for (const auto& r : t["sim"]) EXPECT_GT(r["cycles"].get<double>(), 0.0) << r.dump();
  // Seed 002's order (Table 1 measures clflush) on its own machine, a home agent with a DRAM
  // directory: dirty < clean < not cached. clflushopt and clwb overlap, so their per-line cost is
  // the write queue's bandwidth for dirty lines (docs/seed002.md "Table 1"): not checked.
  const auto cycles = [&](const std::string& machine, const std::string& flush,
                          const std::string& state) {
    for (const auto& r : t["sim"])
      if (r["machine"] == machine && r["flush"] == flush && r["state"] == state)
        return r["cycles"].get<double>();
    ADD_FAILURE() << machine << " " << flush << " " << state;
    return 0.0;
  };
  EXPECT_LT(cycles("haswell-ep", "clflush", "modified"),
            cycles("haswell-ep", "clflush", "exclusive"));
  EXPECT_LT(cycles("haswell-ep", "clflush", "exclusive"),
            cycles("haswell-ep", "clflush", "invalid"));
  // On the papers' gem5 directory no state costs more than a dirty line.
  EXPECT_GE(cycles("lp-isca18", "clflush", "modified"), cycles("lp-isca18", "clflush", "invalid"));
  EXPECT_FALSE(t["native"]["rows"].empty());
}

// Fig. 5: in the simulator the cores' flushes share the memory controller, so the time per line
// never falls below its drain bound however many cores flush (a model without that sharing ran
// 16 cores 22x faster than one, below the bound); every native thread count is measured.
TEST(Seed002Study, FlushScalingIsBoundedByTheSharedController) {
  const auto t = seed002_flush_scaling({});
  RecordProperty("fig5", t.dump());
  ASSERT_EQ(t["sim"].size(), 2u);
  for (const auto& m : t["sim"]) {
    const double drain = m["drain_cycles_per_line"].get<double>();
    const auto& rows = m["rows"];
    ASSERT_EQ(rows.size(), 5u);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double c = rows[i]["cycles_per_line"].get<double>();
      EXPECT_GE(c, 0.95 * drain) << m.dump();
      if (i > 0) {
        EXPECT_LE(c, rows[i - 1]["cycles_per_line"].get<double>() * 1.001) << m.dump();
      }
    }
  }
  ASSERT_TRUE(t["native"].contains("rows")) << t["native"].dump();
  for (const auto& r : t["native"]["rows"])
    EXPECT_GT(r["ns_per_line_median"].get<double>(), 0.0) << r.dump();
  const std::string md = seed002_section(nlohmann::json::array({t}));
  EXPECT_NE(md.find("Fig. 5"), std::string::npos);
}

// Figs. 6, 12, 13 natively (tiny sizes: the structure, not the numbers): every row bit-exact,
// the derived gains carry intervals, ipv's helper reports its hidden share, the report shows it.
TEST(Seed002Study, NativeFiguresComeFromOnePairedBench) {
  Seed002Options o;
  o.n = 32;
  o.native_rep_seconds = 0.002;
  const auto t = seed002_native("jacobi", o);
  for (const auto& s : t["bench"]["schemes"])
    EXPECT_TRUE(s["bit_exact_vs_base"].get<bool>()) << s.dump();
  EXPECT_EQ(t["bench"]["schemes"].size(), 8u);  // base + the seven rows
  const auto& g = t["fig6"]["nt_gain_over_clflush"];
  ASSERT_TRUE(g.contains("gain")) << t["fig6"].dump();
  ASSERT_TRUE(t["fig12"]["async_copy_gain_over_cp_nt"].contains("gain")) << t["fig12"].dump();
  // Both helpers ran: ipv's flushes and cp-nt-async's copies.
  for (const char* f : {"fig13", "fig13_copy"}) {
    ASSERT_TRUE(t.contains(f)) << f << " " << t.dump();
    const double hidden = t[f]["hidden_fraction"].get<double>();
    EXPECT_GE(hidden, 0.0);
    EXPECT_LE(hidden, 1.0);
  }
  const std::string md = seed002_section(nlohmann::json::array({t}));
  EXPECT_NE(md.find("natively: jacobi"), std::string::npos) << md;
  EXPECT_NE(md.find(">= 41%"), std::string::npos);
}

}  // namespace
}  // namespace pmlab::experiments
