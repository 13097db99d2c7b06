// Scheme-table rows shared by kernels: base, lp, ep and LP's rivals (wal, cp, hr-xX) of every
// kernel whose header provides the functions they name (run_lp, recover_ep, wal_bytes_for...,
// see tiled_factorization.hpp for the list); those are found by argument-dependent lookup on
// the kernel's Operands.
//
// Usage in a kernel's table (ShapeOf: RunParams -> Operands with real dimensions and null data,
// which is all the *_bytes_for functions read):
//   wal_scheme<shape_of>(), cp_scheme<shape_of>(), hr_scheme<shape_of, 8>("hr-x8")
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <vector>

#include "pmlab/lp/checksum_param.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/band_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/copy_mode.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/scheme.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"

namespace pmlab::scheme {

// The negative controls each family of rows declares (Scheme::mutants): the mutations that
// break its protocol, i.e. that its crash campaign must detect. A row without a set has none.
// LP: its normal run has no flush or fence to drop; its recovery's validation is the protocol.
inline constexpr mem::MutationSet kLpMutants{mem::Mutation::kNoValidate};
// EagerRecompute and Hybrid: the index record is one word, so there is no commit to move.
inline constexpr mem::MutationSet kEagerMutants{mem::Mutation::kNoFlush, mem::Mutation::kNoFence};
// Undo log and checkpoint: a commit record that must follow its data.
inline constexpr mem::MutationSet kCommitMutants =
    kEagerMutants | mem::MutationSet{mem::Mutation::kCommitEarly};
// Seed 002's checkpoint-by-copy rows: cp's protocol, plus the copy's own flush and fence.
inline constexpr mem::MutationSet kCopyVariantMutants =
    kCommitMutants | mem::MutationSet{mem::Mutation::kCpNoFlush, mem::Mutation::kCpNoSfence};
// cp-nt-async: cp-nt's, plus the barrier that must precede the next iteration's first store.
inline constexpr mem::MutationSet kAsyncCopyMutants =
    kCopyVariantMutants | mem::MutationSet{mem::Mutation::kCpBarrierAfterWrite};
// In-place versioning: its commit word is its own (commit-early does not move it), and the
// protocol's steps each have a mutant (seed 002 spec A, acceptance).
// Seed 002's DRAM cache: the rows whose commit needs its flush (applicable with --dram-cache on).
inline constexpr mem::MutationSet kDramCacheMutants{mem::Mutation::kDramCacheNoFlush};
inline constexpr mem::MutationSet kIpvMutants =
    kEagerMutants |
    mem::MutationSet{mem::Mutation::kIpvCommitBeforeFlush, mem::Mutation::kIpvBarrierAfterWrite,
                     mem::Mutation::kIpvSkipFlush} |
    kDramCacheMutants;

// Declared so that ordinary lookup finds a template named run_lp / recover_lp and `run_lp<K>(...)`
// below parses as a template call for every compiler (clang needs it); the kernels' own
// overloads are then found by argument-dependent lookup, as before. Never callable.
template <auto>
void run_lp() = delete;
template <auto>
void recover_lp() = delete;

template <std::size_t N>
[[nodiscard]] std::vector<pool::ArraySpec> array_specs(
    const std::array<scheme::PoolArray, N>& arrays) {
  std::vector<pool::ArraySpec> specs;
  for (const auto& a : arrays) specs.push_back({std::string(a.name), a.bytes});
  return specs;
}

// The pool's arrays seen through the kernels' rival state types (names from *_bytes_for).
template <LogFormat Format = LogFormat::kBlock, class Ctx>
[[nodiscard]] scheme::WalUnits wal_units_of(const Ctx& c) {
  return {c.pool.template array<scheme::UndoHeader>(scheme::kWalHeaderArray),
          c.pool.template array<scheme::WalProgress>(scheme::kWalIndexArray),
          c.pool.template array<double>(scheme::kWalLogArray), Format};
}

// A WAL scheme's arrays in `Format`: the kernel's block-format layout, its log array twice as
// large for per-store records.
template <LogFormat Format, std::size_t N>
[[nodiscard]] std::vector<pool::ArraySpec> wal_array_specs(
    std::array<scheme::PoolArray, N> arrays) {
  if constexpr (Format == LogFormat::kEntry)
    for (auto& a : arrays)
      if (a.name == kWalLogArray) a.bytes = WalUnits::entry_log_bytes(a.bytes);
  return array_specs(arrays);
}
template <class Ctx>
[[nodiscard]] scheme::StepCheckpoint checkpoint_of(const Ctx& c) {
  return cp_state(c.op, c.pool.template array<scheme::StepCheckpointHeader>(scheme::kCpHeaderArray),
                  c.pool.template array<double>(scheme::kCpAreaArray), cp_default_every(c.op));
}
// The checkpoint of the seed-002 rows: the same arrays as cp, copies made by Mode, taken every
// scheme::checkpoint_interval() outer iterations (1 unless --cp-every says otherwise).
template <scheme::CopyMode Mode, class Ctx>
[[nodiscard]] scheme::StepCheckpoint checkpoint_variant_of(const Ctx& c) {
  return cp_state(c.op, c.pool.template array<scheme::StepCheckpointHeader>(scheme::kCpHeaderArray),
                  c.pool.template array<double>(scheme::kCpAreaArray),
                  scheme::checkpoint_interval())
      .with_copy(Mode);
}
template <std::size_t Parts, class Ctx>
[[nodiscard]] auto hybrid_of(const Ctx& c) {
  return hr_state(c.op, c.pool.template array<scheme::IndexRecordLayout<1>>(scheme::kEpIndexArray),
                  c.pool.template array<double>(scheme::kHrCopyArray),
                  c.pool.template array<scheme::PartState>(scheme::kHrPartsArray), Parts);
}

// Base of an in-place kernel: no persistent progress, so recovery restores the input and restarts.
constexpr auto restart_base_scheme() {
  return Scheme{.name = kBaseScheme,
                .family = Family::kBase,
                .run = [](mem::Backend auto& be, const auto& c,
                          std::size_t first) { run_base(be, c.op, first); },
                .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
                  r.recovery_action = "restart";  // base keeps no persistent progress
                  restart(be, c.op);
                  return 0;
                }};
}

// Where a kernel's LP checksum table lives: among lp's own arrays, or among the kernel's (tmm:
// every tmm pool has kept one since the first pool format, and its layout stays unchanged).
enum class TableArray { kScheme, kKernel };

// Refuses an LP run whose checksum table of `slots` slots would exceed 2 GiB (a tiny --bs on a
// large --n).
inline void require_table_fits(std::string_view kernel, const pool::RunParams& p,
                               std::uint64_t slots) {
  constexpr std::uint64_t kMaxTableBytes = 2ull << 30;
  const std::uint64_t bytes = lp::ChecksumTable::bytes_for(slots);
  if (bytes > kMaxTableBytes)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: --bs {} is too small for --n {}: the LP checksum table ({} "
                            "slots, one per region) would take {} MiB; use a larger --bs",
                            kernel, p.bs, p.n, slots, bytes >> 20));
}

// Lazy Persistency with one checksum slot per ShapeOf(p).table_slots(), any checksum kind.
template <auto ShapeOf, TableArray Table = TableArray::kScheme>
constexpr auto lp_scheme() {
  return Scheme{.name = "lp",
                .family = Family::kLp,
                .arrays =
                    [](const pool::RunParams& p) {
                      if constexpr (Table == TableArray::kKernel) return no_scheme_arrays(p);
                      return std::vector{lp_table_spec(ShapeOf(p).table_slots())};
                    },
                .run =
                    [](mem::Backend auto& be, const auto& c, std::size_t first) {
                      lp::with_checksum_kind(lp::checksum_of(c.params), [&](auto kind) {
                        run_lp<decltype(kind)::value>(be, c.op, c.checksum_table(), first);
                      });
                    },
                .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
                  r.recovery_action = "lp-recovery";
                  return lp::with_checksum_kind(lp::checksum_of(c.params), [&](auto kind) {
                    return recover_lp<decltype(kind)::value>(be, c.op, c.checksum_table(),
                                                             r.recovery);
                  });
                },
                .mutants = kLpMutants,
                .validate =
                    [](std::string_view kernel, const pool::RunParams& p) {
                      (void)lp::checksum_of(p);  // a kind LP knows
                      require_table_fits(kernel, p, ShapeOf(p).table_slots());
                    }};
}

// EagerRecompute with ep_records(op) index records (one per region's output unit).
template <auto ShapeOf>
constexpr auto ep_scheme() {
  return Scheme{
      .name = "ep",
      .family = Family::kEp,
      .arrays =
          [](const pool::RunParams& p) {
            return std::vector{ep_index_spec(ep_records(ShapeOf(p)))};
          },
      .run = [](mem::Backend auto& be, const auto& c,
                std::size_t first) { run_ep(be, c.op, c.index_records(ep_records(c.op)), first); },
      .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
        r.recovery_action = "ep-recovery";
        return recover_ep(be, c.op, c.index_records(ep_records(c.op)), r.recovery);
      },
      .mutants = kEagerMutants};
}

// Undo-logging transactions, one per EagerRecompute region (thesis Fig. 2.6), logging each
// block as a raw copy (`wal`) or as one {offset, old value} record per element (`wal-entry`,
// the format of general-purpose undo logs and of the LP paper's WAL).
template <auto ShapeOf, LogFormat Format = LogFormat::kBlock>
constexpr auto wal_scheme() {
  return Scheme{.name = Format == LogFormat::kEntry ? "wal-entry" : "wal",
                .family = Family::kWal,
                .arrays =
                    [](const pool::RunParams& p) {
                      return wal_array_specs<Format>(wal_bytes_for(ShapeOf(p)));
                    },
                .run = [](mem::Backend auto& be, const auto& c,
                          std::size_t first) { run_wal(be, c.op, wal_units_of<Format>(c), first); },
                .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
                  r.recovery_action = "wal-recovery";  // undo-log rollback, then resume
                  return recover_wal(be, c.op, wal_units_of<Format>(c), r.recovery);
                },
                .mutants = kCommitMutants};
}
template <auto ShapeOf>
constexpr auto wal_entry_scheme() {
  return wal_scheme<ShapeOf, LogFormat::kEntry>();
}

// Checkpoints of the working array by copy, every cp_default_every(op) outer steps.
template <auto ShapeOf>
constexpr auto cp_scheme() {
  return Scheme{
      .name = "cp",
      .family = Family::kCp,
      .arrays = [](const pool::RunParams& p) { return array_specs(cp_bytes_for(ShapeOf(p))); },
      .run = [](mem::Backend auto& be, const auto& c,
                std::size_t first) { run_cp(be, c.op, checkpoint_of(c), first); },
      .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
        r.recovery_action = "cp-recovery";  // restore the last checkpoint
        return recover_cp(be, c.op, checkpoint_of(c), r.recovery);
      },
      .mutants = kCommitMutants | kDramCacheMutants};
}

// Seed 002's checkpoint-by-copy designs (cp-clflush, cp-par-clflush, cp-nt): cp's protocol and
// arrays, with the copy made by Mode and the paper's cadence (every outer iteration by default).
// `cp` above keeps the kernel's historic interval (cp_default_every), so its figures stay put.
template <auto ShapeOf, scheme::CopyMode Mode>
constexpr auto cp_variant_scheme(std::string_view name) {
  return Scheme{
      .name = name,
      .family = Family::kCp,
      .arrays = [](const pool::RunParams& p) { return array_specs(cp_bytes_for(ShapeOf(p))); },
      .run = [](mem::Backend auto& be, const auto& c,
                std::size_t first) { run_cp(be, c.op, checkpoint_variant_of<Mode>(c), first); },
      .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
        r.recovery_action = "cp-recovery";  // restore the last checkpoint
        return recover_cp(be, c.op, checkpoint_variant_of<Mode>(c), r.recovery);
      },
      .mutants = kCopyVariantMutants | kDramCacheMutants};
}

// The three rows of seed 002 §3, one line each in a kernel's table.
template <auto ShapeOf>
constexpr auto cp_clflush_scheme() {
  return cp_variant_scheme<ShapeOf, scheme::CopyMode::kStoresClflush>("cp-clflush");
}
template <auto ShapeOf>
constexpr auto cp_par_clflush_scheme() {
  return cp_variant_scheme<ShapeOf, scheme::CopyMode::kStoresParClflush>("cp-par-clflush");
}
template <auto ShapeOf>
constexpr auto cp_nt_scheme() {
  return cp_variant_scheme<ShapeOf, scheme::CopyMode::kNt>("cp-nt");
}

// Hybrid Recompute: EagerRecompute plus 1/Parts of the working array copied per outer step.
template <auto ShapeOf, std::size_t Parts>
constexpr auto hr_scheme(std::string_view name) {
  return Scheme{
      .name = name,
      .family = Family::kHr,
      .arrays =
          [](const pool::RunParams& p) { return array_specs(hr_bytes_for(ShapeOf(p), Parts)); },
      .run = [](mem::Backend auto& be, const auto& c,
                std::size_t first) { run_hr(be, c.op, hybrid_of<Parts>(c), first); },
      .recover = [](mem::Backend auto& be, const auto& c, RunReport& r) -> std::size_t {
        r.recovery_action = "hr-recovery";
        return recover_hr(be, c.op, hybrid_of<Parts>(c), r.recovery);
      },
      .mutants = kEagerMutants};
}

// The table of an in-place kernel with the whole rival set (gauss, lu, cholesky): LP, its
// rivals (with seed 002's checkpoint-by-copy variants), and Hybrid Recompute copying 1/8 of the
// working array per step.
template <auto ShapeOf>
constexpr auto in_place_schemes() {
  return std::tuple{restart_base_scheme(),        lp_scheme<ShapeOf>(),
                    ep_scheme<ShapeOf>(),         wal_scheme<ShapeOf>(),
                    wal_entry_scheme<ShapeOf>(),  cp_scheme<ShapeOf>(),
                    cp_clflush_scheme<ShapeOf>(), cp_par_clflush_scheme<ShapeOf>(),
                    cp_nt_scheme<ShapeOf>(),      hr_scheme<ShapeOf, 8>("hr-x8")};
}

}  // namespace pmlab::scheme
