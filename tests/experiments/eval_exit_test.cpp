// `pmlab eval`'s verdict: failed checks are found in a results document, and SIGTERM stops the
// evaluation with exit 130 and a partial report on disk.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "pmlab/experiments/eval.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json eval_results_with(bool bit_exact, std::uint64_t passed, std::uint64_t trials) {
  return {
      {"native",
       json::array(
           {{{"kernel", "tmm"},
             {"schemes", json::array({{{"scheme", "base"}, {"bit_exact_vs_base", true}},
                                      {{"scheme", "lp"}, {"bit_exact_vs_base", bit_exact}}})}}})},
      {"crash",
       json::array({{{"kernel", "lu"}, {"scheme", "wal"}, {"trials", trials}, {"passed", passed}},
                    {{"kernel", "fft"}, {"skipped", "native only"}}})}};
}

TEST(EvalVerdict, PassingDocumentHasNoFailedChecks) {
  EXPECT_TRUE(experiments::failed_checks(eval_results_with(true, 40, 40)).empty());
}

TEST(EvalVerdict, NotBitExactAndFailedTrialsAreEachNamed) {
  const auto failed = experiments::failed_checks(eval_results_with(false, 37, 40));
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_NE(failed[0].find("native tmm lp"), std::string::npos) << failed[0];
  EXPECT_NE(failed[1].find("crash lu wal: 3 of 40 trials failed"), std::string::npos) << failed[1];
}

TEST(EvalVerdict, AnUndetectedNegativeControlIsAFailedCheck) {
  json r = eval_results_with(true, 40, 40);
  r["crash"][0]["controls"] = {
      {"mutants", 2},
      {"detected", 1},
      {"runs", json::array({{{"mutation", "no-flush"}, {"trials", 40}, {"detected", true}},
                            {{"mutation", "no-fence"}, {"trials", 40}, {"detected", false}}})}};
  const auto failed = experiments::failed_checks(r);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].find("crash lu wal: negative control no-fence not detected"),
            std::string::npos)
      << failed[0];
  // The report says so at its top (a document holding only the verdict: no sections to render).
  const json verdict{{"complete", true}, {"failed_checks", failed}};
  const std::string report = experiments::render_report(verdict);
  EXPECT_NE(report.find("1 check(s) FAILED"), std::string::npos) << report;
  EXPECT_NE(report.find("negative control no-fence not detected"), std::string::npos) << report;
}

TEST(EvalInterrupt, SigtermExits130WithAPartialReport) {
  const fs::path dir =
      fs::temp_directory_path() / ("pmlab-eval-interrupt-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto r = run_process({PMLAB_BINARY, "eval", "--quick", "--out", (dir / "out").string()},
                             (dir / "log").string(), std::chrono::milliseconds(1500), SIGTERM);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  std::ifstream report(dir / "out" / "report.md");
  ASSERT_TRUE(report) << "no partial report";
  std::stringstream text;
  text << report.rdbuf();
  EXPECT_FALSE(text.str().empty());
  std::ifstream data(dir / "out" / "results.json");
  ASSERT_TRUE(data);
  EXPECT_FALSE(json::parse(data).at("complete").get<bool>());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pmlab::testing
