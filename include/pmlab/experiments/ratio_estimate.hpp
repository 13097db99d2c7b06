// Ratio estimators over paired timings: the trimmed mean of log ratios with its bootstrap and
// between-block intervals (the default of pmlab bench and eval).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace pmlab::experiments {

// ---------------------------------------------------------------------------------------------
// Estimation

struct ConfidenceInterval {
  double low = 0;
  double high = 0;
  [[nodiscard]] bool contains(double x) const { return low <= x && x <= high; }
};

// Fixed, so that the same pairs always give the same interval (reruns, reports, tests).
inline constexpr std::uint64_t kBootstrapSeed = 0x706d6c61622d3134ULL;  // "pmlab-14"

// Which summary of the pairs the ratio is (docs/measurement.md, "The floor statistic").
enum class RatioStatistic : std::uint8_t {
  // exp of the 20%-trimmed mean of the per-pair log ratios: the typical pair. Right when the
  // noise is symmetric around each run's own time.
  kTrimmedMean,
  // q(scheme seconds) / q(base seconds) at a low quantile q of each side's runs: the ratio of
  // the runs the machine disturbed least. Right when disturbances only ever add time (a
  // shared host: cache, memory-bandwidth and frequency contention), which widens the trimmed
  // mean's interval without moving the floor.
  kFloor,
};
[[nodiscard]] inline std::string_view to_string(RatioStatistic s) {
  return s == RatioStatistic::kFloor ? "floor" : "trimmed";
}

struct RatioEstimatorOptions {
  RatioStatistic statistic = RatioStatistic::kTrimmedMean;
  // kFloor: the quantile of each side's run times that is compared (0.1 = the 10th
  // percentile). Low enough to skip the disturbed runs, high enough that the bootstrap of a
  // quantile (unlike that of a minimum) is consistent.
  double floor_quantile = 0.1;
  double confidence = 0.95;
  // Fraction of the sorted log-ratios dropped at each end before averaging: 0 is the geometric
  // mean, 0.5 would be the median. 0.2 survives bursts in up to a fifth of the pairs on either
  // side and loses little precision on clean data (docs/measurement.md).
  double trim_fraction = 0.2;
  std::size_t resamples = 4000;
  std::uint64_t seed = kBootstrapSeed;
  // Widens the percentile interval for small samples (Hesterberg's "expanded percentile"),
  // where the plain percentile bootstrap is known to be too narrow.
  bool expand_small_samples = true;
  // Most time-ordered blocks for the between-block interval (estimate_ratio_over_time). Pairs
  // are cut into min(max_blocks, n / 2) consecutive blocks, so a block holds at least one
  // B S S B quad; at least 3 blocks are needed for a t-interval.
  std::size_t max_blocks = 8;
};

struct RatioEstimate {
  double ratio = 1;                            // exp(trimmed mean of log ratios)
  std::optional<ConfidenceInterval> interval;  // nullopt with fewer than 2 ratios
  // (high - low) / 2 / ratio: the "±x%" the stopping rule compares with its target.
  double relative_half_width = std::numeric_limits<double>::infinity();
};

namespace detail {

// Trimmed mean of a bootstrap resample given as how many times each sorted value was drawn:
// walking the counts in order finds the order statistics without sorting the resample, O(n).
// Drops floor(trim * n) values at each end and averages the rest.
inline double trimmed_mean_of_draws(const std::vector<double>& sorted_values,
                                    const std::vector<std::size_t>& draws, double trim_fraction) {
  std::size_t n = 0;
  for (const std::size_t d : draws) n += d;
  const auto cut = static_cast<std::size_t>(trim_fraction * static_cast<double>(n));
  const std::size_t keep_end = n - cut;  // ranks [cut, keep_end) are averaged
  double sum = 0;
  std::size_t rank = 0;
  for (std::size_t i = 0; i < sorted_values.size() && rank < keep_end; ++i) {
    const std::size_t first = std::max(rank, cut), last = std::min(rank + draws[i], keep_end);
    if (last > first) sum += static_cast<double>(last - first) * sorted_values[i];
    rank += draws[i];
  }
  return sum / static_cast<double>(keep_end - cut);
}

// Linear interpolation between order statistics (type 7, as R and numpy). Selects the two
// order statistics in place (O(n)) instead of sorting: the bootstrap asks for two quantiles
// of thousands of resampled statistics after every pair.
inline double select_quantile(std::vector<double>& values, double q) {
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const auto at_below = values.begin() + static_cast<std::ptrdiff_t>(below);
  std::nth_element(values.begin(), at_below, values.end());
  const double low = *at_below;
  if (below + 1 >= values.size()) return low;
  const double high = *std::min_element(at_below + 1, values.end());
  return low + (position - static_cast<double>(below)) * (high - low);
}

inline double median(std::vector<double> values) {
  return select_quantile(values, 0.5);
}

inline double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

// Regularized incomplete beta I_x(a, b) by its continued fraction (modified Lentz), enough for
// the Student t quantiles below; accurate to ~1e-12 for the parameters used here.
inline double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incomplete_beta(b, a, 1 - x);  // faster side
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < kTiny ? kTiny : d);
  double fraction = d;
  for (int m = 1; m <= 300; ++m) {
    const double dm = m;
    const double even = dm * (b - dm) * x / ((a + 2 * dm - 1) * (a + 2 * dm));
    d = 1 + even * d;
    c = 1 + even / c;
    d = 1 / (std::abs(d) < kTiny ? kTiny : d);
    c = std::abs(c) < kTiny ? kTiny : c;
    fraction *= d * c;
    const double odd = -(a + dm) * (a + b + dm) * x / ((a + 2 * dm) * (a + 2 * dm + 1));
    d = 1 + odd * d;
    c = 1 + odd / c;
    d = 1 / (std::abs(d) < kTiny ? kTiny : d);
    c = std::abs(c) < kTiny ? kTiny : c;
    const double step = d * c;
    fraction *= step;
    if (std::abs(step - 1) < 1e-14) break;
  }
  return std::exp(log_front) * fraction / a;
}

inline double student_t_cdf(double t, double df) {
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t >= 0 ? 1 - tail : tail;
}

// Quantile of Student's t for p in (0.5, 1), by bisection: called once per interval, so
// simplicity beats speed.
inline double student_t_quantile(double p, double df) {
  double low = 0, high = 1;
  while (student_t_cdf(high, df) < p) high *= 2;
  for (int i = 0; i < 200 && high - low > 1e-12 * high; ++i) {
    const double mid = (low + high) / 2;
    (student_t_cdf(mid, df) < p ? low : high) = mid;
  }
  return (low + high) / 2;
}

// Lower-tail probability at which to read the bootstrap distribution. Plain percentile:
// (1 - confidence) / 2. Expanded (Hesterberg 2015): the normal tail matching the t critical
// value with n - 1 degrees of freedom scaled by sqrt(n / (n - 1)), which undoes the bootstrap's
// divide-by-n variance and the normal-instead-of-t shape that make small-n intervals too short.
inline double bootstrap_tail(std::size_t n, const RatioEstimatorOptions& options) {
  const double alpha = 1 - options.confidence;
  if (!options.expand_small_samples) return alpha / 2;
  const double dn = static_cast<double>(n);
  const double critical = std::sqrt(dn / (dn - 1)) * student_t_quantile(1 - alpha / 2, dn - 1);
  return normal_cdf(-critical);
}

inline void validate(const RatioEstimatorOptions& options) {
  if (!(options.confidence > 0 && options.confidence < 1))
    throw std::invalid_argument("confidence must be in (0, 1)");
  if (!(options.trim_fraction >= 0 && options.trim_fraction < 0.5))
    throw std::invalid_argument("trim_fraction must be in [0, 0.5)");
  if (options.resamples < 100) throw std::invalid_argument("resamples must be at least 100");
  if (!(options.floor_quantile > 0 && options.floor_quantile <= 0.5))
    throw std::invalid_argument("floor_quantile must be in (0, 0.5]");
}

}  // namespace detail

// Point estimate and bootstrap interval of the typical ratio. Deterministic: the resampling RNG
// is seeded from options.seed on every call, so equal input gives an equal interval.
inline RatioEstimate estimate_ratio(std::span<const double> ratios,
                                    const RatioEstimatorOptions& options = {}) {
  detail::validate(options);
  if (ratios.empty()) throw std::invalid_argument("estimate_ratio needs at least one ratio");
  if (ratios.size() > 0xffffffffU)  // the 32-bit index draws below
    throw std::invalid_argument("estimate_ratio takes at most 2^32 - 1 ratios");
  std::vector<double> logs;
  logs.reserve(ratios.size());
  for (const double r : ratios) {
    if (!(r > 0) || !std::isfinite(r))
      throw std::invalid_argument(fmt::format("ratio {} is not a positive finite number", r));
    logs.push_back(std::log(r));
  }
  const std::size_t n = logs.size();
  std::sort(logs.begin(), logs.end());
  std::vector<std::size_t> draws(n, 1);  // the sample itself: every value drawn once
  RatioEstimate estimate;
  estimate.ratio = std::exp(detail::trimmed_mean_of_draws(logs, draws, options.trim_fraction));
  if (n < 2) return estimate;

  std::mt19937_64 rng(options.seed);
  std::vector<double> statistics(options.resamples);
  for (double& statistic : statistics) {
    std::fill(draws.begin(), draws.end(), 0);
    for (std::size_t i = 0; i < n; i += 2) {
      // Two indices per 64-bit draw, each (32 random bits * n) >> 32: exact integer arithmetic,
      // so the interval is identical across standard libraries (std::uniform_int_distribution's
      // algorithm is unspecified), and no division in the hot loop. Bias < n / 2^32: immaterial.
      const std::uint64_t bits = rng();
      ++draws[((bits & 0xffffffffU) * n) >> 32];
      if (i + 1 < n) ++draws[((bits >> 32) * n) >> 32];
    }
    statistic = detail::trimmed_mean_of_draws(logs, draws, options.trim_fraction);
  }
  const double tail = detail::bootstrap_tail(n, options);
  const ConfidenceInterval interval{std::exp(detail::select_quantile(statistics, tail)),
                                    std::exp(detail::select_quantile(statistics, 1 - tail))};
  estimate.interval = interval;
  estimate.relative_half_width = (interval.high - interval.low) / 2 / estimate.ratio;
  return estimate;
}

// The estimate of ratios given in the order they were measured, with an interval that also
// holds when the machine changed during the campaign. The bootstrap above treats the pairs as
// exchangeable: a level shift half-way (a process starting, a frequency or page-placement
// change that affects the two members differently) splits the ratios into two tight clusters,
// and the bootstrap's interval lies between them, narrow and wrong for both. Here:
// - blocks: the pairs are cut into k consecutive blocks; the mean log ratio per block gives a
//   Student t interval with k - 1 degrees of freedom. Drift between blocks shows as dispersion
//   of the block means, so it widens this interval where the bootstrap would not notice;
// - halves: first and second half of the pairs each get their own bootstrap interval; when
//   the two are disjoint the ratio changed during the run ("drifted"), and no single interval
//   describes it.
// The reported interval is the hull of the whole-sample bootstrap and the block interval.
struct TimeOrderedEstimate {
  RatioEstimate estimate;  // ratio: the trimmed mean; interval: hull of bootstrap and blocks
  std::optional<ConfidenceInterval> bootstrap;  // whole sample, order ignored
  std::optional<ConfidenceInterval> blocks;     // between-block t interval (>= 3 blocks)
  std::size_t block_count = 0;
  std::optional<RatioEstimate> first_half, second_half;  // with >= 4 ratios
  bool drifted = false;                                  // the halves' intervals are disjoint
};

namespace detail {

inline std::optional<ConfidenceInterval> block_interval(std::span<const double> logs,
                                                        std::size_t blocks, double confidence) {
  if (blocks < 3) return std::nullopt;
  const std::size_t n = logs.size();
  std::vector<double> means;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t first = b * n / blocks, last = (b + 1) * n / blocks;
    double sum = 0;
    for (std::size_t i = first; i < last; ++i) sum += logs[i];
    means.push_back(sum / static_cast<double>(last - first));
  }
  const double k = static_cast<double>(blocks);
  double mean = 0;
  for (const double m : means) mean += m / k;
  double squares = 0;
  for (const double m : means) squares += (m - mean) * (m - mean);
  const double half =
      student_t_quantile(1 - (1 - confidence) / 2, k - 1) * std::sqrt(squares / (k - 1) / k);
  return ConfidenceInterval{std::exp(mean - half), std::exp(mean + half)};
}

}  // namespace detail

inline TimeOrderedEstimate estimate_ratio_over_time(std::span<const double> ratios,
                                                    const RatioEstimatorOptions& options = {}) {
  TimeOrderedEstimate result;
  result.estimate = estimate_ratio(ratios, options);  // validates options and ratios
  result.bootstrap = result.estimate.interval;
  const std::size_t n = ratios.size();
  std::vector<double> logs;
  logs.reserve(n);
  for (const double r : ratios) logs.push_back(std::log(r));
  result.block_count = std::min(options.max_blocks, n / 2);
  result.blocks = detail::block_interval(logs, result.block_count, options.confidence);
  if (result.blocks && result.estimate.interval) {
    ConfidenceInterval& hull = *result.estimate.interval;
    hull.low = std::min(hull.low, result.blocks->low);
    hull.high = std::max(hull.high, result.blocks->high);
    result.estimate.relative_half_width = (hull.high - hull.low) / 2 / result.estimate.ratio;
  }
  if (n >= 4) {
    result.first_half = estimate_ratio(ratios.first(n / 2), options);
    result.second_half = estimate_ratio(ratios.subspan(n / 2), options);
    const auto& a = *result.first_half->interval;
    const auto& b = *result.second_half->interval;
    result.drifted = a.high < b.low || b.high < a.low;
  }
  return result;
}

}  // namespace pmlab::experiments
