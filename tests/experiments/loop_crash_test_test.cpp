// The loop crash test: a user's lp::Loop crash-tested in the simulator from its description
// (heat stencil passes; loops that break LP's rules fail; failed trials replay exactly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/experiments/loop_crash_test.hpp"
#include "pmlab/sim/machine_params.hpp"

namespace pmlab::experiments {
namespace {

constexpr std::uint64_t kGrid = 16, kHeatSteps = 4, kBandRows = 2;

void init_heat_grid(double* g) {
  for (std::uint64_t i = 0; i < kGrid * kGrid; ++i)
    g[i] = static_cast<double>((i * 2654435761u) % 1000);
}

// The heat stencil of examples/heat: two grids in ping-pong, row bands as regions. With
// `declare_both` false it declares only "b" as output although odd steps write "a" (a written
// range left undeclared); with `in_place` it updates one grid in place (a body that reads what it
// writes: not idempotent, rule 4 of the guide).
LoopUnderTest heat_loop(bool declare_both = true, bool in_place = false) {
  LoopUnderTest l;
  l.name = "heat";
  l.arrays = {{"a", kGrid * kGrid}, {"b", kGrid * kGrid}};
  l.layout = {.phases = kHeatSteps,
              .outputs = in_place       ? std::vector<std::string>{"a"}
                         : declare_both ? std::vector<std::string>{"b", "a"}
                                        : std::vector<std::string>{"b"},
              .first = kGrid,
              .last = kGrid * kGrid - kGrid,
              .chunk = kBandRows * kGrid};
  l.init = [](lp::Loop& loop) {
    init_heat_grid(loop.array("a"));
    init_heat_grid(loop.array("b"));
  };
  l.body = [in_place](lp::Loop& loop) -> lp::Loop::Body {
    double* g[2] = {loop.array("a"), loop.array("b")};
    return [g, in_place](std::uint64_t t, std::uint64_t k) {
      const double* u = g[in_place ? 0 : t % 2];
      double* out = g[in_place ? 0 : (t + 1) % 2];
      for (std::uint64_t i = 1 + k * kBandRows; i < std::min(kGrid - 1, 1 + (k + 1) * kBandRows);
           ++i)
        for (std::uint64_t j = 1; j + 1 < kGrid; ++j)
          out[i * kGrid + j] =
              u[i * kGrid + j] +
              0.1 * (u[(i - 1) * kGrid + j] + u[(i + 1) * kGrid + j] + u[i * kGrid + j - 1] +
                     u[i * kGrid + j + 1] - 4 * u[i * kGrid + j]);
    };
  };
  return l;
}

LoopCrashOptions small_options(std::uint64_t trials) {
  LoopCrashOptions o;
  o.trials = trials;
  o.seed = 5;
  return o;
}

std::uint64_t failed_trials(const CampaignResult& r) {
  return r.trials - r.passed;
}

// Catches: a protocol that drops recovery's repair or a commit, a crash image that keeps what
// the caches never wrote back, a fault-free reference taken after the fact.
TEST(LoopCrashTest, HeatRecoversFromEveryCrashAndTheControlIsDetected) {
  const LoopCrashResult r = crash_test(heat_loop(), small_options(120));
  EXPECT_EQ(r.campaign.trials, 120u);
  EXPECT_EQ(failed_trials(r.campaign), 0u);
  std::uint64_t recomputed = 0;
  for (const auto& t : r.campaign.results) recomputed += t.recovery.regions_recomputed;
  EXPECT_GT(recomputed, 0u);  // crashes left regions for recovery to redo
  EXPECT_GT(r.campaign.commits, 0u);
  ASSERT_EQ(r.controls.size(), 1u);
  EXPECT_EQ(r.controls[0].mutation, mem::Mutation::kNoValidate);
  EXPECT_TRUE(r.controls[0].detected()) << "no-validate passed every trial: the campaign is blind";
  EXPECT_TRUE(r.passed());
}

// Catches: outputs stored through the simulator beyond the declared range (a write nobody
// declared would then reach NVM and the mistake would pass).
TEST(LoopCrashTest, AnUndeclaredWrittenRangeFailsAndItsTrialReplays) {
  LoopCrashOptions o = small_options(80);
  o.control = false;
  const LoopCrashResult r = crash_test(heat_loop(/*declare_both=*/false), o);
  EXPECT_TRUE(r.controls.empty());
  ASSERT_GT(failed_trials(r.campaign), 0u);
  EXPECT_FALSE(r.passed());
  const auto t = std::find_if(r.campaign.results.begin(), r.campaign.results.end(),
                              [](const TrialResult& x) { return !x.passed; });
  ASSERT_NE(t, r.campaign.results.end());
  EXPECT_NE(t->failure.find("elements differ"), std::string::npos) << t->failure;
  // replay_loop_trial from the trial's numbers fails the same way.
  const TrialResult again = replay_loop_trial(heat_loop(false), o, t->crash_op, t->recovery_crashes,
                                              {t->image, t->image_seed});
  EXPECT_FALSE(again.passed);
  EXPECT_EQ(again.failure, t->failure);
}

// Catches: recovery that recomputes from a clean copy instead of what the pool holds.
TEST(LoopCrashTest, AnInPlaceBodyFails) {
  LoopCrashOptions o = small_options(80);
  o.control = false;
  EXPECT_GT(failed_trials(crash_test(heat_loop(true, /*in_place=*/true), o).campaign), 0u);
}

// Catches: a machine that is not the one asked for (the campaign's and the control's machine is
// a parameter, not looked up): periodic cleaning set on it reaches the campaign, and the
// default is loop_crash_machine(), which has none.
TEST(LoopCrashTest, TheMachineIsAParameter) {
  LoopCrashOptions o = small_options(20);
  o.control = false;
  o.machine.periodic_flush_cycles = Cycles{3000};
  const LoopCrashResult cleaned = crash_test(heat_loop(), o);
  EXPECT_EQ(cleaned.campaign.periodic_flush_cycles, 3000u);
  EXPECT_GT(cleaned.campaign.max_commits_per_period, 0u);
  EXPECT_EQ(cleaned.campaign.passed, cleaned.campaign.trials);
  EXPECT_EQ(LoopCrashOptions{}.machine.l1.size_bytes, 1024u);
  EXPECT_EQ(LoopCrashOptions{}.machine.periodic_flush_cycles.value(), 0u);
}

// Catches: a replay command that leaves out a crash or the image's draws.
TEST(LoopCrashTest, ReplayArgumentsNameEveryNumber) {
  TrialResult t;
  t.crash_op = 123;
  t.recovery_crashes = {130, 150};
  t.image = ImageModel::kAnyDirty;
  t.image_seed = 77;
  EXPECT_EQ(replay_arguments(t),
            "--replay 123 --replay-recovery 130 --replay-recovery 150 --replay-image any-dirty "
            "--replay-image-seed 77");
  t.recovery_crashes.clear();
  t.image = ImageModel::kCache;
  EXPECT_EQ(replay_arguments(t, mem::Mutation::kNoValidate),
            "--replay 123 --replay-image cache --mutate no-validate");
}

// Catches: a loop lp::Loop would refuse being crash-tested anyway.
TEST(LoopCrashTest, RefusesWhatLoopRefuses) {
  LoopUnderTest l = heat_loop();
  l.layout.outputs = {"c"};
  try {
    (void)crash_test(l, small_options(4));
    FAIL() << "an output that is not an array was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'c'"), std::string::npos) << e.what();
  }
  l = heat_loop();
  l.body = nullptr;
  EXPECT_THROW((void)crash_test(l, small_options(4)), Error);
}

// Catches: crash_test_main's exit codes and replay line drifting from what it documents.
TEST(LoopCrashTest, MainPrintsAReplayCommandThatReplays) {
  std::string prog = "heat-crash";
  std::vector<std::string> args = {prog, "--trials", "40", "--seed", "5", "--no-control"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  const int rc = crash_test_main(heat_loop(false), static_cast<int>(argv.size()), argv.data());
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 1) << out;
  const auto at = out.find("replay: heat-crash ");
  ASSERT_NE(at, std::string::npos) << out;
  std::istringstream line(out.substr(at + 8, out.find('\n', at) - at - 8));
  std::vector<std::string> replay;
  for (std::string w; line >> w;) replay.push_back(w);
  argv.clear();
  for (auto& a : replay) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(crash_test_main(heat_loop(false), static_cast<int>(argv.size()), argv.data()), 1);
  EXPECT_NE(::testing::internal::GetCapturedStdout().find("FAILED"), std::string::npos);

  std::string bad = "--trials";
  std::vector<char*> usage = {prog.data(), bad.data()};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(crash_test_main(heat_loop(), 2, usage.data()), 2);
  (void)::testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace pmlab::experiments
