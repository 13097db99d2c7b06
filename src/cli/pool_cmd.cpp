// `pmlab pool info|check|rm|reset`, like pmempool: describe a pool, tell what the next run's
// recovery will find without changing a byte, remove a pool and its side files, return a pool
// left running to a clean start (docs/cli.md).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "build_info.hpp"
#include "commands.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/lp/loop.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::cli {
namespace {

namespace fs = std::filesystem;

struct PoolArgs {
  std::string pool;
  bool json = false;
  bool force = false;
};

void require_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorCode::kIo, fmt::format("no pool at '{}'", path));
}

// Files a pool owns beside itself: the pmemobj scheme's own pool (tmm_pmemobj.hpp) and the
// temporaries of creations that died (pool.cpp).
std::vector<fs::path> side_files(const std::string& path) {
  std::vector<fs::path> out;
  const fs::path p(path);
  if (fs::exists(path + ".pmemobj")) out.emplace_back(path + ".pmemobj");
  const std::string prefix = p.filename().string() + ".creating";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(p.has_parent_path() ? p.parent_path() : ".", ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  return out;
}

struct CheckResult {
  std::string kind;  // "loop" (lp::Loop) or "kernel" (pmlab run)
  std::string state;
  lp::RecoveryStats recovery;
  std::uint64_t resume_point = 0;
  std::string action;
};

// A pmlab run's pool: its kernel's recovery run on a copy (the pool itself is opened read-only
// under a shared lock, so that no run changes it meanwhile), stopped before normal execution.
CheckResult check_kernel_pool(const std::string& path) {
  const pool::Pool original = pool::Pool::open_read_only(path);
  CheckResult r{"kernel", std::string(pool::to_string(original.state())), {}, 0, "none"};
  if (original.state() != pool::RunState::kRunning) return r;
  const auto& p = original.params();
  const auto& k = run::find_kernel(p.kernel);
  k.validate(p);
  if (fs::exists(path + ".pmemobj"))
    throw Error(ErrorCode::kUnsupported,
                fmt::format("pool '{}': the {} scheme keeps its state in '{}.pmemobj', which a "
                            "check on a copy cannot recover; run `pmlab run --pool {}` instead",
                            path, p.scheme, path, path));
  const std::string copy = fmt::format("{}.check.{}", path, ::getpid());
  struct Remove {
    std::string path;
    ~Remove() {
      std::error_code ec;
      fs::remove(path, ec);
    }
  } const remove_copy{copy};
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  pool::Pool scratch = pool::Pool::open(copy);
  run::ExecOptions opt;
  opt.recover_only = true;
  const run::RunReport rep = k.execute(scratch, opt);
  r.recovery = rep.recovery;
  r.resume_point = rep.resume_point;
  r.action = rep.recovery_action;
  return r;
}

CheckResult check_loop(const std::string& path) {
  const lp::LoopCheck c = lp::check_loop_pool(path);
  CheckResult r{"loop", std::string(pool::to_string(c.state)), c.recovery, c.durable_phases,
                "none"};
  if (c.state == pool::RunState::kRunning) {
    r.action = "lp-loop recovery";
    r.resume_point = std::min(c.durable_phases + 1, c.phases);
  }
  return r;
}

int do_check(const PoolArgs& a) {
  require_file(a.pool);
  const pool::RunParams p = pool::Pool::read_params(a.pool);
  const CheckResult r = lp::holds_loop_run(p) ? check_loop(a.pool) : check_kernel_pool(a.pool);
  if (a.json) {
    nlohmann::json j{{"pool", a.pool},
                     {"kind", r.kind},
                     {"kernel", p.kernel},
                     {"scheme", p.scheme},
                     {"state", r.state},
                     {"changed", false},
                     {"recovery",
                      {{"action", r.action},
                       {"regions_validated", r.recovery.regions_validated},
                       {"regions_inconsistent", r.recovery.regions_inconsistent},
                       {"regions_recomputed", r.recovery.regions_recomputed},
                       {"regions_unwritten", r.recovery.regions_unwritten},
                       {"resume_point", r.resume_point}}}};
    fmt::print("{}\n", with_meta(j).dump(2));
    return kExitOk;
  }
  fmt::print("pool {}: {} {}, scheme {}, state {}\n", a.pool,
             r.kind == "loop" ? "lp::Loop" : "kernel", p.kernel, p.scheme, r.state);
  if (r.state != "running")
    fmt::print("  nothing to recover: the next run {}\n",
               r.state == "done" ? "does nothing" : "starts from the beginning");
  else
    fmt::print(
        "  the next run's recovery ({}): {} regions validated, {} inconsistent, {} never "
        "written, {} to recompute; resumes at {}\n",
        r.action, r.recovery.regions_validated, r.recovery.regions_inconsistent,
        r.recovery.regions_unwritten, r.recovery.regions_recomputed, r.resume_point);
  fmt::print("  the pool was not changed\n");
  return kExitOk;
}

int do_rm(const PoolArgs& a) {
  require_file(a.pool);
  // A file that is not a pool is refused (kPoolCorrupt), and so is a pool in use (kPoolBusy):
  // opening it takes its lock, held until the files are gone.
  std::optional<pool::Pool> held(pool::Pool::open(a.pool));
  const std::string state(pool::to_string(held->state()));
  if (held->state() == pool::RunState::kRunning && !a.force)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("pool '{}' holds an interrupted run, which `pmlab run --pool {}` "
                            "resumes; add --force to remove it anyway",
                            a.pool, a.pool));
  std::vector<std::string> removed;
  for (const auto& f : side_files(a.pool)) {
    std::error_code ec;
    if (fs::remove(f, ec)) removed.push_back(f.string());
  }
  if (!fs::remove(a.pool)) throw Error(ErrorCode::kIo, fmt::format("cannot remove '{}'", a.pool));
  removed.insert(removed.begin(), a.pool);
  held.reset();
  if (a.json) {
    nlohmann::json j{{"pool", a.pool}, {"state", state}, {"removed", removed}};
    fmt::print("{}\n", with_meta(j).dump(2));
    return kExitOk;
  }
  for (const auto& f : removed) fmt::print("removed {}\n", f);
  return kExitOk;
}

// A kernel pool is reset by building a fresh pool of the same parameters beside it
// (Pool::create: inputs written by the kernel's init, persisted, published atomically) and
// renaming it over the old file while the old one is still locked: a crash during the reset
// leaves either the old pool or the fresh one, never a mixture, and a leftover fresh file is a
// side file `pool rm` removes.
int do_reset(const PoolArgs& a) {
  require_file(a.pool);
  // Refuses a file that is not a pool and a pool in use (exit 3), as rm does.
  std::optional<pool::Pool> held(pool::Pool::open(a.pool));
  const pool::RunParams p = held->params();
  const pool::RunState before = held->state();
  const auto print = [&](bool changed) {
    const std::string state(pool::to_string(changed ? pool::RunState::kInitialized : before));
    if (a.json) {
      nlohmann::json j{{"pool", a.pool},     {"kernel", p.kernel},
                       {"scheme", p.scheme}, {"state_before", std::string(pool::to_string(before))},
                       {"state", state},     {"changed", changed}};
      fmt::print("{}\n", with_meta(j).dump(2));
    } else if (changed) {
      fmt::print(
          "pool {}: reset from {} to initialized: the inputs are rewritten and the next "
          "run starts from the beginning\n",
          a.pool, pool::to_string(before));
    } else {
      fmt::print(
          "pool {}: state initialized, nothing to reset: the next run starts from the "
          "beginning\n",
          a.pool);
    }
    return kExitOk;
  };
  if (before == pool::RunState::kInitialized) return print(false);
  if (before == pool::RunState::kDone && !a.force)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("pool '{}' holds a completed run: a reset discards its result; add "
                            "--force to reset it anyway",
                            a.pool));
  if (lp::is_loop_pool(*held))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("pool '{}' is an lp::Loop pool ({}): its inputs are written by its "
                            "own program, which pmlab cannot run; the program's next run "
                            "recovers it (`pmlab pool check` tells how), or remove it with "
                            "`pmlab pool rm --force` and start the program again",
                            a.pool, p.kernel));
  if (fs::exists(a.pool + ".pmemobj"))
    throw Error(ErrorCode::kUnsupported,
                fmt::format("pool '{}': the {} scheme keeps its state in '{}.pmemobj', which a "
                            "reset cannot rebuild; remove both with `pmlab pool rm --force`",
                            a.pool, p.scheme, a.pool));
  const auto& k = run::find_kernel(p.kernel);
  k.validate(p);
  const auto arrays = k.arrays(p);
  held->require_layout(arrays);  // the fresh pool must hold what the old one holds
  const std::string fresh = fmt::format("{}.creating.reset.{}", a.pool, ::getpid());
  {
    const pool::Pool made = pool::Pool::create(fresh, p, arrays, k.init);
    if (::rename(fresh.c_str(), a.pool.c_str()) != 0) {
      std::error_code ec;
      fs::remove(fresh, ec);
      throw Error(ErrorCode::kIo, fmt::format("cannot replace '{}' with its reset pool", a.pool));
    }
  }
  held.reset();
  return print(true);
}

}  // namespace

void add_pool_command(CLI::App& app, int& exit_code) {
  auto* pool = app.add_subcommand(
      "pool",
      "Inspect, check and remove pools, like pmempool: `pool info` describes a pool, `pool "
      "check` tells what the next run's recovery will find without changing a byte, `pool rm` "
      "removes a pool and its side files, `pool reset` returns a pool left running to a clean "
      "start. Exit 3 if the file is not a pool or is in use.");
  pool->require_subcommand(1);
  const auto add = [&](const char* name, const char* help, auto fn, bool with_force) {
    auto a = std::make_shared<PoolArgs>();
    auto* cmd = pool->add_subcommand(name, help);
    cmd->add_option("--pool", a->pool, "Pool file")->required();
    cmd->add_flag("--json", a->json, "Print JSON");
    if (with_force)
      cmd->add_flag("--force", a->force,
                    std::string(name) == "rm" ? "Remove a pool holding an interrupted run"
                                              : "Reset a pool holding a completed run");
    cmd->callback([a, fn, &exit_code] { exit_code = fn(*a); });
  };
  add(
      "info", "What a pool holds, as `pmlab info` prints it (read-only).",
      [](const PoolArgs& a) { return run_info(a.pool, a.json); }, false);
  add("check",
      "What the next run's recovery will find in an interrupted pool: regions validated, "
      "inconsistent, never written, to recompute, and where it resumes. A pmlab run's pool is "
      "recovered on a copy; an lp::Loop pool is validated in place, read-only. The pool is not "
      "changed. Exit 2 for the pmemobj scheme (its state is in a side file), 3 if the file is "
      "not a pool or is in use.",
      do_check, false);
  add("rm",
      "Remove a pool and its side files (<pool>.pmemobj, temporaries of interrupted creations). "
      "Refused for a file that is not a pool or a pool in use (exit 3) and for an interrupted "
      "run unless --force (exit 2).",
      do_rm, true);
  add("reset",
      "Return a pool left running (an interrupted or stuck run) to the state a new run starts "
      "from: a fresh pool of the same parameters, its inputs written again, replaces the file "
      "atomically. A pool already initialized is left as it is. Refused for an lp::Loop pool "
      "(its program writes its inputs) and a completed run unless --force (exit 2), and for a "
      "file that is not a pool or a pool in use (exit 3).",
      do_reset, true);
}

}  // namespace pmlab::cli
