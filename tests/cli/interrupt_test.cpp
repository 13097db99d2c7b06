// SIGTERM on every long-running verb: exit 130, no temporary left behind, no child left running,
// and an interrupted `pmlab run` resumes to a bit-exact result (README "Exit codes").
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A fresh scratch directory per test, removed after.
class Interrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt_name(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string fmt_name(const std::string& test) {
    return "pmlab-interrupt-" + test + "-" + std::to_string(::getpid());
  }
  // Beside the directory, so that entries() sees only what pmlab left.
  [[nodiscard]] std::string log() const { return dir_.string() + ".log"; }
  [[nodiscard]] std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    return names;
  }
  fs::path dir_;
};

// Every process whose command line holds `marker` (a crash campaign's forked trials share their
// parent's command line).
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline");
    std::string cmd(std::istreambuf_iterator<char>(in), {});
    for (auto& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(marker) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

TEST_F(Interrupt, RunExits130AndTheRunResumesBitExact) {
  const std::string pool = (dir_ / "p").string();
  // Long enough (4 s in a release build) that the signal lands in the computation, after the
  // pool is published; the resumed run verifies against a native reference of the same size.
  bool signalled = false;
  const auto r = run_process_signal_when(
      {PMLAB_BINARY, "run", "tmm", "--scheme", "lp", "--n", "1024", "--bs", "32", "--pool", pool},
      log(),
      [&, t0 = std::chrono::steady_clock::time_point{}]() mutable {
        if (!fs::exists(pool)) return false;
        if (t0 == std::chrono::steady_clock::time_point{}) t0 = std::chrono::steady_clock::now();
        return std::chrono::steady_clock::now() - t0 > 300ms;
      },
      60s, SIGTERM, &signalled);
  ASSERT_TRUE(signalled) << "the run ended before it could be interrupted: " << r.out;
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_EQ(entries(), std::vector<std::string>{"p"}) << "a temporary was left behind";

  const auto resumed =
      run_process({PMLAB_BINARY, "run", "--pool", pool, "--verify", "--json"}, log());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto j = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(j.at("state_before"), "running");
  EXPECT_TRUE(j.at("resumed").get<bool>());
  EXPECT_TRUE(j.at("verified").get<bool>());
  EXPECT_EQ(j.at("mismatches").get<std::uint64_t>(), 0u);
}

TEST_F(Interrupt, RunInterruptedWhileCreatingItsPoolLeavesNothing) {
  const std::string pool = (dir_ / "p").string();
  // A 384 MiB pool: its inputs take long enough to write that the signal lands during creation.
  bool signalled = false;
  const auto r = run_process_signal_when(
      {PMLAB_BINARY, "run", "tmm", "--n", "4096", "--bs", "64", "--pool", pool}, log(),
      [&] {
        for (const auto& e : fs::directory_iterator(dir_))
          if (e.path().filename().string().rfind("p.creating.", 0) == 0) return true;
        return false;
      },
      60s, SIGTERM, &signalled);
  ASSERT_TRUE(signalled) << r.err;
  EXPECT_EQ(r.exit_code, 130) << r.err;
  // Either the signal came before publication (nothing at all) or just after (the pool, which
  // then resumes like any interrupted run); never a temporary.
  for (const auto& name : entries()) EXPECT_EQ(name, "p") << "left behind: " << name;
}

TEST_F(Interrupt, SimExits130AndLeavesNoScratchPool) {
  bool signalled = false;
  const auto r = run_process_signal_when(
      {PMLAB_BINARY, "sim", "tmm", "--scheme", "lp", "--n", "1024", "--bs", "16"}, log(), nullptr,
      1500ms, SIGTERM, &signalled);
  ASSERT_TRUE(signalled) << "the simulation ended within 1.5 s: " << r.out;
  EXPECT_EQ(r.exit_code, 130) << r.err;
  // Scratch pools are unlinked as soon as they are mapped; none may outlive the process.
  for (const char* scratch : {"/dev/shm", "/tmp"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(scratch, ec)) {
      const std::string name = e.path().filename();
      EXPECT_NE(name.rfind("pmlab-sim-", 0), 0u) << "left behind: " << e.path();
    }
  }
}

TEST_F(Interrupt, CrashExits130AndNoTrialOutlivesIt) {
  // The seed marks this campaign's processes (the forked trials share its command line).
  const std::string seed = std::to_string(3'000'000'000ull + static_cast<unsigned>(::getpid()));
  bool signalled = false;
  const auto r =
      run_process_signal_when({PMLAB_BINARY, "crash", "tmm", "--scheme", "lp", "--n", "128", "--bs",
                               "8", "--trials", "100000", "--jobs", "2", "--seed", seed},
                              log(), nullptr, 1500ms, SIGTERM, &signalled);
  ASSERT_TRUE(signalled) << r.out;
  EXPECT_EQ(r.exit_code, 130) << r.err;
  // The children die with their parent (PR_SET_PDEATHSIG): give the kernel a moment.
  std::vector<pid_t> left;
  for (int i = 0; i < 50; ++i) {
    left = processes_with("--seed " + seed);
    if (left.empty()) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(left.empty()) << left.size() << " trial processes outlived the campaign";
}

TEST_F(Interrupt, BenchExits130AndRemovesItsTemporaryPools) {
  bool signalled = false;
  const auto r = run_process_signal_when(
      {PMLAB_BINARY, "bench", "tmm", "--n", "256", "--bs", "16", "--reps", "1000", "--quiet",
       "--dir", dir_.string()},
      log(), [&] { return !entries().empty(); }, 60s, SIGTERM, &signalled);
  ASSERT_TRUE(signalled) << r.out;
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_TRUE(entries().empty()) << "the temporary bench directory was left behind";
}

}  // namespace
}  // namespace pmlab::testing
