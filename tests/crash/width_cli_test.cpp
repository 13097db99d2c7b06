// conv2d's --width on every verb that builds run parameters: applied, stored in the pool,
// checked on resume, refused for kernels without a width.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

class WidthCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pmlab-width-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  ProcessResult pmlab(std::vector<std::string> args) {
    args.insert(args.begin(), PMLAB_BINARY);
    return run_process(args, (dir_ / "proc").string());
  }
  std::string pool() const { return (dir_ / "c.pool").string(); }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  fs::path dir_;
};

TEST_F(WidthCli, RunStoresTheWidthAndVerifies) {
  auto r = pmlab({"run", "conv2d", "--n", "20", "--bs", "6", "--width", "7", "--pool", pool(),
                  "--verify", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kernel_params"]["width"], 7);
  EXPECT_TRUE(j["verified"].get<bool>());
  // Resuming without --width uses the stored one; with the same width is fine too.
  r = pmlab({"run", "--pool", pool(), "--verify", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kernel_params"]["width"], 7);
  EXPECT_EQ(pmlab({"run", "conv2d", "--width", "7", "--pool", pool(), "--verify"}).exit_code, 0);
}

TEST_F(WidthCli, ResumeWithAnotherWidthIsRefusedAndLeavesThePoolUntouched) {
  ASSERT_EQ(pmlab({"run", "conv2d", "--n", "20", "--bs", "6", "--width", "3", "--pool", pool()})
                .exit_code,
            0);
  const std::string before = slurp(pool());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "conv2d", "--width", "5", "--pool", pool()},
        std::vector<std::string>{"run", "--width", "5", "--pool", pool()}}) {
    const auto r = pmlab(args);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("width: pool has 3, asked for 5"), std::string::npos) << r.err;
  }
  EXPECT_EQ(slurp(pool()), before);
}

TEST_F(WidthCli, TheWidthReallyChangesTheComputation) {
  auto loads = [&](const char* width) {
    const auto r = pmlab({"sim", "conv2d", "--scheme", "base", "--n", "32", "--bs", "8", "--width",
                          width, "--no-progress", "--verify", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j["verified"].get<bool>());
    return j["loads"].get<double>();
  };
  // Two loads per tap: 7x7 taps against 3x3, fewer at the borders.
  EXPECT_GT(loads("7"), 3.0 * loads("3"));
}

TEST_F(WidthCli, ImpossibleWidthsExitTwoWithAReason) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--width", "4"}, "--width must be odd"},
      {{"--width", "21"}, "--width must be <= --n = 20"},
      {{"--width", "0"}, "--width"},
  };
  for (const auto& [extra, needle] : cases) {
    std::vector<std::string> args{"run", "conv2d", "--n", "20", "--pool", pool()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << extra[1] << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(pool()));
  }
}

TEST_F(WidthCli, EveryVerbRefusesWidthForKernelsWithoutOne) {
  const std::vector<std::vector<std::string>> commands{
      {"run", "tmm", "--n", "8", "--pool", pool()},
      {"run", "cholesky", "--n", "8", "--pool", pool()},
      {"sim", "lu", "--n", "8", "--no-progress"},
      {"crash", "gauss", "--n", "8", "--trials", "2"},
      {"bench", "fft", "--n", "8", "--reps", "1", "--quiet"},
  };
  for (auto args : commands) {
    args.insert(args.end(), {"--width", "3"});
    const auto r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find("--width applies to conv2d only"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;  // refused before anything ran
  }
  EXPECT_FALSE(fs::exists(pool()));
  // A pool of another kernel, resumed with --width alone, is refused the same way.
  ASSERT_EQ(pmlab({"run", "lu", "--n", "8", "--pool", pool()}).exit_code, 0);
  const auto r = pmlab({"run", "--pool", pool(), "--width", "3"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--width applies to conv2d only"), std::string::npos) << r.err;
}

TEST_F(WidthCli, SimCrashAndBenchTakeTheWidth) {
  auto r = pmlab({"crash", "conv2d", "--scheme", "lp", "--n", "13", "--bs", "3", "--width", "5",
                  "--trials", "12", "--seed", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["passed"], 12);
  r = pmlab({"bench", "conv2d", "--n", "24", "--bs", "8", "--width", "3", "--reps", "1",
             "--threads", "1", "--quiet", "--json", "--dir", dir_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto bench = nlohmann::json::parse(r.out);  // kept alive: the loop ranges over a member
  for (const auto& s : bench["schemes"]) EXPECT_TRUE(s["bit_exact_vs_base"].get<bool>()) << s;
}

}  // namespace
}  // namespace pmlab::testing
