// The report groups simulated rows by the family each catalog row declares, and averages only
// the rows that stand for their family (Scheme::in_family_mean), never by reading names.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "pmlab/experiments/eval.hpp"

namespace pmlab::experiments {
namespace {
using nlohmann::json;

json family_sim_row(const std::string& scheme, double cycles, double writes) {
  return {{"scheme", scheme}, {"cycles_vs_base", cycles}, {"writes_vs_base", writes}};
}

// The gmean table's line of `family` on lp-isca18 ("" when absent).
std::string family_mean_line(const std::string& md, const std::string& family) {
  const std::string key = "| lp-isca18 | " + family + " |";
  const auto at = md.find(key);
  if (at == std::string::npos) return "";
  return md.substr(at, md.find('\n', at) - at);
}

TEST(ReportFamily, GeometricMeansTakeTheDeclaredFamilyAndItsAveragedRowsOnly) {
  const json sim = json::array(
      {{{"kernel", "tmm"},
        {"preset", "lp-isca18"},
        {"n", 64},
        {"threads", 1},
        {"rows",
         {family_sim_row("base", 1.0, 1.0), family_sim_row("ep-ii", 1.21, 1.21),
          family_sim_row("ep-jj", 4.0, 4.0),  // jj grain: not averaged
          family_sim_row("wal-ii-entry-sync", 1.5, 1.5), family_sim_row("hr-ii-x32", 9.0, 9.0),
          family_sim_row("hr-ii-x64", 1.1, 1.1)}}}});
  const std::string md = render_report({{"mode", "quick"}, {"complete", true}, {"sim", sim}});
  // ep: ep-ii alone (1 kernel row), +21%; ep-jj would have pulled the mean to +120%.
  EXPECT_NE(family_mean_line(md, "ep").find("| 1 | +21"), std::string::npos)
      << family_mean_line(md, "ep");
  EXPECT_NE(family_mean_line(md, "hr").find("| 1 | +10"), std::string::npos)
      << family_mean_line(md, "hr");
  EXPECT_NE(family_mean_line(md, "wal").find("| 1 | +50"), std::string::npos)
      << family_mean_line(md, "wal");
  EXPECT_EQ(family_mean_line(md, "base"), "");
  EXPECT_EQ(family_mean_line(md, "wal-ii-entry-sync"), "");  // not a prefix of the name
}

}  // namespace
}  // namespace pmlab::experiments
