// Native side-by-side benchmark: paired, order-alternating repetitions of every scheme vs base
// on fresh pools, until each ratio is known to a target precision or its budget is spent.
#include "pmlab/experiments/bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>
// Callgrind's client requests (header-only, from valgrind): instruction counts of the kernel
// alone (scripts/instruction-counts). Without the header they compile to nothing.
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_DUMP_STATS_AT(label) static_cast<void>(label)
#endif

#include "pmlab/core/error.hpp"
#include "pmlab/experiments/blas_rivals.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/native_dispatch.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/scheme.hpp"

namespace pmlab::experiments {

using run::ExecOptions;
using run::find_kernel;
using run::RunReport;

namespace {

namespace fs = std::filesystem;

// Rewrites one byte per page of every array with its own value: the page faults of first
// touch happen here, untimed, instead of inside the measured kernel, and whatever the kernel's
// init wrote (copied inputs, zeroed outputs) is preserved.
void prefault(const pool::Pool& pool) {
  for (const auto& a : pool.arrays()) {
    auto* bytes = reinterpret_cast<volatile unsigned char*>(pool.base() + a.offset);
    for (std::uint64_t i = 0; i < a.bytes; i += 4096) bytes[i] = bytes[i];
  }
}

// One run of one scheme: `executions` kernel executions on one fresh pool (created and
// pre-faulted untimed; between executions its arrays are zeroed and re-initialized, which is
// what creation does, minus the file creation and fsync that would dominate short kernels).
// Wall and CPU time are the drivers' compute_seconds and compute_cpu_seconds: normal execution
// only, no scheme set-up, no final persist.
struct Run {
  experiments::RunTiming timing;
  double wall_seconds = 0;  // the whole run: pool creation, re-initializations, persists
  bool verified = true;     // the driver's bit-exact check against its fault-free reference
  mem::HelperTimes helper;  // summed over the executions (seed 002's flush helper)
};

Run run_scheme(const BenchOptions& opt, const std::string& scheme, const fs::path& dir,
               std::uint64_t executions, bool verify) {
  pool::RunParams p;
  p.kernel = opt.kernel;
  p.scheme =
      scheme == kAaScheme ? std::string(scheme::kBaseScheme) : scheme;  // the A/A row runs base
  p.n = opt.n;
  p.bs = opt.bs;
  p.threads = opt.threads;
  p.seed = opt.seed;
  p.kernel_params = opt.kernel_params;
  const auto& k = find_kernel(opt.kernel);
  const auto path = (dir / scheme).string();               // its own pool, also for the A/A row
  const std::string dump_label = "pmlab-bench " + scheme;  // names the callgrind dump
  Run r;
  const double start = experiments::steady_clock_seconds();
  {
    auto pool = pool::Pool::create(path, p, k.arrays(p), k.init);
    prefault(pool);
    for (std::uint64_t e = 0; e < executions; ++e) {
      if (opt.stop && opt.stop->load())
        throw Error(ErrorCode::kInterrupted, "bench interrupted; temporary pools removed");
      if (e > 0) {
        for (const auto& a : pool.arrays()) std::memset(pool.base() + a.offset, 0, a.bytes);
        k.init(pool);
        pool.set_state(pool::RunState::kInitialized);
      }
      // Only the kernel's own instructions are counted under callgrind
      // (scripts/instruction-counts runs with --collect-atstart=no); natively these are no-ops.
      CALLGRIND_TOGGLE_COLLECT;
      const RunReport report = k.execute(pool, ExecOptions{opt.mode, opt.flush});
      CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS_AT(dump_label.c_str());
      r.timing.wall_seconds += report.compute_seconds;
      r.timing.cpu_seconds += report.compute_cpu_seconds;
      r.helper += report.helper;
      // Checked once (the reference costs as much as a run): every execution runs the same
      // deterministic code on the same inputs.
      if (verify && e == 0) r.verified = k.verify(pool).ok();
    }
  }
  fs::remove(path);
  r.wall_seconds = experiments::steady_clock_seconds() - start;
  // A run too short for the clock still needs a positive time for its ratio.
  r.timing.wall_seconds = std::max(r.timing.wall_seconds, 1e-9);
  return r;
}

// A BLAS rival's operands: gemm's inputs and base's result, taken from one base run's pool.
struct RivalOperands {
  std::vector<double> a, b, c;  // n x n each; c is base's C
};

RivalOperands rival_operands(const BenchOptions& opt, const fs::path& dir) {
  pool::RunParams p;
  p.kernel = opt.kernel;
  p.scheme = std::string(scheme::kBaseScheme);
  p.n = opt.n;
  p.bs = opt.bs;
  p.threads = opt.threads;
  p.seed = opt.seed;
  p.kernel_params = opt.kernel_params;
  const auto& k = find_kernel(opt.kernel);
  const auto path = (dir / "rival-operands").string();
  RivalOperands r;
  {
    auto pool = pool::Pool::create(path, p, k.arrays(p), k.init);
    (void)k.execute(pool, ExecOptions{persist::PersistMode::kNone, opt.flush});
    const std::size_t count = opt.n * opt.n;
    const auto copy = [&](const char* name) {
      const double* v = pool.array<const double>(name);
      return std::vector<double>(v, v + count);
    };
    r.a = copy("a");
    r.b = copy("b");
    r.c = copy("c");
  }
  fs::remove(path);
  return r;
}

// `executions` products by a BLAS rival into `out`, timed like a scheme's computation.
Run run_rival(const BenchOptions& opt, const BlasRival& lib, const RivalOperands& in,
              std::vector<double>& out, std::uint64_t executions) {
  Run r;
  const double start = experiments::steady_clock_seconds();
  const double cpu0 = experiments::process_cpu_seconds();
  for (std::uint64_t e = 0; e < executions; ++e) {
    if (opt.stop && opt.stop->load())
      throw Error(ErrorCode::kInterrupted, "bench interrupted; temporary pools removed");
    lib.multiply(opt.n, in.a.data(), in.b.data(), out.data(), static_cast<int>(opt.threads));
  }
  r.timing.cpu_seconds = experiments::process_cpu_seconds() - cpu0;
  r.wall_seconds = experiments::steady_clock_seconds() - start;
  r.timing.wall_seconds = std::max(r.wall_seconds, 1e-9);
  return r;
}

// A row with no paired measurement (base, or any row of a single pass).
BenchSchemeResult untimed_row(const std::string& name, bool exact) {
  BenchSchemeResult b;
  b.scheme = name;
  b.bit_exact = exact;
  return b;
}

void validate(const BenchOptions& opt, const std::vector<std::string>& schemes) {
  const auto& k = find_kernel(opt.kernel);  // throws for unknown kernels, naming the known ones
  if (!opt.rivals.empty() && opt.kernel != "gemm")
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--rivals times BLAS libraries' dgemm against gemm; {} has no rival",
                            opt.kernel));
  for (const auto& name : opt.rivals) (void)blas_rival(name);  // unknown or missing: refused
  if (!(opt.target > 0 && opt.target < 1))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--target must be in (0, 100) percent, got {}", 100 * opt.target));
  if (!(opt.budget_seconds > 0))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--budget must be positive, got {}", opt.budget_seconds));
  if (!(opt.min_rep_seconds >= 0 && opt.min_rep_seconds <= 3600))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--rep-seconds must be in [0, 3600], got {}", opt.min_rep_seconds));
  const std::size_t fewest = experiments::detail::fewest_pairs_for(0.95);
  if (opt.min_pairs < fewest || opt.min_pairs > 100000)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--min-pairs must be in [{}, 100000] (fewer pairs cannot give an "
                            "honest 95% interval), got {}",
                            fewest, opt.min_pairs));
  if (opt.max_pairs < 1 || opt.max_pairs > 100000)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--reps (max pairs) must be in [1, 100000], got {}", opt.max_pairs));
  for (const auto& s : schemes)
    if (std::find(k.schemes.begin(), k.schemes.end(), s) == k.schemes.end())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("unknown scheme '{}' for {} (known: {})", s, opt.kernel,
                              fmt::join(k.schemes, ", ")));
  pool::RunParams p;
  p.kernel = opt.kernel;
  p.n = opt.n;
  p.bs = opt.bs;
  p.threads = opt.threads;
  p.kernel_params = opt.kernel_params;
  k.validate(p);
  // One pool at a time lives in the temporary directory: the largest must fit there (else the
  // sizes are impossible here: exit 2 before anything is created, not ENOSPC half-way).
  std::uint64_t largest = 0;
  for (const auto& s : schemes) {
    p.scheme = s;
    largest = std::max(largest, pool::pool_file_bytes(k.arrays(p)));
  }
  const fs::path parent = opt.dir.empty() ? fs::temp_directory_path() : fs::path(opt.dir);
  pool::require_room_for_pool((parent / "pool").string(), largest);
  if (opt.mode == persist::PersistMode::kCpu && !persist::cpu_supports(opt.flush))
    throw Error(ErrorCode::kUnsupported,
                fmt::format("this CPU does not support {}", persist::to_string(opt.flush)));
}

template <persist::FlushKind K>
PersistUnitCosts unit_costs_with() {
  using clock = std::chrono::steady_clock;
  constexpr std::size_t kLines = 1u << 16;  // 4 MiB: cache-resident, like a few C panels
  std::vector<double> buf(kLines * 8 + 8), dst(kLines * 8 + 8);
  double* a = reinterpret_cast<double*>(
      round_up(reinterpret_cast<std::uintptr_t>(buf.data()), kCacheLineBytes));
  double* d = reinterpret_cast<double*>(
      round_up(reinterpret_cast<std::uintptr_t>(dst.data()), kCacheLineBytes));
  PersistUnitCosts best{1e300, 1e300, 0};
  for (int rep = 0; rep < 3; ++rep) {  // best of 3: the least disturbed measurement
    auto t0 = clock::now();
    for (std::size_t i = 0; i < kLines; i += 16) {
      a[i * 8] += 1.0;
      persist::flush_line<K>(a + i * 8);
      persist::sfence();
    }
    auto t1 = clock::now();
    for (std::size_t i = 0; i < kLines * 8; i += 8) a[i] += 1.0;
    auto t2 = clock::now();
    persist::flush_range<K>(a, kLines * kCacheLineBytes);
    persist::sfence();
    auto t3 = clock::now();
    scheme::nt_copy(d, a, kLines * 8);
    persist::sfence();
    auto t4 = clock::now();
    auto ns = [](auto x, auto y) {
      return std::chrono::duration<double, std::nano>(y - x).count();
    };
    best.flush_fence_ns =
        std::min(best.flush_fence_ns, ns(t0, t1) / static_cast<double>(kLines / 16));
    best.flush_stream_ns = std::min(best.flush_stream_ns, ns(t2, t3) / static_cast<double>(kLines));
    best.nt_copy_gbs =
        std::max(best.nt_copy_gbs, static_cast<double>(kLines * kCacheLineBytes) / ns(t3, t4));
  }
  return best;
}

PersistUnitCosts unit_costs(persist::FlushKind k) {
  switch (k) {
    case persist::FlushKind::kClflush:
      return unit_costs_with<persist::FlushKind::kClflush>();
    case persist::FlushKind::kClflushopt:
      return unit_costs_with<persist::FlushKind::kClflushopt>();
    case persist::FlushKind::kClwb:
      break;
  }
  return unit_costs_with<persist::FlushKind::kClwb>();
}

// /dev/shm when it is a writable directory, else $TMPDIR: the kernels' persists (libpmem2's
// msync on a file that is not DAX) would otherwise write the pool back to disk between
// executions — untimed, but it would eat most of the time budget.
fs::path default_pool_parent() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return fs::temp_directory_path();
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string format_seconds(double s) {
  return s >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.1f} ms", 1e3 * s);
}

}  // namespace

BenchResult run_bench(const BenchOptions& opt) {
  std::vector<std::string> schemes{std::string(scheme::kBaseScheme)};
  for (const auto& s : opt.schemes.empty() ? find_kernel(opt.kernel).schemes : opt.schemes)
    if (std::find(schemes.begin(), schemes.end(), s) == schemes.end()) schemes.push_back(s);
  validate(opt, schemes);
  if (opt.aa_check) schemes.insert(schemes.begin() + 1, kAaScheme);

  const fs::path parent = opt.dir.empty() ? default_pool_parent() : fs::path(opt.dir);
  const fs::path dir =
      parent / fmt::format("pmlab-bench-{}-{}", ::getpid(),
                           std::chrono::steady_clock::now().time_since_epoch().count());
  fs::create_directories(dir);
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};

  BenchResult r;
  r.kernel = opt.kernel;
  r.n = opt.n;
  r.bs = opt.bs;
  r.threads = opt.threads;
  r.persist = run::to_string(opt.mode);
  r.flush = std::string(persist::to_string(opt.flush));
  r.nt_store_isa = std::string(scheme::nt_copy_isa());
  r.target = opt.target;
  r.budget_seconds = opt.budget_seconds;
  r.min_rep_seconds = opt.min_rep_seconds;
  r.single_pass = opt.single_pass;
  r.omp_wait_policy = env_or_empty("OMP_WAIT_POLICY");
  r.gomp_spincount = env_or_empty("GOMP_SPINCOUNT");
  r.cores = std::thread::hardware_concurrency();
  r.load_before = experiments::read_load_average();
  const auto wall0 = std::chrono::steady_clock::now();

  // Calibration: one untimed base execution (it also warms caches, page tables and the
  // OpenMP runtime) sets how many executions make a repetition.
  if (opt.progress) opt.progress(0, schemes.size(), "calibrating on base");
  const Run calibration = run_scheme(opt, std::string(scheme::kBaseScheme), dir, 1, true);
  // CPU time per thread, when lower than wall time: preemption during calibration on a busy
  // machine would otherwise shrink every repetition below --rep-seconds.
  const double calibration_cpu = calibration.timing.cpu_seconds / static_cast<double>(opt.threads);
  r.base_execution_seconds = calibration_cpu > 0
                                 ? std::min(calibration.timing.wall_seconds, calibration_cpu)
                                 : calibration.timing.wall_seconds;
  // For a tiny kernel each execution's untimed part (re-initialization, the final persist)
  // dwarfs its computation: the count is capped so that a repetition's wall time stays within
  // ~5x --rep-seconds (+ one execution), or a smoke test at n = 24 would run for minutes.
  const double wanted = std::ceil(opt.min_rep_seconds / r.base_execution_seconds);
  const double affordable =
      std::floor(5 * opt.min_rep_seconds / std::max(calibration.wall_seconds, 1e-6));
  r.executions_per_rep =
      static_cast<std::uint64_t>(std::clamp(std::min(wanted, affordable), 1.0, 100000.0));
  r.schemes.push_back(untimed_row(std::string(scheme::kBaseScheme), calibration.verified));

  // BLAS rivals are rows after the schemes, measured against base the same way.
  const std::size_t scheme_rows = schemes.size();
  for (const auto& name : opt.rivals) schemes.push_back(name);
  RivalOperands rival_in;
  std::vector<double> rival_out;
  if (!opt.rivals.empty()) {
    rival_in = rival_operands(opt, dir);
    rival_out.assign(rival_in.c.size(), 0.0);
  }

  std::vector<double> base_reps;
  for (std::size_t s = 1; s < schemes.size(); ++s) {
    const std::string& name = schemes[s];
    const BlasRival* rival = s >= scheme_rows ? &blas_rival(name) : nullptr;
    // The scheme's first, untimed execution verifies it bit for bit and warms it up; a rival's
    // is compared with base's result.
    std::optional<double> difference;
    bool exact = true;
    if (rival != nullptr) {
      (void)run_rival(opt, *rival, rival_in, rival_out, 1);
      difference = max_relative_difference(rival_out.data(), rival_in.c.data(), rival_out.size());
      exact =
          std::memcmp(rival_out.data(), rival_in.c.data(), rival_out.size() * sizeof(double)) == 0;
    } else {
      exact = run_scheme(opt, name, dir, 1, true).verified;
    }
    if (opt.single_pass) {
      r.schemes.push_back(untimed_row(name, exact));
      if (rival != nullptr) {
        r.schemes.back().rival_kernel = rival->kernel;
        r.schemes.back().rival_difference = difference;
      }
      continue;
    }
    experiments::PairedRatioOptions po;
    po.target_relative_half_width = opt.target;
    po.budget_seconds = opt.budget_seconds;
    po.min_pairs = opt.min_pairs;
    po.max_pairs = opt.max_pairs;
    po.estimator.statistic = opt.statistic;
    po.threads_per_run = opt.threads;
    std::size_t pairs = 0;
    mem::HelperTimes helper;  // the scheme's timed executions only
    auto run_one = [&](const std::string& which) {
      if (rival != nullptr && which == name)
        return run_rival(opt, *rival, rival_in, rival_out, r.executions_per_rep).timing;
      const Run run = run_scheme(opt, which, dir, r.executions_per_rep, false);
      if (which == name) helper += run.helper;
      return run.timing;
    };
    const auto measure_pair = [&](bool scheme_first) {
      if (opt.progress)
        opt.progress(s - 1, schemes.size() - 1, fmt::format("{} pair {}", name, ++pairs));
      experiments::RunTiming base, scheme;
      if (scheme_first) {
        scheme = run_one(name);
        base = run_one(std::string(scheme::kBaseScheme));
      } else {
        base = run_one(std::string(scheme::kBaseScheme));
        scheme = run_one(name);
      }
      return experiments::PairTiming{base.wall_seconds, scheme.wall_seconds, base.cpu_seconds,
                                     scheme.cpu_seconds};
    };
    experiments::PairedRatioResult result;
    if (opt.max_pairs >= opt.min_pairs) {
      result = experiments::measure_paired_ratio(measure_pair, po);
    } else {
      // Fewer pairs than any honest interval needs (a smoke test): measure them in the same
      // alternating order and let the same summary call the ratio unresolved.
      po.max_pairs = po.min_pairs;
      const double start = experiments::steady_clock_seconds();
      const auto load_before = experiments::read_load_average();
      std::vector<experiments::PairRecord> records;
      for (std::size_t i = 0; i < opt.max_pairs; ++i)
        records.push_back(
            experiments::detail::make_record(measure_pair(i % 2 == 1), i % 2 == 1, po, i));
      result = experiments::detail::summarize(std::move(records), experiments::StopCause::kMaxPairs,
                                              load_before, experiments::read_load_average(),
                                              experiments::steady_clock_seconds() - start, po);
    }
    for (const auto& p : result.pairs) base_reps.push_back(p.timing.base_seconds);
    BenchSchemeResult b;
    b.scheme = name;
    b.median_rep_seconds = result.scheme_median_seconds;
    b.bit_exact = exact;
    b.helper = helper;
    if (rival != nullptr) {
      b.rival_kernel = rival->kernel;
      b.rival_difference = difference;
    }
    b.paired = std::move(result);
    r.schemes.push_back(std::move(b));
  }
  if (opt.progress) opt.progress(schemes.size() - 1, schemes.size() - 1, "done");
  r.schemes[0].median_rep_seconds =
      base_reps.empty() ? r.base_execution_seconds * static_cast<double>(r.executions_per_rep)
                        : experiments::detail::median(base_reps);

  if (opt.kernel == "gemm")  // 2 n^3 operations per product (n^3 multiplies and adds)
    for (auto& s : r.schemes)
      if (s.median_rep_seconds > 0)
        s.gflops = 2.0 * std::pow(static_cast<double>(opt.n), 3) *
                   static_cast<double>(r.executions_per_rep) / s.median_rep_seconds / 1e9;

  r.load_after = experiments::read_load_average();
  bool any_busy = false;
  for (const auto& s : r.schemes) any_busy = any_busy || (s.paired && s.paired->busy());
  const auto above = [&](const std::optional<double>& l) {
    return r.cores > 0 && l && *l > static_cast<double>(r.cores);
  };
  if (any_busy || above(r.load_before) || above(r.load_after))
    r.warnings.push_back(fmt::format(
        "machine busy: load average {} before, {} after on {} cores; CPU/wall below {:.2f} or "
        "load above the core count makes ratios unreliable (unresolved ones are marked)",
        r.load_before ? fmt::format("{:.2f}", *r.load_before) : "n/a",
        r.load_after ? fmt::format("{:.2f}", *r.load_after) : "n/a", r.cores,
        experiments::PairedRatioOptions{}.healthy_cpu_fraction));
  // Every scheme does base's work plus its own, so a scheme reliably faster than base is not
  // the scheme's cost: the two loops differ, or the build placed them differently (the same
  // kernels moved by up to 17 points between builds; docs/measurement.md, "Drift").
  for (const auto& s : r.schemes)
    if (s.scheme == kAaScheme) {
      if (s.paired && s.paired->resolved && s.paired->ci95 &&
          (s.paired->ci95->high < 1 || s.paired->ci95->low > 1))
        r.warnings.push_back(fmt::format(
            "A/A check failed: base against itself resolved at {}, away from 1: at this load the "
            "pairing itself is biased by about that much, so no ratio of that size here is the "
            "scheme's (docs/measurement.md, \"A/A\")",
            experiments::format_ratio(*s.paired)));
    } else if (s.rival_kernel.empty() && s.paired && s.paired->resolved && s.paired->ci95 &&
               s.paired->ci95->high < 1) {
      r.warnings.push_back(fmt::format(
          "{} resolved faster than base ({}): it runs base's work plus its own, so this is a "
          "different loop or code placement of this build, not the scheme's cost "
          "(docs/measurement.md)",
          s.scheme, experiments::format_ratio(*s.paired)));
    }
  if (opt.threads > 1 && r.omp_wait_policy != "passive" && r.omp_wait_policy != "PASSIVE")
    r.warnings.push_back(
        "OpenMP threads may spin-wait at barriers (OMP_WAIT_POLICY is not passive): on a shared "
        "machine a spinning thread competes with other processes; set OMP_WAIT_POLICY=passive "
        "or use --threads 1 (docs/measurement.md)");
  if (opt.mode == persist::PersistMode::kCpu) r.unit_costs = unit_costs(opt.flush);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

namespace {

const char* stop_name(experiments::StopCause c) {
  switch (c) {
    case experiments::StopCause::kTargetReached:
      return "target reached";
    case experiments::StopCause::kBudgetSpent:
      return "budget spent";
    case experiments::StopCause::kMaxPairs:
      break;
  }
  return "max pairs";
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const BenchResult& r) {
  nlohmann::json schemes = nlohmann::json::array();
  for (const auto& s : r.schemes) {
    nlohmann::json j{{"scheme", s.scheme},
                     {"median_rep_seconds", s.median_rep_seconds},
                     {"bit_exact_vs_base", s.bit_exact}};
    if (s.gflops) j["gflops"] = *s.gflops;
    if (!s.rival_kernel.empty()) {
      j["rival_kernel"] = s.rival_kernel;
      j["rival_relative_difference"] = optional_json(s.rival_difference);
    }
    if (!s.helper.placement.empty())
      j["helper"] = {{"busy_ns", s.helper.busy_ns},
                     {"exposed_ns", s.helper.exposed_ns},
                     {"hidden_fraction", s.helper.hidden_fraction()},
                     {"placement", s.helper.placement}};
    if (!s.paired) {
      if (s.scheme == scheme::kBaseScheme) {  // the reference: its ratio is 1 by definition
        j["ratio"] = 1.0;
        j["ci95"] = {1.0, 1.0};
        j["resolved"] = true;
      }
      schemes.push_back(std::move(j));  // other schemes: single pass, nothing timed
      continue;
    }
    const auto& p = *s.paired;
    j["ratio"] = p.ratio;
    j["ci95"] = p.ci95 ? nlohmann::json{p.ci95->low, p.ci95->high} : nlohmann::json(nullptr);
    j["resolved"] = p.resolved;
    j["relative_half_width"] =
        std::isfinite(p.relative_half_width) ? nlohmann::json(p.relative_half_width) : nullptr;
    j["reason"] = p.reason;
    // Diagnostics of the interval (docs/measurement.md, "Drift"): its two parts, the halves.
    const auto interval_json = [](const std::optional<experiments::ConfidenceInterval>& ci) {
      return ci ? nlohmann::json{ci->low, ci->high} : nlohmann::json(nullptr);
    };
    j["statistic"] = experiments::to_string(p.statistic);
    j["trimmed_ratio"] = optional_json(p.trimmed_ratio);
    j["trimmed_ci95"] = interval_json(p.trimmed_ci95);
    j["floor_ratio"] = optional_json(p.floor_ratio);
    j["floor_ci95"] = interval_json(p.floor_ci95);
    j["bootstrap_ci95"] = interval_json(p.bootstrap_ci95);
    j["block_ci95"] = interval_json(p.block_ci95);
    j["blocks"] = p.blocks;
    j["first_half_ratio"] = optional_json(p.first_half_ratio);
    j["second_half_ratio"] = optional_json(p.second_half_ratio);
    j["drifted"] = p.drifted;
    j["faster_than_base"] = p.ci95 && p.ci95->high < 1;  // implausible for a scheme: see warnings
    j["text"] = experiments::format_ratio(p);
    j["stop"] = stop_name(p.stop);
    j["pairs_measured"] = p.pairs_measured;
    j["pairs_used"] = p.pairs_used;
    j["median_cpu_fraction"] = p.median_cpu_fraction;
    j["busy"] = p.busy();
    j["load_before"] = optional_json(p.load_before);
    j["load_after"] = optional_json(p.load_after);
    j["elapsed_seconds"] = p.elapsed_seconds;
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& q : p.pairs)
      pairs.push_back({{"ratio", q.ratio},
                       {"base_seconds", q.timing.base_seconds},
                       {"scheme_seconds", q.timing.scheme_seconds},
                       {"base_cpu_seconds", q.timing.base_cpu_seconds},
                       {"scheme_cpu_seconds", q.timing.scheme_cpu_seconds},
                       {"scheme_first", q.scheme_first},
                       {"healthy", q.healthy},
                       {"counted", q.counted}});
    j["pairs"] = std::move(pairs);
    schemes.push_back(std::move(j));
  }
  return {{"kernel", r.kernel},
          {"n", r.n},
          {"bs", r.bs},
          {"threads", r.threads},
          {"persist", r.persist},
          {"flush", r.flush},
          {"nt_store_isa", r.nt_store_isa},
          {"executions_per_rep", r.executions_per_rep},
          {"base_execution_seconds", r.base_execution_seconds},
          {"target", r.target},
          {"budget_seconds", r.budget_seconds},
          {"min_rep_seconds", r.min_rep_seconds},
          {"machine",
           {{"load_before", optional_json(r.load_before)},
            {"load_after", optional_json(r.load_after)},
            {"cores", r.cores},
            {"omp_wait_policy", r.omp_wait_policy},
            {"gomp_spincount", r.gomp_spincount}}},
          {"warnings", r.warnings},
          {"wall_seconds", r.wall_seconds},
          {"unit_costs",
           {{"flush_fence_ns", r.unit_costs.flush_fence_ns},
            {"flush_stream_ns_per_line", r.unit_costs.flush_stream_ns},
            {"nt_copy_gb_per_s", r.unit_costs.nt_copy_gbs}}},
          {"single_pass", r.single_pass},
          {"schemes", schemes}};
}

std::string to_markdown(const BenchResult& r) {
  std::string out = fmt::format(
      "{} n={} bs={} threads={} persist={} flush={} (NT stores: {}), {:.0f} s wall\n"
      "One repetition = {} kernel execution(s), base {} per repetition; pairs base/scheme "
      "back to back, order alternating; target ±{:.1f}%, budget {:.0f} s per scheme\n\n",
      r.kernel, r.n, r.bs, r.threads, r.persist, r.flush, r.nt_store_isa, r.wall_seconds,
      r.executions_per_rep,
      format_seconds(r.base_execution_seconds * static_cast<double>(r.executions_per_rep)),
      100 * r.target, r.budget_seconds);
  // Which statistic decides (every paired scheme of one run uses the same), and the other one
  // beside it so that a reader can compare them on the same pairs.
  std::optional<experiments::RatioStatistic> statistic;
  for (const auto& s : r.schemes)
    if (s.paired) statistic = s.paired->statistic;
  const bool floor = statistic == experiments::RatioStatistic::kFloor;
  if (statistic)
    out += floor ? "Ratio: the scheme's 10th-percentile repetition time over base's (the floor; "
                   "beside it the trimmed mean of the per-pair ratios)\n\n"
                 : "Ratio: the 20%-trimmed mean of the per-pair ratios (beside it the floor, "
                   "10th-percentile times)\n\n";
  out += fmt::format(
      "| scheme | per repetition | GFLOP/s | vs base [95% CI] | {} | pairs used/run | CPU/wall | "
      "stop | bit-exact |\n",
      floor ? "trimmed mean" : "floor");
  out += "|---|---:|---:|---|---|---:|---:|---|:---:|\n";
  const auto gflops = [](const BenchSchemeResult& s) {
    return s.gflops ? fmt::format("{:.1f}", *s.gflops) : std::string();
  };
  // A rival's row: the library and its kernel; "bit-exact" becomes its difference from base.
  const auto row_name = [](const BenchSchemeResult& s) {
    return s.rival_kernel.empty() ? s.scheme : fmt::format("{} ({})", s.scheme, s.rival_kernel);
  };
  const auto exactness = [](const BenchSchemeResult& s) -> std::string {
    if (s.rival_difference && !s.bit_exact)
      return fmt::format("{} (rel {:.1e})",
                         *s.rival_difference <= kRivalTolerance ? "within 1e-12" : "NO",
                         *s.rival_difference);
    return s.bit_exact ? "yes" : "NO";
  };
  const auto other = [&](const experiments::PairedRatioResult& p) -> std::string {
    const auto& ratio = floor ? p.trimmed_ratio : p.floor_ratio;
    const auto& ci = floor ? p.trimmed_ci95 : p.floor_ci95;
    if (!ratio || !ci) return "";
    using experiments::detail::percent;  // the interval's own rounding, never "-0.0%"
    return fmt::format("{} [{}, {}]", percent(*ratio - 1, 1), percent(ci->low - 1, 1),
                       percent(ci->high - 1, 1));
  };
  for (const auto& s : r.schemes) {
    if (!s.paired) {
      out += fmt::format(
          "| {} | {} | {} | {} | | | | | {} |\n", row_name(s), format_seconds(s.median_rep_seconds),
          gflops(s), s.scheme == scheme::kBaseScheme ? "(reference)" : "(single pass: not timed)",
          exactness(s));
      continue;
    }
    const auto& p = *s.paired;
    out += fmt::format("| {} | {} | {} | {} | {} | {}/{} | {:.2f} | {} | {} |\n", row_name(s),
                       format_seconds(s.median_rep_seconds), gflops(s),
                       experiments::format_ratio(p), other(p), p.pairs_used, p.pairs_measured,
                       p.median_cpu_fraction, stop_name(p.stop), exactness(s));
  }
  out += fmt::format("\nMachine: load average {} before, {} after, {} cores; OMP_WAIT_POLICY={}\n",
                     r.load_before ? fmt::format("{:.2f}", *r.load_before) : "n/a",
                     r.load_after ? fmt::format("{:.2f}", *r.load_after) : "n/a", r.cores,
                     r.omp_wait_policy.empty() ? "(unset)" : r.omp_wait_policy);
  for (const auto& w : r.warnings) out += "Warning: " + w + "\n";
  for (const auto& s : r.schemes)
    if (!s.helper.placement.empty())
      out += fmt::format(
          "\n{}'s flush helper ({}): busy {:.1f} ms, main thread waited {:.1f} ms: {:.0f}% of "
          "its flush time hidden (seed 002 Fig. 13: >= 41%)\n",
          s.scheme, s.helper.placement, 1e-6 * static_cast<double>(s.helper.busy_ns),
          1e-6 * static_cast<double>(s.helper.exposed_ns), 100 * s.helper.hidden_fraction());
  if (r.unit_costs.flush_fence_ns > 0)
    out += fmt::format(
        "\nUnit costs ({}): store + flush + sfence of one line {:.0f} ns; flushing many dirty "
        "lines before one sfence {:.1f} ns/line; non-temporal copy {:.1f} GB/s\n",
        r.flush, r.unit_costs.flush_fence_ns, r.unit_costs.flush_stream_ns,
        r.unit_costs.nt_copy_gbs);
  return out;
}

}  // namespace pmlab::experiments
