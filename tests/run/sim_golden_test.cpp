// Golden figures: simulated statistics of every kernel × simulable scheme, bit-identical to the
// table recorded in tests/golden/sim_golden.json, so a refactor or an optional model mechanism
// cannot move an existing figure unnoticed.
//
// A kernel x scheme x machine the catalog simulates but the table does not hold fails the test
// with the command that records it, which adds only the missing rows (recorded ones stay as is):
//   PMLAB_UPDATE_GOLDEN=new build/release/tests/pmlab_tests --gtest_filter='SimGolden.*'
// Regenerate the whole table (only when a figure is meant to change; say why in the commit):
//   PMLAB_UPDATE_GOLDEN=1 build/release/tests/pmlab_tests --gtest_filter='SimGolden.*'
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/small_run.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/sim_session.hpp"

namespace pmlab::run {
namespace {

const char* const kGoldenPath = PMLAB_TEST_SOURCE_DIR "/golden/sim_golden.json";

// Two machines: lp-isca18 shrunk so these sizes evict (every write cause shows), and pact17 as is.
struct GoldenMachine {
  std::string name;
  sim::SimParams params;
};

std::vector<GoldenMachine> golden_machines() {
  sim::MachineSettings small;
  small.set("cores", 2);
  small.set("l1-size", 2048);
  small.set("l2-size", 0);
  small.set("llc-size", 16384);
  return {{"lp-isca18-small", sim::machine_from("lp-isca18", small)},
          {"pact17", sim::machine_from("pact17", {})}};
}

// The recorded table's runs (changing them would change every golden figure).
pool::RunParams golden_params(const KernelDriver& k, const std::string& scheme) {
  return test::small_run(k, scheme);
}

// Every statistic except host-dependent ones (there are none today: the simulator is exact).
nlohmann::json figures_of(const SimRunSpec& spec) {
  return sim::to_json(simulate(spec).stats);
}

// True when every key of `golden` is in `now` with the same value (new statistics may be added).
bool covers(const nlohmann::json& golden, const nlohmann::json& now, std::string& where) {
  if (golden.is_object()) {
    if (!now.is_object()) return false;
    for (const auto& [key, v] : golden.items()) {
      if (!now.contains(key)) {
        where += "/" + key + " (missing)";
        return false;
      }
      std::string inner = where + "/" + key;
      if (!covers(v, now.at(key), inner)) {
        where = inner;
        return false;
      }
    }
    return true;
  }
  if (golden != now) where += ": golden " + golden.dump() + ", now " + now.dump();
  return golden == now;
}

// The command that records the rows of `now` missing from `golden`, and nothing else.
constexpr const char* kRecordMissingRows =
    "PMLAB_UPDATE_GOLDEN=new build/release/tests/pmlab_tests --gtest_filter='SimGolden.*'";

bool holds_row(const nlohmann::json& table, const std::string& machine, const std::string& kernel,
               const std::string& scheme) {
  return table.contains(machine) && table[machine].contains(kernel) &&
         table[machine][kernel].contains(scheme);
}

// "machine/kernel/scheme" of every row `now` has and `golden` lacks: a new kernel, scheme or
// machine that has no recorded figure yet.
std::vector<std::string> rows_without_figures(const nlohmann::json& golden,
                                              const nlohmann::json& now) {
  std::vector<std::string> missing;
  for (const auto& [machine, kernels] : now.items())
    for (const auto& [kernel, schemes] : kernels.items())
      for (const auto& [scheme, figures] : schemes.items())
        if (!holds_row(golden, machine, kernel, scheme))
          missing.push_back(machine + "/" + kernel + "/" + scheme);
  return missing;
}

// The failure message for `missing` (empty when nothing is missing).
std::string missing_rows_message(const std::vector<std::string>& missing) {
  if (missing.empty()) return "";
  std::string msg = std::to_string(missing.size()) + " simulated row(s) without recorded figures:";
  for (const auto& row : missing) msg += "\n  " + row;
  return msg + "\nRecord them (recorded rows stay as they are) with:\n  " + kRecordMissingRows;
}

// `golden` with the rows of `now` it lacks added; every recorded row kept as recorded.
nlohmann::json with_missing_rows(nlohmann::json golden, const nlohmann::json& now) {
  for (const auto& [machine, kernels] : now.items())
    for (const auto& [kernel, schemes] : kernels.items())
      for (const auto& [scheme, figures] : schemes.items())
        if (!holds_row(golden, machine, kernel, scheme)) golden[machine][kernel][scheme] = figures;
  return golden;
}

nlohmann::json compute_table() {
  nlohmann::json table = nlohmann::json::object();
  for (const auto& machine : golden_machines())
    for (const auto& k : kernel_drivers())
      for (const auto& scheme : k.schemes) {
        SimRunSpec spec;
        spec.run = golden_params(k, scheme);
        spec.machine = machine.params;
        try {
          find_sim_kernel(k.name).check(spec.run);
        } catch (const Error&) {
          continue;  // native-only (pmemobj)
        }
        table[machine.name][k.name][scheme] = figures_of(spec);
      }
  return table;
}

TEST(SimGolden, EveryKernelAndSchemeMatchesTheRecordedFigures) {
  const nlohmann::json now = compute_table();
  const char* update = std::getenv("PMLAB_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) != "new") {
    std::ofstream(kGoldenPath) << now.dump(1) << "\n";
    GTEST_SKIP() << "wrote " << kGoldenPath;
  }
  std::ifstream in(kGoldenPath);
  ASSERT_TRUE(in) << "no golden table at " << kGoldenPath;
  const nlohmann::json golden = nlohmann::json::parse(in);
  in.close();
  if (update != nullptr) {  // "new": add the missing rows only
    std::ofstream(kGoldenPath) << with_missing_rows(golden, now).dump(1) << "\n";
    GTEST_SKIP() << "added " << rows_without_figures(golden, now).size() << " row(s) to "
                 << kGoldenPath;
  }
  // Every simulated row has recorded figures: a new row is recorded, not silently unchecked.
  EXPECT_EQ(missing_rows_message(rows_without_figures(golden, now)), "");
  std::size_t rows = 0;
  for (const auto& [machine, kernels] : golden.items())
    for (const auto& [kernel, schemes] : kernels.items())
      for (const auto& [scheme, figures] : schemes.items()) {
        ++rows;
        ASSERT_TRUE(now.contains(machine) && now[machine].contains(kernel) &&
                    now[machine][kernel].contains(scheme))
            << machine << " " << kernel << " " << scheme << " is no longer simulated";
        std::string where = machine + "/" + kernel + "/" + scheme;
        EXPECT_TRUE(covers(figures, now[machine][kernel][scheme], where)) << where;
      }
  // Every kernel × simulable scheme on both machines (6 kernels, 39 simulable schemes today).
  EXPECT_GE(rows, 2u * 39u);
}

// The check above on a table that lacks one row of a simulated one: it names the row and the
// command that records it, and that command's merge adds the row and changes no other.
TEST(SimGolden, ARowWithoutRecordedFiguresIsNamedWithTheCommandThatRecordsIt) {
  const nlohmann::json now = {
      {"pact17", {{"tmm", {{"lp", {{"cycles", 7}}}, {"base", {{"cycles", 5}}}}}}}};
  nlohmann::json golden = now;
  golden["pact17"]["tmm"].erase("lp");
  golden["pact17"]["tmm"]["base"]["cycles"] = 6;  // a recorded figure the merge must keep
  EXPECT_EQ(rows_without_figures(golden, now), std::vector<std::string>{"pact17/tmm/lp"});
  const std::string msg = missing_rows_message(rows_without_figures(golden, now));
  EXPECT_NE(msg.find("pact17/tmm/lp"), std::string::npos) << msg;
  EXPECT_NE(msg.find(kRecordMissingRows), std::string::npos) << msg;
  EXPECT_EQ(missing_rows_message(rows_without_figures(now, now)), "");
  const nlohmann::json merged = with_missing_rows(golden, now);
  EXPECT_EQ(merged["pact17"]["tmm"]["lp"], now["pact17"]["tmm"]["lp"]);
  EXPECT_EQ(merged["pact17"]["tmm"]["base"]["cycles"], 6);
  // A whole machine or kernel the table lacks is missing row by row.
  EXPECT_EQ(rows_without_figures(nlohmann::json::object(), now).size(), 2u);
}

}  // namespace
}  // namespace pmlab::run
