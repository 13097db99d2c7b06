// `pmlab crash`: power-failure campaigns in the simulator, with replay of any failed trial.
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/core/progress.hpp"
#include "pmlab/driver/crash_campaign.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::cli {
namespace {

struct CrashArgs {
  std::string kernel;
  std::string scheme = "lp";
  std::string config = "lp-isca18";
  std::uint64_t n = 64;
  std::uint64_t bs = 8;
  std::uint32_t threads = 2;
  std::string checksum = "modular";
  std::uint64_t trials = 200;
  std::optional<std::uint64_t> seed;
  int cores = 2;
  std::uint64_t l1_size = 4096;
  std::uint64_t llc_size = 32768;
  std::string flush = "clflushopt";
  double recovery_crash_rate = 0.3;
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

driver::SimRunSpec make_spec(const CrashArgs& a) {
  driver::SimRunSpec spec;
  spec.run.kernel = a.kernel;
  spec.run.scheme = a.scheme;
  spec.run.n = a.n;
  spec.run.bs = a.bs;
  spec.run.threads = a.threads;
  spec.run.checksum = lp::checksum_kind_from_string(a.checksum);
  driver::MachineOverrides o;
  o.cores = a.cores;
  o.l1_size = a.l1_size;
  o.llc_size = a.llc_size;
  o.l2_size = 0;
  spec.machine = driver::machine_from(a.config, o);
  spec.flush = flush_mode(a.flush);
  driver::validate(spec);
  return spec;
}

std::string replay_command(const CrashArgs& a, const driver::TrialResult& t) {
  std::string cmd = fmt::format(
      "pmlab crash {} --scheme {} --n {} --bs {} --threads {} --checksum {} --config {} "
      "--cores {} --l1-size {} --llc-size {} --flush {} --replay {}",
      a.kernel, a.scheme, a.n, a.bs, a.threads, a.checksum, a.config, a.cores, a.l1_size,
      a.llc_size, a.flush, t.crash_op);
  for (auto k : t.recovery_crashes) cmd += fmt::format(" --replay-recovery {}", k);
  return cmd;
}

int do_crash(const CrashArgs& a) {
  const auto spec = make_spec(a);
  if (a.replay) {
    auto t = driver::replay_trial(spec, *a.replay, a.replay_recovery);
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
  driver::CampaignOptions opt;
  opt.spec = spec;
  opt.trials = a.trials;
  opt.seed = a.seed ? *a.seed : std::random_device{}();
  opt.recovery_crash_rate = a.recovery_crash_rate;
  ProgressBar bar(fmt::format("crash {} {}", a.kernel, a.scheme), a.trials);
  opt.progress = [&](std::uint64_t done, std::uint64_t) { bar.update(done); };
  auto r = driver::run_campaign(opt);
  bar.finish();
  auto j = driver::to_json(r, a.per_trial);
  j["seed"] = opt.seed;
  if (a.json) {
    for (auto& f : j["failures"])
      f["replay"] = replay_command(a, r.results[f["trial"].get<std::size_t>()]);
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print(
        "crash campaign {} --scheme {} n={} bs={} threads={} seed={}: {} / {} trials bit-exact "
        "({:.0f} trials/s)\n",
        a.kernel, a.scheme, a.n, a.bs, a.threads, opt.seed, r.passed, r.trials,
        r.trials_per_second());
    fmt::print("  fault-free run: {} ops, {} region commits; crashes inside recovery: {}\n",
               r.fault_free_ops, r.commits, j["crashes_during_recovery"].get<std::uint64_t>());
    fmt::print(
        "  recovery work (ops): median {}, p90 {}, max {}; unnecessary recomputations (R3): {}\n",
        j["recovery_ops"]["median"].get<std::uint64_t>(),
        j["recovery_ops"]["p90"].get<std::uint64_t>(),
        j["recovery_ops"]["max"].get<std::uint64_t>(),
        j["unnecessary_recomputations"].get<std::uint64_t>());
    for (const auto& t : r.results)
      if (!t.passed)
        fmt::print("  FAILED trial {} ({} crash at op {}): {}\n    replay: {}\n", t.index,
                   driver::to_string(t.kind), t.crash_op, t.failure, replay_command(a, t));
  }
  return r.passed == r.trials ? kExitOk : kExitVerifyFailed;
}

}  // namespace

void add_crash_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<CrashArgs>();
  auto* cmd = app.add_subcommand(
      "crash",
      "Power-failure campaign in the simulator: each trial cuts the power at a random op "
      "(uniform, plus the corners: first/last op, just before/after/inside a region commit), "
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
  cmd->add_option("--config", a->config, "Machine preset (lp-isca18, pact17, ...)")
      ->capture_default_str();
  cmd->add_option("--cores", a->cores, "Simulated cores")->capture_default_str();
  cmd->add_option("--l1-size", a->l1_size,
                  "L1 bytes; small by default so CI-sized runs evict (the interesting crashes)")
      ->capture_default_str();
  cmd->add_option("--llc-size", a->llc_size, "Shared LLC bytes (small by default, see --l1-size)")
      ->capture_default_str();
  cmd->add_option("--flush", a->flush, "Flush instruction of the eager schemes")
      ->capture_default_str();
  cmd->add_option("--recovery-crash-rate", a->recovery_crash_rate,
                  "Chance that a restart is cut again (up to 3 times per trial)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--replay", a->replay, "Replay one trial: crash before this op");
  cmd->add_option("--replay-recovery", a->replay_recovery,
                  "With --replay: crash again before this op (repeatable)");
  cmd->add_flag("--per-trial", a->per_trial, "With --json: list every trial, not only failures");
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->callback([a, &exit_code] { exit_code = do_crash(*a); });
}

}  // namespace pmlab::cli
