// The checksum study counts real misses: parity/modular miss compensating flips, CRC32C does not.
#include <gtest/gtest.h>

#include "pmlab/experiments/checksum_study.hpp"

namespace pmlab::experiments {
namespace {

const AccuracyCell& cell(const std::vector<AccuracyCell>& cells, lp::ChecksumKind k, ErrorModel m) {
  for (const auto& c : cells)
    if (c.kind == k && c.model == m) return c;
  throw std::runtime_error("missing cell");
}

TEST(EvalChecksumStudy, DetectsWhatEachKindCanAndMissesWhatItCannot) {
  ChecksumStudyOptions opt;
  opt.trials_per_cell = 3000;
  opt.region_values = 256;
  auto cells = run_accuracy_study(opt);
  ASSERT_EQ(cells.size(), 5u * 4u);
  for (const auto& c : cells) EXPECT_EQ(c.trials, 3000u);
  using K = lp::ChecksumKind;
  // Every kind detects every single-bit flip and every stale-line error here.
  for (auto k : lp::kAllChecksumKinds) {
    EXPECT_EQ(cell(cells, k, ErrorModel::kSingleBitFlip).undetected, 0u);
    EXPECT_EQ(cell(cells, k, ErrorModel::kStaleLines).undetected, 0u);
  }
  // Compensating flips are invisible to parity and modular by construction...
  EXPECT_EQ(cell(cells, K::kParity, ErrorModel::kCompensatingFlips).undetected, 3000u);
  EXPECT_EQ(cell(cells, K::kModular, ErrorModel::kCompensatingFlips).undetected, 3000u);
  EXPECT_EQ(cell(cells, K::kModularParity, ErrorModel::kCompensatingFlips).undetected, 3000u);
  // ...but not to the position-sensitive ones.
  EXPECT_EQ(cell(cells, K::kCrc32c, ErrorModel::kCompensatingFlips).undetected, 0u);
  EXPECT_LT(cell(cells, K::kAdler32, ErrorModel::kCompensatingFlips).undetected, 30u);
  EXPECT_DOUBLE_EQ(cell(cells, K::kCrc32c, ErrorModel::kSingleBitFlip).upper_bound_95(), 1e-3);
}

TEST(EvalChecksumStudy, OverheadStudyGivesEveryKindAPairedInterval) {
  ChecksumStudyOptions opt;
  opt.overhead_n = 48;
  opt.overhead_rep_seconds = 0.002;
  opt.overhead_budget_seconds = 0.3;
  opt.overhead_max_pairs = 8;
  auto cells = run_overhead_study(opt);
  ASSERT_EQ(cells.size(), 5u);
  for (const auto& c : cells) {
    EXPECT_GE(c.executions, 1u);
    EXPECT_GE(c.result.pairs_measured, 1u);
    EXPECT_GT(c.result.ratio, 0);
    if (c.result.ci95) {
      EXPECT_LE(c.result.ci95->low, c.result.ci95->high);
    }
    if (!c.result.resolved) {
      EXPECT_FALSE(c.result.reason.empty());
    }
  }
  const auto j = ChecksumStudy{{}, cells}.to_json();
  ASSERT_EQ(j["overhead"].size(), 5u);
  EXPECT_TRUE(j["overhead"][0].contains("ci95"));
  EXPECT_TRUE(j["overhead"][0].contains("resolved"));
}

}  // namespace
}  // namespace pmlab::experiments
