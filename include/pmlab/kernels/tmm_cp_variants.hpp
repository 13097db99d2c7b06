// tmm's checkpoint-by-copy rows of seed 002 §3 (cp-clflush, cp-par-clflush, cp-nt): cp's
// double-buffered copy of A, B and C, with a chosen copy mode and checkpoint interval.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "pmlab/kernels/tmm.hpp"
#include "pmlab/kernels/tmm_eager.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/copy_mode.hpp"

namespace pmlab::kernels::tmm {

// The header word (CpHeader::done) of these rows: 0 = no checkpoint yet, else done << 1 | slot.
// Unlike cp (slot = done % 2, which only works for a checkpoint after every kk tile), the slot
// is named in the same failure-atomic word as the progress, so any interval is safe.
struct CpVariant {
  CpState st;
  scheme::CopyMode mode = scheme::CopyMode::kNt;
  std::size_t every = 1;
};

template <mem::Backend B>
void cp_variant_copy(B& be, scheme::CopyMode mode, std::array<scheme::CopyJob, 3> jobs) {
  if (mode == scheme::CopyMode::kNt && !scheme::copy_mutated(be)) {
    // Exactly cp's copy (each matrix split over the threads).
    scheme::copy_durable_parallel(be, {jobs[0], jobs[1], jobs[2]});
    return;
  }
  scheme::copy_jobs_durable_mode(be, std::span<const scheme::CopyJob>(jobs), mode);
}

template <mem::Backend B>
void run_cp_variant(B& be, const Operands& op, const CpVariant& v, std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles(), m = cp_matrix_elems(op);
  const std::size_t every = v.every < 1 ? 1 : v.every;
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    be.parallel_for(0, nt, [&](std::size_t it) { panel_step(be, op, kt, it, lp::kIgnoreStored); });
    mem::outer_step_done(be);  // computed; its checkpoint (if one is due) follows
    const std::size_t done = kt + 1;
    if (done % every != 0 && done != nt) continue;
    const std::uint64_t w = be.load(&v.st.header->done);
    const std::size_t slot = w == 0 ? 0 : 1 - static_cast<std::size_t>(w & 1u);
    double* area = v.st.area + slot * 3 * m;
    if (mem::mutated(be, mem::Mutation::kCommitEarly)) {  // negative control: publish first
      be.store(&v.st.header->done, (static_cast<std::uint64_t>(done) << 1) | slot);
      be.persist(&v.st.header->done, sizeof(std::uint64_t));
    }
    cp_variant_copy(
        be, v.mode,
        {{{area, op.a.data(), m}, {area + m, op.b.data(), m}, {area + 2 * m, op.c.data(), m}}});
    mem::dram_cache_flush(be, op.c.data(), m * sizeof(double));  // as run_cp (tmm_eager.hpp)
    be.store(&v.st.header->done, (static_cast<std::uint64_t>(done) << 1) | slot);
    be.persist(&v.st.header->done, sizeof(std::uint64_t));
  }
}

// Restores C from the newest checkpoint and resumes after it (only reads the checkpoint, so a
// crash inside recovery is harmless).
template <mem::Backend B>
[[nodiscard]] std::size_t recover_cp_variant(B& be, const Operands& op, const CpVariant& v,
                                             lp::RecoveryStats& stats) {
  const std::size_t m = cp_matrix_elems(op);
  const std::uint64_t w = be.load(&v.st.header->done);
  ++stats.regions_validated;
  if (w == 0) {
    for (std::size_t e = 0; e < m; ++e) be.store(op.c.data() + e, 0.0);
    be.persist(op.c.data(), m * sizeof(double));
    return 0;
  }
  const std::array<scheme::CopyJob, 1> job{
      {{op.c.data(), v.st.area + (w & 1u) * 3 * m + 2 * m, m}}};
  scheme::copy_jobs_durable_mode(be, std::span<const scheme::CopyJob>(job), v.mode);
  return static_cast<std::size_t>(w >> 1);
}

}  // namespace pmlab::kernels::tmm
