// The scheme rows of iterative.hpp's kernels that rows.hpp does not have (LP over three state
// buffers, cp-nt-async, in-place versioning ipv-sync and ipv), and the whole table cg and
// jacobi share.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "pmlab/kernels/iterative.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/scheme/ipv_profile.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {

// The arrays these rows add (names spelled here only): LP's extra state buffers (lp_s1 ..
// lp_s{K+1}) and its durable-iteration word, and in-place versioning's second version of the
// state.
[[nodiscard]] inline std::string lp_state_array(std::size_t i) {
  return fmt::format("lp_s{}", i);
}
inline constexpr std::string_view kLpDurableArray = "lp_durable";
inline constexpr std::string_view kIpvState1Array = "ipv_s1";
inline constexpr std::string_view kEpState1Array = "ep_s1";

template <class Ctx>
[[nodiscard]] kernels::iterative::LpState iterative_lp_of(const Ctx& c) {
  kernels::iterative::LpState st{{c.op.s},
                                 c.pool.template array<std::uint64_t>(kLpDurableArray),
                                 c.pool.template array<lp::ChecksumSlot>(lp::kTableArray)};
  for (std::size_t i = 1; i < c.op.lp_buffers(); ++i)
    st.buf.push_back(c.pool.template array<double>(lp_state_array(i)));
  return st;
}

// Lazy Persistency: regions = bs rows of each state vector, one checksum slot per region in
// bank t % (K + 2), an anchor every K = --lp-anchor iterations (iterative.hpp, "Lazy
// Persistency").
template <auto ShapeOf>
constexpr auto iterative_lp_scheme() {
  return scheme::Scheme{
      .name = "lp",
      .family = scheme::Family::kLp,
      .arrays =
          [](const pool::RunParams& p) {
            const auto op = ShapeOf(p);
            std::vector<pool::ArraySpec> arrays;
            for (std::size_t i = 1; i < op.lp_buffers(); ++i)
              arrays.push_back({lp_state_array(i), op.state_bytes()});
            arrays.push_back({std::string(kLpDurableArray), sizeof(std::uint64_t)});
            arrays.push_back(scheme::lp_table_spec(op.table_slots()));
            return arrays;
          },
      .run =
          [](mem::Backend auto& be, const auto& c, std::size_t first) {
            lp::with_checksum_kind(lp::checksum_of(c.params), [&](auto kind) {
              kernels::iterative::run_lp<decltype(kind)::value>(be, c.op, iterative_lp_of(c),
                                                                first);
            });
          },
      .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
        r.recovery_action = "lp-recovery";
        return lp::with_checksum_kind(lp::checksum_of(c.params), [&](auto kind) {
          return kernels::iterative::recover_lp<decltype(kind)::value>(be, c.op, iterative_lp_of(c),
                                                                       r.recovery);
        });
      },
      // Beside the validation, the iterative rows' LP has a persist to drop: the anchor's,
      // without which `durable` would name an output not in memory.
      .mutants = scheme::kLpMutants | mem::MutationSet{mem::Mutation::kNoFlush},
      .validate =
          [](std::string_view, const pool::RunParams& p) {
            (void)lp::checksum_of(p);  // a kind LP knows
          }};
}

template <class Ctx>
[[nodiscard]] kernels::iterative::EpState iterative_ep_of(const Ctx& c) {
  return {{c.op.s, c.pool.template array<double>(kEpState1Array)},
          scheme::IndexRecord<1>(
              c.pool.template array<scheme::IndexRecordLayout<1>>(scheme::kEpIndexArray))};
}

// EagerRecompute: one region per iteration, double-buffered (iterative.hpp, "EagerRecompute").
template <auto ShapeOf>
constexpr auto iterative_ep_scheme() {
  return scheme::Scheme{
      .name = "ep",
      .family = scheme::Family::kEp,
      .arrays =
          [](const pool::RunParams& p) {
            return std::vector<pool::ArraySpec>{{kEpState1Array, ShapeOf(p).state_bytes()},
                                                scheme::ep_index_spec(1)};
          },
      .run =
          [](mem::Backend auto& be, const auto& c, std::size_t first) {
            kernels::iterative::run_ep(be, c.op, iterative_ep_of(c), first);
          },
      .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
        r.recovery_action = "ep-recovery";
        return kernels::iterative::recover_ep(be, c.op, iterative_ep_of(c), r.recovery);
      },
      .mutants = scheme::kEagerMutants};
}

template <class Ctx>
[[nodiscard]] scheme::InPlaceVersions iterative_versions_of(const Ctx& c) {
  return kernels::iterative::ipv_versions(
      c.op, c.pool.template array<double>(kIpvState1Array),
      c.pool.template array<scheme::IpvHeader>(scheme::kIpvHeaderArray));
}

// In-place versioning (seed 002 §4.1): the state and ipv_s1 alternate as working and consistent
// versions by iteration parity; ipv-sync flushes in place, ipv hands the flush to the helper,
// ipv-nf does not flush (measurement only, not crash-safe).
template <auto ShapeOf, scheme::IpvFlush How>
constexpr auto iterative_ipv_scheme(std::string_view name) {
  return scheme::Scheme{
      .name = name,
      .family = scheme::Family::kIpv,
      .arrays =
          [](const pool::RunParams& p) {
            return std::vector<pool::ArraySpec>{
                {kIpvState1Array, ShapeOf(p).state_bytes()},
                {scheme::kIpvHeaderArray, scheme::InPlaceVersions::header_bytes()}};
          },
      .run =
          [](mem::Backend auto& be, const auto& c, std::size_t first) {
            kernels::iterative::run_ipv(be, c.op, iterative_versions_of(c), How, first);
          },
      .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
        ++r.recovery.regions_validated;
        const std::size_t d = scheme::recover_in_place_versions(be, iterative_versions_of(c));
        // O(1): no data moved; the resumed run redoes at most the iteration in flight.
        r.recovery_action = d < c.op.iterations
                                ? fmt::format(
                                      "ipv: version {} holds {} iterations; at most 1 iteration "
                                      "recomputed{}",
                                      d % 2, d,
                                      c.op.updates == scheme::IpvUpdates::kNonUniform
                                          ? " (non-uniform: NT-copy fallback)"
                                          : "")
                                : std::string("ipv: complete");
        return d;
      },
      // ipv-nf flushes nothing: a measurement row, with no protocol to break.
      .mutants = How == scheme::IpvFlush::kNone ? mem::MutationSet{} : scheme::kIpvMutants,
      .crash_safe = How != scheme::IpvFlush::kNone};
}

// cp-nt-async (seed 002 §4.2): cp-nt's checkpoint, its copy made by the helper while the next
// iteration computes up to its first store into the state (iterative.hpp, run_cp_async).
template <auto ShapeOf>
constexpr auto iterative_cp_async_scheme() {
  return scheme::Scheme{
      .name = "cp-nt-async",
      .family = scheme::Family::kCp,
      .arrays =
          [](const pool::RunParams& p) {
            return scheme::array_specs(kernels::iterative::cp_bytes_for(ShapeOf(p)));
          },
      .run =
          [](mem::Backend auto& be, const auto& c, std::size_t first) {
            kernels::iterative::run_cp_async(
                be, c.op, scheme::checkpoint_variant_of<scheme::CopyMode::kNt>(c), first);
          },
      .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
        r.recovery_action = "cp-recovery";  // restore the last published checkpoint
        return kernels::iterative::recover_cp(
            be, c.op, scheme::checkpoint_variant_of<scheme::CopyMode::kNt>(c), r.recovery);
      },
      .mutants = scheme::kAsyncCopyMutants | scheme::kDramCacheMutants};
}

// Every scheme of an iterative kernel (outer iteration = one solver iteration), in table order.
template <auto ShapeOf>
constexpr auto iterative_schemes() {
  return std::tuple{
      scheme::restart_base_scheme(),
      iterative_lp_scheme<ShapeOf>(),
      iterative_ep_scheme<ShapeOf>(),
      scheme::wal_scheme<ShapeOf>(),
      scheme::wal_entry_scheme<ShapeOf>(),
      scheme::cp_scheme<ShapeOf>(),
      scheme::cp_clflush_scheme<ShapeOf>(),
      scheme::cp_par_clflush_scheme<ShapeOf>(),
      scheme::cp_nt_scheme<ShapeOf>(),
      iterative_cp_async_scheme<ShapeOf>(),
      iterative_ipv_scheme<ShapeOf, scheme::IpvFlush::kSync>("ipv-sync"),
      iterative_ipv_scheme<ShapeOf, scheme::IpvFlush::kAsync>("ipv"),
      iterative_ipv_scheme<ShapeOf, scheme::IpvFlush::kNone>("ipv-nf"),
  };
}

// The rule profiler's objects of an iterative state (KernelDriver::profile_ipv): each vector by
// name, then the scalars, as the paper's Table 2 lists a benchmark's objects, each declared with
// the rule the ipv rows assume for the whole state (op.updates).
inline std::vector<scheme::IpvObject> iterative_ipv_objects(
    const kernels::iterative::State& op, std::initializer_list<std::string_view> vector_names) {
  using D = scheme::IpvObject::Declared;
  const D declared = op.updates == scheme::IpvUpdates::kUniform ? D::kUniform : D::kNonUniform;
  std::vector<scheme::IpvObject> out;
  std::size_t v = 0;
  for (const std::string_view name : vector_names) {
    out.push_back(
        {std::string(name), v * op.vector_elements, (v + 1) * op.vector_elements, declared});
    ++v;
  }
  // The scalars are rewritten whole by every iteration, whatever the vectors do.
  if (op.elements > op.tail_begin())
    out.push_back({"scalars", op.tail_begin(), op.elements, D::kUniform});
  return out;
}

// LP's anchor period every iterative kernel declares (--lp-anchor K), stored in the pool.
inline constexpr std::uint64_t kDefaultLpAnchor = 4;
inline KernelParamSpec lp_anchor_param() {
  return {.name = "lp-anchor",
          .help =
              "lp: iterations between durable anchors, K (default 4): one state write-back "
              "per K iterations, K + 2 state buffers, at most K + 1 iterations redone after "
              "a crash (iterative.hpp, docs/lp-native-cost.md)",
          .min = 1,
          .max = 16};  // K + 1 buffers beside the kernel's own arrays, within pool::kMaxArrays
}

// The solver-iteration count every iterative kernel declares (--iters), stored in the pool.
inline KernelParamSpec iterations_param() {
  return {.name = "iters",
          .help = "solver iterations (default: cg 15, NPB's niter; jacobi 11)",
          .min = 1,
          .max = 1u << 20};
}

}  // namespace pmlab::run
