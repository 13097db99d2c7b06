// Golden figures: simulated statistics of every kernel × simulable scheme, bit-identical to the
// table recorded in tests/golden/sim_golden.json, so a refactor or an optional model mechanism
// cannot move an existing figure unnoticed.
//
// Regenerate (only when a figure is meant to change, and say why in the commit):
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
  if (std::getenv("PMLAB_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(kGoldenPath) << now.dump(1) << "\n";
    GTEST_SKIP() << "wrote " << kGoldenPath;
  }
  std::ifstream in(kGoldenPath);
  ASSERT_TRUE(in) << "no golden table at " << kGoldenPath;
  const nlohmann::json golden = nlohmann::json::parse(in);
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

}  // namespace
}  // namespace pmlab::run
