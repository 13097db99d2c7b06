// `pmlab bench`: native execution time of every persistency scheme vs base, measured side by side.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "build_info.hpp"
#include "commands.hpp"
#include "interrupt.hpp"
#include "kernel_options.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/core/progress.hpp"
#include "pmlab/core/suggest.hpp"
#include "pmlab/experiments/bench.hpp"
#include "pmlab/experiments/blas_rivals.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/scheme/family.hpp"
#include "usage_comforts.hpp"

namespace pmlab::cli {
namespace {

struct BenchArgs {
  std::string kernel;
  std::vector<std::string> schemes;
  std::vector<std::string> rivals;  // --rivals: BLAS libraries timed beside the schemes
  std::uint64_t n = 768;
  std::optional<std::uint64_t> bs;  // --bs; absent: the kernel's default (16, cg 256)
  std::uint32_t threads = 1;
  std::size_t max_pairs = 200, min_pairs = 8;
  double target_percent = 1, budget = 60, rep_seconds = 0.2;
  std::uint64_t seed = 1;
  KernelOptions kernel_options;  // the kernel's own parameters (--width, ...)
  std::string persist = "cpu";
  std::string flush{persist::to_string(persist::best_flush_kind())};  // CPUID's best
  std::string dir;
  bool json = false;
  bool single_pass = false;
  bool quiet = false;
  bool aa = false;
  std::string statistic = "trimmed";
};

// The schemes timed against base (base itself is the reference, timed with each of them):
// refuses an unknown one with the name probably meant, before any work starts.
std::vector<std::string> timed_schemes(const BenchArgs& a) {
  const auto& known = run::find_kernel(a.kernel).schemes;
  std::vector<std::string> out;
  for (const auto& s : a.schemes.empty() ? known : a.schemes) {
    if (std::find(known.begin(), known.end(), s) == known.end())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("unknown scheme '{}' for {}{} (known: {})", s, a.kernel,
                              did_you_mean(s, known), fmt::join(known, ", ")));
    if (s != scheme::kBaseScheme && std::find(out.begin(), out.end(), s) == out.end())
      out.push_back(s);
  }
  if (a.aa) out.emplace_back("base-aa");
  return out;
}

std::string rough_duration(double seconds) {
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  if (seconds < 2 * 3600) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

// A line before long work, so that a plain `pmlab bench tmm` does not start twenty minutes of
// measurement unannounced: each timed scheme runs until its ratio resolves or --budget is spent.
// Printed, not asked: scripts run bench unattended.
void announce_bench(const BenchArgs& a, const std::vector<std::string>& timed) {
  const double most = static_cast<double>(timed.size()) * a.budget;
  if (a.single_pass || most < 60) return;
  fmt::print(stderr, "bench {}: {} scheme{} × {:g} s budget ≈ {} at most{}\n", a.kernel,
             timed.size(), timed.size() == 1 ? "" : "s", a.budget, rough_duration(most),
             a.schemes.empty() && timed.size() > 1 ? "; --scheme S for one" : "");
}

int do_bench(const BenchArgs& a) {
  const std::vector<std::string> timed = timed_schemes(a);
  warn_if_threads_exceed_cores(a.threads, fmt::format("--threads {}", a.threads));
  announce_bench(a, timed);
  experiments::BenchOptions o;
  o.kernel = a.kernel;
  o.schemes = a.schemes;
  o.rivals = a.rivals;
  o.n = a.n;
  o.bs = a.bs ? *a.bs : run::find_kernel(a.kernel).default_bs;
  o.threads = a.threads;
  o.max_pairs = a.max_pairs;
  o.min_pairs = a.min_pairs;
  o.target = a.target_percent / 100;
  o.budget_seconds = a.budget;
  o.min_rep_seconds = a.rep_seconds;
  o.single_pass = a.single_pass;
  o.aa_check = a.aa;
  o.statistic = a.statistic == "floor" ? experiments::RatioStatistic::kFloor
                                       : experiments::RatioStatistic::kTrimmedMean;
  o.seed = a.seed;
  {
    pool::RunParams named;
    named.kernel = a.kernel;
    a.kernel_options.apply(named);
    o.kernel_params = named.kernel_params;
  }
  o.mode = run::persist_mode_from_string(a.persist);
  o.flush = persist::flush_kind_from_string(a.flush);
  o.dir = a.dir;
  ProgressBar bar(fmt::format("bench {}", a.kernel), 1, progress_wanted(a.quiet));
  o.progress = [&bar](std::size_t done, std::size_t total, const std::string& what) {
    bar.set_total(total);
    bar.set_detail(what);
    bar.update(done);
  };
  // Ctrl-C / SIGTERM: finish the current measurement, then remove the temporary pools (a
  // handler cannot remove a directory safely) and exit 130 (run_bench throws kInterrupted).
  const InterruptScope interrupts(OnInterrupt::kStopAfterStep);
  o.stop = InterruptScope::stop_flag();
  const auto r = experiments::run_bench(o);
  bar.finish();
  if (a.json) {
    auto j = experiments::to_json(r);
    fmt::print("{}\n", with_meta(j).dump(2));
  } else {
    fmt::print("{}", experiments::to_markdown(r));
  }
  // A scheme must give base's bits; a BLAS rival sums in its own order, so it must only come
  // within experiments::kRivalTolerance of them.
  for (const auto& s : r.schemes)
    if (!s.bit_exact &&
        !(s.rival_difference && *s.rival_difference <= experiments::kRivalTolerance))
      return kExitVerifyFailed;
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Time every persistency scheme natively against base: paired repetitions (base and scheme "
      "back to back, order alternating, each on fresh pools, creation untimed), each repetition "
      "repeating the kernel to at least --rep-seconds, until the ratio's 95% bootstrap interval "
      "is within ±--target or --budget is spent (then the ratio is printed as unresolved). "
      "Records load average and CPU/wall per repetition, and checks every result is "
      "bit-identical to the fault-free reference. Pools go to a temporary directory that is "
      "removed after (docs/measurement.md).");
  std::string kernels;
  for (const auto& d : run::kernel_drivers()) kernels += (kernels.empty() ? "" : ", ") + d.name;
  cmd->add_option("kernel", args->kernel, "Kernel to benchmark: " + kernels)->required();
  // --scheme: the other verbs' spelling, accepted here too (one scheme or a list).
  cmd->add_option("--schemes,--scheme", args->schemes,
                  "Comma-separated schemes of the kernel (default: all, each for up to --budget; "
                  "base is always included; each kernel's are listed below)")
      ->delimiter(',');
  cmd->add_option("--n", args->n, "Matrix dimension")->capture_default_str();
  cmd->add_option("--bs", args->bs,
                  "Tile size (default 16; cg 256: its bs is LP's region of one vector, and 256 "
                  "values per checksum match a 16 x 16 tile)");
  cmd->add_option("--threads", args->threads,
                  "OpenMP threads (1: no thread team, nothing spin-waits; above 1 set "
                  "OMP_WAIT_POLICY=passive on a shared machine; more than the host's cores "
                  "time-share: warned)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--target", args->target_percent,
                  "Stop a scheme when its ratio's 95% interval is within ± this many percent")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 99.0));
  cmd->add_option("--budget", args->budget,
                  "Wall seconds per scheme after which an unmet target leaves it unresolved")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e6));
  cmd->add_option("--rep-seconds", args->rep_seconds,
                  "Minimum base computation per timed repetition: the kernel is executed "
                  "repeatedly inside one repetition to reach it")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--reps,--max-pairs", args->max_pairs, "Most pairs per scheme")
      ->capture_default_str();
  cmd->add_option("--min-pairs", args->min_pairs,
                  "Fewest healthy pairs before a ratio can resolve (at least 6 for 95%)")
      ->capture_default_str();
  cmd->add_option("--statistic", args->statistic,
                  "What the ratio is: trimmed (the 20%-trimmed mean of the per-pair ratios) or "
                  "floor (the scheme's 10th-percentile repetition time over base's, with a "
                  "distribution-free interval; for disturbances that only add time; needs at "
                  "least 42 healthy pairs); JSON reports both (docs/measurement.md, \"The floor "
                  "statistic\")")
      ->capture_default_str()
      ->check(CLI::IsMember({"trimmed", "floor"}));
  cmd->add_option("--seed", args->seed, "Seed of the input matrices")->capture_default_str();
  args->kernel_options.add_to(*cmd);
  cmd->add_option("--persist", args->persist, "Persistence mode: cpu, auto, none")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "auto", "none"}));
  cmd->add_option(
         "--flush", args->flush,
         "Flush instruction in cpu mode: clwb, clflushopt, clflush (default: the best this CPU "
         "has; clflush is the one valgrind supports)")
      ->capture_default_str()
      ->check(CLI::IsMember({"clwb", "clflushopt", "clflush"}));
  cmd->add_option(
      "--dir", args->dir,
      "Directory for the temporary pools (default: /dev/shm if writable, else $TMPDIR or /tmp)");
  cmd->add_option("--rivals", args->rivals,
                  "Comma-separated BLAS libraries whose cblas_dgemm is timed against base on the "
                  "same inputs, like a scheme (gemm only: openblas, blis; each row names the "
                  "kernel the library chose; OpenBLAS's can be forced with "
                  "OPENBLAS_CORETYPE=SkylakeX; docs/gemm-fast.md)")
      ->delimiter(',');
  cmd->add_flag("--single-pass", args->single_pass,
                "One verified execution per scheme, nothing timed (for instruction counts under "
                "callgrind: scripts/instruction-counts)");
  cmd->add_flag("--aa", args->aa,
                "A/A check: also time base against base on a pool of its own (row base-aa), "
                "paired like every scheme; its true ratio is 1, so a resolved ratio away from 1 "
                "is the measurement's own bias at this load (warned)");
  cmd->add_flag("--json", args->json, "Print JSON instead of a Markdown table");
  cmd->add_flag("--quiet", args->quiet,
                "No progress bar (it is drawn only when stderr is a terminal)");
  cmd->add_flag("--no-progress", args->quiet)->group("");  // sim's old spelling, hidden
  cmd->callback([args, &exit_code] { exit_code = do_bench(*args); });
}

}  // namespace pmlab::cli
