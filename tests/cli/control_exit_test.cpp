// `pmlab crash` exits 5 when every trial passed but a declared negative control went undetected.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../support/process.hpp"

namespace pmlab::testing {
namespace {

ProcessResult crash(const std::string& trials) {
  const auto scratch =
      std::filesystem::temp_directory_path() / ("pmlab-control-exit-" + std::to_string(getpid()));
  return run_process({PMLAB_BINARY, "crash", "tmm", "--scheme", "cp", "--n", "16", "--bs", "4",
                      "--trials", trials, "--seed", "1", "--jobs", "0"},
                     scratch.string());
}

TEST(CrashExit, UndetectedNegativeControlExitsFive) {
  // One trial per mutant (seed 1) catches none: the passes rule nothing out.
  const auto missed = crash("1");
  EXPECT_EQ(missed.exit_code, 5) << missed.out << missed.err;
  EXPECT_NE(missed.err.find("negative control no-flush not detected"), std::string::npos)
      << missed.err;
  // Five trials catch all three: exit 0.
  const auto caught = crash("5");
  EXPECT_EQ(caught.exit_code, 0) << caught.out << caught.err;
  EXPECT_NE(caught.out.find("detects 3/3 mutants"), std::string::npos) << caught.out;
}

}  // namespace
}  // namespace pmlab::testing
