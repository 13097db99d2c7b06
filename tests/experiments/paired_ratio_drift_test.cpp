// paired_ratio.hpp against machines that change during a campaign: no confident wrong number.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../support/test_scale.hpp"
#include "pmlab/experiments/paired_ratio.hpp"

namespace pmlab::experiments {
namespace {

constexpr double kTrueRatio = 1.004;  // the quiet-machine ratio every verdict is judged against
constexpr double kRunSeconds = 1.0;   // base work per run: a 60 s budget is ~30 pairs

// A run's wall time as a function of when it starts (seconds on the fake clock), which member
// it is, and a per-campaign RNG. CPU time always equals wall time: these disturbances are
// invisible to the CPU/wall rule (frequency, page placement, memory bandwidth), so only the
// statistics can defend the interval.
using Slowdown = std::function<double(double now, bool scheme, std::mt19937_64& rng)>;

struct Scenario {
  const char* name;
  Slowdown slowdown;
};

PairedRatioResult run_campaign(const Scenario& scenario, std::uint64_t seed,
                               RatioStatistic statistic) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0, 0.005);
  double now = 0;
  const auto run = [&](bool scheme) {
    const double own = kRunSeconds * (scheme ? kTrueRatio : 1.0) * std::exp(jitter(rng));
    const double wall = own * scenario.slowdown(now, scheme, rng);
    now += wall;
    return RunTiming{wall, wall};
  };
  PairedRatioOptions options;
  options.now_seconds = [&now] { return now; };
  options.read_load = [] { return std::optional<double>(0.3); };
  options.cores = 2;
  options.estimator.statistic = statistic;
  if (statistic == RatioStatistic::kFloor) options.budget_seconds = 150;  // for its 42 pairs
  return measure_paired_ratio([&] { return run(false); }, [&] { return run(true); }, options);
}

struct Tally {
  int resolved = 0;
  int resolved_wrong = 0;  // resolved, and the interval misses the quiet-machine ratio
  int drifted = 0;
};

Tally tally(const Scenario& scenario, int campaigns,
            RatioStatistic statistic = RatioStatistic::kTrimmedMean) {
  Tally t;
  for (int c = 0; c < campaigns; ++c) {
    const auto r = run_campaign(scenario, 5000 + static_cast<std::uint64_t>(c), statistic);
    if (r.drifted) ++t.drifted;
    if (!r.resolved) {
      EXPECT_NE(format_ratio(r).find("unresolved"), std::string::npos);
      continue;
    }
    ++t.resolved;
    if (!r.ci95->contains(kTrueRatio)) ++t.resolved_wrong;
  }
  std::printf("%s, %s: %d/%d resolved, %d resolved with the truth outside, %d drifted\n",
              std::string(to_string(statistic)).c_str(), scenario.name, t.resolved, campaigns,
              t.resolved_wrong, t.drifted);
  return t;
}

constexpr int kCampaigns = 100;  // the sanitizer run tallies the first fifth of them
// 5% of the campaigns plus 2.5 binomial standard deviations (2.2 at 100): a 95% interval
// misses this often by chance.
constexpr int kAllowedWrong = 10;

// A scenario's bounds: at most kAllowedWrong confidently wrong campaigns (true of any subset of
// the campaigns too), and at full scale at least `min_resolved` resolved (non-vacuity).
void expect_bounds(const Tally& t, int min_resolved, const char* scenario = "") {
  EXPECT_LE(t.resolved_wrong, kAllowedWrong) << scenario;
  if (test::full_scale()) {
    EXPECT_GE(t.resolved, min_resolved) << scenario;
  }
}

const Scenario kClean{"clean", [](double, bool, std::mt19937_64&) { return 1.0; }};

// The machine slows by 15% for both members 12 s in (another process takes the memory bus,
// the frequency drops): pairing cancels it, so the campaign must still resolve, correctly.
const Scenario kSharedLevelShift{
    "shared level shift", [](double now, bool, std::mt19937_64&) { return now > 12 ? 1.15 : 1.0; }};

// 12 s in, the scheme's member becomes 6% slower and base does not (a page placement or
// frequency change that hurts one access pattern): the ratio the run sees changes mid-run.
const Scenario kSchemeLevelShift{
    "scheme-only level shift",
    [](double now, bool scheme, std::mt19937_64&) { return scheme && now > 12 ? 1.06 : 1.0; }};

// The scheme's member slows steadily, 0.2% per second of campaign (12% after 60 s).
const Scenario kSchemeDrift{
    "scheme-only slow drift",
    [](double now, bool scheme, std::mt19937_64&) { return scheme ? 1 + 0.002 * now : 1.0; }};

// Both members drift together, 0.5% per second: the B S S B order cancels a linear drift.
const Scenario kSharedDrift{"shared slow drift",
                            [](double now, bool, std::mt19937_64&) { return 1 + 0.005 * now; }};

// Every run lands in one of two modes 8% apart (fresh pool, fresh page placement), each
// member independently.
const Scenario kBimodal{"bimodal runs", [](double, bool, std::mt19937_64& rng) {
                          return std::bernoulli_distribution(0.5)(rng) ? 1.08 : 1.0;
                        }};

// Only the scheme's member is disturbed: 15% of its runs slowed 1-1.5x, invisibly.
const Scenario kOneMemberContaminated{
    "one member contaminated", [](double, bool scheme, std::mt19937_64& rng) {
      if (!scheme || !std::bernoulli_distribution(0.15)(rng)) return 1.0;
      return std::uniform_real_distribution<double>(1.0, 1.5)(rng);
    }};

// The host as measured on 2026-11-27 (docs/measurement.md, "The floor statistic"): nearly every run slowed a little, by a continuous amount
// (95% of runs, exponential with mean 5%), each member independently, so even the floor of the
// run times is not flat.
const Scenario kContinuousOneSided{
    "continuous one-sided noise", [](double, bool, std::mt19937_64& rng) {
      if (!std::bernoulli_distribution(0.95)(rng)) return 1.0;
      return 1 + std::exponential_distribution<double>(1 / 0.05)(rng);
    }};

TEST(PairedRatioDrift, CleanMachineResolves) {  // non-vacuity
  const Tally t = tally(kClean, test::scaled_campaigns(kCampaigns));
  expect_bounds(t, 95);
}

TEST(PairedRatioDrift, SharedLevelShiftStillResolves) {
  const Tally t = tally(kSharedLevelShift, test::scaled_campaigns(kCampaigns));
  expect_bounds(t, 80);
}

TEST(PairedRatioDrift, SchemeLevelShiftIsNeverConfidentlyWrong) {
  const Tally t = tally(kSchemeLevelShift, test::scaled_campaigns(kCampaigns));
  expect_bounds(t, 0);
}

TEST(PairedRatioDrift, SchemeDriftIsNeverConfidentlyWrong) {
  const Tally t = tally(kSchemeDrift, test::scaled_campaigns(kCampaigns));
  expect_bounds(t, 0);
}

TEST(PairedRatioDrift, SharedDriftStillResolves) {
  const Tally t = tally(kSharedDrift, test::scaled_campaigns(kCampaigns));
  expect_bounds(t, 80);
}

TEST(PairedRatioDrift, BimodalRunsAreNeverConfidentlyWrong) {
  const Tally t = tally(kBimodal, test::scaled_campaigns(kCampaigns));
  expect_bounds(t, 0);
}

TEST(PairedRatioDrift, ContinuousOneSidedNoiseIsNeverConfidentlyWrong) {
  const Tally t = tally(kContinuousOneSided, test::scaled_campaigns(kCampaigns));
  expect_bounds(t, 0);
}

TEST(PairedRatioDrift, OneContaminatedMemberIsNeverConfidentlyWrong) {
  const Tally t = tally(kOneMemberContaminated, test::scaled_campaigns(kCampaigns));
  expect_bounds(t, 0);
}

// The floor statistic on every scenario (150 s budgets, for its 42 pairs): never confidently
// wrong, and it resolves the clean machine (non-vacuity). Continuous one-sided noise is the
// scenario that showed the floor's first, bootstrap interval too narrow (docs/measurement.md).
TEST(PairedRatioDriftFloor, EveryScenarioIsHonest) {
  for (const Scenario* scenario :
       {&kClean, &kSharedLevelShift, &kSchemeLevelShift, &kSchemeDrift, &kSharedDrift, &kBimodal,
        &kOneMemberContaminated, &kContinuousOneSided}) {
    const Tally t = tally(*scenario, test::scaled_campaigns(kCampaigns), RatioStatistic::kFloor);
    expect_bounds(t, scenario == &kClean ? 90 : 0, scenario->name);
  }
}

// A step in the scheme's floor half-way: the halves' floors disagree, so "drifted".
TEST(PairedRatioDriftFloor, StepInTheFloorIsReportedAsDrift) {
  std::vector<double> base, scheme;
  for (std::size_t i = 0; i < 200; ++i) {
    base.push_back(1 + 0.001 * static_cast<double>(i % 3));
    scheme.push_back((i < 100 ? 1.0 : 1.05) * (1 + 0.001 * static_cast<double>(i % 4)));
  }
  const auto e = estimate_floor_ratio_over_time(base, scheme);
  EXPECT_TRUE(e.drifted);
  EXPECT_FALSE(e.blocks.has_value());
}

// A clean step in the ratio half-way: the halves disagree, so the verdict is "drifted".
TEST(PairedRatioDrift, StepInTheRatioIsReportedAsDrift) {
  std::vector<double> ratios(16, 1.00);
  for (std::size_t i = 8; i < ratios.size(); ++i) ratios[i] = 1.05;
  for (std::size_t i = 0; i < ratios.size(); ++i)
    ratios[i] *= 1 + 0.001 * static_cast<double>(i % 3);
  const auto e = estimate_ratio_over_time(ratios);
  EXPECT_TRUE(e.drifted);
  ASSERT_TRUE(e.blocks.has_value());
  // The blocks see the step; the order-blind bootstrap does not.
  EXPECT_GT(e.blocks->high - e.blocks->low, e.bootstrap->high - e.bootstrap->low);
  EXPECT_EQ(e.block_count, 8u);
}

TEST(PairedRatioDrift, BlocksAndHullOnStationaryRatios) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.004);
  std::vector<double> ratios;
  for (int i = 0; i < 24; ++i) ratios.push_back(1.01 * std::exp(noise(rng)));
  const auto e = estimate_ratio_over_time(ratios);
  EXPECT_FALSE(e.drifted);
  ASSERT_TRUE(e.blocks && e.bootstrap && e.estimate.interval);
  EXPECT_LE(e.estimate.interval->low, std::min(e.blocks->low, e.bootstrap->low));
  EXPECT_GE(e.estimate.interval->high, std::max(e.blocks->high, e.bootstrap->high));
  EXPECT_TRUE(e.estimate.interval->contains(1.01));
  // Fewer than 6 ratios: fewer than 3 blocks, no block interval.
  const std::vector<double> five(ratios.begin(), ratios.begin() + 5);
  EXPECT_FALSE(estimate_ratio_over_time(five).blocks.has_value());
}

// A step half-way through the pairs: the verdict names the drift and both halves.
TEST(PairedRatioDrift, DriftIsNamedInTheReason) {
  PairedRatioOptions options;
  options.read_load = nullptr;
  std::vector<PairRecord> pairs;
  for (std::size_t i = 0; i < 16; ++i) {
    const double scheme = (i < 8 ? 1.0 : 1.2) * (1 + 0.002 * static_cast<double>(i % 2));
    pairs.push_back(detail::make_record({1.0, scheme, 1.0, scheme}, i % 2 == 1, options, i));
  }
  const auto r = detail::summarize(std::move(pairs), StopCause::kBudgetSpent, std::nullopt,
                                   std::nullopt, 32, options);
  EXPECT_FALSE(r.resolved);
  EXPECT_TRUE(r.drifted);
  EXPECT_EQ(r.reason.rfind("drifted: first half of the pairs +0.1%, second half +20.1%", 0), 0u)
      << r.reason;
  ASSERT_TRUE(r.first_half_ratio && r.second_half_ratio);
  EXPECT_NEAR(*r.first_half_ratio, 1.001, 0.001);
  EXPECT_NEAR(*r.second_half_ratio, 1.201, 0.001);
}

}  // namespace
}  // namespace pmlab::experiments
