// `pmlab eval`: the whole evaluation with a progress bar; Ctrl-C stops it and keeps a partial
// report.
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "build_info.hpp"
#include "commands.hpp"
#include "interrupt.hpp"
#include "machine_options.hpp"
#include "pmlab/core/progress.hpp"
#include "pmlab/experiments/eval.hpp"
#include "pmlab/sim/machine_file.hpp"

namespace pmlab::cli {
namespace {

struct EvalArgs {
  bool quick = false, full = false, json = false, quiet = false;
  std::string out = "results";
  std::uint64_t seed = 1;
  std::optional<std::string> config;        // --config: preset name or machine file
  std::vector<std::string> sections;        // --sections: empty = all
  std::vector<std::string> native_schemes;  // --native-schemes: empty = by mode
  int jobs = experiments::default_eval_jobs();
};

int do_eval(const EvalArgs& a) {
  experiments::EvalOptions opt;
  opt.full = a.full;
  opt.out_dir = a.out;
  opt.seed = a.seed;
  opt.meta = build_meta();
  opt.sections = a.sections;
  opt.native_schemes = a.native_schemes;
  opt.jobs = a.jobs;
  if (a.config) {
    // Loaded before anything runs: a bad file is a usage error (exit 2) naming file and key.
    opt.machine = sim::machine_from(*a.config);
    opt.machine->validate();
    opt.machine_name = *a.config;
  }
  // First Ctrl-C or SIGTERM: finish the current measurement, write the partial report, exit
  // 130. A second one ends the process at once.
  std::optional<InterruptScope> interrupts(std::in_place, OnInterrupt::kStopAfterStep);
  opt.stop = InterruptScope::stop_flag();
  ProgressBar bar(a.full ? "eval --full" : "eval --quick", 1000, progress_wanted(a.quiet));
  std::string current;
  opt.progress = [&](double frac, double, const std::string& what) {
    // Without a terminal, one line per step instead of the bar (a log still shows progress).
    if (what != current && !isatty(STDERR_FILENO) && !a.json && !a.quiet)
      fmt::print(stderr, "eval: {}\n", what);
    current = what;
    bar.set_detail(what);
    bar.update(static_cast<std::uint64_t>(frac * 1000));
  };
  auto results = experiments::run_eval(opt);
  bar.finish();
  interrupts.reset();
  if (a.json) {
    fmt::print("{}\n", with_meta(results).dump(2));
  } else {
    fmt::print("\n{}\n", experiments::render_headline(results));
    const nlohmann::json partial = results.value("partial_sections", nlohmann::json::array());
    fmt::print("{} in {:.0f} s. Report: {}/report.md, data: {}/results.json, figures: {}\n",
               results["complete"].get<bool>()
                   ? std::string("Evaluation complete")
                   : fmt::format("Evaluation INCOMPLETE (partial report; unfinished: {})",
                                 fmt::join(partial, ", ")),
               results["wall_seconds"].get<double>(), a.out, a.out, results["figures"].size());
  }
  if (results.contains("figures_error"))
    fmt::print(stderr, "pmlab: warning: no figures: {}\n",
               results["figures_error"].get<std::string>());
  const bool complete = results["complete"].get<bool>();
  for (const auto& f : results["failed_checks"])
    fmt::print(stderr, "eval: FAILED {}\n", f.get<std::string>());
  if (!complete) return kExitInterrupted;
  return results["failed_checks"].empty() ? kExitOk : kExitVerifyFailed;
}

}  // namespace

void add_eval_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand(
      "eval",
      "The papers' evaluation reproduced in one command: native time overhead of every scheme "
      "vs base per kernel, simulated cycles and NVM writes under lp-isca18 and pact17, crash "
      "campaigns per kernel x scheme, the checksum accuracy/overhead study, and sensitivity "
      "studies (LLC size, NVM latency, threads). Writes DIR/results.json, DIR/report.md (papers' "
      "numbers side by side) and PNG figures. Ctrl-C stops after the current measurement and "
      "still writes a (partial) report. Exit codes: 0 every check passed, 1 a crash trial failed "
      "or a result was not bit-exact (listed on stderr and in results.json's failed_checks), "
      "130 incomplete: interrupted by Ctrl-C or SIGTERM, or a section carried over from an earlier "
      "run into DIR that was itself interrupted (partial report written; results.json's "
      "partial_sections names the unfinished sections).");
  auto* q = cmd->add_flag("--quick", a->quick, "Small sizes, a few minutes on 2 cores (default)");
  cmd->add_flag("--full", a->full, "The papers' sizes (hours)")->excludes(q);
  cmd->add_option("--out", a->out, "Output directory")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed for inputs and crash campaigns")->capture_default_str();
  cmd->add_option("--config", a->config,
                  "Machine of the simulated kernel studies (sim, crash campaigns, sensitivity) "
                  "instead of the papers' lp-isca18 and pact17: a preset name or a machine file "
                  "(as `pmlab sim --config`; crash campaigns keep their small caches on top of "
                  "it; the seed-specific studies keep their papers' machines; docs/cli.md)");
  cmd->add_option("--sections", a->sections,
                  fmt::format("Run only these sections, comma-separated (known: {}). The other "
                              "sections are carried over from DIR/results.json when it holds an "
                              "evaluation of the same mode, seed and --config, and the report "
                              "names each one's origin, so `--full` (hours) can be run a few "
                              "sections at a time into one --out directory",
                              fmt::join(experiments::eval_sections(), ", ")))
      ->delimiter(',');
  cmd->add_option("--native-schemes", a->native_schemes,
                  "Schemes the native section times against base, comma-separated (default: lp "
                  "under --quick, every scheme under --full; a kernel without any of them gets no "
                  "native cell). `--full --sections native --native-schemes lp` measures the LP "
                  "paper's Table VII column at its sizes in about 20 minutes instead of hours")
      ->delimiter(',');
  cmd->add_option("--jobs", a->jobs,
                  "The timed steps (native runs, the checksum's time overhead) run first, one by "
                  "one with nothing else of the evaluation running; then the untimed ones "
                  "(simulations, crash campaigns, instruction counts) run in this many processes "
                  "at once. Default: the cores pmlab may use. 1: every step in one process, in "
                  "plan order. The figures do not depend on it")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--json", a->json, "Print the results document as JSON");
  cmd->add_flag("--quiet", a->quiet,
                "No progress bar, and no step lines when stderr is not a terminal");
  cmd->add_flag("--no-progress", a->quiet)->group("");  // sim's old spelling, hidden
  cmd->callback([a, &exit_code] { exit_code = do_eval(*a); });
}

}  // namespace pmlab::cli
