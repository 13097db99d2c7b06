// The experiment driver's view of a kernel: arrays, input set-up, resumable execution,
// verification.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pmlab/persist/flush.hpp"
#include "pmlab/persist/persister.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/scheme/family.hpp"
#include "pmlab/scheme/ipv_profile.hpp"
#include "pmlab/scheme/run_report.hpp"

namespace pmlab::run {

struct ExecOptions {
  persist::PersistMode mode = persist::PersistMode::kCpu;
  persist::FlushKind flush = persist::best_flush_kind();
  // Non-null: the run's outer loop stores here the number of outer iterations done (a progress
  // bar polls it; KernelDriver::outer_steps is the total).
  std::atomic<std::uint64_t>* steps_done = nullptr;
  // The run stops after recovery (no normal execution): `pmlab pool check` runs it on a copy
  // of the pool to report what the next run's recovery will find.
  bool recover_only = false;
  // The pool's parameters come from plan_run (below), which validated them, and the caller
  // checked the pool's layout against the plan: the run repeats neither (pmlab run's one
  // validation). Every other caller leaves it false and the run validates.
  bool planned = false;
};

// How many runs' parameters have been validated in this process (KernelDriver::validate and the
// validation inside an unplanned execute): what the tests count to keep it at one per run.
inline std::atomic<std::uint64_t> validations_made{0};

// What one run did (scheme::RunReport: the scheme rows fill in its recovery part).
using RunReport = scheme::RunReport;

struct VerifyResult {
  std::uint64_t elements = 0;
  std::uint64_t mismatches = 0;  // elements whose bit patterns differ from the reference
  std::string first_mismatch;    // human-readable location/value of the first one
  [[nodiscard]] bool ok() const { return mismatches == 0; }
};

// A parameter a kernel declares beyond the common ones (n, bs, seed, ...): `pmlab run/sim/crash/
// bench` offer it as `--<name>` and the pool stores it (pool::RunParams::kernel_params).
struct KernelParamSpec {
  std::string name;  // <= 15 characters
  std::string help;  // for --help; say what the kernel assumes when the option is absent
  std::uint64_t min = 1, max = UINT64_MAX;  // range of a given value
  // Non-empty: the option takes one of these names, stored as its index (min/max unused).
  std::vector<std::string> choices = {};
  bool flag = false;  // an option without a value: stored as 1 when given (min/max unused)
};

// A set of the kernel's own parameters the SIGKILL tests run some of its schemes under, beside
// their default run (gemm's native micro-kernel: --micro auto). Declared by the kernel
// (K::crash_test_variants(), optional), so the kill suite needs no kernel's name.
struct CrashTestVariant {
  std::string label;                 // a word for the test's name ("micro")
  std::vector<std::string> schemes;  // the rows run under it
  std::vector<std::string> args;     // command-line options added to `pmlab run`
};

struct KernelDriver {
  std::string name;
  std::vector<std::string> schemes;
  // Schemes among `schemes` that are not crash-safe (measurement rows such as ipv-nf): crash
  // campaigns, kill tests and eval's crash table leave them out; `pmlab crash` refuses them.
  std::vector<std::string> crash_unsafe;
  // Whether `scheme` may be crash-tested (it is not in crash_unsafe).
  [[nodiscard]] bool crash_safe(const std::string& scheme) const {
    return std::find(crash_unsafe.begin(), crash_unsafe.end(), scheme) == crash_unsafe.end();
  }
  // What each row of `schemes` declares beyond its name (its family, ...), in the same order:
  // consumers ask these instead of reading anything out of a scheme's name.
  std::vector<scheme::RowFacts> rows;
  // The facts of row `scheme`; nullptr when the kernel has no such row.
  [[nodiscard]] const scheme::RowFacts* row(std::string_view scheme) const {
    for (const auto& r : rows)
      if (r.name == scheme) return &r;
    return nullptr;
  }
  std::vector<KernelParamSpec> params;  // the kernel's own parameters (see KernelParamSpec)
  // Largest n the SIGKILL tests draw (random n in [1, this]); they must run in well under a
  // second at this size so that kills land anywhere in a run.
  std::uint64_t crash_test_max_n = 256;
  std::vector<CrashTestVariant> crash_test_variants;  // see CrashTestVariant
  // The block size `pmlab run|bench|sim` and `pmlab eval` use when none is given. For most kernels
  // it is a tile edge (16: LP's region is a 16 x 16 tile); a kernel whose bs counts the values of
  // a 1-D region says otherwise (K::kDefaultBs, optional): cg's 16-value regions put a checksum
  // slot beside every 128 bytes (docs/lp-native-cost.md, "At sizes beyond the host's L2").
  std::uint64_t default_bs = 16;
  // Throws pmlab::Error(kInvalidArgument) for impossible parameters or unknown schemes.
  std::function<void(const pool::RunParams&)> validate;
  std::function<std::vector<pool::ArraySpec>(const pool::RunParams&)> arrays;
  // The layout tag this build stamps on a pool of these parameters (run::layout_tag).
  std::function<std::uint32_t(const pool::RunParams&)> layout_tag;
  // Writes the inputs (and output initial values) into a freshly created pool.
  std::function<void(pool::Pool&)> init;
  // Recovers an interrupted run if needed, runs to completion, marks the pool done.
  std::function<RunReport(pool::Pool&, const ExecOptions&)> execute;
  // Compares the pool's outputs with a fault-free reference computed in the same FP order.
  std::function<VerifyResult(const pool::Pool&)> verify;
  // Sizes must be powers of two (FFT); tests and eval round their random sizes down.
  bool n_power_of_two = false;
  // The number of outer iterations a run of these parameters makes (the unit of resume points
  // and of ExecOptions::steps_done); empty when the kernel declares none (its bar then shows
  // only the time elapsed).
  std::function<std::uint64_t(const pool::RunParams&)> outer_steps;
  // Seed 002's rule profiler: runs the base scheme's first outer iteration on a pool created
  // with `base` and inited, watching the kernel's output, and classifies each of its objects
  // (the whole output unless the kernel names its parts) as basic, post-update or non-uniform.
  std::function<std::vector<scheme::IpvObjectProfile>(pool::Pool&)> profile_ipv;
};

// Throws kPoolMismatch when the pool was stamped with a layout tag other than `ours` (a pool
// without one, tag 0, passes).
void require_layout_tag(const pool::Pool& pool, std::uint32_t ours);

[[nodiscard]] const std::vector<KernelDriver>& kernel_drivers();
[[nodiscard]] const KernelDriver& find_kernel(const std::string& name);  // throws pmlab::Error
// The same lookup for callers that ask before the name is checked: nullptr when unknown.
[[nodiscard]] const KernelDriver* kernel_driver_named(const std::string& name);

// The facts of row `scheme` of catalog kernel `kernel`; nullptr when either is unknown (a row
// of an older results file, a user's kernel).
[[nodiscard]] const scheme::RowFacts* catalog_row(const std::string& kernel,
                                                  std::string_view scheme);

// A run resolved once: its kernel's driver, its validated parameters, and the pool layout they
// take. `pmlab run` plans once and passes the plan down (ExecOptions::planned).
struct RunPlan {
  const KernelDriver* kernel = nullptr;
  pool::RunParams params;
  std::vector<pool::ArraySpec> arrays;  // the kernel's and the scheme's
  std::uint32_t layout_tag = 0;         // what this build stamps on such a pool
};
// Looks the kernel up and validates `p` (kInvalidArgument naming what is wrong), then computes
// its arrays and layout tag.
[[nodiscard]] RunPlan plan_run(const pool::RunParams& p);
// The same for a kernel already looked up (`k` is the driver of p.kernel).
[[nodiscard]] RunPlan plan_run(const KernelDriver& k, const pool::RunParams& p);

[[nodiscard]] persist::PersistMode persist_mode_from_string(const std::string& s);
[[nodiscard]] std::string_view to_string(persist::PersistMode m);

}  // namespace pmlab::run
