// Every scheme of a tiled in-place factorization (base, LP, EagerRecompute, WAL, checkpoint,
// Hybrid Recompute), written once for LU and Cholesky and found by argument-dependent lookup.
//
// A kernel's Operands derives from tiled::Factorization (which makes this namespace one that
// ADL searches) and provides, besides the interface of tiled_recovery.hpp:
//   work()                    its in-place working matrix;
//   step_segments(from, fn)   fn(offset, count) for each run of work() that steps >= from can
//                             still rewrite (what a checkpoint after step from - 1 must copy);
//   tile_row_band(u, fn)      fn(offset, count) for the elements of tile row u (a hybrid band);
// and its namespace a free run_step(be, op, k, exec) calling exec(tile) for every op of step k.
//
// API (`first` is an outer step; a recovery returns the step to pass as `first`):
//   run_base, run_lp<K>, recover_lp<K>, ep_records, run_ep, recover_ep, rival_steps,
//   wal_bytes_for, run_wal, recover_wal, cp_bytes_for, cp_default_every, cp_state, run_cp,
//   recover_cp, hr_bytes_for, hr_state, run_hr, recover_hr.
// Every pool array starts zero-filled; results are bit-identical to run_base (same ops, same
// FP order). Protocols and costs: docs/kernels.md, "WAL / checkpoint / hybrid".
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "pmlab/kernels/tiled_recovery.hpp"
#include "pmlab/kernels/tiled_rivals.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/band_copy.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"

namespace pmlab::kernels::tiled {

template <class F>
concept TiledFactorization = std::derived_from<F, Factorization>;

// Base from step first_k on: no persistency.
template <mem::Backend B, TiledFactorization F>
void run_base(B& be, const F& op, std::size_t first_k = 0) {
  for (std::size_t k = first_k; k < op.tiles(); ++k)
    run_step(be, op, k, [&](Tile t) { op.apply(be, t, k, lp::kIgnoreStored); });
}

// LP: each op on a tile is a region; its checksum goes to slot (k, tile).
template <lp::ChecksumKind K, mem::Backend B, TiledFactorization F>
void run_lp(B& be, const F& op, const lp::ChecksumTable& table, std::size_t first_k = 0) {
  for (std::size_t k = first_k; k < op.tiles(); ++k)
    run_step(be, op, k, [&](Tile t) {
      lp_region<K>(be, table, op.slot(k, t), k, t.i * op.tiles() + t.j,
                   [&](auto on_stored) { op.apply(be, t, k, on_stored); });
    });
}

// LP recovery: returns the step where normal execution resumes (see recover_tiles).
template <lp::ChecksumKind K, mem::Backend B, TiledFactorization F>
[[nodiscard]] std::size_t recover_lp(B& be, const F& op, const lp::ChecksumTable& table,
                                     lp::RecoveryStats& stats) {
  return recover_tiled<K>(be, op, table, stats);
}

// EagerRecompute: each op on a tile flushes the tile and records its progress durably, with an
// in-flight mark before it starts (ep_op); one record per tile, (i, j) at i·T + j.
template <TiledFactorization F>
[[nodiscard]] std::size_t ep_records(const F& op) {
  return op.tiles() * op.tiles();
}

template <mem::Backend B, TiledFactorization F>
void run_ep(B& be, const F& op, const scheme::IndexRecordTable<1>& rec, std::size_t first_k = 0) {
  for (std::size_t k = first_k; k < op.tiles(); ++k)
    run_step(be, op, k, [&](Tile t) { ep_op(be, op, rec, t, k); });
}

template <mem::Backend B, TiledFactorization F>
[[nodiscard]] std::size_t recover_ep(B& be, const F& op, const scheme::IndexRecordTable<1>& rec,
                                     lp::RecoveryStats& stats) {
  return recover_tiled_ep(be, op, rec, stats);
}

template <TiledFactorization F>
[[nodiscard]] std::size_t rival_steps(const F& op) {
  return op.tiles();
}

// ---------------------------------------------------------------------------------------------
// WAL: one transaction per op on a tile (EP's regions); T² units, log = n² doubles.

template <TiledFactorization F>
[[nodiscard]] std::array<scheme::PoolArray, 3> wal_bytes_for(const F& op) {
  const std::size_t units = op.tiles() * op.tiles();
  return {{{scheme::kWalHeaderArray, scheme::WalUnits::header_bytes(units)},
           {scheme::kWalIndexArray, scheme::WalUnits::progress_bytes(units)},
           {scheme::kWalLogArray, op.n() * op.n() * sizeof(double)}}};
}

template <mem::Backend B, TiledFactorization F>
void run_wal(B& be, const F& op, const scheme::WalUnits& wal, std::size_t first = 0) {
  for (std::size_t k = first; k < op.tiles(); ++k)
    run_step(be, op, k, [&](Tile t) { wal_op(be, op, wal, t, k); });
}

template <mem::Backend B, TiledFactorization F>
[[nodiscard]] std::size_t recover_wal(B& be, const F& op, const scheme::WalUnits& wal,
                                      lp::RecoveryStats& stats) {
  return roll_back_wal(be, op, wal, stats);
}

// ---------------------------------------------------------------------------------------------
// Checkpoint of the working matrix, double-buffered, every step: a checkpoint after step k
// copies only what steps > k can still rewrite (op.step_segments), into the slot that last held
// an older state; recovery redoes at most one step.

template <TiledFactorization F>
[[nodiscard]] std::size_t cp_default_every(const F&) {
  return 1;
}

template <TiledFactorization F>
[[nodiscard]] std::array<scheme::PoolArray, 2> cp_bytes_for(const F& op) {
  const auto work = op.work();
  return {{{scheme::kCpHeaderArray, scheme::StepCheckpoint::header_bytes()},
           {scheme::kCpAreaArray,
            scheme::StepCheckpoint::area_bytes(work.rows() * work.ld(),
                                               scheme::CheckpointMode::kDoubleBuffered)}}};
}

template <TiledFactorization F>
[[nodiscard]] scheme::StepCheckpoint cp_state(const F& op, scheme::StepCheckpointHeader* header,
                                              double* area, std::size_t every) {
  const auto work = op.work();
  return {header,
          area,
          work.data(),
          work.rows() * work.ld(),
          op.tiles(),
          every,
          scheme::CheckpointMode::kDoubleBuffered};
}

// Every step's tile ops as regions, then a checkpoint of what steps > k can still rewrite.
template <mem::Backend B, TiledFactorization F>
void run_cp(B& be, const F& op, const scheme::StepCheckpoint& cp, std::size_t first = 0) {
  auto copy = [&](std::size_t from, std::size_t, auto&& fn) { op.step_segments(from, fn); };
  const auto work = op.work();
  for (std::size_t k = first; k < op.tiles(); ++k) {
    run_step(be, op, k, [&](Tile t) {
      const mem::RegionId id{static_cast<std::uint32_t>(k),
                             static_cast<std::uint32_t>(unit_of(op.tiling, t))};
      be.region_begin(id);
      op.apply(be, t, k, lp::kIgnoreStored);
      be.region_end(id);
    });
    cp.after_step(be, k + 1, copy, [&] { be.persist(work.data(), work.bytes()); });
  }
}

template <mem::Backend B, TiledFactorization F>
[[nodiscard]] std::size_t recover_cp(B& be, const F& op, const scheme::StepCheckpoint& cp,
                                     lp::RecoveryStats& stats) {
  ++stats.regions_validated;
  return cp.restore(
      be, [&](std::size_t from, std::size_t, auto&& fn) { op.step_segments(from, fn); },
      [&] { restart(be, op); });
}

// ---------------------------------------------------------------------------------------------
// Hybrid Recompute: EP plus 1/parts of the working matrix's tile rows copied after each step.

template <TiledFactorization F>
[[nodiscard]] std::array<scheme::PoolArray, 3> hr_bytes_for(const F& op, std::size_t parts) {
  const auto work = op.work();
  return {{{scheme::kEpIndexArray, scheme::IndexRecordTable<1>::bytes_for(ep_records(op))},
           {scheme::kHrCopyArray, scheme::BandCopier::copy_bytes(work.rows() * work.ld())},
           {scheme::kHrPartsArray, scheme::BandCopier::state_bytes(parts)}}};
}

template <TiledFactorization F>
[[nodiscard]] HrState hr_state(const F& op, scheme::IndexRecordLayout<1>* records, double* copies,
                               scheme::PartState* part_states, std::size_t parts) {
  const auto work = op.work();
  return {{records, ep_records(op)},
          {work.data(), copies, part_states, work.rows() * work.ld(), op.tiles(), parts}};
}

template <mem::Backend B, TiledFactorization F>
void run_hr(B& be, const F& op, const HrState& hr, std::size_t first = 0) {
  auto band = [&](std::size_t u, auto&& fn) { op.tile_row_band(u, fn); };
  for (std::size_t k = first; k < op.tiles(); ++k) {
    run_step(be, op, k, [&](Tile t) { ep_op(be, op, hr.records, t, k); });
    if (k + 1 < op.tiles()) hr.copier.save(be, k, k + 1, band);
  }
}

template <mem::Backend B, TiledFactorization F>
[[nodiscard]] std::size_t recover_hr(B& be, const F& op, const HrState& hr,
                                     lp::RecoveryStats& stats) {
  return recover_hr_tiles(be, op, hr, stats);
}

}  // namespace pmlab::kernels::tiled
