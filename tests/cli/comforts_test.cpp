// CLI comforts (issue 19 item 5): option aliases across verbs, `eval --config` (machine files
// and their errors), null ratios in eval's results rendered as n/a, build metadata in --json,
// a kernel's own default --bs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "pmlab/experiments/eval.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("pmlab-comforts-{}-{}", name, ::getpid());
  fs::create_directories(dir);
  return dir;
}

void expect_meta(const json& doc, const std::string& what) {
  ASSERT_TRUE(doc.contains("meta")) << what;
  for (const char* k : {"pmlab_version", "git_revision", "compiler", "cpu", "date"})
    EXPECT_TRUE(doc["meta"].contains(k) && doc["meta"][k].is_string()) << what << ": " << k;
}

// `bench --scheme` is the other verbs' spelling of `--schemes`: accepted, same meaning.
TEST(CliAliases, BenchAcceptsSchemeAsSchemes) {
  const fs::path dir = scratch_dir("alias");
  const auto r = run_process({PMLAB_BINARY, "bench", "tmm", "--scheme", "lp", "--n", "16", "--bs",
                              "4", "--single-pass", "--json", "--dir", dir.string()},
                             (dir / "log").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["schemes"].size(), 2u) << r.out;  // base is always included
  EXPECT_EQ(j["schemes"][1]["scheme"], "lp");
  expect_meta(j, "bench");
  fs::remove_all(dir);
}

// A kernel's default block size when --bs is absent (KernelDriver::default_bs): 256 for cg, whose
// bs is a 1-D LP region, 16 for the tile kernels; an explicit --bs wins, and a pool keeps its own.
TEST(CliDefaults, BlockSizeIsTheKernelsOwnWhenNotGiven) {
  const fs::path dir = scratch_dir("bs");
  // The bs a command's --json reports (0 when it failed).
  const auto bs_of = [&](const std::vector<std::string>& cmd) {
    const auto r = run_process(cmd, (dir / "log").string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    return j.is_object() && j.contains("bs") ? j["bs"].get<std::uint64_t>() : std::uint64_t{0};
  };
  const std::string b = PMLAB_BINARY;
  EXPECT_EQ(bs_of({b, "sim", "cg", "--n", "300", "--json", "--quiet"}), 256u);
  EXPECT_EQ(bs_of({b, "sim", "tmm", "--n", "32", "--json", "--quiet"}), 16u);
  EXPECT_EQ(bs_of({b, "sim", "cg", "--n", "300", "--bs", "16", "--json", "--quiet"}), 16u);
  EXPECT_EQ(bs_of({b, "bench", "cg", "--schemes", "lp", "--n", "300", "--single-pass", "--json",
                   "--quiet", "--dir", dir.string()}),
            256u);
  const std::string pool = (dir / "cg.pool").string();
  EXPECT_EQ(bs_of({b, "run", "cg", "--n", "300", "--pool", pool, "--json", "--quiet"}), 256u);
  // Resuming names no --bs: the stored bs is kept, and a pool made with 16 stays at 16.
  const std::string old_pool = (dir / "cg16.pool").string();
  EXPECT_EQ(
      bs_of({b, "run", "cg", "--n", "300", "--bs", "16", "--pool", old_pool, "--json", "--quiet"}),
      16u);
  EXPECT_EQ(bs_of({b, "run", "--pool", old_pool, "--json", "--quiet"}), 16u);
  fs::remove_all(dir);
}

// Every verb's --json carries the build metadata (eval's is checked below, in results.json too).
TEST(CliMeta, RunSimCrashInfoJsonCarryBuildMetadata) {
  const fs::path dir = scratch_dir("meta");
  const std::string pool = (dir / "p.pool").string();
  const std::vector<std::vector<std::string>> cmds{
      {PMLAB_BINARY, "run", "tmm", "--n", "16", "--bs", "4", "--pool", pool, "--json"},
      {PMLAB_BINARY, "info", "--pool", pool, "--json"},
      {PMLAB_BINARY, "sim", "tmm", "--n", "16", "--bs", "4", "--json", "--quiet"},
      {PMLAB_BINARY, "crash", "tmm", "--n", "16", "--bs", "4", "--trials", "4", "--seed", "1",
       "--no-controls", "--json", "--quiet"}};
  for (const auto& c : cmds) {
    const auto r = run_process(c, (dir / "log").string());
    ASSERT_EQ(r.exit_code, 0) << c[1] << ": " << r.err;
    expect_meta(json::parse(r.out), c[1]);
  }
  fs::remove_all(dir);
}

TEST(EvalConfig, BadMachineFileIsAUsageErrorNamingFileAndKey) {
  const fs::path dir = scratch_dir("badcfg");
  const fs::path file = dir / "mine.json";
  std::ofstream(file) << R"({"pmlab_machine": 1, "l1": {"wayz": 3}})";
  const auto r = run_process(
      {PMLAB_BINARY, "eval", "--config", file.string(), "--out", (dir / "out").string()},
      (dir / "log").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("mine.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("l1.wayz"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out")) << "refused before anything ran";
  const auto missing = run_process({PMLAB_BINARY, "eval", "--config", (dir / "none.json").string()},
                                   (dir / "log").string());
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  const auto preset =
      run_process({PMLAB_BINARY, "eval", "--config", "no-such-preset"}, (dir / "log").string());
  EXPECT_EQ(preset.exit_code, 2) << preset.err;
  EXPECT_NE(preset.err.find("unknown simulator preset"), std::string::npos) << preset.err;
  fs::remove_all(dir);
}

// A good file is taken: results.json names it (and carries the metadata), the report's
// reproduce line repeats it. Stopped by SIGTERM after a moment: the partial report suffices.
TEST(EvalConfig, MachineFileIsRecordedInResultsAndReport) {
  const fs::path dir = scratch_dir("cfg");
  const fs::path file = fs::path(PMLAB_TEST_SOURCE_DIR) / ".." / "configs" / "lp-isca18.json";
  const auto r = run_process({PMLAB_BINARY, "eval", "--quick", "--quiet", "--config", file.string(),
                              "--out", (dir / "out").string()},
                             (dir / "log").string(), std::chrono::milliseconds(1500), SIGTERM);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  std::ifstream data(dir / "out" / "results.json");
  ASSERT_TRUE(data);
  const json results = json::parse(data);
  EXPECT_EQ(results.at("machine").at("config"), file.string());
  EXPECT_TRUE(results["machine"].contains("params"));
  expect_meta(results, "results.json");
  std::ifstream report(dir / "out" / "report.md");
  std::stringstream text;
  text << report.rdbuf();
  EXPECT_NE(text.str().find("--config " + file.string()), std::string::npos) << text.str();
  fs::remove_all(dir);
}

// 0/0 (and x/0) ratios are null in results.json, as in `sim --json`; the report prints n/a and
// leaves them out of the geometric means instead of failing or printing a number.
TEST(EvalNullRatios, ReportPrintsNa) {
  const json row_null{{"scheme", "lp"},
                      {"stats", {{"nvm_writes", 0}}},
                      {"cycles_vs_base", 1.01},
                      {"writes_vs_base", nullptr}};
  const json results{
      {"complete", true},
      {"failed_checks", json::array()},
      {"sim", json::array({{{"kernel", "jacobi"},
                            {"preset", "lp-isca18"},
                            {"n", 16},
                            {"bs", 16},
                            {"threads", 8},
                            {"llc_bytes", 524288},
                            {"rows", json::array({{{"scheme", "base"},
                                                   {"stats", {{"nvm_writes", 0}}},
                                                   {"cycles_vs_base", 1.0},
                                                   {"writes_vs_base", nullptr}},
                                                  row_null})}}})},
      {"sensitivity", json::array({{{"study", "llc"},
                                    {"value", "256K"},
                                    {"n", 16},
                                    {"rows", json::array({{{"scheme", "lp"},
                                                           {"cycles_vs_base", nullptr},
                                                           {"writes_vs_base", nullptr}}})}}})}};
  std::string report;
  ASSERT_NO_THROW(report = experiments::render_report(results));
  EXPECT_NE(report.find("n/a"), std::string::npos) << report;
  const std::string headline = experiments::render_headline(results);
  EXPECT_NE(headline.find("| jacobi | – | n/a |"), std::string::npos) << headline;
}

}  // namespace
}  // namespace pmlab::testing
