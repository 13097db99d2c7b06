// `pmlab eval --jobs`: untimed steps run in children, timed ones alone in this process, outcomes
// in plan order; a dying child is its step's error; a stop kills the running children. That a
// whole section gives the same figures with one process as with two is checked with its other
// eval properties (eval_sections_test.cpp), to run the section fewer times.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "../../src/experiments/step_runner.hpp"

namespace pmlab::testing {
namespace {

using experiments::EvalStep;
using experiments::run_steps;
using experiments::StepRunOptions;
using nlohmann::json;

// This process's live children, from /proc (empty when it has none).
std::string children_of_this_process() {
  const std::string pid = std::to_string(::getpid());
  std::ifstream in("/proc/" + pid + "/task/" + pid + "/children");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

EvalStep step(int i, bool timed) {
  return {"s", "step " + std::to_string(i), 1.0,
          [i] {
            return json{{"i", i}, {"pid", ::getpid()}, {"children", children_of_this_process()}};
          },
          timed};
}

TEST(StepRunner, OutcomesComeBackInPlanOrderAndTimedStepsRunHereAlone) {
  std::vector<EvalStep> steps;
  for (int i = 0; i < 7; ++i) steps.push_back(step(i, i == 2 || i == 5));
  StepRunOptions opt;
  opt.jobs = 2;
  const auto run = run_steps(steps, opt);
  EXPECT_FALSE(run.interrupted);
  ASSERT_EQ(run.outcomes.size(), steps.size());
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(run.outcomes[i].has_value()) << i;
    const json& r = run.outcomes[i]->result;
    EXPECT_EQ(r["i"], i);
    if (steps[i].timed) {
      EXPECT_EQ(r["pid"], ::getpid()) << i;
      // Nothing else of the evaluation runs beside a timed step.
      EXPECT_EQ(r["children"], "") << i;
    } else {
      EXPECT_NE(r["pid"], ::getpid()) << i;
    }
  }
  // jobs = 1: every step here, no child.
  opt.jobs = 1;
  const auto here = run_steps(steps, opt);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(here.outcomes[i]->result["pid"], ::getpid()) << i;
}

TEST(StepRunner, AFailingOrDyingStepIsItsOwnErrorAndTheOthersGoOn) {
  std::vector<EvalStep> steps{step(0, false)};
  steps.push_back({"s", "throws", 1.0, []() -> json { throw std::runtime_error("no luck"); }});
  steps.push_back({"s", "dies", 1.0, []() -> json {
                     std::raise(SIGKILL);
                     return {};
                   }});
  steps.push_back(step(3, false));
  StepRunOptions opt;
  opt.jobs = 2;
  const auto run = run_steps(steps, opt);
  EXPECT_FALSE(run.interrupted);
  EXPECT_EQ(run.outcomes[0]->result["i"], 0);
  EXPECT_EQ(run.outcomes[1]->result["error"], "no luck");
  EXPECT_NE(run.outcomes[2]->result["error"].get<std::string>().find("killed by signal 9"),
            std::string::npos)
      << run.outcomes[2]->result.dump();
  EXPECT_EQ(run.outcomes[3]->result["i"], 3);
}

TEST(StepRunner, AStopKillsTheRunningChildrenAndStartsNothingMore) {
  std::atomic<bool> stop{false};
  std::vector<EvalStep> steps;
  for (int i = 0; i < 4; ++i)
    steps.push_back({"s", "sleeps", 1.0, [] {
                       std::this_thread::sleep_for(std::chrono::seconds(30));
                       return json{};
                     }});
  steps.push_back(step(4, true));
  StepRunOptions opt;
  opt.jobs = 2;
  opt.stop = &stop;
  // The stop comes as the first child starts (as a Ctrl-C would, from outside); the timed step
  // ran before any child.
  opt.progress = [&](double, double, const std::string& what) {
    if (what.starts_with("sleeps")) stop = true;
  };
  const auto start = std::chrono::steady_clock::now();
  const auto run = run_steps(steps, opt);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(run.interrupted);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(run.outcomes[i].has_value()) << i;
  ASSERT_TRUE(run.outcomes[4].has_value());
  EXPECT_EQ(run.outcomes[4]->result["i"], 4);
  EXPECT_EQ(children_of_this_process(), "");  // killed and reaped
}

}  // namespace
}  // namespace pmlab::testing
