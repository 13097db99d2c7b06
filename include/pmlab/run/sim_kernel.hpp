// The simulator's entry points (SimKernel) built from the same kernel description and scheme table
// as the native driver: every scheme runs on sim::SimBackend exactly as `pmlab run` runs it.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/run/native_tail.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::run {

template <class S, class Ctx>
concept SimulableScheme = scheme::SchemeFor<S, Ctx, sim::SimBackend>;

template <ResumableKernel K>
void require_simulable(const pool::RunParams& p) {
  scheme::with_scheme(K::schemes, p.scheme, [&](const auto& s) {
    using S = std::remove_cvref_t<decltype(s)>;
    std::string why(s.sim_refusal);
    if (why.empty() && !SimulableScheme<S, ContextOf<K>>)
      why = "its code does not run on the simulator's backend";
    if (!why.empty())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("scheme '{}' of {} runs natively only: {} (use `pmlab run`)", s.name,
                              K::kName, why));
  });
}

// Calls fn(scheme) for the run's scheme if the simulator can execute it; require_simulable
// (SimKernel::check) has refused the others before anything runs.
template <ResumableKernel K, class Fn>
void with_sim_scheme(const pool::RunParams& p, Fn&& fn) {
  scheme::with_scheme(K::schemes, p.scheme, [&](const auto& s) {
    if constexpr (SimulableScheme<std::remove_cvref_t<decltype(s)>, ContextOf<K>>)
      fn(s);
    else
      require_simulable<K>(p);  // throws
  });
}

template <ResumableKernel K>
[[nodiscard]] SimKernel make_sim_kernel() {
  SimKernel k;
  k.name = std::string(K::kName);
  k.check = require_simulable<K>;
  k.run = [](sim::SimBackend& be, pool::Pool& pool, std::size_t first) {
    const ContextOf<K> ctx{pool, K::operands(pool), pool.params()};
    with_sim_scheme<K>(pool.params(), [&](const auto& s) {
      if (first == 0) s.prepare(be, ctx);  // a fresh start (scratch pools are never resumed)
      be.start_outer_steps_at(first);
      s.run(be, ctx, first);
    });
  };
  k.recover = [](sim::SimBackend& be, pool::Pool& pool, RunReport& report) {
    const ContextOf<K> ctx{pool, K::operands(pool), pool.params()};
    std::size_t resume = 0;
    with_sim_scheme<K>(pool.params(), [&](const auto& s) { resume = s.recover(be, ctx, report); });
    report.resumed = true;
    report.resume_point = resume;
    return resume;
  };
  k.restart_native = [](pool::Pool& pool, const NativeRestartOptions& o,
                        RunReport& report) -> std::optional<NativeRestart> {
    const ContextOf<K> ctx{pool, K::operands(pool), pool.params()};
    TailBackend be(static_cast<int>(pool.params().threads), o.counting);
    std::optional<NativeRestart> out;
    scheme::with_scheme(K::schemes, pool.params().scheme, [&](const auto& s) {
      if constexpr (scheme::SchemeFor<std::remove_cvref_t<decltype(s)>, ContextOf<K>,
                                      TailBackend>) {
        NativeRestart r;
        r.resume = o.first;
        if (o.recover) {
          r.resume = s.recover(be, ctx, report);
          report.resumed = true;
          report.resume_point = r.resume;
          r.recovery_ops = be.ops();
          r.async_requested = be.async_requested();
        }
        if (o.run) {
          if (r.resume == 0) s.prepare(be, ctx);
          s.run(be, ctx, r.resume);
        }
        r.regions = be.take_regions();
        out = std::move(r);
      }
    });
    return out;
  };
  k.output = [](pool::Pool& pool) {
    const OutputBytes o = K::output(K::operands(pool));
    return std::span<const std::byte>(static_cast<const std::byte*>(o.data), o.bytes);
  };
  k.base_refs = [](const pool::RunParams& p) -> std::uint64_t { return K::base_refs(p); };
  k.mutants = [](std::string_view name) { return scheme::scheme_mutants(K::schemes, name); };
  return k;
}

}  // namespace pmlab::run
