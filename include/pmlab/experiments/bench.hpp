// Side-by-side native timing of every persistency scheme against base (pmlab bench; reusable by
// eval): paired, interleaved repetitions until the ratio is known to a target precision.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/mem/helper_times.hpp"

#include "pmlab/experiments/paired_ratio.hpp"
#include "pmlab/persist/flush.hpp"
#include "pmlab/persist/persister.hpp"
#include "pmlab/pool/params.hpp"

namespace pmlab::experiments {

// The A/A row (BenchOptions::aa_check): base timed against base on a pool of its own, with the
// same pairing, order alternation and interval as every scheme. Its true ratio is exactly 1, so
// an interval that resolves away from 1 measures the method's own bias at this load.
inline constexpr const char* kAaScheme = "base-aa";

struct BenchOptions {
  std::string kernel = "tmm";
  std::vector<std::string> schemes;  // empty: every scheme of the kernel; base is always added
  bool aa_check = false;             // also time kAaScheme (base against itself) first
  std::uint64_t n = 768;
  std::uint64_t bs = 16;
  // One thread by default: a single-threaded run has no OpenMP team, so no thread spin-waits
  // at a barrier while another process holds its core (docs/measurement.md, "Threads").
  std::uint32_t threads = 1;
  std::uint64_t seed = 1;
  std::vector<pool::KernelParam> kernel_params;  // the kernel's own (conv2d: width)
  // gemm only: BLAS libraries timed against base like schemes, through CBLAS on the same
  // inputs (blas_rivals.hpp: "openblas", "blis"); their results must equal base's within a
  // relative 1e-12.
  std::vector<std::string> rivals;
  persist::PersistMode mode = persist::PersistMode::kCpu;
  persist::FlushKind flush = persist::best_flush_kind();
  // Where the temporary pools go (a fresh subdirectory, removed after); empty: /dev/shm if
  // writable, else $TMPDIR.
  std::string dir;
  // Every timed repetition executes the kernel as many times as it takes base to reach this
  // many seconds of computation (calibrated once per benchmark on base), so that a scheduler
  // time slice (~4 ms) is small against one repetition.
  double min_rep_seconds = 0.2;
  // Stop a scheme once its ratio's 95% interval is within ±target (0.01 = ±1%) ...
  double target = 0.01;
  // ... or after this many wall seconds of its pairs (pool creation included), whichever first.
  double budget_seconds = 60;
  std::size_t min_pairs = 8;
  std::size_t max_pairs = 200;
  // What a ratio is: the trimmed mean of per-pair ratios, or the ratio of the two sides' 10th
  // percentiles (the floor; docs/measurement.md, "The floor statistic"). JSON reports both.
  experiments::RatioStatistic statistic = experiments::RatioStatistic::kTrimmedMean;
  // One untimed execution per scheme (verified), no timing statistics: for instruction counts
  // under callgrind (scripts/instruction-counts), where each execution is dumped separately.
  bool single_pass = false;
  // Called before each pair: (scheme index, number of schemes, "lp pair 12 ±3.1%").
  std::function<void(std::size_t, std::size_t, const std::string&)> progress;
  // Checked between runs: when set, run_bench removes its pools and throws
  // pmlab::Error(kInterrupted). Signal handlers set it (a handler cannot remove files safely).
  const std::atomic<bool>* stop = nullptr;
};

struct BenchSchemeResult {
  std::string scheme;
  // The paired measurement against base (empty for base itself): ratio, ci95, resolved,
  // reason, every pair's wall and CPU seconds, load before/after.
  std::optional<experiments::PairedRatioResult> paired;
  // Median seconds of one repetition (`executions_per_rep` kernel executions) over the pairs
  // counted; for base, over every pair of every scheme.
  double median_rep_seconds = 0;
  bool bit_exact = true;  // C equalled the fault-free reference bit for bit (checked once)
  // gemm: 2 n^3 floating-point operations per execution over median_rep_seconds.
  std::optional<double> gflops;
  // A BLAS rival's row (BenchOptions::rivals): the kernel the library chose for this CPU, and
  // its result's normwise relative difference from base's (max |C_lib - C| / max |C|).
  std::string rival_kernel;
  std::optional<double> rival_difference;
  // Seed 002's flush helper thread over the scheme's timed executions (summed; empty placement
  // when the scheme used none): its busy time, the main thread's waits, where it ran.
  mem::HelperTimes helper;
};

// Unit costs of persisting on this machine, measured next to the schemes (cpu mode only, with
// the run's flush instruction): they explain the schemes' overheads (docs/schemes.md).
struct PersistUnitCosts {
  double flush_fence_ns = 0;   // store to a line, flush it, sfence: one serialized persist
  double flush_stream_ns = 0;  // per dirty line when many are flushed before one sfence
  double nt_copy_gbs = 0;      // non-temporal copy bandwidth (copy_durable's native path)
};

struct BenchResult {
  std::string kernel;
  std::uint64_t n = 0, bs = 0;
  std::uint32_t threads = 0;
  std::string persist, flush, nt_store_isa;
  std::uint64_t executions_per_rep = 1;  // kernel executions inside one timed repetition
  double base_execution_seconds = 0;     // one base execution, from the calibration run
  double target = 0, budget_seconds = 0, min_rep_seconds = 0;
  bool single_pass = false;
  std::string omp_wait_policy, gomp_spincount;  // the environment's, "" when unset
  std::optional<double> load_before, load_after;
  unsigned cores = 0;
  std::vector<std::string> warnings;  // machine busy, spinning OpenMP threads, ...
  double wall_seconds = 0;
  std::vector<BenchSchemeResult> schemes;  // base first
  PersistUnitCosts unit_costs;             // zero unless persist = cpu
};

// Validates the options (throws pmlab::Error with a readable message), calibrates how many
// kernel executions make one repetition, then measures each scheme against base in paired,
// order-alternating repetitions (experiments::measure_paired_ratio) on fresh pools (creation
// and pre-faulting untimed), timing only the kernel computation.
[[nodiscard]] BenchResult run_bench(const BenchOptions& opt);

// Per scheme: ratio, ci95 [low, high], resolved, reason, text ("+0.4% [-0.3%, +1.1%]" or
// "... unresolved: ..."), per-pair timings; machine state at the top level.
[[nodiscard]] nlohmann::json to_json(const BenchResult& r);
// Markdown table: scheme, seconds per repetition, ratio with its interval or "unresolved",
// pairs, CPU/wall, bit-exact; then the machine state and warnings.
[[nodiscard]] std::string to_markdown(const BenchResult& r);

}  // namespace pmlab::experiments
