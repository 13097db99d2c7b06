// In-place versioning on tmm (seed 002 §4.1/§4.2): two versions of C, roles by kk-tile parity,
// a persisted commit word, O(1) recovery with at most one kk tile recomputed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pmlab/kernels/tmm.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/async_flush.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/versions.hpp"

namespace pmlab::kernels::tmm {

enum class IpvFlush {
  kSync,   // ipv-sync: the working version is flushed in place at the end of the iteration
  kAsync,  // ipv: flush_async to the helper thread, flush_barrier before the next commit
};

struct IpvState {
  double* v1 = nullptr;  // the second version of C (rows * ld doubles); version 0 is C itself
  scheme::IpvHeader* header = nullptr;
};

// panel_step reading C's old values from c_in and storing the new ones into c_out: the paper's
// basic rule (every element is read once, before its only update, and the sum stays in a
// register). A copy of panel_step rather than a parameter of it, so that the hot loop every
// other tmm scheme runs stays exactly as measured (docs/backend-overhead.md).
template <mem::Backend B>
[[gnu::noinline]] void panel_step_versioned(B& be, const Operands& op, const double* c_in,
                                            double* c_out, std::size_t kt, std::size_t it) {
  const std::size_t n = op.n, bs = op.bs;
  const double* const a = op.a.data();
  const double* const b = op.b.data();
  const std::size_t lda = op.a.ld(), ldb = op.b.ld(), ldc = op.c.ld();
  const std::size_t kk = kt * bs, ii = it * bs;
  const std::size_t k_end = std::min(kk + bs, n), i_end = std::min(ii + bs, n);
  for (std::size_t jj = 0; jj < n; jj += bs) {
    const std::size_t j_end = std::min(jj + bs, n);
    for (std::size_t i = ii; i < i_end; ++i) {
      for (std::size_t j = jj; j < j_end; ++j) {
        double sum = be.load(c_in + i * ldc + j);
        for (std::size_t k = kk; k < k_end; ++k)
          sum += be.load(a + i * lda + k) * be.load(b + k * ldb + j);
        be.store(c_out + i * ldc + j, sum);
      }
    }
  }
}

namespace detail {
template <mem::Backend B>
void ipv_commit(B& be, const IpvState& st, std::size_t done) {
  be.store(&st.header->done, static_cast<std::uint64_t>(done));
  be.persist(&st.header->done, sizeof(std::uint64_t));
}
}  // namespace detail

// Iteration kt reads version kt % 2 (C after kt tiles) and writes version (kt + 1) % 2, which
// held C after kt - 1 tiles: so before its first write, the flush of version kt % 2 must be
// complete (barrier) and `done = kt` durable (commit). The commit follows the barrier. At the
// end the result is copied into C (version 0) if it sits in version 1, then `complete` is set.
template <mem::Backend B>
void run_ipv(B& be, const Operands& op, const IpvState& st, IpvFlush how,
             std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles(), m = op.c.rows() * op.c.ld();
  double* const v[2] = {op.c.data(), st.v1};
  // Negative controls (`pmlab crash --mutate ipv-...`); constant false natively.
  const bool skip_flush = mem::mutated(be, mem::Mutation::kIpvSkipFlush);
  const bool barrier_late = mem::mutated(be, mem::Mutation::kIpvBarrierAfterWrite);
  const bool commit_early = mem::mutated(be, mem::Mutation::kIpvCommitBeforeFlush);
  scheme::AsyncFlusher<B> flusher(be);  // flush_init: starts the helper natively
  const auto flush_working = [&](double* out) {
    std::size_t bytes = m * sizeof(double);
    if (skip_flush && nt > 1)
      bytes = (op.tiles() - 1) * op.bs * op.c.ld() * sizeof(double);  // last panel left out
    if (how == IpvFlush::kAsync)
      flusher.flush_async({out, bytes});
    else
      be.persist(out, bytes);
  };
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    const double* in = v[kt % 2];
    double* out = v[(kt + 1) % 2];
    std::size_t first_panel = 0;
    if (barrier_late) {
      panel_step_versioned(be, op, in, out, kt, 0);  // overwrites the committed version
      first_panel = 1;
    }
    flusher.flush_barrier();
    if (!commit_early) detail::ipv_commit(be, st, kt);
    be.parallel_for(first_panel, nt,
                    [&](std::size_t it) { panel_step_versioned(be, op, in, out, kt, it); });
    if (commit_early) detail::ipv_commit(be, st, kt + 1);
    flush_working(out);  // flush_async: version (kt + 1) % 2 is no longer updated in kt
  }
  flusher.flush_barrier();
  detail::ipv_commit(be, st, nt);
  if (nt % 2 == 1) scheme::copy_durable(be, v[0], v[1], m);
  be.store(&st.header->complete, std::uint64_t{1});
  be.persist(&st.header->complete, sizeof(std::uint64_t));
}

// O(1): version done % 2 holds C after `done` tiles; the run resumes there, recomputing at most
// the one tile that was in flight. Nothing is written, so a crash inside recovery is harmless.
template <mem::Backend B>
[[nodiscard]] std::size_t recover_ipv(B& be, const Operands& op, const IpvState& st,
                                      lp::RecoveryStats& stats) {
  ++stats.regions_validated;
  if (be.load(&st.header->complete) != 0) return op.tiles();
  return static_cast<std::size_t>(be.load(&st.header->done));
}

}  // namespace pmlab::kernels::tmm
