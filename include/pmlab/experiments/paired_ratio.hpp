// Honest native timing ratios: paired interleaved runs, adaptive stop, busy check (the estimators
// are in ratio_estimate.hpp and floor_ratio.hpp).
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/experiments/floor_ratio.hpp"
#include "pmlab/experiments/ratio_estimate.hpp"

namespace pmlab::experiments {

// ---------------------------------------------------------------------------------------------
// Timings

// One timed run: wall-clock seconds and the process's CPU seconds over the same span.
struct RunTiming {
  double wall_seconds = 0;
  double cpu_seconds = 0;
};

// One pair: base and scheme run back to back (in the order the module chose).
struct PairTiming {
  double base_seconds = 0;
  double scheme_seconds = 0;
  double base_cpu_seconds = 0;
  double scheme_cpu_seconds = 0;
};

// `measure_pair(scheme_first)`: runs base and the scheme back to back, the scheme first when
// asked, and returns both runs' timings.
template <class F>
concept PairMeasurer = std::is_invocable_r_v<PairTiming, F&, bool>;

// `run()`: one run of one side, timing only the part to compare.
template <class F>
concept RunTimer = std::is_invocable_r_v<RunTiming, F&>;

// Monotonic wall clock in seconds: the default clock of the adaptive loop.
inline double steady_clock_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the whole process (every thread, user + system). The time a runnable process
// spends preempted by others is not in it, which is what makes CPU/wall a busy-machine signal.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Times `work()` on both clocks. Callers time only what they want compared (the kernel, not
// pool creation), so this wraps exactly that part.
template <std::invocable Work>
RunTiming time_run(Work&& work) {
  const double cpu0 = process_cpu_seconds();
  const auto wall0 = std::chrono::steady_clock::now();
  std::invoke(std::forward<Work>(work));
  const auto wall1 = std::chrono::steady_clock::now();
  const double cpu1 = process_cpu_seconds();
  return {std::chrono::duration<double>(wall1 - wall0).count(), cpu1 - cpu0};
}

// ---------------------------------------------------------------------------------------------
// Load average

// The 1-minute load average from the text of /proc/loadavg ("0.52 0.58 0.59 1/123 4567").
inline std::optional<double> parse_load_average(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t\n");
  if (begin == std::string_view::npos) return std::nullopt;
  const std::size_t end = std::min(text.find_first_of(" \t\n", begin), text.size());
  const std::string field(text.substr(begin, end - begin));
  try {
    std::size_t used = 0;
    const double load = std::stod(field, &used);
    if (used != field.size() || !std::isfinite(load) || load < 0) return std::nullopt;
    return load;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// nullopt when the file is missing or unreadable (non-Linux, containers hiding /proc): the
// load is a hint, its absence must not stop a measurement.
inline std::optional<double> read_load_average(const std::string& path = "/proc/loadavg") {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return parse_load_average(line);
}

// ---------------------------------------------------------------------------------------------
// Adaptive paired measurement

struct PairedRatioOptions {
  // Stop as soon as the interval is within ±target of the estimate (0.01 = ±1%).
  double target_relative_half_width = 0.01;
  // Wall time allowed for this scheme's pairs (base and scheme runs together), on now_seconds.
  double budget_seconds = 60;
  // No interval is trusted, hence nothing resolved, on fewer healthy pairs than this. A
  // resampling interval never reaches beyond the sample's range, and the range of n pairs
  // misses the true ratio with probability 2^(1-n) (6.25% for 5 pairs): at least 6 for 95%,
  // and 8 leaves the small-sample expansion room to work (docs/measurement.md).
  std::size_t min_pairs = 8;
  std::size_t max_pairs = 200;
  // A run is healthy when cpu / (wall * threads_per_run) reaches this: below it, other
  // processes took the CPU for a noticeable part of the run. 0 turns the check off (for runs
  // that legitimately sleep, e.g. waiting on I/O).
  double healthy_cpu_fraction = 0.9;
  unsigned threads_per_run = 1;  // threads a run keeps busy: its CPU time can reach wall * this
  RatioEstimatorOptions estimator;
  // Injectable so that tests and simulations run without real time.
  std::function<double()> now_seconds = steady_clock_seconds;
  std::function<std::optional<double>()> read_load = [] { return read_load_average(); };
  unsigned cores = std::thread::hardware_concurrency();  // 0: unknown, load check skipped
};

enum class StopCause { kTargetReached, kBudgetSpent, kMaxPairs };

struct PairRecord {
  PairTiming timing;
  bool scheme_first = false;  // the order in which the pair ran
  double ratio = 1;           // scheme_seconds / base_seconds
  double cpu_fraction = 1;    // the lower of the two runs' CPU/wall fractions
  bool healthy = true;        // cpu_fraction >= healthy_cpu_fraction
  bool counted = false;       // in the estimate (see PairedRatioResult::ratio)
};

struct PairedRatioResult {
  RatioStatistic statistic = RatioStatistic::kTrimmedMean;  // what ratio and ci95 are
  // Point estimate of scheme/base under `statistic` (the trimmed mean: exp of the 20%-trimmed
  // mean of the per-pair log ratios; the floor: the ratio of the two sides' low quantiles),
  // over the healthy pairs; over all pairs when the machine was busy (then it is unresolved
  // and the interval shows how much the contamination spread the ratios).
  double ratio = 1;
  // Hull of the bootstrap and the between-block interval (estimate_ratio_over_time); nullopt
  // with fewer than 2 counted pairs.
  std::optional<ConfidenceInterval> ci95;
  double relative_half_width = std::numeric_limits<double>::infinity();
  std::optional<ConfidenceInterval> bootstrap_ci95;  // diagnostics: the hull's two parts
  std::optional<ConfidenceInterval> block_ci95;
  std::size_t blocks = 0;
  // Diagnostics: both statistics over the same counted pairs, whichever one decides (the
  // floor's bootstrap interval; the trimmed mean's hull), so a reader can set them side by side.
  std::optional<double> trimmed_ratio, floor_ratio;
  std::optional<ConfidenceInterval> trimmed_ci95, floor_ci95;
  std::optional<double> first_half_ratio, second_half_ratio;  // counted pairs, time order
  bool drifted = false;   // the halves' intervals are disjoint: never resolved
  bool resolved = false;  // the interval met the target on healthy pairs of a non-busy machine
  std::string reason;     // why not resolved; empty when resolved
  StopCause stop = StopCause::kMaxPairs;
  std::size_t pairs_measured = 0;
  std::size_t pairs_used = 0;  // counted in the estimate
  std::vector<PairRecord> pairs;
  double base_median_seconds = 0;    // over the counted pairs
  double scheme_median_seconds = 0;  // over the counted pairs
  double median_cpu_fraction = 1;    // over all measured pairs
  bool cpu_busy = false;             // median_cpu_fraction < healthy_cpu_fraction
  bool load_busy = false;            // load before or after above the core count
  std::optional<double> load_before, load_after;
  unsigned cores = 0;
  double elapsed_seconds = 0;

  [[nodiscard]] bool busy() const { return cpu_busy || load_busy; }
  [[nodiscard]] std::vector<double> ratios() const {
    std::vector<double> all;
    all.reserve(pairs.size());
    for (const auto& p : pairs) all.push_back(p.ratio);
    return all;
  }
};

namespace detail {

// Fewest pairs whose range covers the true (median) ratio with at least `confidence`:
// P(all n ratios on one side) = 2^(1-n). Below it no bootstrap interval can be honest.
inline std::size_t fewest_pairs_for(double confidence) {
  std::size_t n = 2;
  while (1 - std::pow(0.5, static_cast<double>(n - 1)) < confidence) ++n;
  return n;
}

inline void validate(const PairedRatioOptions& options) {
  validate(options.estimator);
  if (!(options.target_relative_half_width > 0))
    throw std::invalid_argument("target_relative_half_width must be positive");
  if (!(options.budget_seconds > 0)) throw std::invalid_argument("budget_seconds must be positive");
  if (options.min_pairs < fewest_pairs_for(options.estimator.confidence))
    throw std::invalid_argument(
        fmt::format("min_pairs must be at least {} for a {}% interval (got {})",
                    fewest_pairs_for(options.estimator.confidence),
                    100 * options.estimator.confidence, options.min_pairs));
  if (options.max_pairs < options.min_pairs)
    throw std::invalid_argument("max_pairs must be at least min_pairs");
  if (!(options.healthy_cpu_fraction >= 0 && options.healthy_cpu_fraction <= 1))
    throw std::invalid_argument("healthy_cpu_fraction must be in [0, 1]");
  if (options.threads_per_run < 1) throw std::invalid_argument("threads_per_run must be >= 1");
  if (!options.now_seconds) throw std::invalid_argument("now_seconds must be set");
}

inline PairRecord make_record(const PairTiming& t, bool scheme_first,
                              const PairedRatioOptions& options, std::size_t index) {
  for (const double s : {t.base_seconds, t.scheme_seconds})
    if (!(s > 0) || !std::isfinite(s))
      throw std::invalid_argument(
          fmt::format("pair {}: wall seconds must be positive and finite, got {}", index, s));
  for (const double s : {t.base_cpu_seconds, t.scheme_cpu_seconds})
    if (!(s >= 0) || !std::isfinite(s))
      throw std::invalid_argument(
          fmt::format("pair {}: CPU seconds must be non-negative and finite, got {}", index, s));
  const double threads = options.threads_per_run;
  PairRecord record;
  record.timing = t;
  record.scheme_first = scheme_first;
  record.ratio = t.scheme_seconds / t.base_seconds;
  record.cpu_fraction = std::min(t.base_cpu_seconds / (t.base_seconds * threads),
                                 t.scheme_cpu_seconds / (t.scheme_seconds * threads));
  record.healthy = record.cpu_fraction >= options.healthy_cpu_fraction;
  return record;
}

inline double median_cpu_fraction(std::span<const PairRecord> pairs) {
  std::vector<double> fractions;
  fractions.reserve(pairs.size());
  for (const auto& p : pairs) fractions.push_back(p.cpu_fraction);
  return median(std::move(fractions));
}

inline std::size_t healthy_count(std::span<const PairRecord> pairs) {
  return static_cast<std::size_t>(
      std::count_if(pairs.begin(), pairs.end(), [](const PairRecord& p) { return p.healthy; }));
}

// Fewest counted pairs before the options' statistic may resolve.
inline std::size_t required_pairs(const PairedRatioOptions& options) {
  return options.estimator.statistic == RatioStatistic::kFloor
             ? std::max(options.min_pairs, fewest_pairs_for_floor(options.estimator))
             : options.min_pairs;
}

// Cheap necessary conditions for resolving, checked before paying for a bootstrap.
inline bool may_resolve(std::span<const PairRecord> pairs, const PairedRatioOptions& options) {
  return healthy_count(pairs) >= required_pairs(options) &&
         median_cpu_fraction(pairs) >= options.healthy_cpu_fraction;
}

// When to re-estimate: after every pair up to 20 pairs, then every ~10% more pairs. The sizes
// then grow geometrically, so a whole campaign costs about a dozen final-size bootstraps
// instead of one per pair, and fewer looks leave fewer chances for an interval that happens to
// be short to stop the campaign early (optional stopping).
class CheckSchedule {
 public:
  bool due(std::size_t pairs) {
    if (pairs < next_) return false;
    next_ = pairs < 20 ? pairs + 1 : pairs + std::max<std::size_t>(1, pairs / 10);
    return true;
  }

 private:
  std::size_t next_ = 0;
};

// "+1.2%", "-0.3%"; a value that rounds to zero prints as "+0.0%", never "-0.0%".
inline std::string percent(double fraction, int decimals) {
  const double scale = std::pow(10.0, decimals);
  double rounded = std::round(100 * fraction * scale) / scale;
  if (rounded == 0) rounded = 0;  // drops the sign of -0
  return fmt::format("{:+.{}f}%", rounded, decimals);
}

// Builds the result from the measured pairs: which pairs count, the estimate, the verdict and
// the reason.
inline PairedRatioResult summarize(std::vector<PairRecord> pairs, StopCause stop,
                                   std::optional<double> load_before,
                                   std::optional<double> load_after, double elapsed_seconds,
                                   const PairedRatioOptions& options) {
  PairedRatioResult result;
  result.stop = stop;
  result.pairs_measured = pairs.size();
  result.load_before = load_before;
  result.load_after = load_after;
  result.cores = options.cores;
  result.elapsed_seconds = elapsed_seconds;
  result.median_cpu_fraction = median_cpu_fraction(pairs);
  result.cpu_busy = result.median_cpu_fraction < options.healthy_cpu_fraction;
  const auto above_cores = [&](const std::optional<double>& load) {
    return options.cores > 0 && load && *load > static_cast<double>(options.cores);
  };
  result.load_busy = above_cores(load_before) || above_cores(load_after);

  // On a machine that is not busy, at least half the pairs are healthy and only they count:
  // a preempted run is slower for reasons unrelated to the scheme. On a busy machine even the
  // "healthy" pairs shared caches, memory bandwidth and frequency with the intruders, so no
  // subset is trusted: all pairs count, and the (wide) interval shows the contamination.
  std::vector<double> ratios, base_seconds, scheme_seconds;
  for (auto& p : pairs) {
    p.counted = result.cpu_busy || p.healthy;
    if (!p.counted) continue;
    ratios.push_back(p.ratio);
    base_seconds.push_back(p.timing.base_seconds);
    scheme_seconds.push_back(p.timing.scheme_seconds);
  }
  result.pairs_used = ratios.size();
  result.statistic = options.estimator.statistic;
  if (!ratios.empty()) {
    const TimeOrderedEstimate trimmed = estimate_ratio_over_time(ratios, options.estimator);
    const TimeOrderedEstimate floor =
        estimate_floor_ratio_over_time(base_seconds, scheme_seconds, options.estimator);
    result.trimmed_ratio = trimmed.estimate.ratio;
    result.trimmed_ci95 = trimmed.estimate.interval;
    result.floor_ratio = floor.estimate.ratio;
    result.floor_ci95 = floor.estimate.interval;
    const bool by_floor = result.statistic == RatioStatistic::kFloor;
    const TimeOrderedEstimate& decides = by_floor ? floor : trimmed;
    result.ratio = decides.estimate.ratio;
    result.ci95 = decides.estimate.interval;
    result.relative_half_width = decides.estimate.relative_half_width;
    // Diagnostics of the trimmed mean's interval, whichever statistic decides.
    result.bootstrap_ci95 = trimmed.bootstrap;
    result.block_ci95 = trimmed.blocks;
    result.blocks = trimmed.block_count;
    // A change of level during the run is one whichever statistic decides: the floor also
    // honours the trimmed mean's split-half verdict (its own halves have intervals only from 84
    // pairs on). The halves reported are those of the verdict.
    result.drifted = by_floor ? floor.drifted || trimmed.drifted : trimmed.drifted;
    const TimeOrderedEstimate& halves =
        by_floor && !floor.drifted && trimmed.drifted ? trimmed : decides;
    if (halves.first_half) result.first_half_ratio = halves.first_half->ratio;
    if (halves.second_half) result.second_half_ratio = halves.second_half->ratio;
    result.base_median_seconds = median(base_seconds);
    result.scheme_median_seconds = median(scheme_seconds);
  }

  const bool enough_pairs = !result.cpu_busy && result.pairs_used >= required_pairs(options);
  const bool narrow_enough = result.relative_half_width <= options.target_relative_half_width;
  result.resolved = enough_pairs && narrow_enough && !result.drifted;
  result.pairs = std::move(pairs);
  if (result.resolved) return result;

  std::string why;
  if (result.cpu_busy)
    why = fmt::format("machine busy: CPU time/wall time {:.2f}", result.median_cpu_fraction);
  else if (!enough_pairs)
    why = fmt::format("too few healthy pairs: {} of {} (need {})", result.pairs_used,
                      result.pairs_measured, required_pairs(options));
  else if (result.drifted)
    why = fmt::format("drifted: first half of the pairs {}, second half {}",
                      percent(*result.first_half_ratio - 1, 1),
                      percent(*result.second_half_ratio - 1, 1));
  else
    why = fmt::format("interval ±{:.1f}% wider than the ±{:.1f}% target",
                      100 * result.relative_half_width, 100 * options.target_relative_half_width);
  switch (stop) {
    case StopCause::kBudgetSpent:
      why += fmt::format("; budget spent ({:.0f} s, {} pairs)", elapsed_seconds,
                         result.pairs_measured);
      break;
    case StopCause::kMaxPairs:
      why += fmt::format("; max pairs reached ({})", result.pairs_measured);
      break;
    case StopCause::kTargetReached:
      break;
  }
  if (result.load_busy)
    why += fmt::format("; load average {:.2f} on {} cores",
                       std::max(load_before.value_or(0), load_after.value_or(0)), options.cores);
  result.reason = std::move(why);
  return result;
}

}  // namespace detail

// Measures pairs until the ratio is known to ±target, the budget is spent or max_pairs pairs
// ran. `measure_pair(scheme_first)` runs base and the scheme back to back, the scheme first
// when asked, and returns both runs' wall and CPU seconds. The module alternates the order
// (base first on even pairs), so consecutive pairs run B S S B B S ...: drift, warm-up and
// "the second run finds warm caches" effects hit both sides equally.
template <PairMeasurer MeasurePair>
PairedRatioResult measure_paired_ratio(MeasurePair&& measure_pair,
                                       const PairedRatioOptions& options = {}) {
  detail::validate(options);
  const double start = options.now_seconds();
  const std::optional<double> load_before = options.read_load ? options.read_load() : std::nullopt;
  std::vector<PairRecord> pairs;
  detail::CheckSchedule schedule;
  StopCause stop = StopCause::kMaxPairs;
  while (true) {
    if (pairs.size() >= options.max_pairs) {
      stop = StopCause::kMaxPairs;
      break;
    }
    // Checked before a pair, never during: a pair is the unit of comparison.
    if (!pairs.empty() && options.now_seconds() - start >= options.budget_seconds) {
      stop = StopCause::kBudgetSpent;
      break;
    }
    const bool scheme_first = pairs.size() % 2 == 1;
    const PairTiming timing = std::invoke(measure_pair, scheme_first);
    pairs.push_back(detail::make_record(timing, scheme_first, options, pairs.size()));
    if (detail::may_resolve(pairs, options) && schedule.due(pairs.size()) &&
        detail::summarize(pairs, StopCause::kTargetReached, std::nullopt, std::nullopt, 0, options)
            .resolved) {
      stop = StopCause::kTargetReached;
      break;
    }
  }
  const double elapsed = options.now_seconds() - start;
  const std::optional<double> load_after = options.read_load ? options.read_load() : std::nullopt;
  return detail::summarize(std::move(pairs), stop, load_before, load_after, elapsed, options);
}

// The same with one callable per side: the module runs them in the alternating order itself,
// so a caller cannot get the order wrong. Each returns the timing of the part to compare.
template <RunTimer RunBase, RunTimer RunScheme>
PairedRatioResult measure_paired_ratio(RunBase&& run_base, RunScheme&& run_scheme,
                                       const PairedRatioOptions& options = {}) {
  return measure_paired_ratio(
      [&](bool scheme_first) {
        RunTiming base, scheme;
        if (scheme_first) {
          scheme = std::invoke(run_scheme);
          base = std::invoke(run_base);
        } else {
          base = std::invoke(run_base);
          scheme = std::invoke(run_scheme);
        }
        return PairTiming{base.wall_seconds, scheme.wall_seconds, base.cpu_seconds,
                          scheme.cpu_seconds};
      },
      options);
}

// "+0.4% [-0.3%, +1.1%]" when resolved; "+3% [-8%, +21%] unresolved: <reason>" when not, and
// "unresolved: <reason>" with no number at all when there is no interval. An unresolved
// estimate is never printed without its interval and the word "unresolved".
inline std::string format_ratio(const PairedRatioResult& result) {
  if (!result.ci95) return "unresolved: " + (result.reason.empty() ? "no interval" : result.reason);
  // Decimals follow the interval's width: digits below the uncertainty are noise.
  const double half_width_percent = 100 * result.relative_half_width;
  const int decimals = half_width_percent >= 10 ? 0 : half_width_percent >= 0.1 ? 1 : 2;
  std::string text = fmt::format("{} [{}, {}]", detail::percent(result.ratio - 1, decimals),
                                 detail::percent(result.ci95->low - 1, decimals),
                                 detail::percent(result.ci95->high - 1, decimals));
  if (!result.resolved)
    text += " unresolved: " + (result.reason.empty() ? std::string("no verdict") : result.reason);
  return text;
}

}  // namespace pmlab::experiments
