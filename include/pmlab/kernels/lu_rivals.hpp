// LU under LP's rivals: undo-logged WAL, step checkpoints (cp), Hybrid Recompute (hr).
//
// API, the same shape for cholesky, lu, gauss, conv2d and fft (`first` is an outer step; a
// recovery returns the step to pass as `first`, rival_steps(op) meaning "already complete"):
//   rival_steps(op)
//   wal_bytes_for(op) -> std::array<scheme::PoolArray, 3>   {wal_header, wal_index, wal_log}
//   run_wal(be, op, const scheme::WalUnits& wal, first = 0)
//   recover_wal(be, op, wal, lp::RecoveryStats&) -> first
//   cp_bytes_for(op) -> std::array<scheme::PoolArray, 2>    {cp_header, cp_area}
//   cp_default_every(op), cp_state(op, header, area, every) -> scheme::StepCheckpoint
//   run_cp(be, op, const scheme::StepCheckpoint& cp, first = 0)
//   recover_cp(be, op, cp, lp::RecoveryStats&) -> first
//   hr_bytes_for(op, parts) -> std::array<scheme::PoolArray, 3>  {ep_index, hr_copy, hr_parts}
//   hr_state(op, records, copies, part_states, parts) -> HrState   (cholesky, lu, gauss only)
//   run_hr(be, op, const HrState& hr, first = 0)
//   recover_hr(be, op, hr, lp::RecoveryStats&) -> first
// Every pool array starts zero-filled. Results are bit-identical to run_base (same ops, same
// FP order). Protocols and costs: docs/kernels.md, "WAL / checkpoint / hybrid".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "pmlab/kernels/lu.hpp"
#include "pmlab/kernels/tiled_rivals.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/band_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"

namespace pmlab::kernels::lu {

using tiled::HrState;

[[nodiscard]] inline std::size_t rival_steps(const Operands& op) {
  return op.tiles();
}

// ---------------------------------------------------------------------------------------------
// WAL: one transaction per op on a tile (EP's regions); T² units, log = n² doubles.

[[nodiscard]] inline std::array<scheme::PoolArray, 3> wal_bytes_for(const Operands& op) {
  const std::size_t units = op.tiles() * op.tiles();
  return {{{"wal_header", scheme::WalUnits::header_bytes(units)},
           {"wal_index", scheme::WalUnits::progress_bytes(units)},
           {"wal_log", op.n() * op.n() * sizeof(double)}}};
}

template <mem::Backend B>
void run_wal(B& be, const Operands& op, const scheme::WalUnits& wal, std::size_t first = 0) {
  for (std::size_t k = first; k < op.tiles(); ++k)
    run_step(be, op, k, [&](Tile t) { tiled::wal_op(be, op, op.w, wal, t, k); });
}

template <mem::Backend B>
[[nodiscard]] std::size_t recover_wal(B& be, const Operands& op, const scheme::WalUnits& wal,
                                      lp::RecoveryStats& stats) {
  return tiled::recover_wal(be, op, op.w, wal, stats);
}

// ---------------------------------------------------------------------------------------------
// Checkpoint of W, double-buffered. Steps >= s write only the trailing matrix from row and
// column s·bs on, so a checkpoint copies just that into the slot that last held an older state.

template <class Fn>
void cp_segments(const Operands& op, std::size_t from, Fn&& fn) {
  const std::size_t c0 = std::min(op.n(), from * op.tiling.bs);
  for (std::size_t r = c0; r < op.n(); ++r) fn(r * op.w.ld() + c0, op.n() - c0);
}

// Every step: the trailing matrix shrinks, so the copies total about T·n²/3 doubles against
// the kernel's 2n³/3 flops (1/(2·bs) of them), and recovery redoes at most one step.
[[nodiscard]] inline std::size_t cp_default_every(const Operands&) {
  return 1;
}

[[nodiscard]] inline std::array<scheme::PoolArray, 2> cp_bytes_for(const Operands& op) {
  return tiled::cp_arrays(op.w);
}

[[nodiscard]] inline scheme::StepCheckpoint cp_state(const Operands& op,
                                                     scheme::StepCheckpointHeader* header,
                                                     double* area, std::size_t every) {
  return tiled::cp_state_of(op, op.w, header, area, every);
}

template <mem::Backend B>
void run_cp(B& be, const Operands& op, const scheme::StepCheckpoint& cp, std::size_t first = 0) {
  tiled::run_cp(be, op, op.w, cp, first,
                [&](std::size_t from, auto&& fn) { cp_segments(op, from, fn); });
}

template <mem::Backend B>
[[nodiscard]] std::size_t recover_cp(B& be, const Operands& op, const scheme::StepCheckpoint& cp,
                                     lp::RecoveryStats& stats) {
  return tiled::recover_cp(be, op, cp, stats,
                           [&](std::size_t from, auto&& fn) { cp_segments(op, from, fn); });
}

// ---------------------------------------------------------------------------------------------
// Hybrid Recompute: EP plus 1/parts of W's tile rows copied after each step.

[[nodiscard]] inline std::array<scheme::PoolArray, 3> hr_bytes_for(const Operands& op,
                                                                   std::size_t parts) {
  return tiled::hr_arrays(ep_records(op), op.w, parts);
}

[[nodiscard]] inline HrState hr_state(const Operands& op, scheme::IndexRecordLayout<1>* records,
                                      double* copies, scheme::PartState* part_states,
                                      std::size_t parts) {
  return tiled::hr_state_of(op, op.w, ep_records(op), records, copies, part_states, parts);
}

template <mem::Backend B>
void run_hr(B& be, const Operands& op, const HrState& hr, std::size_t first = 0) {
  auto band = [&](std::size_t u, auto&& fn) {
    const std::size_t r0 = op.tiling.begin(u);
    fn(r0 * op.w.ld(), op.tiling.len(u) * op.w.ld());
  };
  for (std::size_t k = first; k < op.tiles(); ++k) {
    run_step(be, op, k, [&](Tile t) { tiled::ep_op(be, op, hr.records, t, k); });
    if (k + 1 < op.tiles()) hr.copier.save(be, k, k + 1, band);
  }
}

template <mem::Backend B>
[[nodiscard]] std::size_t recover_hr(B& be, const Operands& op, const HrState& hr,
                                     lp::RecoveryStats& stats) {
  return tiled::recover_hr(be, op, op.w, hr, stats);
}

}  // namespace pmlab::kernels::lu
