// `pmlab run`: create or resume a pool, recover an interrupted run, finish it, optionally verify.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "build_info.hpp"
#include "commands.hpp"
#include "interrupt.hpp"
#include "kernel_options.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/core/progress.hpp"
#include "pmlab/core/suggest.hpp"
#include "pmlab/lp/checksum_param.hpp"
#include "pmlab/run/catalog.hpp"
#include "usage_comforts.hpp"

namespace pmlab::cli {
namespace {

struct RunArgs {
  std::string kernel;
  std::string scheme = "lp";
  std::uint64_t n = 256;
  std::uint64_t bs = 16;
  std::uint32_t threads = 1;
  std::string checksum = "modular";
  std::uint64_t seed = 1;
  KernelOptions kernel_options;  // the kernel's own parameters (--width, ...)
  std::string pool;
  std::string persist = "cpu";
  std::string flush{persist::to_string(persist::best_flush_kind())};  // CPUID's best
  bool verify = false;
  bool json = false;
  bool quiet = false;
};

// The bar of a run: the kernel's outer loops count finished outer iterations into `steps`
// (mem::outer_step_done, one relaxed increment each), and this thread draws them ten times a
// second. Polling keeps the hot loops free of any call into the display.
class RunProgress {
 public:
  RunProgress(const std::string& label, std::uint64_t total, bool enabled) {
    if (!enabled || total == 0) return;
    drawer_ = std::jthread([this, label, total](std::stop_token stop) {
      ProgressBar bar(label, total, true);
      std::mutex m;
      std::condition_variable_any wake;
      std::unique_lock lock(m);
      while (!stop.stop_requested()) {
        bar.update(steps_.load(std::memory_order_relaxed));
        // Returns at once when the run ends (stop requested), else after 100 ms.
        wake.wait_for(lock, stop, std::chrono::milliseconds(100), [] { return false; });
      }
      bar.update(steps_.load(std::memory_order_relaxed));
    });
  }
  // Where the run counts its steps; null when no bar is drawn.
  [[nodiscard]] std::atomic<std::uint64_t>* counter() {
    return drawer_.joinable() ? &steps_ : nullptr;
  }

 private:
  std::atomic<std::uint64_t> steps_{0};
  std::jthread drawer_;  // last: stopped and joined before steps_ goes away
};

nlohmann::json kernel_params_json(const pool::RunParams& p) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& kp : p.kernel_params) j[kp.name] = kp.value;
  return j;
}

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

struct Given {
  bool kernel, scheme, n, bs, threads, checksum, seed, kernel_params;
  [[nodiscard]] bool any() const {
    return kernel || scheme || n || bs || threads || checksum || seed || kernel_params;
  }
};

// Parameters for this invocation: stored ones overridden by what the user typed explicitly.
pool::RunParams merge(const RunArgs& a, const Given& g, const pool::RunParams& base) {
  pool::RunParams p = base;
  if (g.kernel) p.kernel = a.kernel;
  if (g.scheme) p.scheme = a.scheme;
  if (g.n) p.n = a.n;
  if (g.bs) p.bs = a.bs;
  if (g.threads) p.threads = a.threads;
  if (g.checksum) lp::set_checksum(p, lp::checksum_kind_from_string(a.checksum));
  if (g.seed) p.seed = a.seed;
  if (g.kernel_params) a.kernel_options.apply(p);
  return p;
}

// A kernel or scheme named on the command line that this pmlab does not know is a usage error
// (exit 2) on an existing pool too: checked before the stored parameters are compared, which
// would call it another run (exit 3). A scheme is checked against the kernel it would run with.
void require_known_names(const Given& g, const pool::RunParams& expected) {
  if (!g.kernel && !g.scheme) return;
  const run::KernelDriver* k =
      g.kernel ? &run::find_kernel(expected.kernel) : run::kernel_driver_named(expected.kernel);
  if (!g.scheme || k == nullptr) return;
  const auto& known = k->schemes;
  if (std::find(known.begin(), known.end(), expected.scheme) == known.end())
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("unknown scheme '{}' for {}{} (known: {})", expected.scheme, k->name,
                            did_you_mean(expected.scheme, known), fmt::join(known, ", ")));
}

int do_run(const RunArgs& a, const Given& g) {
  if (g.kernel_params) {
    // The kernel named here, else the one stored in the pool (read before anything is opened).
    pool::RunParams named;
    named.kernel =
        g.kernel ? a.kernel : (file_exists(a.pool) ? pool::Pool::read_params(a.pool).kernel : "");
    if (!named.kernel.empty()) a.kernel_options.apply(named);
  }
  run::ExecOptions opt{run::persist_mode_from_string(a.persist),
                       persist::flush_kind_from_string(a.flush)};
  std::optional<pool::Pool> pool;
  std::string state_before = "new";
  // The run is planned once (kernel looked up, parameters validated, layout computed) and the
  // plan passed down: the execution below does not validate again (ExecOptions::planned).
  std::optional<run::RunPlan> plan;
  if (!file_exists(a.pool)) {
    if (!g.kernel)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("no pool at '{}': name a kernel to create one (e.g. `pmlab run tmm "
                              "--pool {}`)",
                              a.pool, a.pool));
    pool::RunParams defaults;
    auto params = merge(a, Given{true, true, true, true, true, true, true, true}, defaults);
    const run::KernelDriver& kernel = run::find_kernel(params.kernel);
    if (!g.bs) params.bs = kernel.default_bs;  // cg's bs is a 1-D region: 256 (KernelDriver)
    plan = run::plan_run(kernel, params);
    plan->params.layout_tag = plan->layout_tag;
    // Sizes the file system cannot hold are impossible parameters (exit 2), refused before
    // anything is created rather than failing with ENOSPC once allocation starts.
    pool::require_room_for_pool(a.pool, pool::pool_file_bytes(plan->arrays));
    // Empty when a concurrent `pmlab run` published a pool at this path first: this one then
    // continues as if it had started after it (below), never replacing what it wrote.
    pool = pool::Pool::try_create(a.pool, plan->params, plan->arrays, plan->kernel->init);
  }
  if (!pool) {
    // Only the explicitly given parameters are checked against the stored ones. A pool whose
    // creator still runs holds its lock: "in use by another process" (exit 3).
    auto stored = pool::Pool::read_params(a.pool);
    auto expected = merge(a, g, stored);
    require_known_names(g, expected);
    pool.emplace(pool::Pool::open(a.pool, expected));
    state_before = pool::to_string(pool->state());
    try {
      plan = run::plan_run(pool->params());
    } catch (const Error& e) {
      // Parameters read from a header (whose CRC held) that this pmlab refuses, e.g. a checksum
      // kind it does not know: the pool is at fault, not the command line.
      if (e.code() != ErrorCode::kInvalidArgument) throw;
      throw Error(ErrorCode::kPoolCorrupt,
                  fmt::format("pool '{}' holds a run this pmlab refuses: {}", a.pool, e.what()));
    }
    run::require_layout_tag(*pool, plan->layout_tag);  // written by another pmlab?
    pool->require_layout(plan->arrays);                // a header can pass its CRC and still lie
  }
  warn_if_emulated(*pool);
  const auto& params = pool->params();
  const run::KernelDriver& k = *plan->kernel;
  opt.planned = true;
  if (pool->state() != pool::RunState::kDone)
    warn_if_threads_exceed_cores(params.threads,
                                 g.threads ? fmt::format("--threads {}", params.threads)
                                           : fmt::format("the pool's {} threads", params.threads));
  run::RunReport report;
  try {
    // No bar for a run already done, nor for a kernel that declares no outer-step count.
    const bool bar = progress_wanted(a.quiet) && pool->state() != pool::RunState::kDone &&
                     k.outer_steps != nullptr;
    RunProgress progress(fmt::format("{} {}", params.kernel, params.scheme),
                         bar ? k.outer_steps(params) : 0, bar);
    opt.steps_done = progress.counter();
    report = k.execute(*pool, opt);
  } catch (const Error& e) {
    // A first start that fails (e.g. libpmemobj cannot create its own pool) leaves no pool
    // behind: it holds nothing worth resuming, and a retry should start from scratch. It is
    // removed while still locked, so no other process can have opened it meanwhile.
    if (state_before != "new") throw;
    ::unlink(a.pool.c_str());
    throw Error(e.code(), fmt::format("{} (the pool '{}' this run had just created was removed)",
                                      e.what(), a.pool));
  }

  std::optional<run::VerifyResult> verdict;
  if (a.verify) verdict = k.verify(*pool);

  if (a.json) {
    nlohmann::json j{
        {"kernel", params.kernel},
        {"scheme", params.scheme},
        {"n", params.n},
        {"bs", params.bs},
        {"threads", params.threads},
        {"checksum", params.checksum},
        {"seed", params.seed},
        {"kernel_params", kernel_params_json(params)},  // the kernel's own, e.g. conv2d's width
        {"pool", a.pool},
        {"persist", a.persist},
        {"flush", a.flush},
        {"state_before", state_before},
        {"resumed", report.resumed},
        {"starts", pool->starts()},
        {"recovery",
         {{"action", report.recovery_action},
          {"regions_validated", report.recovery.regions_validated},
          {"regions_inconsistent", report.recovery.regions_inconsistent},
          {"regions_recomputed", report.recovery.regions_recomputed},
          {"regions_unwritten", report.recovery.regions_unwritten},
          {"regions_unnecessary", report.recovery.regions_unnecessary},
          {"resume_point", report.resume_point},
          {"seconds", report.recovery_seconds}}},
        {"compute_seconds", report.compute_seconds},
        {"state", pool::to_string(pool->state())},
    };
    if (verdict) {
      j["verified"] = verdict->ok();
      j["mismatches"] = verdict->mismatches;
      if (!verdict->ok()) j["first_mismatch"] = verdict->first_mismatch;
    }
    if (!report.helper.placement.empty())  // seed 002's helper thread (ipv): Fig. 13's overlap
      j["flush_helper"] = {
          {"placement", report.helper.placement},
          {"busy_seconds", static_cast<double>(report.helper.busy_ns) * 1e-9},
          {"exposed_seconds", static_cast<double>(report.helper.exposed_ns) * 1e-9},
          {"hidden_fraction", report.helper.hidden_fraction()}};
    j["persistence_emulated"] = persistence_emulated(*pool);
    fmt::print("{}\n", with_meta(j).dump(2));
  } else {
    fmt::print("pmlab run {} --scheme {} --n {} --bs {} --threads {} --checksum {}{}  pool={}\n",
               params.kernel, params.scheme, params.n, params.bs, params.threads, params.checksum,
               kernel_param_flags(params), a.pool);
    if (report.resumed) {
      fmt::print("  resumed an interrupted run (start #{}): {}\n", pool->starts(),
                 report.recovery_action);
      fmt::print(
          "  regions validated {}, found inconsistent {}, recomputed {}, unwritten {}; "
          "normal execution resumed at outer tile {} ({:.3f} s)\n",
          report.recovery.regions_validated, report.recovery.regions_inconsistent,
          report.recovery.regions_recomputed, report.recovery.regions_unwritten,
          report.resume_point, report.recovery_seconds);
    } else if (state_before == "done") {
      fmt::print("  pool already holds a completed run\n");
    }
    fmt::print("  compute {:.3f} s, state {}\n", report.compute_seconds,
               pool::to_string(pool->state()));
    if (!report.helper.placement.empty())
      fmt::print(
          "  flush helper ({}): flushed for {:.2f} ms, main thread waited {:.2f} ms: {:.0f}% of "
          "the flush time hidden\n",
          report.helper.placement, static_cast<double>(report.helper.busy_ns) * 1e-6,
          static_cast<double>(report.helper.exposed_ns) * 1e-6,
          100.0 * report.helper.hidden_fraction());
    if (verdict) {
      if (verdict->ok())
        fmt::print("  verify: OK, {} elements bit-identical to the fault-free reference\n",
                   verdict->elements);
      else
        fmt::print("  verify: FAILED, {} of {} elements differ; first: {}\n", verdict->mismatches,
                   verdict->elements, verdict->first_mismatch);
    }
  }
  return verdict && !verdict->ok() ? kExitVerifyFailed : kExitOk;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand(
      "run",
      "Run a kernel natively on a persistent pool. Creates the pool, or, if it holds an "
      "interrupted run (e.g. after kill -9), recovers it and finishes. `pmlab run --pool PATH` "
      "alone resumes with the parameters stored in the pool; parameters given explicitly must "
      "match the stored ones.");
  std::string kernels;
  for (const auto& d : run::kernel_drivers()) kernels += (kernels.empty() ? "" : ", ") + d.name;
  cmd->add_option("kernel", args->kernel, "Kernel to run: " + kernels);
  auto* o_scheme = cmd->add_option("--scheme", args->scheme,
                                   "Persistency scheme (each kernel's are listed below)")
                       ->capture_default_str();
  auto* o_n = cmd->add_option("--n", args->n, "Problem size n (matrix dimension; any n >= 1)")
                  ->capture_default_str();
  auto* o_bs = cmd->add_option("--bs", args->bs,
                               "Block/tile size bs (any bs >= 1; n need not be a multiple; "
                               "default 16, cg 256: its bs is LP's region of one vector)");
  auto* o_thr = cmd->add_option("--threads", args->threads,
                                "OpenMP threads (more than the host's cores time-share: warned)")
                    ->capture_default_str();
  auto* o_ck =
      cmd->add_option("--checksum", args->checksum,
                      "LP checksum: modular, parity, adler32, modular-parity, crc32c (adler32 can "
                      "miss a stale value in a one-value tile, --bs 1: docs/lp-checksums.md)")
          ->capture_default_str();
  auto* o_seed = cmd->add_option("--seed", args->seed, "Seed of the deterministic input matrices")
                     ->capture_default_str();
  args->kernel_options.add_to(*cmd);
  cmd->add_option("--pool", args->pool, "Pool file to create or resume")->required();
  cmd->add_option("--persist", args->persist,
                  "Persistence mode for flushes: cpu (flush instructions + sfence), auto "
                  "(libpmem2's choice for the mapping), none")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "auto", "none"}));
  cmd->add_option(
         "--flush", args->flush,
         "Flush instruction in cpu mode: clwb, clflushopt, clflush (default: the best this CPU "
         "has)")
      ->capture_default_str()
      ->check(CLI::IsMember({"clwb", "clflushopt", "clflush"}));
  cmd->add_flag("--verify", args->verify,
                "Compare the result with a fault-free reference, bit for bit (exit 1 on mismatch)");
  cmd->add_flag("--json", args->json, "Print a JSON report instead of text");
  cmd->add_flag("--quiet", args->quiet,
                "No progress bar (drawn on stderr, when it is a terminal, for kernels that declare "
                "their outer-iteration count: all but the BEP micro-benchmarks)");
  cmd->callback([args, &exit_code, cmd, o_scheme, o_n, o_bs, o_thr, o_ck, o_seed] {
    Given g{cmd->get_option("kernel")->count() > 0,
            o_scheme->count() > 0,
            o_n->count() > 0,
            o_bs->count() > 0,
            o_thr->count() > 0,
            o_ck->count() > 0,
            o_seed->count() > 0,
            args->kernel_options.any_given()};
    // The pool is consistent at every instant (that is the point of the schemes): an
    // interrupted run is left exactly as after kill -9, and resumes.
    const InterruptScope interrupts(OnInterrupt::kExitNow);
    exit_code = do_run(*args, g);
  });
}

}  // namespace pmlab::cli
