// `pmlab crash`: power-failure campaigns in the simulator, with replay of any failed trial.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "build_info.hpp"
#include "commands.hpp"
#include "interrupt.hpp"
#include "kernel_options.hpp"
#include "machine_options.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/core/progress.hpp"
#include "pmlab/core/strong_types.hpp"
#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/lp/checksum_param.hpp"
#include "pmlab/sim/machine_file.hpp"
#include "pmlab/sim/machine_params.hpp"

namespace pmlab::cli {
namespace {

// Campaign default machine: lp-isca18 with 2 cores, L1 4 KiB, no private L2, LLC 32 KiB, so
// that CI-sized problems evict (the interesting crashes); rows declaring cp-barrier-after-write
// keep the preset's caches (the command's callback). Every machine option can change it.
MachineArgs campaign_machine() {
  MachineArgs m;
  m.settings = {{"cores", "2"}, {"l1-size", "4096"}, {"l2-size", "0"}, {"llc-size", "32768"}};
  return m;
}

// The campaign's 32 KiB LLC holds whole sets of the machine's ways: the most sets that fit
// (haswell-ep's 20 ways: 25 sets, 32,000 bytes). A machine that cannot be built is left as
// given, for the campaign to report.
void fit_campaign_llc(MachineArgs& m) {
  constexpr std::uint64_t kCampaignLlc = 32768;
  sim::MachineSettings without = m.settings;
  without.erase("llc-size");
  try {
    const std::uint64_t way_line = sim::machine_from(m.config, without).llc.ways * kCacheLineBytes;
    m.settings.set("llc-size", way_line * std::max<std::uint64_t>(1, kCampaignLlc / way_line));
  } catch (const Error&) {
  }
}

// The campaigns' default image models (experiments::kDefaultImageModels), by name.
std::vector<std::string> default_image_names() {
  std::vector<std::string> names;
  for (const auto m : experiments::kDefaultImageModels)
    names.emplace_back(experiments::to_string(m));
  return names;
}

struct CrashArgs {
  std::string kernel;
  std::string scheme = "lp";
  std::uint64_t n = 64;
  std::uint64_t bs = 8;
  std::uint32_t threads = 2;
  std::string checksum = "modular";
  std::uint64_t trials = 200;
  std::optional<std::uint64_t> seed;
  KernelOptions kernel_options;  // the kernel's own parameters (--width, ...)
  std::string flush = "clflushopt";
  double recovery_crash_rate = 0.3;
  int jobs = experiments::kDefaultCampaignJobs;
  MachineArgs machine = campaign_machine();
  std::vector<std::string> images = default_image_names();
  std::string mutate = "none";
  bool controls = true;
  bool quiet = false;  // no progress bar
  std::optional<std::uint64_t> replay;
  std::vector<std::uint64_t> replay_recovery;
  std::string replay_image = "cache";
  std::uint64_t replay_image_seed = 0;
  bool per_trial = false;
  bool model_recovery = false;
  bool sim_tail = false;
  bool one_fork_per_trial = false;
  bool json = false;
  // Whether a negative control may move to smaller caches / more cores and threads to expose
  // its mutant (set by the command's callback: off where the user chose them).
  bool controls_may_change_caches = true;
  bool controls_may_change_threads = true;
};

sim::FlushMode flush_mode(const std::string& s) {
  if (s == "clflushopt") return sim::FlushMode::kClflushopt;
  if (s == "clwb") return sim::FlushMode::kClwb;
  if (s == "clflush") return sim::FlushMode::kClflush;
  throw Error(ErrorCode::kInvalidArgument, "--flush must be clflushopt, clwb or clflush");
}

run::SimRunSpec make_spec(const CrashArgs& a) {
  run::SimRunSpec spec;
  spec.run.kernel = a.kernel;
  spec.run.scheme = a.scheme;
  spec.run.n = a.n;
  spec.run.bs = a.bs;
  spec.run.threads = a.threads;
  lp::set_checksum(spec.run, lp::checksum_kind_from_string(a.checksum));
  a.kernel_options.apply(spec.run);
  spec.machine = build_machine(a.machine);
  spec.flush = flush_mode(a.flush);
  run::validate(spec);
  // Scratch arrays on /dev/shm and memory for every forked trial: refused before anything runs.
  run::require_scratch_room(spec, 1 + static_cast<std::uint64_t>(std::max(a.jobs, 0)));
  apply_periodic_flush(a.machine, spec);  // a percentage: of the fault-free run's cycles
  return spec;
}

// The resolved cleaning period is repeated in cycles: no calibration run on replay. `step`: a
// control's own machine over the campaign's, repeated in the command.
std::string replay_command(const CrashArgs& a, const run::SimRunSpec& spec,
                           const experiments::TrialResult& t,
                           const experiments::ExposingStep& step = {}) {
  MachineArgs machine = a.machine;
  for (const auto& [flag, value] : step.settings.items()) machine.settings.set(flag, value);
  std::string cmd = fmt::format(
      "pmlab crash {} --scheme {} --n {} --bs {} --threads {} --checksum {} {} --flush {} "
      "--replay {}",
      a.kernel, a.scheme, a.n, a.bs, step.threads > 0 ? step.threads : a.threads, a.checksum,
      machine_flags(machine), a.flush, t.crash_op);
  if (const auto period = spec.machine.periodic_flush_cycles.value(); period > 0)
    cmd += fmt::format(" --periodic-flush {}", period);
  cmd += a.kernel_options.as_flags();
  if (a.mutate != "none") cmd += fmt::format(" --mutate {}", a.mutate);
  for (auto k : t.recovery_crashes) cmd += fmt::format(" --replay-recovery {}", k);
  cmd += fmt::format(" --replay-image {}", experiments::to_string(t.image));
  if (experiments::perturbs(t.image)) cmd += fmt::format(" --replay-image-seed {}", t.image_seed);
  return cmd;
}

std::vector<experiments::ImageModel> image_models(const std::vector<std::string>& names) {
  std::vector<experiments::ImageModel> out;
  for (const auto& n : names) {
    const auto m = experiments::image_model_from_string(n);
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  }
  return out;
}

int do_crash(const CrashArgs& a) {
  auto spec = make_spec(a);
  if (a.machine.dump_config) {
    dump_machine(spec.machine);
    return kExitOk;
  }
  const auto mutation = experiments::mutation_from_string(a.mutate);
  // An epoch-engine mutant is caught by the persist-order oracle (the image check alone sees it
  // only when a crash lands in the window it opens): on, as --check-order would.
  if (mem::epoch_engine_mutation(mutation)) spec.machine.persistency.check_order = true;
  experiments::require_crash_safe(spec);  // before anything runs: usage errors
  experiments::require_applicable(spec, mutation);
  auto images = image_models(a.images);
  // Under a hardware barrier (lb*) the default is the cache image alone: any-dirty ignores the
  // epoch order the hardware guarantees (run_campaign refuses it; docs/bep.md).
  if (spec.machine.persistency.hardware() && a.images == CrashArgs{}.images)
    images = {experiments::ImageModel::kCache};
  if (a.replay) {
    auto t = experiments::replay_trial(spec, *a.replay, a.replay_recovery,
                                       {experiments::image_model_from_string(a.replay_image),
                                        a.replay_image_seed, mutation, a.model_recovery});
    if (a.json) {
      nlohmann::json j{{"crash_op", t.crash_op},
                       {"recovery_crashes", t.recovery_crashes},
                       {"crashes_in_recovery", t.crashes_in_recovery},
                       {"crashes_in_resumed_run", t.crashes_in_resumed_run},
                       {"image", experiments::to_string(t.image)},
                       {"mutation", mem::to_string(mutation)},
                       {"passed", t.passed},
                       {"failure", t.failure},
                       {"regions_recomputed", t.recovery.regions_recomputed},
                       {"recovery_ops", t.recovery_ops}};
      fmt::print("{}\n", with_meta(j).dump(2));
    } else {
      fmt::print(
          "replay crash at op {} ({} image; later crashes: {} in recovery, {} in the "
          "resumed run): {}{}\n",
          t.crash_op, experiments::to_string(t.image), t.crashes_in_recovery,
          t.crashes_in_resumed_run, t.passed ? "PASSED" : "FAILED: ", t.failure);
    }
    return t.passed ? kExitOk : kExitVerifyFailed;
  }
  experiments::CampaignOptions opt;
  opt.spec = spec;
  opt.trials = a.trials;
  opt.seed = a.seed ? *a.seed : std::random_device{}();
  opt.recovery_crash_rate = a.recovery_crash_rate;
  opt.jobs = a.jobs;
  opt.model_last_recovery = a.model_recovery;
  opt.native_tail = !a.sim_tail;
  opt.batch_trials = !a.one_fork_per_trial;
  opt.images = images;
  opt.mutation = mutation;
  opt.controls_may_change_caches = a.controls_may_change_caches;
  opt.controls_may_change_threads = a.controls_may_change_threads;
  ProgressBar bar(fmt::format("crash {} {}", a.kernel, a.scheme), a.trials,
                  progress_wanted(a.quiet));
  opt.progress = [&](std::uint64_t done, std::uint64_t) { bar.update(done); };
  auto r = experiments::run_campaign(opt);
  bar.finish();
  // Negative controls: the same campaign (seed, trials, images) on each mutant it must catch.
  std::vector<experiments::ControlResult> controls;
  const bool with_controls = a.controls && mutation == mem::Mutation::kNone;
  if (with_controls) controls = experiments::run_controls(opt);
  auto j = experiments::to_json(r, a.per_trial);
  j["seed"] = opt.seed;
  // Every declared parameter's effective value, as a machine file holds it.
  j["machine_parameters"] = sim::to_machine_file(spec.machine);
  if (with_controls) {
    j["controls"] = experiments::to_json(controls);
    // An unmutated trial that failed on a control's own machine, with the command that replays it.
    nlohmann::json failed = nlohmann::json::array();
    std::vector<std::string> seen;
    for (const auto& c : controls) {
      if (!c.own_machine() || std::find(seen.begin(), seen.end(), c.machine.name) != seen.end())
        continue;
      seen.push_back(c.machine.name);
      for (const auto& t : c.unmutated_failures)
        failed.push_back({{"trial", t.index},
                          {"machine", c.machine.name},
                          {"crash_op", t.crash_op},
                          {"failure", t.failure},
                          {"replay", replay_command(a, c.unmutated_spec, t, c.machine)}});
    }
    j["controls"]["unmutated_failed_trials"] = failed;
  }
  if (a.json) {
    for (auto& f : j["failures"])
      f["replay"] = replay_command(a, spec, r.results[f["trial"].get<std::size_t>()]);
    fmt::print("{}\n", with_meta(j).dump(2));
  } else {
    fmt::print(
        "crash campaign {} --scheme {} n={} bs={} threads={} seed={}: {} / {} trials bit-exact "
        "({:.0f} trials/s, {})\n",
        a.kernel, a.scheme, a.n, a.bs, a.threads, opt.seed, r.passed, r.trials,
        r.trials_per_second(),
        r.jobs == 0 ? std::string("sequential")
        : r.batched_trials > 0
            ? fmt::format("{} forked at once, {} in {} batches ({} cut again)", r.jobs,
                          r.batched_trials, r.batches, r.batched_cut_again)
            : fmt::format("{} forked at once", r.jobs));
    std::string per_model;
    for (const auto& x : experiments::tally_by_image(r))
      per_model += fmt::format("{}{} {}/{}", per_model.empty() ? "" : ", ",
                               experiments::to_string(x.image), x.passed, x.trials);
    fmt::print("  crash images: {}{}\n", per_model,
               r.mutation == mem::Mutation::kNone
                   ? std::string()
                   : fmt::format(" (mutant {}: a campaign that detects it has failures)",
                                 mem::to_string(r.mutation)));
    fmt::print(
        "  fault-free run: {} ops, {} cycles, {} region commits, {} fences; later crashes: {} "
        "inside a recovery, {} in the resumed run ({} recoveries measured, {} non-empty)\n",
        r.fault_free_ops, r.fault_free_cycles, r.commits, r.fences,
        j["crashes_during_recovery"].get<std::uint64_t>(),
        j["crashes_in_resumed_run"].get<std::uint64_t>(),
        j["recoveries_measured"].get<std::uint64_t>(),
        j["recoveries_measured_nonempty"].get<std::uint64_t>());
    if (r.helper_requests > 0)
      fmt::print(
          "  first crash by phase (seed 002 helper core, {} requests): inside the helper's "
          "flushes {}/{} passed, within 2 ops of a fence (commit words) {}/{}, elsewhere {}/{}\n",
          r.helper_requests, r.in_helper.passed, r.in_helper.trials, r.near_fence.passed,
          r.near_fence.trials, r.elsewhere.passed, r.elsewhere.trials);
    fmt::print(
        "  recovery work (ops): median {}, p90 {}, max {}; unnecessary recomputations (R3): {}\n",
        j["recovery_ops"]["median"].get<std::uint64_t>(),
        j["recovery_ops"]["p90"].get<std::uint64_t>(),
        j["recovery_ops"]["max"].get<std::uint64_t>(),
        j["unnecessary_recomputations"].get<std::uint64_t>());
    fmt::print(
        "  regions recomputed by recovery: median {}, p90 {}, max {}; redone in all (recovery + "
        "resumed run): median {}, p90 {}, max {}\n",
        j["regions_recomputed"]["median"].get<std::uint64_t>(),
        j["regions_recomputed"]["p90"].get<std::uint64_t>(),
        j["regions_recomputed"]["max"].get<std::uint64_t>(),
        j["regions_redone"]["median"].get<std::uint64_t>(),
        j["regions_redone"]["p90"].get<std::uint64_t>(),
        j["regions_redone"]["max"].get<std::uint64_t>());
    fmt::print(
        "  outer iterations finished before a crash and run again after it: median {}, p90 "
        "{}, max {}\n",
        j["outer_iterations_redone"]["median"].get<std::uint64_t>(),
        j["outer_iterations_redone"]["p90"].get<std::uint64_t>(),
        j["outer_iterations_redone"]["max"].get<std::uint64_t>());
    if (with_controls) {
      std::string each;
      for (const auto& c : controls)
        each += fmt::format("{}{} {}/{} trials failed{}{}{}", each.empty() ? "" : ", ",
                            mem::to_string(c.mutation), c.failed, c.trials,
                            c.campaigns > 1 ? fmt::format(" in {} campaigns", c.campaigns) : "",
                            c.own_machine() ? fmt::format(" on {}", c.machine.name) : "",
                            c.not_reached.empty() ? "" : " (not reached)");
      if (controls.empty())
        fmt::print("  negative controls: none apply to {} here ({})\n", a.scheme,
                   spec.machine.persistency.hardware()
                       ? "its code neither flushes nor fences under a hardware barrier; the epoch "
                         "engine's own mutants are tested by "
                         "SimOracleProperty.EveryMechanismMutantIsCaught"
                       : "its row declares none: no persistence protocol");
      else
        fmt::print(
            "  negative controls (same campaign on deliberately broken protocols): detects "
            "{}/{} mutants ({})\n",
            experiments::mutants_detected(controls), experiments::mutants_reached(controls), each);
      for (const auto& c : controls)
        if (!c.not_reached.empty())
          fmt::print("  negative control {} missed but not reached, so not counted: {}\n",
                     mem::to_string(c.mutation), c.not_reached);
      // The machines the controls ran on: the campaign's, or the first machine of their ladder
      // that failed a trial (each with the unmutated campaign run there once).
      std::vector<std::string> seen;
      for (const auto& c : controls) {
        if (!c.own_machine() || std::find(seen.begin(), seen.end(), c.machine.name) != seen.end())
          continue;
        seen.push_back(c.machine.name);
        std::string names;
        for (const auto& d : controls)
          if (d.own_machine() && d.machine.name == c.machine.name)
            names += fmt::format("{}{}", names.empty() ? "" : ", ", mem::to_string(d.mutation));
        fmt::print(
            "  controls on {} (the campaign's machine with{}{}; the first machine that exposed "
            "them): {}; unmutated there {} / {} trials bit-exact\n",
            c.machine.name, c.machine.settings.flags(),
            c.machine.threads > 0 ? fmt::format(" --threads {}", c.machine.threads) : "", names,
            c.unmutated_passed, c.unmutated_trials);
        for (const auto& t : c.unmutated_failures)
          fmt::print("  FAILED unmutated trial {} on {} ({} crash at op {}): {}\n    replay: {}\n",
                     t.index, c.machine.name, experiments::to_string(t.kind), t.crash_op, t.failure,
                     replay_command(a, c.unmutated_spec, t, c.machine));
      }
    }
    if (r.periodic_flush_cycles > 0)
      fmt::print("  periodic flush every {} cycles: at most {} region commits in any such window\n",
                 r.periodic_flush_cycles, r.max_commits_per_period);
    for (const auto& t : r.results)
      if (!t.passed)
        fmt::print("  FAILED trial {} ({} crash at op {}): {}\n    replay: {}\n", t.index,
                   experiments::to_string(t.kind), t.crash_op, t.failure,
                   replay_command(a, spec, t));
  }
  if (r.passed != r.trials) return kExitVerifyFailed;
  if (with_controls && experiments::unmutated_failures(controls) > 0) {
    fmt::print(stderr,
               "pmlab: {} unmutated trials failed on a machine a negative control ran on "
               "(replay commands above; exit {})\n",
               experiments::unmutated_failures(controls), kExitVerifyFailed);
    return kExitVerifyFailed;
  }
  if (with_controls &&
      experiments::mutants_detected(controls) < experiments::mutants_reached(controls)) {
    // Skewed images reach the corners a validation or commit bug needs (all of an iteration's
    // checksums durable, one data line not) far more often than any-dirty's 1/2 per line.
    const bool skewed =
        std::find(images.begin(), images.end(), experiments::ImageModel::kSkewed) != images.end();
    for (const auto& c : controls)
      if (!c.detected() && c.not_reached.empty())
        fmt::print(stderr,
                   "pmlab: negative control {} not detected: 0 of its {} trials failed ({} "
                   "campaigns, the last ones added because none had failed), so these passes "
                   "cannot rule that bug out (more --trials{}; exit {})\n",
                   mem::to_string(c.mutation), c.trials, c.campaigns,
                   spec.machine.persistency.hardware() ? ""
                   : skewed                            ? " or other --images"
                            : ", or add skewed images: --images cache,any-dirty,skewed",
                   kExitControlMissed);
    return kExitControlMissed;
  }
  return kExitOk;
}

}  // namespace

void add_crash_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<CrashArgs>();
  auto* cmd = app.add_subcommand(
      "crash",
      "Power-failure campaign in the simulator: each trial cuts the power at a random op "
      "(uniform, plus the corners: first/last op, just before/after/inside a region commit, "
      "before/after a fence and between two, i.e. inside log and index updates), "
      "restores memory from the NVM image, clears the caches, runs the scheme's recovery "
      "(itself cut again at random in some trials) and the rest of the run, and compares the "
      "result with the fault-free one bit for bit. Exit 1 if any trial fails; each failure "
      "prints a command that replays it exactly. Exit 5 if every trial passed but a negative "
      "control (a mutant the scheme declares) was not detected.");
  cmd->add_option("kernel", a->kernel, "Kernel (tmm, ...)")->required();
  cmd->add_option("--scheme", a->scheme, "Persistency scheme")->capture_default_str();
  cmd->add_option("--n", a->n, "Problem size")->capture_default_str();
  cmd->add_option("--bs", a->bs, "Block size")->capture_default_str();
  cmd->add_option("--threads", a->threads, "Logical threads")->capture_default_str();
  cmd->add_option("--checksum", a->checksum, "LP checksum kind")->capture_default_str();
  cmd->add_option("--trials", a->trials, "Number of crash trials")
      ->capture_default_str()
      ->check(CLI::Range(1u, 10'000'000u));
  cmd->add_option("--seed", a->seed, "Campaign seed (default: random, printed for replay)");
  a->kernel_options.add_to(*cmd);
  cmd->add_option("--flush", a->flush, "Flush instruction of the eager schemes")
      ->capture_default_str();
  cmd->add_option("--recovery-crash-rate", a->recovery_crash_rate,
                  "Chance that a restart is cut again (up to 3 times per trial)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--jobs", a->jobs,
                  "Trials at once, each a fork()ed child of one fault-free simulation that cuts "
                  "the power at its crash point; 0 = a fresh simulation per trial in this "
                  "process (slower, identical results)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  cmd->add_option("--images", a->images,
                  "Crash image models, trials alternating between them: 'cache' (what the "
                  "simulated caches wrote back: their LRU evictions, flushes, cleaning) and "
                  "'any-dirty' (adversarial: each flush not yet fenced may be lost and each "
                  "dirty line may have reached NVM, independently, each with probability 1/2); "
                  "'skewed' (any-dirty with one probability per image, drawn uniformly: images "
                  "where almost every dirty line reached NVM, or almost none, which a recovery "
                  "that trusts a commit record or checksum too early must survive; "
                  "docs/crash-campaigns.md). A hardware persist barrier (--barrier lb*) allows "
                  "'cache' only and makes it the default")
      ->capture_default_str()
      ->check(CLI::IsMember({"cache", "any-dirty", "skewed"}))
      ->delimiter(',');
  std::vector<std::string> mutations{"none"};
  for (const mem::Mutation m : mem::kAllMutations) mutations.emplace_back(mem::to_string(m));
  cmd->add_option("--mutate", a->mutate,
                  "Test aid (negative control): run a deliberately broken protocol, which the "
                  "campaign should detect (exit 1). Only the mutations the scheme's row declares "
                  "are accepted (others: exit 2, naming them). no-flush / no-fence: the "
                  "simulator drops every flush / fence; no-validate: LP recovery trusts every "
                  "written checksum slot; commit-early: the undo log's flag is cleared and a "
                  "checkpoint published before the data they commit are durable (WAL, "
                  "checkpoint); cp-no-flush / cp-no-sfence: the copy of cp-clflush, "
                  "cp-par-clflush, cp-nt and cp-nt-async is never flushed / never fenced "
                  "before the publish; cp-barrier-after-write (cp-nt-async): the helper's "
                  "barrier and the publish come after the next iteration's stores; "
                  "ipv-commit-before-flush / ipv-barrier-after-write / ipv-skip-flush (ipv, "
                  "ipv-sync): the commit word is persisted before the working version is "
                  "flushed / the barrier and commit come after the next iteration's first panel "
                  "/ the working version's last panel is never flushed; lb-no-intra-flush, "
                  "lb-no-replacement-order, lb-no-split, lb-per-bank-no-arbiter, "
                  "idt-ignore-deps, idt-dep-only-waw (under --barrier lb*, each tx row the ones "
                  "its campaign can expose; no-split, idt- only with IDT): the epoch engine breaks "
                  "one of its rules "
                  "(docs/simulator.md); "
                  "the campaign then also runs the persist-order oracle")
      ->capture_default_str()
      ->check(CLI::IsMember(mutations));
  cmd->add_flag("--quiet", a->quiet,
                "No progress bar (it is drawn only when stderr is a terminal)");
  cmd->add_flag("--no-progress", a->quiet)->group("");  // sim's old spelling, hidden
  cmd->add_flag("!--no-controls", a->controls,
                "Skip the negative controls (by default the same campaign is rerun on every "
                "mutant the scheme must detect, and the detection count printed)");
  cmd->add_option("--replay", a->replay, "Replay one trial: crash before this op");
  cmd->add_option("--replay-recovery", a->replay_recovery,
                  "With --replay: crash again before this op (repeatable)");
  cmd->add_option("--replay-image", a->replay_image, "With --replay: the trial's image model")
      ->capture_default_str()
      ->check(CLI::IsMember({"cache", "any-dirty", "skewed"}));
  cmd->add_option("--replay-image-seed", a->replay_image_seed,
                  "With --replay-image any-dirty or skewed: the trial's image seed");
  cmd->add_flag("--per-trial", a->per_trial, "With --json: list every trial, not only failures");
  cmd->add_flag("--model-recovery", a->model_recovery,
                "Simulate the restart after each trial's last crash with the cache model too, so "
                "that its recovery's cycles are measured (--json --per-trial: recovery_cycles). "
                "By default that restart runs unmodelled: only its result is compared, and "
                "trials run several times faster. Results and every other figure are the same");
  cmd->add_flag("--sim-tail", a->sim_tail,
                "Run the rest of each trial after its last recovery in the simulator (without "
                "its cache model) instead of natively. Slower; results and counts are the same "
                "(a check of the native tail)");
  cmd->add_flag("--one-fork-per-trial", a->one_fork_per_trial,
                "Fork every trial at its crash point. By default trials run in batches, one child "
                "per batch, from the crash images the campaign kept (fewer fork()s; the same "
                "results); a trial whose restart is cut again joins a batch only on machines "
                "where nothing a power failure leaves behind (the clocks, which periodic cleaning, "
                "PreFlush and the helper core follow; persist barriers' epochs) can change what "
                "follows it. A measurement aid");
  cmd->add_flag("--json", a->json, "Print JSON");
  // Small caches by default so CI-sized runs evict (the interesting crashes).
  add_machine_options(*cmd, a->machine);
  cmd->callback([a, cmd, &exit_code] {
    // A machine file is the user's whole machine: the campaign's small-cache defaults apply to
    // presets only, and to a file only where given on the command line.
    const auto keep_unless_given = [&] {
      for (const char* flag : {"l1-size", "l2-size", "llc-size"})
        if (cmd->get_option(std::string("--") + flag)->count() == 0)
          a->machine.settings.erase(flag);
    };
    // The user's choices win: a cache flag or a machine file keeps every negative control on
    // the campaign's caches, --cores or --threads on its cores and threads; otherwise each
    // control runs on the first machine of its ladder that exposes its mutant
    // (experiments::exposing_ladder).
    a->controls_may_change_caches = !sim::is_machine_file_path(a->machine.config);
    for (const char* flag : {"l1-size", "l1-ways", "l2-size", "l2-ways", "llc-size", "llc-ways"})
      if (cmd->get_option(std::string("--") + flag)->count() > 0)
        a->controls_may_change_caches = false;
    a->controls_may_change_threads = a->controls_may_change_caches &&
                                     cmd->get_option("--cores")->count() == 0 &&
                                     cmd->get_option("--threads")->count() == 0;
    if (sim::is_machine_file_path(a->machine.config)) {
      if (cmd->get_option("--cores")->count() == 0) a->machine.settings.erase("cores");
      keep_unless_given();
    } else if (experiments::keeps_preset_caches(a->kernel, a->scheme)) {
      // A row declaring cp-barrier-after-write keeps the preset's caches, as its eval and test
      // campaigns do (experiments::control_machine): behind small ones the helper's copy always
      // ends first and that control could never fail (docs/seed002.md, "cp-nt-async").
      keep_unless_given();
    } else if (cmd->get_option("--llc-size")->count() == 0) {
      fit_campaign_llc(a->machine);
    }
    const InterruptScope interrupts(OnInterrupt::kExitNow);  // pools in memory, children die too
    exit_code = do_crash(*a);
  });
}

}  // namespace pmlab::cli
