// Runs `pmlab eval`'s steps: the ones that time the machine alone in this process, the others
// (simulations, instruction counts) in forked children, several at once.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pmlab::experiments {

// One unit of work: an estimate of its cost (relative seconds) and the function producing its
// result, appended to results[section].
struct EvalStep {
  std::string section, label;
  double weight = 1;
  std::function<nlohmann::json()> run;
  // Measures time on this machine (native runs, the checksum's time overhead): it runs with
  // nothing else of the evaluation running, since a sibling on the other core would be the
  // very noise the measurement's interval has to absorb.
  bool timed = false;
};

struct StepOutcome {
  nlohmann::json result;  // what the step returned, or {"error": why}
  double seconds = 0;     // the step's own wall time
};

struct StepRunOptions {
  // Untimed steps run in forked children, this many at once, after the timed ones. 1: every
  // step in this process, in plan order (no fork).
  int jobs = 1;
  // (fraction done, seconds left estimate, what is running now).
  std::function<void(double, double, const std::string&)> progress;
  // Polled between steps (and every 50 ms while children run); when it turns true nothing new
  // starts, running children are killed, and their steps count as not run.
  const std::atomic<bool>* stop = nullptr;
};

struct StepRun {
  std::vector<std::optional<StepOutcome>> outcomes;  // in plan order; empty: not run
  bool interrupted = false;
};

// With jobs > 1 the timed steps run first, one by one in this process, then the untimed ones in
// children (a simulation gives the same figures wherever it runs: it reads no clock and shares
// no state), so a timed step never has a sibling of the evaluation beside it. A child that dies
// without a result (a crash, a signal) is reported as that step's error; the others go on.
[[nodiscard]] StepRun run_steps(const std::vector<EvalStep>& steps, const StepRunOptions& opt);

}  // namespace pmlab::experiments
