// paired_ratio.hpp on synthetic timings from a seeded machine model: honesty, stopping, order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../support/test_scale.hpp"
#include "pmlab/experiments/paired_ratio.hpp"

namespace pmlab::experiments {
namespace {

// How a simulated machine disturbs runs. Bursts are a two-state Markov chain over runs, so
// disturbances last several runs and can start or stop in the middle of a pair, like a
// compile job or a busy loop sharing the cores.
struct MachineModel {
  double noise = 0.005;     // lognormal sigma of a run's own duration (0.5%)
  double burst_start = 0;   // per run: chance that a quiet machine turns busy
  double burst_end = 1;     // per run: chance that a busy machine turns quiet
  double max_slowdown = 3;  // a run in a burst is slowed by U(1, max_slowdown), independently
  // true: the slowdown is preemption, so the run's CPU time stays that of the work and
  // CPU/wall drops; false: contention the CPU clock cannot see (memory bandwidth, SMT
  // sibling, frequency), CPU time grows with wall time.
  bool cpu_shows_slowdown = true;
};

// Quiet machine: 0.5% noise, never disturbed.
constexpr MachineModel kQuiet{};
// The acceptance scenario, "two busy-loop processes beside it" on a 2-core machine: busy 80%
// of the runs (stationary 0.6 / (0.6 + 0.15)), each member slowed 1-3x independently.
constexpr MachineModel kTwoBusyLoops{0.005, 0.6, 0.15, 3, true};
// The same disturbance, invisible to CPU/wall: only the statistics can defend the interval.
constexpr MachineModel kHiddenContention{0.005, 0.6, 0.15, 3, false};
// Mostly quiet with occasional preemption bursts (25% of runs): should still resolve.
constexpr MachineModel kIntermittentBursts{0.005, 0.1, 0.3, 3, true};
// Occasional bursts the CPU clock does not see: only the trimmed estimate protects it.
constexpr MachineModel kIntermittentHidden{0.005, 0.1, 0.3, 3, false};

// Turns work into (wall, CPU) timings under a MachineModel, advancing a fake clock by the
// wall time, so budgets are exercised without sleeping.
class SimulatedMachine {
 public:
  SimulatedMachine(const MachineModel& model, std::uint64_t seed) : model_(model), rng_(seed) {}

  RunTiming run(double work_seconds) {
    if (uniform_(rng_) < (in_burst_ ? model_.burst_end : model_.burst_start))
      in_burst_ = !in_burst_;
    std::normal_distribution<double> jitter(0, model_.noise);
    const double own = work_seconds * std::exp(jitter(rng_));
    const double slowdown = in_burst_ ? 1 + (model_.max_slowdown - 1) * uniform_(rng_) : 1.0;
    const double wall = own * slowdown;
    // A little CPU time is always missing (interrupts, the timer's own granularity).
    const double cpu = (model_.cpu_shows_slowdown ? own : wall) * (0.99 + 0.01 * uniform_(rng_));
    now_ += wall;
    return {wall, cpu};
  }

  [[nodiscard]] double now() const { return now_; }

 private:
  MachineModel model_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0, 1};
  bool in_burst_ = false;
  double now_ = 0;
};

constexpr double kBaseWork = 1.0;  // seconds: 60 s of budget is ~30 pairs

// Options wired to the simulated machine's clock and a fixed, quiet load average.
PairedRatioOptions simulated_options(SimulatedMachine& machine, double load = 0.3,
                                     double budget_seconds = 60) {
  PairedRatioOptions options;
  options.budget_seconds = budget_seconds;
  options.now_seconds = [&machine] { return machine.now(); };
  options.read_load = [load] { return std::optional<double>(load); };
  options.cores = 2;
  return options;
}

PairedRatioResult run_campaign(const MachineModel& model, double true_ratio, std::uint64_t seed,
                               double load = 0.3,
                               RatioStatistic statistic = RatioStatistic::kTrimmedMean) {
  SimulatedMachine machine(model, seed);
  // The floor needs 42 pairs: 150 s of 1 s runs gives it ~75.
  PairedRatioOptions options =
      simulated_options(machine, load, statistic == RatioStatistic::kFloor ? 150 : 60);
  options.estimator.statistic = statistic;
  return measure_paired_ratio([&] { return machine.run(kBaseWork); },
                              [&] { return machine.run(kBaseWork * true_ratio); }, options);
}

// "+0.4%" alone (sign, digits, decimals, percent and nothing else): what format_ratio must
// never print for an unresolved result. Hand-written: std::regex trips GCC 12's
// -Wmaybe-uninitialized under the sanitizer build.
bool is_bare_number(const std::string& text) {
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  const std::size_t digits_start = i;
  while (i < text.size() && (is_digit(text[i]) || text[i] == '.')) ++i;
  if (i == digits_start) return false;
  if (i < text.size() && text[i] == '%') ++i;
  return i == text.size();
}

struct CampaignTally {
  int campaigns = 0;
  int resolved = 0;
  int resolved_wrong = 0;  // resolved, and the interval misses the true ratio
};

// Runs `campaigns` seeded campaigns and checks per campaign the invariants that hold whatever
// the machine: an unresolved result says why and never prints as a bare number.
CampaignTally tally_campaigns(const MachineModel& model, double true_ratio, int campaigns,
                              double load = 0.3,
                              RatioStatistic statistic = RatioStatistic::kTrimmedMean) {
  CampaignTally tally;
  for (int c = 0; c < campaigns; ++c) {
    const auto result =
        run_campaign(model, true_ratio, 1000 + static_cast<std::uint64_t>(c), load, statistic);
    EXPECT_EQ(result.statistic, statistic);
    const std::string text = format_ratio(result);
    ++tally.campaigns;
    if (result.resolved) {
      ++tally.resolved;
      EXPECT_TRUE(result.ci95.has_value());
      EXPECT_TRUE(result.reason.empty()) << result.reason;
      if (!result.ci95->contains(true_ratio)) ++tally.resolved_wrong;
    } else {
      EXPECT_FALSE(result.reason.empty()) << "campaign " << c;
      EXPECT_NE(text.find("unresolved"), std::string::npos) << text;
      EXPECT_FALSE(is_bare_number(text)) << text;
    }
  }
  return tally;
}

// 200 campaigns, or the first fifth of the same seeded ones in the sanitizer run
// (PMLAB_TEST_SCALE), which looks for memory errors. Upper bounds on confidently wrong campaigns
// hold on that subset too; the lower bounds on resolved ones are asserted at full scale only.
constexpr int kCoverageCampaigns = 200;

// ---------------------------------------------------------------------------------------------
// Quiet machine

TEST(PairedRatio, QuietMachineResolvesAroundTheTrueRatio) {
  const auto result = run_campaign(kQuiet, 1.004, 7);
  ASSERT_TRUE(result.resolved) << format_ratio(result);
  ASSERT_TRUE(result.ci95.has_value());
  EXPECT_TRUE(result.ci95->contains(1.004)) << format_ratio(result);
  EXPECT_NEAR(result.ratio, 1.004, 0.004);
  EXPECT_LE(result.relative_half_width, 0.01);
  EXPECT_EQ(result.stop, StopCause::kTargetReached);
  EXPECT_GE(result.pairs_used, PairedRatioOptions{}.min_pairs);
  EXPECT_EQ(result.pairs_used, result.pairs_measured);  // every pair healthy
  EXPECT_FALSE(result.busy());
  EXPECT_NEAR(result.base_median_seconds, kBaseWork, 0.01);
  EXPECT_NEAR(result.scheme_median_seconds, 1.004 * kBaseWork, 0.01);
  EXPECT_TRUE(result.reason.empty());
}

// Over 200 quiet campaigns the interval behaves like a 95% interval after adaptive stopping.
// Bound: the nominal 5% plus 2.5 binomial standard deviations at 200 campaigns (1.5% each),
// i.e. 17 misses; the simulations in docs/measurement.md measured 3.2%.
TEST(PairedRatio, QuietMachineCoverageIsNominal) {
  const auto tally = tally_campaigns(kQuiet, 1.004, test::scaled_campaigns(kCoverageCampaigns));
  EXPECT_EQ(tally.resolved, tally.campaigns);
  EXPECT_LE(tally.resolved_wrong, 17);
  std::printf("quiet: %d/%d resolved, %d resolved with the truth outside\n", tally.resolved,
              tally.campaigns, tally.resolved_wrong);
}

// ---------------------------------------------------------------------------------------------
// Noisy machines: no confident wrong numbers

// The acceptance scenario. Resolved-and-wrong must stay within 5% of the campaigns (10 of
// 200); by design the CPU/wall rule refuses to resolve at all here.
TEST(PairedRatio, TwoBusyLoopsGiveNoConfidentWrongNumber) {
  const auto tally = tally_campaigns(kTwoBusyLoops, 1.004,
                                     test::scaled_campaigns(kCoverageCampaigns), /*load=*/3.0);
  EXPECT_LE(tally.resolved_wrong, 10);
  EXPECT_EQ(tally.resolved, 0);
  std::printf("two busy loops: %d/%d resolved, %d resolved with the truth outside\n",
              tally.resolved, tally.campaigns, tally.resolved_wrong);

  const auto sample = run_campaign(kTwoBusyLoops, 1.004, 1000, 3.0);
  EXPECT_TRUE(sample.cpu_busy);
  EXPECT_TRUE(sample.load_busy);
  EXPECT_LT(sample.median_cpu_fraction, 0.9);
  EXPECT_EQ(sample.reason.rfind("machine busy: CPU time/wall time 0.", 0), 0u) << sample.reason;
  EXPECT_EQ(sample.pairs_used, sample.pairs_measured);  // busy: every pair shows in the interval
  std::printf("  e.g. %s\n", format_ratio(sample).c_str());
}

// Same bursts with healthy-looking CPU/wall: the trimmed estimate and its bootstrap interval
// must stay honest on their own.
TEST(PairedRatio, HiddenContentionGivesNoConfidentWrongNumber) {
  const auto tally =
      tally_campaigns(kHiddenContention, 1.004, test::scaled_campaigns(kCoverageCampaigns));
  EXPECT_LE(tally.resolved_wrong, 10);
  std::printf("hidden contention: %d/%d resolved, %d resolved with the truth outside\n",
              tally.resolved, tally.campaigns, tally.resolved_wrong);
}

// Occasional visible bursts: the contaminated pairs are set aside and most campaigns still
// resolve (non-vacuity: the rule does not just refuse everything), without wrong verdicts.
TEST(PairedRatio, IntermittentBurstsResolveHonestly) {
  const auto tally =
      tally_campaigns(kIntermittentBursts, 1.004, test::scaled_campaigns(kCoverageCampaigns));
  EXPECT_LE(tally.resolved_wrong, 10);
  if (test::full_scale()) {
    EXPECT_GE(tally.resolved, 150);
  }
  std::printf("intermittent bursts: %d/%d resolved, %d resolved with the truth outside\n",
              tally.resolved, tally.campaigns, tally.resolved_wrong);
}

TEST(PairedRatio, IntermittentHiddenBurstsGiveNoConfidentWrongNumber) {
  const auto tally =
      tally_campaigns(kIntermittentHidden, 1.004, test::scaled_campaigns(kCoverageCampaigns));
  EXPECT_LE(tally.resolved_wrong, 10);
  if (test::full_scale()) {
    EXPECT_GE(tally.resolved, 20);  // the trimmed mean sees through some of them
  }
  std::printf("intermittent hidden bursts: %d/%d resolved, %d resolved with the truth outside\n",
              tally.resolved, tally.campaigns, tally.resolved_wrong);
}

// ---------------------------------------------------------------------------------------------
// The floor statistic on the same machines (docs/measurement.md, "The floor statistic")

// Quiet: the floor compares two 10th percentiles of 0.5% noise, so it needs more pairs than the
// trimmed mean (42, on a 150 s budget) but must be as honest: the same 17-miss bound.
TEST(PairedRatioFloor, QuietMachineCoverageIsNominal) {
  const auto tally = tally_campaigns(kQuiet, 1.004, test::scaled_campaigns(kCoverageCampaigns), 0.3,
                                     RatioStatistic::kFloor);
  if (test::full_scale()) {
    EXPECT_GE(tally.resolved, 150);
  }
  EXPECT_LE(tally.resolved_wrong, 17);
  std::printf("floor, quiet: %d/%d resolved, %d resolved with the truth outside\n", tally.resolved,
              tally.campaigns, tally.resolved_wrong);
}

TEST(PairedRatioFloor, TwoBusyLoopsAreRefused) {
  const auto tally =
      tally_campaigns(kTwoBusyLoops, 1.004, test::scaled_campaigns(kCoverageCampaigns), 3.0,
                      RatioStatistic::kFloor);
  EXPECT_EQ(tally.resolved, 0);
}

TEST(PairedRatioFloor, HiddenContentionGivesNoConfidentWrongNumber) {
  const auto tally =
      tally_campaigns(kHiddenContention, 1.004, test::scaled_campaigns(kCoverageCampaigns), 0.3,
                      RatioStatistic::kFloor);
  EXPECT_LE(tally.resolved_wrong, 10);
  std::printf("floor, hidden contention: %d/%d resolved, %d resolved with the truth outside\n",
              tally.resolved, tally.campaigns, tally.resolved_wrong);
}

// Visible bursts set pairs aside, so fewer campaigns reach the floor's 42 counted pairs than
// the trimmed mean's 8; none may be wrong beyond chance.
TEST(PairedRatioFloor, IntermittentBurstsResolveHonestly) {
  const auto tally =
      tally_campaigns(kIntermittentBursts, 1.004, test::scaled_campaigns(kCoverageCampaigns), 0.3,
                      RatioStatistic::kFloor);
  EXPECT_LE(tally.resolved_wrong, 10);
  std::printf("floor, intermittent bursts: %d/%d resolved, %d resolved with the truth outside\n",
              tally.resolved, tally.campaigns, tally.resolved_wrong);
}

// The case the floor exists for: slowdowns that only add time and that CPU/wall cannot see.
// The trimmed mean resolves few of these campaigns (above); the floor must resolve most of
// them, and still be wrong no more often than a 95% interval may be.
TEST(PairedRatioFloor, IntermittentHiddenBurstsResolveHonestly) {
  const auto trimmed =
      tally_campaigns(kIntermittentHidden, 1.004, test::scaled_campaigns(kCoverageCampaigns));
  const auto floor =
      tally_campaigns(kIntermittentHidden, 1.004, test::scaled_campaigns(kCoverageCampaigns), 0.3,
                      RatioStatistic::kFloor);
  EXPECT_LE(floor.resolved_wrong, 10);
  if (test::full_scale()) {
    EXPECT_GT(floor.resolved, trimmed.resolved);
  }
  std::printf(
      "floor, intermittent hidden bursts: %d/%d resolved, %d resolved with the truth "
      "outside (trimmed mean: %d resolved)\n",
      floor.resolved, floor.campaigns, floor.resolved_wrong, trimmed.resolved);
}

// Fewer counted pairs than the floor's interval needs never resolve, however tight they are.
TEST(PairedRatioFloor, NeedsItsOwnMinimumOfPairs) {
  PairedRatioOptions options;
  options.read_load = nullptr;
  options.estimator.statistic = RatioStatistic::kFloor;
  const std::size_t fewest = fewest_pairs_for_floor(options.estimator);
  EXPECT_EQ(fewest, 42u);  // 0.9^42 <= 0.0125 < 0.9^41
  std::vector<PairRecord> pairs;
  for (std::size_t i = 0; i + 1 < fewest; ++i) {
    const double base = 1 + 0.0001 * static_cast<double>(i % 5);
    pairs.push_back(
        detail::make_record({base, 1.01 * base, base, 1.01 * base}, i % 2 == 1, options, i));
  }
  auto r =
      detail::summarize(pairs, StopCause::kBudgetSpent, std::nullopt, std::nullopt, 10, options);
  EXPECT_FALSE(r.resolved);
  EXPECT_FALSE(r.ci95.has_value());
  EXPECT_EQ(r.reason.rfind("too few healthy pairs: 41 of 41 (need 42)", 0), 0u) << r.reason;
  pairs.push_back(detail::make_record({1, 1.01, 1, 1.01}, true, options, pairs.size()));
  r = detail::summarize(pairs, StopCause::kTargetReached, std::nullopt, std::nullopt, 10, options);
  EXPECT_TRUE(r.resolved) << r.reason;
  EXPECT_NEAR(r.ratio, 1.01, 1e-9);
  EXPECT_EQ(r.statistic, RatioStatistic::kFloor);
  // Both statistics are reported whichever decides.
  ASSERT_TRUE(r.trimmed_ratio && r.floor_ratio && r.trimmed_ci95 && r.floor_ci95);
  EXPECT_NEAR(*r.trimmed_ratio, 1.01, 1e-9);
  EXPECT_DOUBLE_EQ(*r.floor_ratio, r.ratio);
}

// P(Binomial(n, q) <= k), from the same probabilities quantile_ranks sums.
double binomial_cdf(std::size_t k, std::size_t n, double q) {
  const std::vector<double> pmf = detail::binomial_pmf(n, q);
  double sum = 0;
  for (std::size_t i = 0; i <= k && i <= n; ++i) sum += pmf[i];
  return std::min(sum, 1.0);
}

// The order-statistic ranks: each tail's exact binomial probability within `tail`, and the
// interval covering the true quantile of iid draws at least 1 - 2 tail of the time.
TEST(EstimateFloorRatio, QuantileRanksHaveTheirBinomialCoverage) {
  for (const std::size_t n : {42u, 60u, 100u, 200u, 1000u}) {
    const auto ranks = detail::quantile_ranks(n, 0.1, 0.0125);
    ASSERT_TRUE(ranks.has_value()) << n;
    const auto [l, u] = *ranks;
    EXPECT_LT(l, u);
    EXPECT_LE(binomial_cdf(l - 1, n, 0.1), 0.0125) << n;      // P(X_(l) above)
    EXPECT_GT(binomial_cdf(l, n, 0.1), 0.0125) << n;          // l is the largest such
    EXPECT_LE(1 - binomial_cdf(u - 1, n, 0.1), 0.0125) << n;  // P(X_(u) below)
    EXPECT_GT(1 - binomial_cdf(u - 2, n, 0.1), 0.0125) << n;  // u is the smallest
  }
  EXPECT_FALSE(detail::quantile_ranks(41, 0.1, 0.0125).has_value());
  // The closed form of the fewest pairs agrees with the ranks' own test, for other quantiles and
  // confidences too.
  for (const double q : {0.05, 0.1, 0.2, 0.5})
    for (const double confidence : {0.9, 0.95, 0.99}) {
      RatioEstimatorOptions o;
      o.floor_quantile = q;
      o.confidence = confidence;
      const std::size_t n = fewest_pairs_for_floor(o);
      const double tail = (1 - confidence) / 4;
      EXPECT_TRUE(detail::quantile_ranks(n, q, tail).has_value()) << q << " " << confidence;
      EXPECT_FALSE(n > 1 && detail::quantile_ranks(n - 1, q, tail).has_value())
          << q << " " << confidence;
    }
  // Monte Carlo: uniform draws, true 10th percentile 0.1.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> uniform(0, 1);
  int missed = 0;
  const auto [l, u] = *detail::quantile_ranks(60, 0.1, 0.0125);
  for (int trial = 0; trial < 4000; ++trial) {
    std::vector<double> v(60);
    for (double& x : v) x = uniform(rng);
    std::sort(v.begin(), v.end());
    if (v[l - 1] > 0.1 || v[u - 1] < 0.1) ++missed;
  }
  EXPECT_LE(missed, 4000 * 0.025 + 3 * std::sqrt(4000 * 0.025));
}

TEST(EstimateFloorRatio, PointIsTheRatioOfTheTwoQuantiles) {
  std::vector<double> base;
  for (int i = 0; i < 48; ++i) base.push_back(1.0 + 0.01 * static_cast<double>((i * 37) % 48));
  std::vector<double> scheme;
  for (std::size_t i = 0; i < base.size(); ++i)
    scheme.push_back(base[(i + 5) % base.size()] * 1.02);  // the same spread, paired differently
  const auto e = estimate_floor_ratio(base, scheme);
  std::vector<double> b = base, s = scheme;
  EXPECT_NEAR(e.ratio, detail::select_quantile(s, 0.1) / detail::select_quantile(b, 0.1), 1e-12);
  EXPECT_NEAR(e.ratio, 1.02, 1e-12);
  ASSERT_TRUE(e.interval.has_value());
  EXPECT_TRUE(e.interval->contains(e.ratio));
}

// Deterministic, and blind to the order the pairs ran in (the halves check sees the order).
TEST(EstimateFloorRatio, DeterministicAndOrderBlind) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> slow(1, 1.5);
  std::vector<double> base, scheme;
  for (int i = 0; i < 60; ++i) {
    base.push_back(slow(rng));
    scheme.push_back(1.01 * slow(rng));
  }
  const auto a = estimate_floor_ratio(base, scheme);
  const auto b = estimate_floor_ratio(base, scheme);
  std::vector<std::size_t> order(base.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = (i * 17) % order.size();
  std::vector<double> base2, scheme2;
  for (const std::size_t i : order) {
    base2.push_back(base[i]);
    scheme2.push_back(scheme[i]);
  }
  const auto c = estimate_floor_ratio(base2, scheme2);
  EXPECT_EQ(a.ratio, b.ratio);
  EXPECT_EQ(a.interval->low, c.interval->low);
  EXPECT_EQ(a.interval->high, c.interval->high);
  EXPECT_THROW(estimate_floor_ratio(std::vector<double>{1.0}, std::vector<double>{}),
               std::invalid_argument);
  EXPECT_THROW(estimate_floor_ratio(std::vector<double>{1.0}, std::vector<double>{0.0}),
               std::invalid_argument);
  RatioEstimatorOptions bad;
  bad.floor_quantile = 0;
  EXPECT_THROW(estimate_floor_ratio(base, scheme, bad), std::invalid_argument);
}

// Preempted pairs (CPU/wall 0.5) are recorded but not counted while the machine is mostly
// healthy, so a 2x outlier in one member does not move the estimate.
TEST(PairedRatio, PreemptedPairsAreSetAside) {
  SimulatedMachine machine(kQuiet, 11);
  int pair = 0;
  auto options = simulated_options(machine);
  const auto result = measure_paired_ratio(
      [&](bool scheme_first) {
        RunTiming base, scheme;
        if (scheme_first) {
          scheme = machine.run(1.01);
          base = machine.run(1.0);
        } else {
          base = machine.run(1.0);
          scheme = machine.run(1.01);
        }
        if (pair++ % 4 == 3) base.wall_seconds *= 2;  // preempted half the time: CPU unchanged
        return PairTiming{base.wall_seconds, scheme.wall_seconds, base.cpu_seconds,
                          scheme.cpu_seconds};
      },
      options);
  ASSERT_TRUE(result.resolved) << format_ratio(result);
  EXPECT_TRUE(result.ci95->contains(1.01));
  EXPECT_LT(result.pairs_used, result.pairs_measured);
  for (const auto& p : result.pairs) {
    EXPECT_EQ(p.counted, p.healthy);
    if (!p.healthy) {
      EXPECT_NEAR(p.cpu_fraction, 0.5, 0.01);
      EXPECT_NEAR(p.ratio, 0.505, 0.01);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Stopping: budget, minimum and maximum pairs

TEST(PairedRatio, BudgetExhaustionIsUnresolvedWithAReason) {
  MachineModel noisy = kQuiet;
  noisy.noise = 0.1;  // 10% per run: ±1% would take hundreds of pairs
  SimulatedMachine machine(noisy, 3);
  auto options = simulated_options(machine);
  options.budget_seconds = 30;
  const auto result = measure_paired_ratio([&] { return machine.run(1.0); },
                                           [&] { return machine.run(1.02); }, options);
  EXPECT_FALSE(result.resolved);
  EXPECT_EQ(result.stop, StopCause::kBudgetSpent);
  EXPECT_NE(result.reason.find("budget spent"), std::string::npos) << result.reason;
  EXPECT_NE(result.reason.find("wider than the ±1.0% target"), std::string::npos) << result.reason;
  EXPECT_GE(result.elapsed_seconds, 30);
  // The budget is checked before each pair, so at most one pair runs past it.
  const auto& last = result.pairs.back().timing;
  EXPECT_LT(result.elapsed_seconds - last.base_seconds - last.scheme_seconds, 30);
  ASSERT_TRUE(result.ci95.has_value());
  EXPECT_GT(result.relative_half_width, 0.01);
  EXPECT_NE(format_ratio(result).find("] unresolved: "), std::string::npos);
}

// Identical ratios give a zero-width interval from the second pair on; the result must still
// wait for min_pairs healthy pairs.
TEST(PairedRatio, MinPairsIsRespected) {
  for (const std::size_t min_pairs : {6u, 8u, 12u}) {
    MachineModel exact = kQuiet;
    exact.noise = 0;
    SimulatedMachine machine(exact, 1);
    auto options = simulated_options(machine);
    options.min_pairs = min_pairs;
    const auto result = measure_paired_ratio([&] { return machine.run(1.0); },
                                             [&] { return machine.run(1.25); }, options);
    EXPECT_TRUE(result.resolved);
    EXPECT_EQ(result.pairs_measured, min_pairs);
    EXPECT_DOUBLE_EQ(result.ratio, 1.25);
    EXPECT_EQ(format_ratio(result), "+25.00% [+25.00%, +25.00%]");
  }
}

TEST(PairedRatio, BudgetBelowMinPairsIsUnresolved) {
  MachineModel exact = kQuiet;
  exact.noise = 0;
  SimulatedMachine machine(exact, 1);
  auto options = simulated_options(machine);
  options.budget_seconds = 5;  // 3 pairs of ~2 s
  const auto result = measure_paired_ratio([&] { return machine.run(1.0); },
                                           [&] { return machine.run(1.0); }, options);
  EXPECT_FALSE(result.resolved);
  EXPECT_EQ(result.pairs_measured, 3u);
  EXPECT_EQ(result.stop, StopCause::kBudgetSpent);
  EXPECT_EQ(result.reason.rfind("too few healthy pairs: 3 of 3 (need 8)", 0), 0u) << result.reason;
  // Zero width, yet flagged: a tight interval on too few pairs is not a verdict.
  EXPECT_EQ(format_ratio(result).rfind("+0.00% [+0.00%, +0.00%] unresolved: too few", 0), 0u)
      << format_ratio(result);
}

TEST(PairedRatio, MaxPairsStopsTheCampaign) {
  MachineModel noisy = kQuiet;
  noisy.noise = 0.1;
  SimulatedMachine machine(noisy, 5);
  auto options = simulated_options(machine);
  options.max_pairs = 12;
  const auto result = measure_paired_ratio([&] { return machine.run(1.0); },
                                           [&] { return machine.run(1.0); }, options);
  EXPECT_FALSE(result.resolved);
  EXPECT_EQ(result.pairs_measured, 12u);
  EXPECT_EQ(result.stop, StopCause::kMaxPairs);
  EXPECT_NE(result.reason.find("max pairs reached (12)"), std::string::npos) << result.reason;
}

// ---------------------------------------------------------------------------------------------
// Order

TEST(PairedRatio, OrderAlternatesBetweenPairs) {
  SimulatedMachine machine(kQuiet, 2);
  std::vector<bool> asked;
  const auto result = measure_paired_ratio(
      [&](bool scheme_first) {
        asked.push_back(scheme_first);
        const RunTiming base = machine.run(1.0), scheme = machine.run(1.0);
        return PairTiming{base.wall_seconds, scheme.wall_seconds, base.cpu_seconds,
                          scheme.cpu_seconds};
      },
      simulated_options(machine));
  ASSERT_GE(asked.size(), 8u);
  ASSERT_EQ(asked.size(), result.pairs.size());
  for (std::size_t i = 0; i < asked.size(); ++i) {
    EXPECT_EQ(asked[i], i % 2 == 1) << "pair " << i;
    EXPECT_EQ(result.pairs[i].scheme_first, asked[i]) << "pair " << i;
  }
}

// With one callable per side the module runs them itself: B S, S B, B S, ... (ABBA blocks).
TEST(PairedRatio, TwoCallablesRunInAbbaOrder) {
  SimulatedMachine machine(kQuiet, 2);
  std::string order;
  auto options = simulated_options(machine);
  options.max_pairs = options.min_pairs;
  options.target_relative_half_width = 1e-9;  // never reached: run exactly max_pairs
  (void)measure_paired_ratio(
      [&] {
        order += 'B';
        return machine.run(1.0);
      },
      [&] {
        order += 'S';
        return machine.run(1.1);
      },
      options);
  EXPECT_EQ(order, "BSSBBSSBBSSBBSSB");
}

// ---------------------------------------------------------------------------------------------
// Machine state

// A pair whose runs had half a core: busy, and every pair counts in the (unresolved) interval.
TEST(PairedRatio, HalfACoreIsBusy) {
  SimulatedMachine clock(kQuiet, 1);  // only its clock is used
  auto options = simulated_options(clock);
  options.max_pairs = 10;
  const auto result = measure_paired_ratio(
      [&](bool) {
        (void)clock.run(2.0);
        return PairTiming{1.0, 1.01, 0.5, 0.505};
      },
      options);
  EXPECT_FALSE(result.resolved);
  EXPECT_TRUE(result.cpu_busy);
  EXPECT_DOUBLE_EQ(result.median_cpu_fraction, 0.5);
  EXPECT_EQ(result.pairs_used, 10u);
  EXPECT_EQ(result.reason.rfind("machine busy: CPU time/wall time 0.50", 0), 0u) << result.reason;
}

// Two threads that together got one core's worth of CPU: the fraction is per thread.
TEST(PairedRatio, CpuFractionIsPerThread) {
  SimulatedMachine clock(kQuiet, 1);
  auto options = simulated_options(clock);
  options.threads_per_run = 2;
  options.max_pairs = 8;
  const auto one_core = measure_paired_ratio(
      [&](bool) {
        (void)clock.run(2.0);
        return PairTiming{1.0, 1.0, 1.0, 1.0};
      },
      options);
  EXPECT_TRUE(one_core.cpu_busy);
  const auto two_cores = measure_paired_ratio(
      [&](bool) {
        (void)clock.run(2.0);
        return PairTiming{1.0, 1.0, 1.98, 1.98};
      },
      options);
  EXPECT_FALSE(two_cores.cpu_busy);
  EXPECT_TRUE(two_cores.resolved);
}

// The load average is read before and after; above the core count it marks the result busy
// and is named in the reason, but it does not veto an interval the CPU evidence supports (it
// lags by a minute and counts tasks sleeping on I/O).
TEST(PairedRatio, LoadIsRecordedBeforeAndAfter) {
  SimulatedMachine machine(kQuiet, 4);
  auto options = simulated_options(machine);
  std::vector<double> loads{0.4, 3.5};
  std::size_t reads = 0;
  options.read_load = [&] { return std::optional<double>(loads.at(reads++)); };
  const auto result = measure_paired_ratio([&] { return machine.run(1.0); },
                                           [&] { return machine.run(1.0); }, options);
  EXPECT_EQ(reads, 2u);
  EXPECT_EQ(result.load_before, 0.4);
  EXPECT_EQ(result.load_after, 3.5);
  EXPECT_EQ(result.cores, 2u);
  EXPECT_TRUE(result.load_busy);
  EXPECT_TRUE(result.busy());
  EXPECT_FALSE(result.cpu_busy);
  EXPECT_TRUE(result.resolved);

  options.max_pairs = options.min_pairs;
  options.target_relative_half_width = 1e-9;
  reads = 0;
  const auto unresolved = measure_paired_ratio([&] { return machine.run(1.0); },
                                               [&] { return machine.run(1.0); }, options);
  EXPECT_NE(unresolved.reason.find("; load average 3.50 on 2 cores"), std::string::npos)
      << unresolved.reason;
}

TEST(PairedRatio, MissingLoadIsNotBusy) {
  SimulatedMachine machine(kQuiet, 4);
  auto options = simulated_options(machine);
  options.read_load = [] { return std::optional<double>(); };
  const auto result = measure_paired_ratio([&] { return machine.run(1.0); },
                                           [&] { return machine.run(1.0); }, options);
  EXPECT_FALSE(result.load_before.has_value());
  EXPECT_FALSE(result.load_busy);
}

TEST(LoadAverage, ParsesProcLoadavg) {
  EXPECT_EQ(parse_load_average("0.52 0.58 0.59 1/123 4567\n"), 0.52);
  EXPECT_EQ(parse_load_average("12.00 1.00 1.00 3/4 5"), 12.0);
  EXPECT_FALSE(parse_load_average("").has_value());
  EXPECT_FALSE(parse_load_average("busy 1 2").has_value());
  EXPECT_FALSE(parse_load_average("1.5x 1 2").has_value());
  EXPECT_FALSE(parse_load_average("-1 0 0").has_value());
}

TEST(LoadAverage, ReadsAFileAndToleratesItsAbsence) {
  const std::string path = ::testing::TempDir() + "paired_ratio_loadavg";
  {
    std::ofstream out(path);
    out << "2.25 1.00 0.50 2/345 6789\n";
  }
  EXPECT_EQ(read_load_average(path), 2.25);
  std::remove(path.c_str());
  EXPECT_FALSE(read_load_average(path).has_value());
}

// ---------------------------------------------------------------------------------------------
// Formatting

PairedRatioResult hand_made(double ratio, double low, double high, bool resolved,
                            std::string reason) {
  PairedRatioResult r;
  r.ratio = ratio;
  r.ci95 = ConfidenceInterval{low, high};
  r.relative_half_width = (high - low) / 2 / ratio;
  r.resolved = resolved;
  r.reason = std::move(reason);
  return r;
}

TEST(FormatRatio, ResolvedShowsEstimateAndInterval) {
  EXPECT_EQ(format_ratio(hand_made(1.004, 0.997, 1.011, true, "")), "+0.4% [-0.3%, +1.1%]");
  EXPECT_EQ(format_ratio(hand_made(0.95, 0.946, 0.954, true, "")), "-5.0% [-5.4%, -4.6%]");
  EXPECT_EQ(format_ratio(hand_made(1.0001, 0.9999, 1.00025, true, "")), "+0.01% [-0.01%, +0.03%]");
  EXPECT_EQ(format_ratio(hand_made(0.99999, 0.9995, 1.0005, true, "")),
            "+0.00% [-0.05%, +0.05%]");  // no "-0.00%"
}

TEST(FormatRatio, UnresolvedIsNeverABareNumber) {
  ASSERT_TRUE(is_bare_number("+0.4%"));  // the check itself can fail
  ASSERT_TRUE(is_bare_number("-12%"));
  const std::string busy = "machine busy: CPU time/wall time 0.52";
  EXPECT_EQ(format_ratio(hand_made(1.03, 0.92, 1.21, false, busy)),
            "+3% [-8%, +21%] unresolved: " + busy);
  PairedRatioResult no_interval;
  no_interval.ratio = 1.07;
  no_interval.reason = "too few healthy pairs: 1 of 1 (need 8)";
  const std::string text = format_ratio(no_interval);
  EXPECT_EQ(text, "unresolved: too few healthy pairs: 1 of 1 (need 8)");
  EXPECT_EQ(text.find("7%"), std::string::npos);  // the point estimate is not shown alone
  PairedRatioResult silent = hand_made(1.1, 0.9, 1.3, false, "");
  EXPECT_NE(format_ratio(silent).find("] unresolved"), std::string::npos);
  EXPECT_FALSE(is_bare_number(format_ratio(silent)));
}

// ---------------------------------------------------------------------------------------------
// Estimator

std::vector<double> lognormal_ratios(double truth, double sigma, std::size_t n,
                                     std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, sigma);
  std::vector<double> ratios(n);
  for (auto& r : ratios) r = truth * std::exp(noise(rng));
  return ratios;
}

TEST(EstimateRatio, BootstrapIsDeterministic) {
  const auto ratios = lognormal_ratios(1.02, 0.01, 25, 9);
  const auto first = estimate_ratio(ratios);
  const auto second = estimate_ratio(ratios);
  ASSERT_TRUE(first.interval && second.interval);
  EXPECT_EQ(first.ratio, second.ratio);
  EXPECT_EQ(first.interval->low, second.interval->low);
  EXPECT_EQ(first.interval->high, second.interval->high);
  // The interval depends on the set of pairs, not their order.
  auto shuffled = ratios;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(1));
  const auto reordered = estimate_ratio(shuffled);
  EXPECT_EQ(reordered.interval->low, first.interval->low);
  EXPECT_EQ(reordered.interval->high, first.interval->high);
  // The seed is what fixes it: another seed gives a (slightly) different interval.
  RatioEstimatorOptions other;
  other.seed = kBootstrapSeed + 1;
  const auto reseeded = estimate_ratio(ratios, other);
  EXPECT_NE(reseeded.interval->low, first.interval->low);
  EXPECT_NEAR(reseeded.interval->low, first.interval->low, 0.003);
}

TEST(EstimateRatio, TrimmedMeanIgnoresAFewOutliers) {
  auto ratios = lognormal_ratios(1.01, 0.002, 20, 3);
  ratios[4] = 3.0;  // a burst hit the scheme
  ratios[9] = 0.4;  // a burst hit base
  ratios[15] = 2.0;
  RatioEstimatorOptions geometric_mean;
  geometric_mean.trim_fraction = 0;
  const auto robust = estimate_ratio(ratios);
  EXPECT_NEAR(robust.ratio, 1.01, 0.003);
  EXPECT_GT(std::abs(estimate_ratio(ratios, geometric_mean).ratio - 1.01), 0.03);
}

TEST(EstimateRatio, EdgeCases) {
  const std::vector<double> constant(6, 1.5);
  const auto c = estimate_ratio(constant);
  EXPECT_DOUBLE_EQ(c.ratio, 1.5);
  EXPECT_DOUBLE_EQ(c.interval->low, 1.5);
  EXPECT_DOUBLE_EQ(c.interval->high, 1.5);
  EXPECT_DOUBLE_EQ(c.relative_half_width, 0);

  const std::vector<double> one{1.2};
  const auto single = estimate_ratio(one);
  EXPECT_DOUBLE_EQ(single.ratio, 1.2);
  EXPECT_FALSE(single.interval.has_value());
  EXPECT_TRUE(std::isinf(single.relative_half_width));

  const std::vector<double> bad{1.0, 0.0};
  EXPECT_THROW((void)estimate_ratio(bad), std::invalid_argument);
  EXPECT_THROW((void)estimate_ratio(std::vector<double>{}), std::invalid_argument);
}

// The inverse ratio's estimate is the inverse estimate: base/scheme and scheme/base agree.
TEST(EstimateRatio, SymmetricUnderInversion) {
  const auto ratios = lognormal_ratios(1.05, 0.02, 15, 4);
  std::vector<double> inverse;
  for (double r : ratios) inverse.push_back(1 / r);
  EXPECT_NEAR(estimate_ratio(ratios).ratio * estimate_ratio(inverse).ratio, 1, 1e-12);
}

TEST(EstimateRatio, StudentQuantilesMatchTables) {
  EXPECT_NEAR(detail::student_t_quantile(0.975, 1), 12.7062, 1e-3);
  EXPECT_NEAR(detail::student_t_quantile(0.975, 4), 2.7764, 1e-4);
  EXPECT_NEAR(detail::student_t_quantile(0.975, 7), 2.3646, 1e-4);
  EXPECT_NEAR(detail::student_t_quantile(0.975, 30), 2.0423, 1e-4);
  EXPECT_NEAR(detail::student_t_quantile(0.995, 10), 3.1693, 1e-4);
}

TEST(EstimateRatio, FewestPairsForAnHonestInterval) {
  EXPECT_EQ(detail::fewest_pairs_for(0.95), 6u);  // 2^-4 = 6.25% > 5% rules out 5
  EXPECT_EQ(detail::fewest_pairs_for(0.99), 8u);
  EXPECT_EQ(detail::fewest_pairs_for(0.5), 2u);
}

// ---------------------------------------------------------------------------------------------
// Input checking and the real-clock helper

TEST(PairedRatio, RejectsInvalidOptionsAndTimings) {
  PairedRatioOptions options;
  options.now_seconds = [] { return 0.0; };
  options.read_load = [] { return std::optional<double>(); };
  const auto constant_pair = [](bool) { return PairTiming{1, 1, 1, 1}; };

  auto too_few = options;
  too_few.min_pairs = 5;  // cannot give a 95% interval
  EXPECT_THROW((void)measure_paired_ratio(constant_pair, too_few), std::invalid_argument);
  auto no_target = options;
  no_target.target_relative_half_width = 0;
  EXPECT_THROW((void)measure_paired_ratio(constant_pair, no_target), std::invalid_argument);
  auto small_max = options;
  small_max.max_pairs = 3;
  EXPECT_THROW((void)measure_paired_ratio(constant_pair, small_max), std::invalid_argument);

  EXPECT_THROW((void)measure_paired_ratio(
                   [](bool) {
                     return PairTiming{0, 1, 0, 1};
                   },
                   options),
               std::invalid_argument);
  EXPECT_THROW((void)measure_paired_ratio(
                   [](bool) {
                     return PairTiming{1, NAN, 1, 1};
                   },
                   options),
               std::invalid_argument);
}

// Not a timing test: only that the helper runs the work once and reports sane clocks.
TEST(TimeRun, RunsTheWorkOnceAndReportsBothClocks) {
  int calls = 0;
  const RunTiming t = time_run([&] { ++calls; });
  EXPECT_EQ(calls, 1);
  EXPECT_GE(t.wall_seconds, 0);
  EXPECT_GE(t.cpu_seconds, 0);
  EXPECT_TRUE(std::isfinite(t.wall_seconds) && std::isfinite(t.cpu_seconds));
}

}  // namespace
}  // namespace pmlab::experiments
