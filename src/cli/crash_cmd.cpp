// `pmlab crash`: power-failure campaigns in the simulator, with replay of any failed trial.
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "interrupt.hpp"
#include "kernel_options.hpp"
#include "machine_options.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/core/progress.hpp"
#include "pmlab/experiments/crash_campaign.hpp"

namespace pmlab::cli {
namespace {

// Campaign default machine: lp-isca18 with 2 cores, L1 4 KiB, no private L2, LLC 32 KiB, so
// that CI-sized problems evict (the interesting crashes). Every machine option can change it.
MachineArgs campaign_machine() {
  MachineArgs m;
  m.cores = 2;
  m.l1_size = "4096";
  m.l2_size = "0";
  m.llc_size = "32768";
  return m;
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
  int jobs = run::kDefaultCampaignJobs;
  MachineArgs machine = campaign_machine();
  std::optional<std::uint64_t> replay;
  std::vector<std::uint64_t> replay_recovery;
  bool per_trial = false;
  bool json = false;
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
  spec.run.checksum = lp::checksum_kind_from_string(a.checksum);
  a.kernel_options.apply(spec.run);
  spec.machine = build_machine(a.machine);
  spec.flush = flush_mode(a.flush);
  run::validate(spec);
  apply_periodic_flush(a.machine, spec);  // a percentage: of the fault-free run's cycles
  return spec;
}

// The resolved cleaning period is repeated in cycles: no calibration run on replay.
std::string replay_command(const CrashArgs& a, const run::SimRunSpec& spec,
                           const run::TrialResult& t) {
  std::string cmd = fmt::format(
      "pmlab crash {} --scheme {} --n {} --bs {} --threads {} --checksum {} {} --flush {} "
      "--replay {}",
      a.kernel, a.scheme, a.n, a.bs, a.threads, a.checksum, machine_flags(a.machine), a.flush,
      t.crash_op);
  if (const auto period = spec.machine.periodic_flush_cycles.value(); period > 0)
    cmd += fmt::format(" --periodic-flush {}", period);
  cmd += a.kernel_options.as_flags();
  for (auto k : t.recovery_crashes) cmd += fmt::format(" --replay-recovery {}", k);
  return cmd;
}

int do_crash(const CrashArgs& a) {
  const auto spec = make_spec(a);
  if (a.replay) {
    auto t = run::replay_trial(spec, *a.replay, a.replay_recovery);
    if (a.json) {
      fmt::print("{}\n", nlohmann::json{{"crash_op", t.crash_op},
                                        {"recovery_crashes", t.recovery_crashes},
                                        {"passed", t.passed},
                                        {"failure", t.failure},
                                        {"regions_recomputed", t.recovery.regions_recomputed},
                                        {"recovery_ops", t.recovery_ops}}
                             .dump(2));
    } else {
      fmt::print("replay crash at op {} ({} crashes in recovery): {}{}\n", t.crash_op,
                 t.recovery_crashes.size(), t.passed ? "PASSED" : "FAILED: ", t.failure);
    }
    return t.passed ? kExitOk : kExitVerifyFailed;
  }
  run::CampaignOptions opt;
  opt.spec = spec;
  opt.trials = a.trials;
  opt.seed = a.seed ? *a.seed : std::random_device{}();
  opt.recovery_crash_rate = a.recovery_crash_rate;
  opt.jobs = a.jobs;
  ProgressBar bar(fmt::format("crash {} {}", a.kernel, a.scheme), a.trials);
  opt.progress = [&](std::uint64_t done, std::uint64_t) { bar.update(done); };
  auto r = run::run_campaign(opt);
  bar.finish();
  auto j = run::to_json(r, a.per_trial);
  j["seed"] = opt.seed;
  if (a.json) {
    for (auto& f : j["failures"])
      f["replay"] = replay_command(a, spec, r.results[f["trial"].get<std::size_t>()]);
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print(
        "crash campaign {} --scheme {} n={} bs={} threads={} seed={}: {} / {} trials bit-exact "
        "({:.0f} trials/s, {})\n",
        a.kernel, a.scheme, a.n, a.bs, a.threads, opt.seed, r.passed, r.trials,
        r.trials_per_second(),
        r.jobs > 0 ? fmt::format("{} forked at once", r.jobs) : std::string("sequential"));
    fmt::print(
        "  fault-free run: {} ops, {} cycles, {} region commits, {} fences; crashes inside "
        "recovery: {}\n",
        r.fault_free_ops, r.fault_free_cycles, r.commits, r.fences,
        j["crashes_during_recovery"].get<std::uint64_t>());
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
    if (r.periodic_flush_cycles > 0)
      fmt::print("  periodic flush every {} cycles: at most {} region commits in any such window\n",
                 r.periodic_flush_cycles, r.max_commits_per_period);
    for (const auto& t : r.results)
      if (!t.passed)
        fmt::print("  FAILED trial {} ({} crash at op {}): {}\n    replay: {}\n", t.index,
                   run::to_string(t.kind), t.crash_op, t.failure, replay_command(a, spec, t));
  }
  return r.passed == r.trials ? kExitOk : kExitVerifyFailed;
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
      "prints a command that replays it exactly.");
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
  cmd->add_option("--replay", a->replay, "Replay one trial: crash before this op");
  cmd->add_option("--replay-recovery", a->replay_recovery,
                  "With --replay: crash again before this op (repeatable)");
  cmd->add_flag("--per-trial", a->per_trial, "With --json: list every trial, not only failures");
  cmd->add_flag("--json", a->json, "Print JSON");
  // Small caches by default so CI-sized runs evict (the interesting crashes).
  add_machine_options(*cmd, a->machine);
  cmd->callback([a, &exit_code] {
    const InterruptScope interrupts(OnInterrupt::kExitNow);  // pools in memory, children die too
    exit_code = do_crash(*a);
  });
}

}  // namespace pmlab::cli
