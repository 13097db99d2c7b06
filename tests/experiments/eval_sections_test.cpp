// `pmlab eval --sections`: only the named sections run, unknown names are refused before
// anything runs, and a partial run carries the other sections over from an earlier run of the
// same evaluation in its directory (and only then); a section gives the same figures with one
// process as with two (`--jobs`). `--native-schemes` picks the native cells.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/experiments/eval.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct TempDir {
  fs::path path =
      fs::temp_directory_path() / ("pmlab-eval-sections-" + std::to_string(::getpid()) + "-" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// An earlier evaluation's results.json holding one (made-up) checksum section.
void write_earlier(const fs::path& dir, std::uint64_t seed) {
  const json earlier{{"mode", "quick"},
                     {"seed", seed},
                     {"complete", true},
                     {"meta", {{"date", "2026-01-02T03:04:05Z"}, {"git_revision", "abc1234"}}},
                     {"checksum", json::array({{{"label", "checksum from before"}}})},
                     {"section_seconds", {{"checksum", 12.5}}}};
  std::ofstream(dir / "results.json") << earlier.dump();
}

// The figures of a section, without the times that legitimately differ between runs.
json figures(json j) {
  if (j.is_object()) {
    for (const char* k : {"step_seconds", "cpu_seconds", "wall_seconds", "trials_per_second"})
      j.erase(k);
    for (auto& [k, v] : j.items()) v = figures(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = figures(v);
  }
  return j;
}

// Bad options are refused before anything runs: run_eval throws kInvalidArgument naming the
// bad value (`library_message`), and the same mistake on the CLI (`cli_args` after `pmlab eval`)
// exits 2 with `cli_message` on stderr; neither creates its output directory.
void expect_refused_before_anything_runs(const TempDir& dir, experiments::EvalOptions opt,
                                         const std::string& library_message,
                                         std::vector<std::string> cli_args,
                                         const std::string& cli_message) {
  opt.out_dir = (dir.path / "out").string();
  try {
    (void)experiments::run_eval(opt);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(library_message), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path / "out"));
  cli_args.insert(cli_args.begin(), {PMLAB_BINARY, "eval"});
  cli_args.insert(cli_args.end(), {"--out", (dir.path / "cli").string()});
  const auto r = run_process(cli_args, (dir.path / "log").string(), std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(cli_message), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.path / "cli"));
}

TEST(EvalSections, UnknownNamesAreRefusedBeforeAnythingRuns) {
  TempDir dir;
  experiments::EvalOptions opt;
  opt.sections = {"barriers", "nope"};
  expect_refused_before_anything_runs(dir, opt, "unknown eval section 'nope' (known: native,",
                                      {"--sections", "sim,bogus"}, "unknown eval section 'bogus'");
}

TEST(EvalNativeSchemes, PickTheCellsOfTheNativeSection) {
  experiments::EvalOptions opt;
  const auto cells = [&] {
    std::map<std::string, std::vector<std::string>> m;
    for (auto& c : experiments::native_cells(opt)) m[c.kernel] = c.schemes;
    return m;
  };
  // Quick: LP where the kernel has it (the headline's column), every scheme elsewhere.
  auto quick = cells();
  ASSERT_TRUE(quick.contains("tmm") && quick.contains("gauss") && quick.contains("queue"));
  EXPECT_EQ(quick["tmm"], std::vector<std::string>{"lp"});
  EXPECT_EQ(quick["cg"], std::vector<std::string>{"lp"});
  EXPECT_TRUE(quick["queue"].empty());  // tx, base: all of them
  // Full: every scheme of every kernel.
  opt.full = true;
  for (const auto& [kernel, schemes] : cells()) EXPECT_TRUE(schemes.empty()) << kernel;
  // Named: only the kernels having one of them, in the kernel's scheme order.
  opt.native_schemes = {"lp"};
  auto lp = cells();
  EXPECT_FALSE(lp.contains("queue"));
  EXPECT_EQ(lp["fft"], std::vector<std::string>{"lp"});
  opt.native_schemes = {"ep-ii", "lp", "wal"};
  auto mixed = cells();
  EXPECT_EQ(mixed["tmm"], (std::vector<std::string>{"lp", "ep-ii"}));
  EXPECT_EQ(mixed["lu"], (std::vector<std::string>{"lp", "wal"}));
}

TEST(EvalNativeSchemes, TheReportsReproduceLineNamesThem) {
  const json r{{"mode", "full"},
               {"seed", 1},
               {"complete", true},
               {"sections_run", json::array({"native"})},
               {"native_schemes", json::array({"lp", "ep"})},
               {"wall_seconds", 3.0}};
  const std::string report = experiments::render_report(r);
  EXPECT_NE(report.find("Reproduce: `pmlab eval --full --seed 1 --sections native "
                        "--native-schemes lp,ep`"),
            std::string::npos)
      << report;
}

TEST(EvalNativeSchemes, UnknownNamesAreRefusedBeforeAnythingRuns) {
  TempDir dir;
  experiments::EvalOptions opt;
  opt.native_schemes = {"lp", "lazy"};
  expect_refused_before_anything_runs(dir, opt,
                                      "unknown scheme 'lazy' in --native-schemes (known: ",
                                      {"--sections", "native", "--native-schemes", "lp,nope"},
                                      "unknown scheme 'nope' in --native-schemes");
}

// One test for three properties, since each needs whole runs of a section (the cheapest,
// barriers, takes ~1 min under ASan): only the named section runs, the others are carried over
// (and keep their first origin when carried again), and one process gives the figures two do.
TEST(EvalSections, RunsOnlyTheNamedOnesCarriesTheOthersAndTwoProcessesGiveOnesFigures) {
  TempDir dir;
  write_earlier(dir.path, 1);
  // A figure an earlier run left behind, which this run's plot does not draw: not this report's.
  std::ofstream(dir.path / "crash_recovery.png") << "stale";
  experiments::EvalOptions opt;
  opt.out_dir = dir.path.string();
  opt.seed = 1;
  opt.sections = {"barriers"};
  opt.jobs = 1;
  const json r = experiments::run_eval(opt);
  EXPECT_TRUE(r["complete"].get<bool>());
  EXPECT_EQ(r["sections_run"], json::array({"barriers"}));
  EXPECT_FALSE(r["barriers"].empty());
  for (const char* s : {"native", "sim", "crash", "gemm", "sensitivity"})
    EXPECT_TRUE(r[s].empty()) << s;
  // Carried over, with its origin and time.
  ASSERT_EQ(r["checksum"].size(), 1u);
  EXPECT_EQ(r["checksum"][0]["label"], "checksum from before");
  EXPECT_EQ(r["carried_over"]["checksum"]["git_revision"], "abc1234");
  EXPECT_EQ(r["section_seconds"]["checksum"].get<double>(), 12.5);
  EXPECT_TRUE(r["section_seconds"].contains("barriers"));
  const std::string report = read(dir.path / "report.md");
  EXPECT_NE(report.find("--sections barriers"), std::string::npos) << report;
  EXPECT_NE(report.find("Sections run now: barriers."), std::string::npos) << report;
  EXPECT_NE(report.find("Carried over from earlier runs into this directory: checksum "
                        "(2026-01-02T03:04:05Z, revision abc1234)."),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Not run: native,"), std::string::npos) << report;
  EXPECT_EQ(report.find("## Native execution time"), std::string::npos) << report;
  EXPECT_EQ(report.find("## Simulated cycles"), std::string::npos) << report;
  EXPECT_NE(report.find("## Checksum accuracy"), std::string::npos) << report;
  EXPECT_NE(report.find("No headline: its sections (native, sim, crash) were not run."),
            std::string::npos)
      << report;
  for (const auto& f : r["figures"]) EXPECT_NE(f, "crash_recovery.png");
  EXPECT_EQ(report.find("crash_recovery.png"), std::string::npos) << report;

  EXPECT_EQ(r["partial_sections"], json::array());

  // Run again into the same directory, with two processes: what was carried keeps its first
  // origin, and the section's figures are the one-process run's. The stored run is made to
  // say that its (carried) checksum section was interrupted: a report carrying it is partial.
  {
    json stored = json::parse(std::ifstream(dir.path / "results.json"));
    stored["complete"] = false;
    stored["partial_sections"] = json::array({"checksum"});
    std::ofstream(dir.path / "results.json") << stored.dump();
  }
  opt.jobs = 2;
  const json again = experiments::run_eval(opt);
  EXPECT_FALSE(again["complete"].get<bool>());
  EXPECT_EQ(again["partial_sections"], json::array({"checksum"}));
  EXPECT_NE(read(dir.path / "report.md").find("unfinished sections (checksum)"), std::string::npos);
  EXPECT_EQ(again["carried_over"]["checksum"]["git_revision"], "abc1234");
  EXPECT_EQ(again["checksum"], r["checksum"]);
  ASSERT_GE(r["barriers"].size(), 2u);
  EXPECT_EQ(figures(r["barriers"]), figures(again["barriers"]));
  EXPECT_EQ(r["jobs"], 1);
  EXPECT_EQ(again["jobs"], 2);
}

TEST(EvalSections, NothingIsCarriedFromAnotherEvaluation) {
  TempDir dir;
  write_earlier(dir.path, 7);  // another seed: its figures are not this evaluation's
  experiments::EvalOptions opt;
  opt.out_dir = dir.path.string();
  opt.seed = 1;
  opt.sections = {"barriers"};
  const json r = experiments::run_eval(opt);
  EXPECT_TRUE(r["checksum"].empty());
  EXPECT_TRUE(r["carried_over"].empty());
  const std::string report = read(dir.path / "report.md");
  EXPECT_EQ(report.find("Carried over"), std::string::npos) << report;
  EXPECT_NE(report.find("Not run: native, instructions, sim, crash, seed002, preflush, gemm, blas, "
                        "checksum, sensitivity."),
            std::string::npos)
      << report;
}

}  // namespace
}  // namespace pmlab::testing
