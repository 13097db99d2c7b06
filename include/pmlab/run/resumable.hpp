// The one resumable execution every native kernel driver uses, and the KernelDriver built from a
// kernel's description (arrays, inputs, operands, verification, scheme table).
//
// A kernel is described once, as a struct satisfying ResumableKernel (a complete one, installed
// with the examples: examples/stencil/stencil.hpp; the guide: docs/protect-your-own-loop.md);
// make_kernel_driver<K>() turns it into the native driver and make_sim_kernel<K>()
// (sim_kernel.hpp) into the simulator's entry points, so both run the very same scheme code. To
// add a scheme to a kernel, add a row to its scheme table (scheme/scheme.hpp). A loop that needs
// none of this (regions over chunks of arrays, independent or in phases) is shorter with
// lp::Loop (lp/loop.hpp).
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "pmlab/core/crc32c.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/pool/run_states.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/native_dispatch.hpp"
#include "pmlab/scheme/scheme.hpp"

namespace pmlab::run {

// The bytes that must be durable before a run is marked done (the kernel's result).
struct OutputBytes {
  const void* data = nullptr;
  std::size_t bytes = 0;
};

// A kernel as the drivers see it, apart from its schemes. Its outer iteration (what `first` and
// the resume point count) is the kernel's own: a step (cholesky, lu, gauss), a pass (fft), or
// blocks done (conv2d).
template <class K>
concept KernelDescription = requires(const pool::RunParams& p, pool::Pool& pool,
                                     const pool::Pool& cpool, const typename K::Operands& op) {
  { K::kName } -> std::convertible_to<std::string_view>;  // <= 15 characters (pool header)
  // The largest n the kill -9 tests and crash campaigns run the kernel at (they pick sizes up
  // to it); a user's kernel that is never crash-tested by pmlab's suites may give any n.
  { K::kCrashTestMaxN } -> std::convertible_to<std::uint64_t>;
  // Whether n must be a power of two (fft): the CLI and the suites then pick only such n.
  { K::kPowerOfTwoN } -> std::convertible_to<bool>;
  K::validate(p);  // sizes and scheme-specific limits (the scheme name is checked for it)
  { K::arrays(p) } -> std::same_as<std::vector<pool::ArraySpec>>;  // without scheme arrays
  K::init(pool);                                                   // writes the inputs
  { K::operands(cpool) } -> std::same_as<typename K::Operands>;
  { K::output(op) } -> std::same_as<OutputBytes>;
  { K::verify(cpool) } -> std::same_as<VerifyResult>;
  // Loads + stores the base scheme makes for `p`: the simulator's progress estimate
  // (SimSession::estimated_ops); it need not be exact.
  { K::base_refs(p) } -> std::convertible_to<std::uint64_t>;
};

// Optional: `static std::uint64_t outer_steps(const pool::RunParams&)`, how many outer
// iterations a run makes. With it, `pmlab run` draws a bar with time left, fed by
// mem::outer_step_done, which every scheme's outer loop calls once per iteration
// (tests/run/outer_steps_test.cpp holds every row to it).
// ... plus a scheme table (K::schemes) whose every row runs on the native backends.
template <class K>
concept ResumableKernel = KernelDescription<K> &&
    scheme::SchemeTableFor<decltype(K::schemes), scheme::SchemeContext<typename K::Operands>,
                           mem::PlainBackend>;

template <ResumableKernel K>
using ContextOf = scheme::SchemeContext<typename K::Operands>;

// A kernel's own parameters: K::params() if it declares any.
template <class K>
[[nodiscard]] std::vector<KernelParamSpec> declared_params() {
  if constexpr (requires {
                  { K::params() } -> std::same_as<std::vector<KernelParamSpec>>;
                })
    return K::params();
  else
    return {};
}

// Throws kInvalidArgument for a kernel parameter K does not declare or a value out of its range.
template <class K>
void require_declared_params(const pool::RunParams& p) {
  const auto specs = declared_params<K>();
  for (const auto& kp : p.kernel_params) {
    const auto it = std::find_if(specs.begin(), specs.end(),
                                 [&](const KernelParamSpec& s) { return s.name == kp.name; });
    if (it == specs.end())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{} has no parameter '{}' (--{})", K::kName, kp.name, kp.name));
    if (!it->choices.empty() && kp.value >= it->choices.size())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: --{} value #{} names none of {}", K::kName, kp.name, kp.value,
                              fmt::join(it->choices, ", ")));
    if (it->flag && kp.value > 1)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: --{} is a flag (0 or 1), got {}", K::kName, kp.name, kp.value));
    if (it->choices.empty() && !it->flag && (kp.value < it->min || kp.value > it->max))
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: --{} must be in [{}, {}], got {}", K::kName, kp.name, it->min,
                              it->max, kp.value));
  }
}

template <ResumableKernel K>
void validate_run(const pool::RunParams& p) {
  validations_made.fetch_add(1, std::memory_order_relaxed);
  scheme::require_scheme(K::schemes, K::kName, p.scheme);
  require_declared_params<K>(p);
  K::validate(p);
  scheme::with_scheme(K::schemes, p.scheme, [&](const auto& s) { s.validate(K::kName, p); });
}

template <ResumableKernel K>
[[nodiscard]] std::vector<pool::ArraySpec> run_arrays(const pool::RunParams& p) {
  std::vector<pool::ArraySpec> arrays = K::arrays(p);
  scheme::with_scheme(K::schemes, p.scheme, [&](const auto& s) {
    for (auto& a : s.arrays(p)) arrays.push_back(std::move(a));
  });
  return arrays;
}

// The kernel's layout revision: K::kLayoutRevision when it declares one (bump it when the
// contents format of one of its arrays changes), else 1.
template <class K>
[[nodiscard]] constexpr std::uint32_t kernel_layout_revision() {
  if constexpr (requires { K::kLayoutRevision; })
    return K::kLayoutRevision;
  else
    return 1;
}

// How this build lays out the pool of a run of `p` (docs/pool-format.md, "layout tag"): a
// CRC32C over the kernel and scheme names, both layout revisions and every array's name and
// size. Never 0, which means "none declared".
template <ResumableKernel K>
[[nodiscard]] std::uint32_t layout_tag(const pool::RunParams& p) {
  std::string key = fmt::format("{}/{}/{}", K::kName, p.scheme, kernel_layout_revision<K>());
  scheme::with_scheme(K::schemes, p.scheme,
                      [&](const auto& s) { key += fmt::format("/{}", s.layout_revision); });
  for (const auto& a : run_arrays<K>(p)) key += fmt::format("/{}:{}", a.name, a.bytes);
  const std::uint32_t tag = crc32c(key.data(), key.size());
  return tag == 0 ? 1 : tag;
}

template <ResumableKernel K>
void require_layout_tag(const pool::Pool& pool) {
  if (pool.params().layout_tag != 0) require_layout_tag(pool, layout_tag<K>(pool.params()));
}

// CPU time of the whole process (every thread), for RunReport::compute_cpu_seconds.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A native run through pool::run_states: done → nothing; running (interrupted) → the scheme's
// recovery, which names the outer iteration to resume from; then normal execution from there;
// the result made durable; done.
template <ResumableKernel K>
[[nodiscard]] RunReport execute_resumable(pool::Pool& pool, const ExecOptions& opt) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const pool::RunParams& p = pool.params();
  if (!opt.planned) {  // a planned run was validated and its layout checked by its planner
    validate_run<K>(p);
    require_layout_tag<K>(pool);
  }
  RunReport report;
  const ContextOf<K> ctx{pool, K::operands(pool), p};
  const bool ran = pool::run_states(pool, [&](bool resumed) {
    report.resumed = resumed;
    with_native_backend(pool, opt, static_cast<int>(p.threads), [&](auto& be) {
      scheme::with_scheme(K::schemes, p.scheme, [&](const auto& scheme) {
        scheme.prepare(be, ctx);  // untimed set-up
        const auto t0 = Clock::now();
        const std::size_t first = resumed ? scheme.recover(be, ctx, report) : 0;
        report.recovery_seconds = seconds_since(t0);
        report.resume_point = first;
        if (opt.steps_done != nullptr) opt.steps_done->store(first, std::memory_order_relaxed);
        const double cpu1 = process_cpu_seconds();
        const auto t1 = Clock::now();
        if (!opt.recover_only) scheme.run(be, ctx, first);
        report.compute_seconds = seconds_since(t1);
        report.compute_cpu_seconds = process_cpu_seconds() - cpu1;
      });
      report.helper = be.helper_times();
      // "done" only once the result is durable, whatever the scheme left in the caches.
      const OutputBytes out = K::output(ctx.op);
      pool.persist(out.data, out.bytes);
    });
  });
  if (!ran) report.recovery_action = "none (run already complete)";
  return report;
}

// The objects the rule profiler classifies: K::ipv_objects(op) when the kernel names the parts
// of its output (cg's z, r, p and scalars), else the whole output as one object.
template <ResumableKernel K>
[[nodiscard]] std::vector<scheme::IpvObject> ipv_objects(const typename K::Operands& op) {
  if constexpr (requires { K::ipv_objects(op); })
    return K::ipv_objects(op);
  else
    return {{"output", 0, K::output(op).bytes / sizeof(double)}};
}

// KernelDriver::profile_ipv: the base row's first outer iteration on the rule profiler's
// backend (scheme/ipv_profile.hpp).
template <ResumableKernel K>
[[nodiscard]] std::vector<scheme::IpvObjectProfile> profile_ipv(pool::Pool& pool) {
  const pool::RunParams& p = pool.params();
  validate_run<K>(p);
  const ContextOf<K> ctx{pool, K::operands(pool), p};
  const OutputBytes out = K::output(ctx.op);
  scheme::IpvProfileBackend be(static_cast<const double*>(out.data), out.bytes / sizeof(double),
                               static_cast<int>(p.threads));
  // Only the base row is instantiated for the profiler's backend (with_scheme would compile
  // every row for it).
  constexpr std::size_t kRows = std::tuple_size_v<std::remove_cvref_t<decltype(K::schemes)>>;
  constexpr std::size_t kBase = std::apply(
      [](const auto&... s) {
        std::size_t i = 0, found = kRows;
        ((s.name == scheme::kBaseScheme && found == kRows ? (found = i, ++i) : ++i), ...);
        return found;
      },
      K::schemes);
  if constexpr (kBase == kRows) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} has no base scheme to profile", K::kName));
  } else {
    const auto& base = std::get<kBase>(K::schemes);
    try {
      base.prepare(be, ctx);
      base.run(be, ctx, 0);
    } catch (const scheme::IpvProfileDone&) {
      // the first outer iteration is over
    }
    return be.classify(ipv_objects<K>(ctx.op));
  }
}

template <ResumableKernel K>
[[nodiscard]] KernelDriver make_kernel_driver() {
  KernelDriver d;
  d.name = std::string(K::kName);
  d.schemes = scheme::scheme_names(K::schemes);
  d.crash_unsafe = scheme::crash_unsafe_names(K::schemes);
  d.rows = scheme::row_facts(K::schemes);
  d.params = declared_params<K>();
  d.crash_test_max_n = K::kCrashTestMaxN;
  if constexpr (requires { K::crash_test_variants(); })
    d.crash_test_variants = K::crash_test_variants();
  if constexpr (requires { K::kDefaultBs; }) d.default_bs = K::kDefaultBs;
  d.validate = validate_run<K>;
  d.arrays = run_arrays<K>;
  d.layout_tag = layout_tag<K>;
  d.init = K::init;
  d.execute = execute_resumable<K>;
  d.verify = K::verify;
  d.n_power_of_two = K::kPowerOfTwoN;
  d.profile_ipv = profile_ipv<K>;
  if constexpr (requires(const pool::RunParams& p) {
                  { K::outer_steps(p) } -> std::convertible_to<std::uint64_t>;
                })
    d.outer_steps = [](const pool::RunParams& p) -> std::uint64_t { return K::outer_steps(p); };
  return d;
}

}  // namespace pmlab::run
