// 2D convolution under LP's rivals: undo-logged WAL and step checkpoints (cp); no hybrid.
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
// Hybrid Recompute has no meaning here: a block is written once from read-only inputs, so a
// lost block costs one block to recompute, and a copy of it could not shorten that
// (docs/kernels.md). Every pool array starts zero-filled; results are bit-identical to run_base.
//
// The outer loop of conv2d is a single parallel loop over the row blocks, so its "steps" are
// the blocks: run_wal(first) computes blocks [first, blocks), run_cp waves of `every` blocks.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/conv2d.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"

namespace pmlab::kernels::conv2d {

[[nodiscard]] inline std::size_t rival_steps(const Operands& op) {
  return op.blocks();
}

// ---------------------------------------------------------------------------------------------
// WAL: one transaction per row block (EP's regions), logging the block's old output rows (the
// region is idempotent, so the log only ever restores what a recompute overwrites anyway: it
// is here because a WAL program pays it for any region it cannot prove idempotent). Unit =
// block, progress 1 = committed; block b's log at first_row(b)·n of an n² log area.

[[nodiscard]] inline std::array<scheme::PoolArray, 3> wal_bytes_for(const Operands& op) {
  return {{{scheme::kWalHeaderArray, scheme::WalUnits::header_bytes(op.blocks())},
           {scheme::kWalIndexArray, scheme::WalUnits::progress_bytes(op.blocks())},
           {scheme::kWalLogArray, op.n * op.n * sizeof(double)}}};
}

[[nodiscard]] inline scheme::LogBlock<double> wal_block(const Operands& op,
                                                        const scheme::WalUnits& wal,
                                                        std::size_t b) {
  const std::size_t r0 = op.first_row(b);
  return {op.out.row(r0), op.end_row(b) - r0, op.n, op.out.ld(), wal.log + r0 * op.n};
}

template <mem::Backend B>
void run_wal(B& be, const Operands& op, const scheme::WalUnits& wal, std::size_t first = 0) {
  be.parallel_for(first, op.blocks(), [&](std::size_t b) {
    if (wal.progress_of(be, b) != 0) return;  // committed before a crash
    const mem::RegionId id{0, static_cast<std::uint32_t>(b)};
    be.region_begin(id);
    wal.transact(
        be, b, 1, [&] { conv_block(be, op, b, lp::kIgnoreStored); }, wal_block(op, wal, b));
    be.region_end(id);
    mem::outer_step_done(be);
  });
}

// Rolls back every open transaction; returns the first block not committed (blocks run in
// parallel, so committed blocks need not form a prefix: run_wal skips them).
template <mem::Backend B>
[[nodiscard]] std::size_t recover_wal(B& be, const Operands& op, const scheme::WalUnits& wal,
                                      lp::RecoveryStats& stats) {
  std::vector<lp::RecoveryStats> per(op.blocks());
  be.parallel_for(0, op.blocks(), [&](std::size_t b) {
    ++per[b].regions_validated;
    if (wal.roll_back(be, b, wal_block(op, wal, b))) ++per[b].regions_inconsistent;
  });
  for (const auto& s : per) stats += s;
  for (std::size_t b = 0; b < op.blocks(); ++b)
    if (wal.progress_of(be, b) == 0) return b;
  return op.blocks();
}

// ---------------------------------------------------------------------------------------------
// Checkpoint of the output, append-only: blocks are written once, so a checkpoint copies only
// the rows of the blocks computed since the previous one into a single slot.

template <class Fn>
void cp_segments(const Operands& op, std::size_t from, std::size_t to, Fn&& fn) {
  const std::size_t r0 = std::min(op.n, from * op.bs), r1 = std::min(op.n, to * op.bs);
  if (r1 > r0) fn(r0 * op.out.ld(), (r1 - r0) * op.out.ld());
}

// Eight waves: recovery then redoes at most 1/8 of the image, each wave still holds many
// blocks for the threads, and the copies add one write per output element in total.
[[nodiscard]] inline std::size_t cp_default_every(const Operands& op) {
  return std::max<std::size_t>(1, (op.blocks() + 7) / 8);
}

[[nodiscard]] inline std::array<scheme::PoolArray, 2> cp_bytes_for(const Operands& op) {
  return {{{scheme::kCpHeaderArray, scheme::StepCheckpoint::header_bytes()},
           {scheme::kCpAreaArray,
            scheme::StepCheckpoint::area_bytes(op.out.rows() * op.out.ld(),
                                               scheme::CheckpointMode::kAppendOnly)}}};
}

[[nodiscard]] inline scheme::StepCheckpoint cp_state(const Operands& op,
                                                     scheme::StepCheckpointHeader* header,
                                                     double* area, std::size_t every) {
  return {header,
          area,
          op.out.data(),
          op.out.rows() * op.out.ld(),
          rival_steps(op),
          every,
          scheme::CheckpointMode::kAppendOnly};
}

template <mem::Backend B>
void run_cp(B& be, const Operands& op, const scheme::StepCheckpoint& cp, std::size_t first = 0) {
  auto segments = [&](std::size_t from, std::size_t to, auto&& fn) {
    cp_segments(op, from, to, fn);
  };
  for (std::size_t s = first; s < rival_steps(op);) {
    const std::size_t e = cp.next_stop(s);
    be.parallel_for(s, e, [&](std::size_t b) {
      be.region_begin({0, static_cast<std::uint32_t>(b)});
      conv_block(be, op, b, lp::kIgnoreStored);
      be.region_end({0, static_cast<std::uint32_t>(b)});
      mem::outer_step_done(be);
    });
    cp.after_step(be, e, segments, [&] { be.persist(op.out.data(), op.out.bytes()); });
    s = e;
  }
}

template <mem::Backend B>
[[nodiscard]] std::size_t recover_cp(B& be, const Operands& op, const scheme::StepCheckpoint& cp,
                                     lp::RecoveryStats& stats) {
  ++stats.regions_validated;
  return cp.restore(
      be, [&](std::size_t from, std::size_t to, auto&& fn) { cp_segments(op, from, to, fn); },
      [] {});
}

}  // namespace pmlab::kernels::conv2d
