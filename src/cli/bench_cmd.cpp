// `pmlab bench`: native execution time of every persistency scheme vs base, measured side by side.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "commands.hpp"
#include "interrupt.hpp"
#include "kernel_options.hpp"
#include "pmlab/experiments/bench.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::cli {
namespace {

struct BenchArgs {
  std::string kernel;
  std::vector<std::string> schemes;
  std::uint64_t n = 768, bs = 16;
  std::uint32_t threads = 2;
  int reps = 15;
  std::uint64_t seed = 1;
  KernelOptions kernel_options;  // the kernel's own parameters (--width, ...)
  std::string persist = "cpu";
  std::string flush = "clwb";
  std::string dir;
  bool json = false;
  bool quiet = false;
};

// A one-line text progress bar on stderr, redrawn in place.
void draw_progress(std::size_t done, std::size_t total, const std::string& what) {
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = total == 0 ? kWidth : done * kWidth / total;
  fmt::print(stderr, "\r[{}{}] {:>3}/{} {:<28}", std::string(filled, '#'),
             std::string(kWidth - filled, '.'), done, total, what);
  if (done == total) fmt::print(stderr, "\n");
  std::fflush(stderr);
}

int do_bench(const BenchArgs& a) {
  run::BenchOptions o;
  o.kernel = a.kernel;
  o.schemes = a.schemes;
  o.n = a.n;
  o.bs = a.bs;
  o.threads = a.threads;
  o.reps = a.reps;
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
  if (!a.quiet) o.progress = draw_progress;
  // Ctrl-C / SIGTERM: finish the current measurement, then remove the temporary pools (a
  // handler cannot remove a directory safely) and exit 130 (run_bench throws kInterrupted).
  const InterruptScope interrupts(OnInterrupt::kStopAfterStep);
  o.stop = InterruptScope::stop_flag();
  const auto r = run::run_bench(o);
  if (a.json)
    fmt::print("{}\n", run::to_json(r).dump(2));
  else
    fmt::print("{}", run::to_markdown(r));
  for (const auto& s : r.schemes)
    if (!s.bit_exact) return kExitVerifyFailed;
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Time every persistency scheme natively against base, side by side: each repetition runs "
      "every scheme once on a fresh pool (creation untimed, order rotated per repetition); "
      "reports median, spread and the per-repetition ratio to base, and checks every result "
      "is bit-identical to base's. Pools go to a temporary directory that is removed after.");
  std::string kernels, schemes_of_kernels;
  for (const auto& d : run::kernel_drivers()) {
    kernels += (kernels.empty() ? "" : ", ") + d.name;
    schemes_of_kernels += fmt::format(" {}: {};", d.name, fmt::join(d.schemes, ","));
  }
  cmd->add_option("kernel", args->kernel, "Kernel to benchmark: " + kernels)->required();
  cmd->add_option("--schemes", args->schemes,
                  "Comma-separated schemes of the kernel (default: all; base is always "
                  "included):" +
                      schemes_of_kernels)
      ->delimiter(',');
  cmd->add_option("--n", args->n, "Matrix dimension")->capture_default_str();
  cmd->add_option("--bs", args->bs, "Tile size")->capture_default_str();
  cmd->add_option("--threads", args->threads, "OpenMP threads")->capture_default_str();
  cmd->add_option("--reps", args->reps, "Repetitions per scheme")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the input matrices")->capture_default_str();
  args->kernel_options.add_to(*cmd);
  cmd->add_option("--persist", args->persist, "Persistence mode: cpu, auto, none")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "auto", "none"}));
  cmd->add_option("--flush", args->flush, "Flush instruction in cpu mode: clwb, clflushopt")
      ->capture_default_str()
      ->check(CLI::IsMember({"clwb", "clflushopt"}));
  cmd->add_option("--dir", args->dir,
                  "Directory for the temporary pools (default: $TMPDIR or /tmp)");
  cmd->add_flag("--json", args->json, "Print JSON instead of a Markdown table");
  cmd->add_flag("--quiet", args->quiet, "No progress bar on stderr");
  cmd->callback([args, &exit_code] { exit_code = do_bench(*args); });
}

}  // namespace pmlab::cli
