// pmlab eval's PreFlush section: the study runs on a small tmm and its report names every row.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "pmlab/experiments/preflush_study.hpp"

namespace pmlab::experiments {
namespace {

TEST(PreflushStudy, KernelRowsAndReport) {
  PreflushStudyOptions o;
  o.n = 32;
  o.bs = 8;
  o.threads = 2;
  const auto k = preflush_study_kernel("tmm", o);
  ASSERT_FALSE(k["rows"].empty());
  bool wal = false;
  for (const auto& r : k["rows"]) {
    EXPECT_GT(r["speedup"].get<double>(), 0.0);
    EXPECT_EQ(r["transparency_violations"].get<std::uint64_t>(), 0u);
    wal |= r["scheme"].get<std::string>().rfind("wal", 0) == 0;
  }
  EXPECT_TRUE(wal);
  const std::string md = preflush_section(nlohmann::json::array({k}));
  EXPECT_NE(md.find("Over logging"), std::string::npos);
  EXPECT_NE(md.find("line-change"), std::string::npos);
  const auto kernels = preflush_kernels();
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "tmm"), kernels.end());
  EXPECT_EQ(std::find(kernels.begin(), kernels.end(), "hash"), kernels.end());
}

}  // namespace
}  // namespace pmlab::experiments
