// The facts each catalog row declares (scheme::RowFacts): every row names its family, the facts
// follow the rows, and consumers find them by kernel and scheme.
#include <gtest/gtest.h>

#include <string>

#include "pmlab/run/catalog.hpp"
#include "pmlab/scheme/family.hpp"

namespace pmlab::run {
namespace {

// A row without `.family` (left kOther) fails here, naming it.
TEST(RowFacts, EveryCatalogRowNamesItsFamily) {
  for (const auto& k : kernel_drivers())
    for (const auto& r : k.rows)
      EXPECT_NE(r.family, scheme::Family::kOther) << k.name << " " << r.name << " names no family";
}

TEST(RowFacts, FactsFollowTheSchemesInOrderAndAgreeWithCrashSafety) {
  for (const auto& k : kernel_drivers()) {
    ASSERT_EQ(k.rows.size(), k.schemes.size()) << k.name;
    for (std::size_t i = 0; i < k.rows.size(); ++i) {
      EXPECT_EQ(k.rows[i].name, k.schemes[i]) << k.name;
      EXPECT_EQ(k.rows[i].crash_safe, k.crash_safe(k.schemes[i])) << k.name << " " << k.schemes[i];
    }
  }
}

// The reference row is the only one of family base, in every kernel, and never averaged.
TEST(RowFacts, EachKernelHasOneBaseRowTheReference) {
  for (const auto& k : kernel_drivers()) {
    int bases = 0;
    for (const auto& r : k.rows)
      if (r.family == scheme::Family::kBase) {
        ++bases;
        EXPECT_EQ(r.name, scheme::kBaseScheme) << k.name;
      }
    EXPECT_EQ(bases, 1) << k.name;
  }
}

// Spot checks of declarations the reports rely on (a row moved to another family, or tmm's jj
// grain entering the averages, changes a report's grouping).
TEST(RowFacts, ReportsGroupTmmRowsByTheirDeclaredFamily) {
  ASSERT_NE(catalog_row("tmm", "ep-jj"), nullptr);
  EXPECT_EQ(catalog_row("tmm", "ep-jj")->family, scheme::Family::kEp);
  EXPECT_FALSE(catalog_row("tmm", "ep-jj")->in_family_mean);
  EXPECT_TRUE(catalog_row("tmm", "ep-ii")->in_family_mean);
  EXPECT_EQ(catalog_row("tmm", "wal-ii-entry-sync")->family, scheme::Family::kWal);
  EXPECT_EQ(catalog_row("tmm", "hr-ii-x64")->family, scheme::Family::kHr);
  EXPECT_TRUE(catalog_row("tmm", "hr-ii-x64")->in_family_mean);
  EXPECT_FALSE(catalog_row("tmm", "hr-ii-x32")->in_family_mean);
  EXPECT_EQ(catalog_row("tmm", "ipv-nf")->family, scheme::Family::kIpv);
  EXPECT_EQ(catalog_row("tmm", "lp")->family, scheme::Family::kLp);
  EXPECT_EQ(catalog_row("cg", "cp-nt-async")->family, scheme::Family::kCp);
  EXPECT_EQ(catalog_row("hash", "tx")->family, scheme::Family::kTx);
  EXPECT_EQ(catalog_row("tmm", "no-such-row"), nullptr);
  EXPECT_EQ(catalog_row("no-such-kernel", "lp"), nullptr);
}

}  // namespace
}  // namespace pmlab::run
