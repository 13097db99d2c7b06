// The layout tag: what a kernel and scheme declare about their pool arrays, stable for one run's
// parameters, different when the arrays differ, and named in a mismatch only when it is news.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "pmlab/core/error.hpp"
#include "pmlab/pool/params.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::run {
namespace {

pool::RunParams params_of(const std::string& kernel, const std::string& scheme, std::uint64_t n) {
  pool::RunParams p;
  p.kernel = kernel;
  p.scheme = scheme;
  p.n = n;
  p.bs = 8;
  return p;
}

TEST(LayoutTag, IsStableNonZeroAndDiffersAcrossSchemesAndSizes) {
  std::set<std::uint32_t> seen;
  std::size_t runs = 0;
  for (const auto& k : kernel_drivers()) {
    for (const auto& scheme : k.schemes) {
      for (const std::uint64_t n : {16u, 32u}) {
        const auto p = params_of(k.name, scheme, n);
        try {
          k.validate(p);
        } catch (const Error&) {
          continue;  // a scheme this kernel refuses at this size (e.g. gemm hr on GEMP)
        }
        const std::uint32_t tag = k.layout_tag(p);
        EXPECT_NE(tag, 0u) << k.name << "/" << scheme;
        EXPECT_EQ(tag, k.layout_tag(p)) << k.name << "/" << scheme;
        seen.insert(tag);
        ++runs;
      }
    }
  }
  // Every (kernel, scheme, n) lays its pool out differently: its arrays or names differ.
  EXPECT_EQ(seen.size(), runs);
  EXPECT_GT(runs, 100u);
}

TEST(LayoutTag, IsNamedInAMismatchOnlyWhenEverythingElseAgrees) {
  auto stored = params_of("tmm", "lp", 16);
  stored.layout_tag = 0x1234;
  auto asked = stored;
  asked.layout_tag = 0x4321;
  auto diffs = pool::describe_differences(stored, asked);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_NE(diffs[0].find("written by another version"), std::string::npos) << diffs[0];
  asked.n = 17;  // the size is the news; the layout follows from it
  diffs = pool::describe_differences(stored, asked);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_NE(diffs[0].find("n: pool has 16, asked for 17"), std::string::npos) << diffs[0];
  asked = stored;
  asked.layout_tag = 0;  // undeclared on one side: nothing to compare
  EXPECT_TRUE(pool::describe_differences(stored, asked).empty());
}

}  // namespace
}  // namespace pmlab::run
