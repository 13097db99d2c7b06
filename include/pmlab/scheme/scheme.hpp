// A kernel's scheme table: per persistency scheme, its extra pool arrays, how it runs from an outer
// iteration and how it recovers — generic over the memory backend (native and simulated).
//
// How to add a scheme to a kernel (e.g. "journal" for cholesky), nothing else to touch:
//   1. Write its run and recovery, templated over mem::Backend: in the kernel's header if the
//      protocol is the kernel's own, else from a building block of scheme/ (a row any kernel
//      can use belongs in scheme/rows.hpp).
//   2. Name its pool arrays once, as constants beside the code that lays them out
//      (e.g. `inline constexpr std::string_view kJournalArray = "journal";`).
//   3. Add one entry to the kernel's table (`kSchemes` in src/kernels/cholesky_kernel.cpp):
//
//        Scheme{.name = "journal",
//               .family = Family::kWal,
//               .arrays = [](const pool::RunParams& p) {
//                 return std::vector<pool::ArraySpec>{{kJournalArray, journal_bytes(p)}};
//               },
//               .run = [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
//                 ch::run_journal(be, c.op, journal_of(c), first);
//               },
//               .recover = [](mem::Backend auto& be, const Ctx& c,
//                             RunReport& r) -> std::size_t {
//                 r.recovery_action = "journal replay";
//                 return ch::recover_journal(be, c.op, journal_of(c), r.recovery);  // resume
//               },
//               .mutants = kCommitMutants},
//
//      `c.pool.array<T>(kJournalArray)` gives an array (the pool zero-fills it; read zero as
//      "nothing done yet"). A scheme that cannot run on sim::SimBackend sets
//      `.sim_refusal = "why"`; `pmlab sim`/`pmlab crash` then refuse it with that reason.
//      `.mutants` (named sets in scheme/rows.hpp) declares the negative controls that must
//      break it (the crash campaigns run each; none when absent); `.validate` refuses
//      parameters it cannot run; `.layout_revision` changes when its arrays' contents format
//      does (the pool's layout tag).
//   `pmlab run/bench/sim/crash`, --help, the kill -9 tests and the crash campaigns pick it up.
//
// Contract: run(be, c, first) executes outer iterations [first, end) (first = 0: the whole
// run); recover(be, c, report) brings whatever the pool holds after a crash — at any point, also
// inside an earlier recovery — to a state from which run(resume) gives the fault-free result bit
// for bit, fills report.recovery_action and report.recovery, and returns resume.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/core/suggest.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/scheme/family.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/run_report.hpp"

namespace pmlab::scheme {

// What a scheme's run/recover see: the pool (for its arrays), the kernel's operand views of it,
// and the run parameters (checksum kind, threads, ...).
template <class Operands>
struct SchemeContext {
  pool::Pool& pool;
  Operands op;
  const pool::RunParams& params;

  // The arrays of the two recompute schemes every kernel has (see lp_table_spec, ep_index_spec).
  [[nodiscard]] lp::ChecksumTable checksum_table() const {
    return {pool.array<lp::ChecksumSlot>(lp::kTableArray), op.table_slots()};
  }
  [[nodiscard]] scheme::IndexRecordTable<1> index_records(std::size_t count) const {
    return {pool.array<scheme::IndexRecordLayout<1>>(scheme::kEpIndexArray), count};
  }
};

[[nodiscard]] inline pool::ArraySpec lp_table_spec(std::uint64_t slots) {
  return {lp::kTableArray, lp::ChecksumTable::bytes_for(slots)};
}
[[nodiscard]] inline pool::ArraySpec ep_index_spec(std::uint64_t records) {
  return {scheme::kEpIndexArray, scheme::IndexRecordTable<1>::bytes_for(records)};
}

using SchemeArraysFn = std::vector<pool::ArraySpec> (*)(const pool::RunParams&);
// (kernel name, parameters) -> void, throwing for parameters the scheme refuses.
using SchemeValidateFn = void (*)(std::string_view, const pool::RunParams&);
inline void accept_any_params(std::string_view, const pool::RunParams&) {}
[[nodiscard]] inline std::vector<pool::ArraySpec> no_scheme_arrays(const pool::RunParams&) {
  return {};
}

// The default `prepare` of a scheme: no set-up beyond the pool's arrays.
struct NoPrepare {
  void operator()(const auto&, const auto&) const {}
};

// One row of a scheme table; Run, Recover and Prepare are generic lambdas over the backend.
template <class Run, class Recover, class Prepare = NoPrepare>
struct Scheme {
  std::string_view name;
  // The protocol family (scheme/family.hpp): what info, eval and the reports group by. A
  // catalog row names one (RowFacts test); a user's kernel may leave it kOther.
  Family family = Family::kOther;
  SchemeArraysFn arrays = no_scheme_arrays;  // beyond the kernel's own arrays
  Run run;                                   // (be, ctx, first) -> void
  Recover recover;                           // (be, ctx, RunReport&) -> resume point
  std::string_view sim_refusal = {};         // non-empty: why the simulator cannot run it
  // (be, ctx) -> void, before recovery and run, outside every timing: set-up that base
  // gets for free with its pool (e.g. pmemobj creating a pool file of its own).
  Prepare prepare = {};
  // The negative controls that must break this scheme: `pmlab crash` reruns its campaign under
  // each and counts the ones detected, and refuses any other --mutate. Empty: none applies
  // (e.g. base, which keeps no persistent progress). Named sets: scheme/rows.hpp.
  mem::MutationSet mutants = {};
  // False for a measurement row that gives up crash consistency on purpose (ipv-nf: versioning
  // without its flushes). Crash campaigns and kill tests skip it; `pmlab crash` refuses it.
  bool crash_safe = true;
  // False for a variant that does not stand for its family in averages over kernels (eval's
  // geometric means): tmm's jj grain and hr-ii-x32, where its ii rows and hr-ii-x64 stand for it.
  bool in_family_mean = true;
  // Bump when the *contents* format of this row's arrays changes (names and sizes are in the
  // layout tag already): pools written under the old format are then refused, not misread.
  std::uint32_t layout_revision = 1;
  // Refuses parameters this scheme cannot run (kInvalidArgument), e.g. an LP checksum table
  // too large for the pool; the kernel's own checks run before it.
  SchemeValidateFn validate = accept_any_params;
};

// A scheme that backend B can execute in context Ctx.
template <class S, class Ctx, class B>
concept SchemeFor = mem::Backend<B> &&
    requires(const S& s, B& be, const Ctx& ctx, std::size_t first, RunReport& report,
             const pool::RunParams& p) {
  { s.name } -> std::convertible_to<std::string_view>;
  { s.sim_refusal } -> std::convertible_to<std::string_view>;
  { s.arrays(p) } -> std::same_as<std::vector<pool::ArraySpec>>;
  { s.layout_revision } -> std::convertible_to<std::uint32_t>;
  s.validate(std::string_view{}, p);
  s.prepare(be, ctx);
  s.run(be, ctx, first);
  { s.recover(be, ctx, report) } -> std::same_as<std::size_t>;
};

namespace detail {
template <class T, class Ctx, class B>
inline constexpr bool kIsSchemeTableFor = false;
template <class... S, class Ctx, class B>
inline constexpr bool kIsSchemeTableFor<std::tuple<S...>, Ctx, B> = (SchemeFor<S, Ctx, B> && ...);
}  // namespace detail

// A std::tuple of Schemes, every one executable by B.
template <class T, class Ctx, class B>
concept SchemeTableFor = detail::kIsSchemeTableFor<std::remove_cvref_t<T>, Ctx, B>;

template <class Table>
[[nodiscard]] std::vector<std::string> scheme_names(const Table& table) {
  return std::apply(
      [](const auto&... s) { return std::vector<std::string>{std::string(s.name)...}; }, table);
}

// The facts of every row of `table`, in its order.
template <class Table>
[[nodiscard]] std::vector<RowFacts> row_facts(const Table& table) {
  return std::apply(
      [](const auto&... s) {
        return std::vector<RowFacts>{
            RowFacts{std::string(s.name), s.family, s.crash_safe, s.in_family_mean}...};
      },
      table);
}

// The rows that are not crash-safe (Scheme::crash_safe = false), by name.
template <class Table>
[[nodiscard]] std::vector<std::string> crash_unsafe_names(const Table& table) {
  std::vector<std::string> out;
  std::apply(
      [&](const auto&... s) { ((s.crash_safe ? void() : void(out.emplace_back(s.name))), ...); },
      table);
  return out;
}

// How many times a row has been looked up by name in a kernel's table in this process (once per
// call of has_scheme, with_scheme, scheme_mutants): what the tests count to keep a run's lookups
// few (tests/run/run_plan_test.cpp).
inline std::atomic<std::uint64_t> row_lookups{0};

template <class Table>
[[nodiscard]] bool has_scheme(const Table& table, std::string_view name) {
  row_lookups.fetch_add(1, std::memory_order_relaxed);
  return std::apply([&](const auto&... s) { return ((s.name == name) || ...); }, table);
}

// Throws kInvalidArgument naming the known schemes, and the one probably meant, unless `name`
// is one of them.
template <class Table>
void require_scheme(const Table& table, std::string_view kernel, std::string_view name) {
  if (has_scheme(table, name)) return;
  const auto known = scheme_names(table);
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown scheme '{}' for {}{} (known: {})", name, kernel,
                          did_you_mean(name, known), fmt::join(known, ", ")));
}

// The mutants row `name` declares (kInvalidArgument for an unknown name).
template <class Table>
[[nodiscard]] mem::MutationSet scheme_mutants(const Table& table, std::string_view name) {
  row_lookups.fetch_add(1, std::memory_order_relaxed);
  mem::MutationSet out;
  const bool found = std::apply(
      [&](const auto&... s) { return ((s.name == name && (out = s.mutants, true)) || ...); },
      table);
  if (!found) throw Error(ErrorCode::kInvalidArgument, fmt::format("unknown scheme '{}'", name));
  return out;
}

// Calls fn(scheme) for the table row named `name` (checked beforehand by require_scheme).
template <class Table, class Fn>
void with_scheme(const Table& table, std::string_view name, Fn&& fn) {
  row_lookups.fetch_add(1, std::memory_order_relaxed);
  const bool found = std::apply(
      [&](const auto&... s) { return ((s.name == name && (fn(s), true)) || ...); }, table);
  if (!found) throw Error(ErrorCode::kInvalidArgument, fmt::format("unknown scheme '{}'", name));
}

}  // namespace pmlab::scheme
