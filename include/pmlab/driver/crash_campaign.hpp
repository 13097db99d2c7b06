// Power-failure crash campaigns in the simulator: crash, restore the NVM image, recover, finish,
// compare.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/driver/sim_run.hpp"

namespace pmlab::driver {

// Where in the run a trial cuts the power.
enum class CrashPointKind {
  kUniform,       // uniform over every op of the fault-free run
  kFirstOp,       // before the very first op
  kLastOp,        // before the last op
  kBeforeCommit,  // just before a region's checksum/commit store completes
  kAfterCommit,   // just after a region commit
  kInsideCommit,  // between the stores of one checksum-table slot
};
[[nodiscard]] const char* to_string(CrashPointKind k);

struct CampaignOptions {
  SimRunSpec spec;  // kernel run + machine (spec.verify is ignored)
  std::uint64_t trials = 200;
  std::uint64_t seed = 1;
  double recovery_crash_rate = 0.3;  // chance that a restart is itself cut (repeatedly)
  int max_recovery_crashes = 3;
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

struct TrialResult {
  std::uint64_t index = 0;
  CrashPointKind kind = CrashPointKind::kUniform;
  std::uint64_t crash_op = 0;                   // the op that did not happen
  std::vector<std::uint64_t> recovery_crashes;  // ops (absolute) of crashes inside recovery
  bool passed = false;
  std::string failure;                // first mismatch or exception text
  lp::RecoveryStats recovery;         // summed over every recovery of the trial
  std::uint64_t recovery_ops = 0;     // backend ops spent in recovery (last attempt)
  std::uint64_t recovery_cycles = 0;  // simulated cycles spent in recovery (last attempt)
};

struct CampaignResult {
  std::string kernel, scheme;
  std::uint64_t fault_free_ops = 0, commits = 0;
  std::uint64_t trials = 0, passed = 0;
  double seconds = 0;
  std::vector<TrialResult> results;
  [[nodiscard]] double trials_per_second() const { return seconds > 0 ? trials / seconds : 0; }
};

// Runs the campaign; every trial is deterministic given (seed, trial index), so a failure can be
// replayed with replay_trial().
[[nodiscard]] CampaignResult run_campaign(const CampaignOptions& opt);
// One trial with explicit crash points (first = the run's crash, rest = crashes inside recovery).
[[nodiscard]] TrialResult replay_trial(const SimRunSpec& spec, std::uint64_t crash_op,
                                       const std::vector<std::uint64_t>& recovery_crashes);

[[nodiscard]] nlohmann::json to_json(const CampaignResult& r, bool per_trial);

}  // namespace pmlab::driver
