// The checksum accuracy and overhead study (LP paper §III-D, Fig. 15b): undetected errors per kind.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/lp/checksum.hpp"

namespace pmlab::eval {

// How a region's persisted data can differ from what its checksum summarizes.
enum class ErrorModel {
  kSingleBitFlip,  // one bit of one value flipped
  kRandomWords,    // 1-4 values replaced by random 64-bit patterns
  kStaleLines,     // 1+ cache lines (8 doubles) still hold the previous step's values (the LP case)
  kCompensatingFlips,  // the same bit flipped 0->1 in one value and 1->0 in another
};
[[nodiscard]] const char* to_string(ErrorModel m);
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

struct OverheadCell {
  lp::ChecksumKind kind;
  double base_median_s = 0, lp_median_s = 0;
  double overhead_median = 0;  // lp/base - 1, median of per-pair ratios
  double overhead_min = 0, overhead_max = 0;
  int reps = 0;
};

struct ChecksumStudyOptions {
  std::uint64_t trials_per_cell = 200'000;
  std::uint64_t region_values = 16 * 64;  // one tmm region at bs = 16, n = 64
  std::uint64_t seed = 1;
  std::uint64_t overhead_n = 384;  // tmm size for the time overhead
  int overhead_reps = 5;
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

}  // namespace pmlab::eval
