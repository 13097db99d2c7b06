// `pmlab eval`: the papers' evaluation in one command — native, simulated, crash, checksum,
// sensitivity.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/sim/params.hpp"

namespace pmlab::experiments {

struct EvalOptions {
  bool full = false;  // paper sizes (hours) instead of the quick default (minutes)
  std::string out_dir = "results";
  std::uint64_t seed = 1;
  // `pmlab eval --config`: the machine of the kernel studies (sim, crash campaigns,
  // sensitivity) in place of the papers' presets (lp-isca18 and pact17), named `machine_name`
  // in results.json and the report. Empty: the presets.
  std::optional<sim::SimParams> machine;
  std::string machine_name;
  // `pmlab eval --sections`: run only these sections (names from eval_sections()); empty: all.
  // A full evaluation takes hours, so it can be run a few sections at a time into one DIR: the
  // sections not run now are carried over from DIR/results.json when that file is of the same
  // mode, seed and machine (each marked in results["carried_over"] with its run's date and
  // revision, and named so in the report).
  std::vector<std::string> sections;
  // `pmlab eval --native-schemes`: the schemes the native section times (base is always the
  // reference); empty: LP under quick, every scheme under full. A full native section times
  // ~100 kernel x scheme cells of two minutes each, so the LP paper's Table VII column at its
  // sizes (`--full --sections native --native-schemes lp`) needs a way to run alone.
  std::vector<std::string> native_schemes;
  // `pmlab eval --jobs`: the timed steps (native runs) run first, alone, then the untimed ones
  // (simulations, crash campaigns, instruction counts) in this many forked processes at once. 1:
  // every step in this process, in plan order. The figures do not depend on it.
  int jobs = 1;
  // Put into results.json as "meta" (version, git revision, compiler, CPU, date: the CLI's).
  nlohmann::json meta;
  // Called with (fraction done, seconds left estimate, what is running now).
  std::function<void(double, double, const std::string&)> progress;
  // Polled between measurements; when it becomes true the evaluation stops and the report is
  // written from what was measured so far (Ctrl-C).
  const std::atomic<bool>* stop = nullptr;
};

// One kernel of the native section and the schemes it times against base (empty: every scheme
// of the kernel): LP under quick, everything under full, or what --native-schemes names.
struct NativeCell {
  std::string kernel;
  std::vector<std::string> schemes;
};
[[nodiscard]] std::vector<NativeCell> native_cells(const EvalOptions& opt);

// The default for `pmlab eval --jobs`: the cores this process may run on.
[[nodiscard]] int default_eval_jobs();

// The evaluation's sections, in the order they run.
[[nodiscard]] const std::vector<std::string>& eval_sections();

// Runs every section (or EvalOptions::sections), writes DIR/results.json, DIR/report.md and
// DIR/*.png (when matplotlib is available), and returns the results document. Throws
// kInvalidArgument for an unknown section name, before anything runs.
nlohmann::json run_eval(const EvalOptions& opt);

// Every verification in a results document that failed: a native scheme whose result was not
// bit-identical to base's, a crash campaign with failed trials, a declared negative control that
// its campaign did not detect. Empty when all passed; `pmlab eval` then exits 0, else 1. Stored as
// results["failed_checks"] by run_eval.
[[nodiscard]] std::vector<std::string> failed_checks(const nlohmann::json& results);

// The report from a results document (also used for partial results).
[[nodiscard]] std::string render_report(const nlohmann::json& results);
// The headline table printed to the terminal and at the top of report.md.
[[nodiscard]] std::string render_headline(const nlohmann::json& results);

}  // namespace pmlab::experiments
