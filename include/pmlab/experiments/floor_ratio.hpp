// The floor statistic: the ratio of two sides' low quantiles, with a distribution-free
// order-statistic interval (for disturbances that only add time; docs/measurement.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/experiments/ratio_estimate.hpp"

namespace pmlab::experiments {

namespace detail {

inline void check_run_seconds(std::span<const double> base, std::span<const double> scheme) {
  if (base.empty() || base.size() != scheme.size())
    throw std::invalid_argument("the floor statistic needs as many base as scheme runs, >= 1");
  for (const auto side : {base, scheme})
    for (const double t : side)
      if (!(t > 0) || !std::isfinite(t))
        throw std::invalid_argument(fmt::format("run time {} is not a positive finite number", t));
}

// P(Binomial(n, q) = i) for i = 0..n, each from log space (q^n underflows for large n).
inline std::vector<double> binomial_pmf(std::size_t n, double q) {
  const double dn = static_cast<double>(n);
  std::vector<double> pmf(n + 1);
  for (std::size_t i = 0; i <= n; ++i) {
    const double di = static_cast<double>(i);
    pmf[i] = std::exp(std::lgamma(dn + 1) - std::lgamma(di + 1) - std::lgamma(dn - di + 1) +
                      di * std::log(q) + (dn - di) * std::log1p(-q));
  }
  return pmf;
}

// 1-based ranks (l, u) of the distribution-free interval [X_(l), X_(u)] for the q-quantile of n
// independent draws: P(X_(l) > quantile) = P(Bin(n, q) < l) <= tail and P(X_(u) < quantile) =
// P(Bin(n, q) >= u) <= tail, l as large and u as small as that allows (the classical
// order-statistic interval; Hahn & Meeker, "Statistical Intervals", ch. 5). nullopt when n is
// too small for any l >= 1. O(n): both tails are accumulated once from the ends.
inline std::optional<std::pair<std::size_t, std::size_t>> quantile_ranks(std::size_t n, double q,
                                                                         double tail) {
  if (n == 0) return std::nullopt;
  const std::vector<double> pmf = binomial_pmf(n, q);
  std::size_t l = 0;  // P(Bin < l) = sum of pmf[0 .. l - 1]
  double below = 0;
  while (l < n && below + pmf[l] <= tail) below += pmf[l++];
  if (l == 0) return std::nullopt;
  std::size_t u = n;  // P(Bin >= u) = sum of pmf[u .. n]
  double above = pmf[n];
  while (u > l + 1 && above + pmf[u - 1] <= tail) above += pmf[--u];
  return std::pair{l, u};
}

// Each side's interval gets half the miss probability (Bonferroni), so the ratio's interval
// [scheme_(l) / base_(u), scheme_(u) / base_(l)] misses with at most 1 - confidence.
inline double floor_tail(double confidence) {
  return (1 - confidence) / 4;
}

}  // namespace detail

// Fewest pairs for which the floor statistic has an interval at all: 0.9^n <= (1 - 0.95) / 4
// gives 42 for the 10th percentile.
// quantile_ranks has an l >= 1 exactly when P(Bin(n, q) = 0) = (1 - q)^n <= tail, so the answer
// is ceil(log tail / log(1 - q)), settled against that same test (called after every pair).
inline std::size_t fewest_pairs_for_floor(const RatioEstimatorOptions& options = {}) {
  const double tail = detail::floor_tail(options.confidence);
  const double log_keep = std::log1p(-options.floor_quantile);
  const auto none_below = [&](std::size_t n) {
    return std::exp(static_cast<double>(n) * log_keep) <= tail;
  };
  auto n = static_cast<std::size_t>(std::max(1.0, std::ceil(std::log(tail) / log_keep)));
  while (!none_below(n)) ++n;
  while (n > 1 && none_below(n - 1)) --n;
  return n;
}

// The floor ratio q(scheme) / q(base) of pairs given as their two run times (type-7 quantiles),
// with the distribution-free interval of each side's quantile combined into one for the ratio
// (detail::quantile_ranks, floor_tail). The interval assumes each side's runs are independent
// draws, not that they are normal or that the pairs' members share anything; it depends on the
// set of runs, not on their order. No bootstrap: the percentile bootstrap of a 10th percentile of
// 20-40 runs was measured too narrow (docs/measurement.md, "The floor statistic").
inline RatioEstimate estimate_floor_ratio(std::span<const double> base_seconds,
                                          std::span<const double> scheme_seconds,
                                          const RatioEstimatorOptions& options = {}) {
  detail::validate(options);
  detail::check_run_seconds(base_seconds, scheme_seconds);
  const std::size_t n = base_seconds.size();
  std::vector<double> base(base_seconds.begin(), base_seconds.end());
  std::vector<double> scheme(scheme_seconds.begin(), scheme_seconds.end());
  std::sort(base.begin(), base.end());
  std::sort(scheme.begin(), scheme.end());
  const double q = options.floor_quantile;
  RatioEstimate estimate;
  estimate.ratio = detail::select_quantile(scheme, q) / detail::select_quantile(base, q);
  const auto ranks = detail::quantile_ranks(n, q, detail::floor_tail(options.confidence));
  if (!ranks) return estimate;
  const auto [l, u] = *ranks;
  const ConfidenceInterval interval{scheme[l - 1] / base[u - 1], scheme[u - 1] / base[l - 1]};
  estimate.interval = interval;
  estimate.relative_half_width = (interval.high - interval.low) / 2 / estimate.ratio;
  return estimate;
}

// The floor ratio of pairs in the order they ran, with a split-half check: when both halves
// have an interval and the two are disjoint, the level changed during the run ("drifted").
// No between-block interval: a block of a few pairs that one burst covers whole has a floor as
// disturbed as its runs. The caller (summarize) also applies the trimmed mean's drift checks,
// since the halves have intervals only from 84 pairs on.
inline TimeOrderedEstimate estimate_floor_ratio_over_time(
    std::span<const double> base_seconds, std::span<const double> scheme_seconds,
    const RatioEstimatorOptions& options = {}) {
  TimeOrderedEstimate result;
  result.estimate = estimate_floor_ratio(base_seconds, scheme_seconds, options);
  const std::size_t n = base_seconds.size();
  if (n >= 4) {
    result.first_half =
        estimate_floor_ratio(base_seconds.first(n / 2), scheme_seconds.first(n / 2), options);
    result.second_half =
        estimate_floor_ratio(base_seconds.subspan(n / 2), scheme_seconds.subspan(n / 2), options);
    if (result.first_half->interval && result.second_half->interval) {
      const auto& a = *result.first_half->interval;
      const auto& b = *result.second_half->interval;
      result.drifted = a.high < b.low || b.high < a.low;
    }
  }
  return result;
}

}  // namespace pmlab::experiments
