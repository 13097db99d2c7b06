// Gauss under LP's rivals: undo-logged WAL, step checkpoints (cp), Hybrid Recompute (hr).
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

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/gauss.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/band_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/lines.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"

namespace pmlab::kernels::gauss {

// Steps 0 .. n-2 (none for n = 1).
[[nodiscard]] inline std::size_t rival_steps(const Operands& op) {
  return op.n < 2 ? 0 : op.n - 1;
}

// ---------------------------------------------------------------------------------------------
// WAL: one transaction per region (k, b) of EP, i.e. step k on row block b. Unit = row block
// (progress = steps applied). The transaction logs exactly what the region overwrites: the
// block's rows below k, columns k..n (column k becomes the zero). Block b's log lives at
// first_row(b)·(n+1) of an n·(n+1) log area, the same place as the block in W.

[[nodiscard]] inline std::array<scheme::PoolArray, 3> wal_bytes_for(const Operands& op) {
  return {{{scheme::kWalHeaderArray, scheme::WalUnits::header_bytes(op.blocks())},
           {scheme::kWalIndexArray, scheme::WalUnits::progress_bytes(op.blocks())},
           {scheme::kWalLogArray, op.n * op.cols() * sizeof(double)}}};
}

[[nodiscard]] inline scheme::LogBlock<double> wal_region_block(const Operands& op,
                                                               const scheme::WalUnits& wal,
                                                               std::size_t k, std::size_t b) {
  const std::size_t i0 = std::max(k + 1, op.first_row(b));
  return {op.w.at(i0, k), op.end_row(b) - i0, op.cols() - k, op.w.ld(),
          wal.log + op.first_row(b) * op.cols()};
}

template <mem::Backend B>
void run_wal(B& be, const Operands& op, const scheme::WalUnits& wal, std::size_t first = 0) {
  for (std::size_t k = first; k < rival_steps(op); ++k) {
    be.parallel_for(first_block_of_step(op, k), op.blocks(), [&](std::size_t b) {
      if (wal.progress_of(be, b) > k) return;  // committed before a crash
      const mem::RegionId id{static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(b)};
      be.region_begin(id);
      wal.transact(
          be, b, k + 1,
          [&] {
            eliminate_block(
                be, op, k, b, [](double) {}, [](double) {});
          },
          wal_region_block(op, wal, k, b));
      be.region_end(id);
    });
    mem::outer_step_done(be);
  }
}

// Rolls back every open transaction (the region in flight is named by the block's logged
// progress), then returns the first step some block still needs: block b needs step
// progress(b) while progress(b) < max_version(b). Steps are barriers, so every block is at K
// or K + 1 (or final), and run_wal, skipping committed regions, resumes at step K.
template <mem::Backend B>
[[nodiscard]] std::size_t recover_wal(B& be, const Operands& op, const scheme::WalUnits& wal,
                                      lp::RecoveryStats& stats) {
  const std::size_t nb = op.blocks();
  std::vector<std::size_t> needs(nb, rival_steps(op));
  std::vector<lp::RecoveryStats> per(nb);
  be.parallel_for(0, nb, [&](std::size_t b) {
    ++per[b].regions_validated;
    if (wal.in_tx(be, b)) {
      const auto k = static_cast<std::size_t>(wal.logged_progress(be, b));
      if (wal.roll_back(be, b, wal_region_block(op, wal, k, b))) ++per[b].regions_inconsistent;
    }
    const auto v = static_cast<std::size_t>(wal.progress_of(be, b));
    if (v < op.max_version(b)) needs[b] = v;
  });
  for (const auto& s : per) stats += s;
  return nb == 0 ? 0 : *std::min_element(needs.begin(), needs.end());
}

// ---------------------------------------------------------------------------------------------
// Checkpoint of W, double-buffered, every `every` steps. Steps >= s write rows > s, columns
// >= s only, so a checkpoint copies that trailing part into the slot that last held an older
// state.

template <class Fn>
void cp_segments(const Operands& op, std::size_t from, Fn&& fn) {
  for (std::size_t r = from + 1; r < op.n; ++r) fn(r * op.w.ld() + from, op.cols() - from);
}

// Every bs steps. Each step rewrites the whole trailing matrix ((n-k)² elements), so a copy
// after every step would write as much as the kernel itself; every bs steps the copies add about
// 1/bs of the kernel's writes, and recovery redoes at most bs steps (as many checkpoints as
// the factorizations take with their T = n/bs steps).
[[nodiscard]] inline std::size_t cp_default_every(const Operands& op) {
  return std::max<std::size_t>(1, op.bs);
}

[[nodiscard]] inline std::array<scheme::PoolArray, 2> cp_bytes_for(const Operands& op) {
  return {{{scheme::kCpHeaderArray, scheme::StepCheckpoint::header_bytes()},
           {scheme::kCpAreaArray,
            scheme::StepCheckpoint::area_bytes(op.w.rows() * op.w.ld(),
                                               scheme::CheckpointMode::kDoubleBuffered)}}};
}

[[nodiscard]] inline scheme::StepCheckpoint cp_state(const Operands& op,
                                                     scheme::StepCheckpointHeader* header,
                                                     double* area, std::size_t every) {
  return {header,
          area,
          op.w.data(),
          op.w.rows() * op.w.ld(),
          rival_steps(op),
          every,
          scheme::CheckpointMode::kDoubleBuffered};
}

template <mem::Backend B>
void run_cp(B& be, const Operands& op, const scheme::StepCheckpoint& cp, std::size_t first = 0) {
  auto segments = [&](std::size_t from, std::size_t, auto&& fn) { cp_segments(op, from, fn); };
  for (std::size_t k = first; k < rival_steps(op); ++k) {
    be.parallel_for(first_block_of_step(op, k), op.blocks(), [&](std::size_t b) {
      const mem::RegionId id{static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(b)};
      be.region_begin(id);
      eliminate_block(
          be, op, k, b, [](double) {}, [](double) {});
      be.region_end(id);
    });
    cp.after_step(be, k + 1, segments, [&] { be.persist(op.w.data(), op.w.bytes()); });
    mem::outer_step_done(be);
  }
}

template <mem::Backend B>
[[nodiscard]] std::size_t recover_cp(B& be, const Operands& op, const scheme::StepCheckpoint& cp,
                                     lp::RecoveryStats& stats) {
  ++stats.regions_validated;
  return cp.restore(
      be, [&](std::size_t from, std::size_t, auto&& fn) { cp_segments(op, from, fn); },
      [&] { restart(be, op); });
}

// ---------------------------------------------------------------------------------------------
// Hybrid Recompute: EP (one IndexRecord per row block) plus a BandCopier whose bands are the
// row blocks, 1/parts of them saved after each step but the last. The copy taken after step
// d - 1 holds block b at state min(d, max_version(b)).

struct HrState {
  scheme::IndexRecordTable<1> records;  // `ep_index`, one per row block
  scheme::BandCopier copier;            // `hr_copy`, `hr_parts`
};

[[nodiscard]] inline std::array<scheme::PoolArray, 3> hr_bytes_for(const Operands& op,
                                                                   std::size_t parts) {
  return {{{scheme::kEpIndexArray, scheme::IndexRecordTable<1>::bytes_for(op.blocks())},
           {scheme::kHrCopyArray, scheme::BandCopier::copy_bytes(op.w.rows() * op.w.ld())},
           {scheme::kHrPartsArray, scheme::BandCopier::state_bytes(parts)}}};
}

[[nodiscard]] inline HrState hr_state(const Operands& op, scheme::IndexRecordLayout<1>* records,
                                      double* copies, scheme::PartState* part_states,
                                      std::size_t parts) {
  return {{records, op.blocks()},
          {op.w.data(), copies, part_states, op.w.rows() * op.w.ld(), op.blocks(), parts}};
}

template <mem::Backend B>
void run_hr(B& be, const Operands& op, const HrState& hr, std::size_t first = 0) {
  auto band = [&](std::size_t b, auto&& fn) {
    fn(op.first_row(b) * op.w.ld(), (op.end_row(b) - op.first_row(b)) * op.w.ld());
  };
  for (std::size_t k = first; k < rival_steps(op); ++k) {
    be.parallel_for(first_block_of_step(op, k), op.blocks(),
                    [&](std::size_t b) { ep_region(be, op, hr.records, k, b); });
    if (k + 1 < rival_steps(op)) hr.copier.save(be, k, k + 1, band);
    mem::outer_step_done(be);
  }
}

// EpBlockTracker, except for a block whose record is in flight (its step torn): it restarts
// from the newest copy of it instead of the input, restored, persisted and recorded before its
// state is reported. Any state is a valid restart point (recover_blocks resumes at the newest
// state of any block and brings the others forward, pivot rows first), so the newest copy is
// used even if it is ahead of the torn step.
struct HrBlockTracker {
  const Operands& op;
  const HrState& hr;

  template <mem::Backend B>
  void find(B& be, std::size_t b, detail::BlockState& s) const {
    const std::uint64_t w = hr.records[b].get(be, 0);
    ++s.stats.regions_validated;
    s.lost = false;
    s.version = static_cast<std::size_t>(w >> 1);
    if ((w & 1u) == 0) return;
    ++s.stats.regions_inconsistent;
    const double* src = op.a.data();  // no usable copy: the input, state 0
    std::size_t src_ld = op.a.ld();
    s.version = 0;
    const auto held = hr.copier.held(be, b);
    for (std::size_t c = 0; c < 2; ++c) {
      if (held[c] == 0) continue;
      const std::size_t v = std::min<std::size_t>(held[c], op.max_version(b));
      if (v > s.version) {
        s.version = v;
        src = hr.copier.slot_data(c);
        src_ld = op.w.ld();
      }
    }
    for (std::size_t i = op.first_row(b); i < op.end_row(b); ++i)
      for (std::size_t j = 0; j < op.cols(); ++j)
        be.store(op.w.at(i, j), be.load(src + i * src_ld + j));
    persist_block(be, op, b);
    hr.records[b].set(be, 0, ep_word(s.version, false));
  }
  template <mem::Backend B>
  void begin(B& be, std::size_t b, const detail::BlockState& s) const {
    EpBlockTracker{op, hr.records}.begin(be, b, s);
  }
  template <mem::Backend B>
  void step(B& be, std::size_t q, std::size_t b, detail::BlockState& s) const {
    EpBlockTracker{op, hr.records}.step(be, q, b, s);
  }
  template <mem::Backend B>
  void finish(B& be, std::size_t b, const detail::BlockState& s, std::size_t t) const {
    EpBlockTracker{op, hr.records}.finish(be, b, s, t);
  }
  template <mem::Backend B>
  void settle(B&, std::size_t, std::size_t) const {}  // zeros were restored and flushed with rows
};

template <mem::Backend B>
[[nodiscard]] std::size_t recover_hr(B& be, const Operands& op, const HrState& hr,
                                     lp::RecoveryStats& stats) {
  return recover_blocks(be, op, HrBlockTracker{op, hr}, stats);
}

}  // namespace pmlab::kernels::gauss
