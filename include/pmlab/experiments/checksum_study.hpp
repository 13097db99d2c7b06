// The checksum accuracy and overhead study (LP paper §III-D, Fig. 15b): undetected errors per kind.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/experiments/paired_ratio.hpp"
#include "pmlab/lp/checksum.hpp"

namespace pmlab::experiments {

// How a region's persisted data can differ from what its checksum summarizes.
enum class ErrorModel {
  kSingleBitFlip,  // one bit of one value flipped
  kRandomWords,    // 1-4 values replaced by random 64-bit patterns
  kStaleLines,     // 1+ cache lines (8 doubles) still hold the previous step's values (the LP case)
  kCompensatingFlips,  // the same bit flipped 0->1 in one value and 1->0 in another
};
[[nodiscard]] std::string_view to_string(ErrorModel m);
inline constexpr ErrorModel kAllErrorModels[] = {ErrorModel::kSingleBitFlip,
                                                 ErrorModel::kRandomWords, ErrorModel::kStaleLines,
                                                 ErrorModel::kCompensatingFlips};

struct AccuracyCell {
  lp::ChecksumKind kind;
  ErrorModel model;
  std::uint64_t trials = 0;      // corrupted regions checked (each differs from the original)
  std::uint64_t undetected = 0;  // corrupted regions whose checksum still matched
  // 95% upper confidence bound on the miss rate (rule of three when undetected == 0).
  [[nodiscard]] double upper_bound_95() const;
};

// LP tmm with one checksum kind against base: paired, order-alternating repetitions until the
// ratio's 95% interval meets the target or the budget is spent (experiments::
// measure_paired_ratio, docs/measurement.md), as `pmlab bench` measures.
struct OverheadCell {
  lp::ChecksumKind kind;
  experiments::PairedRatioResult result;  // LP / base; unresolved when the target was not met
  std::uint64_t executions = 1;           // tmm executions per timed repetition
};

struct ChecksumStudyOptions {
  std::uint64_t trials_per_cell = 200'000;
  std::uint64_t region_values = 16 * 64;  // one tmm region at bs = 16, n = 64
  std::uint64_t seed = 1;
  std::uint64_t overhead_n = 384;       // tmm size for the time overhead
  double overhead_budget_seconds = 20;  // per checksum kind; unmet target: unresolved
  double overhead_target = 0.01;        // stop at a 95% interval within ±1%
  double overhead_rep_seconds = 0.1;    // base computation per timed repetition, at least
  std::size_t overhead_max_pairs = 200;
  // 1: no OpenMP team, so no thread spin-waits for a core another process holds
  // (docs/measurement.md).
  int threads = 1;
  std::function<void(double)> on_progress;  // fraction done, for progress bars
};

struct ChecksumStudy {
  std::vector<AccuracyCell> accuracy;
  std::vector<OverheadCell> overhead;
  [[nodiscard]] nlohmann::json to_json() const;
};

[[nodiscard]] std::vector<AccuracyCell> run_accuracy_study(const ChecksumStudyOptions& opt);
[[nodiscard]] std::vector<OverheadCell> run_overhead_study(const ChecksumStudyOptions& opt);

}  // namespace pmlab::experiments
