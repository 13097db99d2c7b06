// Four-step FFT under LP's rivals: undo-logged WAL and pass checkpoints (cp); no hybrid.
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
// Hybrid Recompute has no meaning here: both passes write fresh arrays from arrays that are
// never overwritten, so a lost region costs one region to recompute and no copy could shorten
// that (docs/kernels.md). Every pool array starts zero-filled; results are bit-identical to
// run_base. The outer steps are the two passes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/fft.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"

namespace pmlab::kernels::fft {

[[nodiscard]] inline std::size_t rival_steps(const Operands&) {
  return kPasses;
}

// ---------------------------------------------------------------------------------------------
// WAL: one transaction per region (pass, group) of EP, logging the region's old output (pass
// 0: its rows of y, contiguous; pass 1: an n2 x 2g column strip of z). Unit = slot(pass, r),
// progress 1 = committed. Logs live in one 2n-double area at the region's offset within its
// pass (2·s0·n1 or 2·s0·n2): regions of one pass never share log space, and the two passes
// share it because no pass-0 transaction is open once pass 1 starts.

[[nodiscard]] inline std::array<scheme::PoolArray, 3> wal_bytes_for(const Operands& op) {
  return {{{scheme::kWalHeaderArray, scheme::WalUnits::header_bytes(op.table_slots())},
           {scheme::kWalIndexArray, scheme::WalUnits::progress_bytes(op.table_slots())},
           {scheme::kWalLogArray, 2 * op.n * sizeof(double)}}};
}

[[nodiscard]] inline scheme::LogBlock<double> wal_block(const Operands& op,
                                                        const scheme::WalUnits& wal, int pass,
                                                        std::size_t r) {
  const std::size_t s0 = op.first(r), g = op.end(pass, r) - s0, n1 = op.n1(), n2 = op.n2();
  if (pass == 0) return {op.y + 2 * s0 * n1, 1, 2 * g * n1, 2 * g * n1, wal.log + 2 * s0 * n1};
  return {op.z + 2 * s0, n2, 2 * g, 2 * n1, wal.log + 2 * s0 * n2};
}

template <mem::Backend B>
void run_wal(B& be, const Operands& op, const scheme::WalUnits& wal, std::size_t first = 0) {
  for (int pass = static_cast<int>(first); pass < kPasses; ++pass) {
    be.parallel_for(0, op.regions(pass), [&](std::size_t r) {
      const std::size_t u = op.slot(pass, r);
      if (wal.progress_of(be, u) != 0) return;  // committed before a crash
      const mem::RegionId id{static_cast<std::uint32_t>(pass), static_cast<std::uint32_t>(r)};
      be.region_begin(id);
      wal.transact(
          be, u, 1, [&] { pass_region(be, op, pass, r, [](double) {}); },
          wal_block(op, wal, pass, r));
      be.region_end(id);
    });
    mem::outer_step_done(be);
  }
}

// Rolls back every open transaction; returns the first pass with a region not committed (a
// pass starts only when the previous one is committed throughout).
template <mem::Backend B>
[[nodiscard]] std::size_t recover_wal(B& be, const Operands& op, const scheme::WalUnits& wal,
                                      lp::RecoveryStats& stats) {
  for (int pass = 0; pass < kPasses; ++pass) {
    std::vector<lp::RecoveryStats> per(op.regions(pass));
    be.parallel_for(0, op.regions(pass), [&](std::size_t r) {
      ++per[r].regions_validated;
      if (wal.roll_back(be, op.slot(pass, r), wal_block(op, wal, pass, r)))
        ++per[r].regions_inconsistent;
    });
    for (const auto& s : per) stats += s;
  }
  for (int pass = 0; pass < kPasses; ++pass)
    for (std::size_t r = 0; r < op.regions(pass); ++r)
      if (wal.progress_of(be, op.slot(pass, r)) == 0) return static_cast<std::size_t>(pass);
  return kPasses;
}

// ---------------------------------------------------------------------------------------------
// Checkpoint after pass 0: y copied (append-only: it is written once) into one 2n-double slot.
// Pass 1 is the last step, so its output z is persisted in place and the run published
// complete; nothing else is ever checkpointed.

template <class Fn>
void cp_segments(const Operands& op, std::size_t from, std::size_t to, Fn&& fn) {
  if (from == 0 && to >= 1) fn(std::size_t{0}, 2 * op.n);
}

// After every pass (there is only one checkpoint to take).
[[nodiscard]] inline std::size_t cp_default_every(const Operands&) {
  return 1;
}

[[nodiscard]] inline std::array<scheme::PoolArray, 2> cp_bytes_for(const Operands& op) {
  return {{{scheme::kCpHeaderArray, scheme::StepCheckpoint::header_bytes()},
           {scheme::kCpAreaArray,
            scheme::StepCheckpoint::area_bytes(2 * op.n, scheme::CheckpointMode::kAppendOnly)}}};
}

[[nodiscard]] inline scheme::StepCheckpoint cp_state(const Operands& op,
                                                     scheme::StepCheckpointHeader* header,
                                                     double* area, std::size_t every) {
  return {
      header, area, op.y, 2 * op.n, rival_steps(op), every, scheme::CheckpointMode::kAppendOnly};
}

template <mem::Backend B>
void run_cp(B& be, const Operands& op, const scheme::StepCheckpoint& cp, std::size_t first = 0) {
  auto segments = [&](std::size_t from, std::size_t to, auto&& fn) {
    cp_segments(op, from, to, fn);
  };
  for (int pass = static_cast<int>(first); pass < kPasses; ++pass) {
    be.parallel_for(0, op.regions(pass), [&](std::size_t r) {
      const mem::RegionId id{static_cast<std::uint32_t>(pass), static_cast<std::uint32_t>(r)};
      be.region_begin(id);
      pass_region(be, op, pass, r, [](double) {});
      be.region_end(id);
    });
    cp.after_step(be, static_cast<std::size_t>(pass) + 1, segments,
                  [&] { be.persist(op.z, 2 * op.n * sizeof(double)); });
    mem::outer_step_done(be);
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

}  // namespace pmlab::kernels::fft
