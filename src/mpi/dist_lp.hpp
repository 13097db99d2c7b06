// Lazy Persistency across ranks for the iterative kernels: iterative.hpp's LP (K + 2 state
// buffers, checksum banks stamped with their iteration) with a coordinated anchor and a recovery
// that agrees on one resume point for every rank (docs/distributed.md states the rule and its
// proof sketch).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "comm.hpp"
#include "pmlab/kernels/iterative.hpp"
#include "pmlab/kernels/iterative_rows.hpp"
#include "pmlab/lp/checksum_param.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::dist {

namespace it = kernels::iterative;

// The negative controls of the agreement (pmlab-mpi --mutate): resume-own skips the collective
// and resumes every rank from the latest point it holds itself; resume-latest-any takes the
// latest point *any* rank holds instead of the latest *every* rank holds.
enum class Control { kNone, kResumeOwn, kResumeLatestAny };
inline Control& control() {
  static Control c = Control::kNone;
  return c;
}

// Fault injection for the kill tests (PMLAB_MPI_COMMIT_DELAY_US): the last rank waits this long
// between an iteration's stores and its commits, so that kills land where ranks hold different
// latest points and the negative controls above are exposed. 0 otherwise.
inline unsigned& commit_delay_us() {
  static unsigned us = 0;
  return us;
}

// What the last recovery of this process found, for the per-rank report.
struct AgreementReport {
  std::int64_t durable = 0;      // the rank's own durable point before recovery
  std::int64_t latest_held = 0;  // the latest resume point the rank held alone
  std::int64_t agreed = 0;       // the resume point every rank rolled back to
};
inline AgreementReport& last_agreement() {
  static AgreementReport r;
  return r;
}

template <class Op>
void persist_bank(mem::Backend auto& be, const Op& op, const it::LpState& st, std::size_t t) {
  be.persist(st.slots + (t % op.lp_buffers()) * op.regions(),
             op.regions() * sizeof(lp::ChecksumSlot));
}

// The anchor at point d (iterations [0, d) durable): output d - 1 and its checksum bank are
// persisted on this rank, then every rank waits for every other (the barrier), and only then is
// `durable = d` recorded. So a rank that records d knows that every rank holds output d - 1
// durably with its checksums.
template <class Op>
void anchor(mem::Backend auto& be, const Op& op, const it::LpState& st, std::size_t d) {
  be.persist(st.buf[d % op.lp_buffers()], op.state_bytes());
  if (d > 0) dist::persist_bank(be, op, st, d - 1);
  op.comm->step_barrier(d);
  be.store(st.durable, static_cast<std::uint64_t>(d));
  be.persist(st.durable, sizeof(std::uint64_t));
}

// The result ends in buffer 0, durable everywhere before any rank calls it durable.
template <class Op>
void finish(mem::Backend auto& be, const Op& op, const it::LpState& st) {
  const std::size_t last = op.iterations % op.lp_buffers();
  // `durable` is the same on every rank here (a fresh run, or set by recover), so every rank
  // takes the same branch and meets the same barrier.
  if (be.load(st.durable) < op.iterations) dist::anchor(be, op, st, op.iterations);
  if (last != 0) scheme::copy_durable(be, st.buf[0], st.buf[last], op.elements);
}

// iterative::run_lp with the coordinated anchor: iteration t reads buffer t % B, writes
// (t + 1) % B, folds each region's checksum into bank t % B stamped t; an anchor every K.
template <lp::ChecksumKind CK, class Op>
void run_lp(mem::Backend auto& be, const Op& op, const it::LpState& st, std::size_t first) {
  const lp::ChecksumTable table = it::lp_table(op, st);
  const std::size_t nb = op.lp_buffers();
  for (std::size_t t = first; t < op.iterations; ++t) {
    if (t >= 2 && (t - 1) % op.lp_anchor == 0 && t - 1 > be.load(st.durable))
      dist::anchor(be, op, st, t - 1);
    double* out = st.buf[(t + 1) % nb];
    it::RegionFolds<CK> folds(op.regions());
    it::iterate_out_of_place(be, op, t, st.buf[t % nb], out, folds);
    if (commit_delay_us() != 0 && op.comm->rank() + 1 == op.comm->size())
      std::this_thread::sleep_for(std::chrono::microseconds(commit_delay_us()));
    be.parallel_for(0, op.regions(),
                    [&](std::size_t k) { table.commit(be, op.slot(t, k), folds.value(k), t); });
    mem::outer_step_done(be);
  }
  dist::finish(be, op, st);
}

// The resume point buffer j holds on this rank, or -1: d for the durable buffer (j = d % B,
// persisted by the anchor); for another, t + 1 if every region of j matches its slot in bank
// t % B = j - 1 stamped t (the stamp of the bank's first slot names the candidate t).
template <lp::ChecksumKind CK, class Op>
std::int64_t held_point(mem::Backend auto& be, const Op& op, const it::LpState& st, std::size_t j,
                        std::size_t d, lp::RecoveryStats& stats) {
  const std::size_t nb = op.lp_buffers();
  if (j == d % nb) return static_cast<std::int64_t>(d);
  const lp::ChecksumTable table = it::lp_table(op, st);
  const std::size_t bank = (j + nb - 1) % nb;
  const std::uint64_t t = be.load(&table.slot(bank * op.regions())->use);
  if (t % nb != bank || t >= op.iterations) return -1;
  bool all = true;
  for (std::size_t k = 0; k < op.regions(); ++k) {
    ++stats.regions_validated;
    switch (table.check(be, op.slot(t, k), it::region_checksum<CK>(be, op, st.buf[j], k), t)) {
      case lp::SlotCheck::kMatch:
        break;
      case lp::SlotCheck::kMismatch:
        ++stats.regions_inconsistent;
        all = false;
        break;
      case lp::SlotCheck::kUnwritten:
        ++stats.regions_unwritten;
        all = false;
        break;
    }
  }
  return all ? static_cast<std::int64_t>(t + 1) : -1;
}

// Each rank lists the point each of its B buffers holds; one allreduce (MIN over the points and
// their negations) tells, per buffer, whether every rank holds the same point; the latest such
// point is where every rank resumes. Then that point becomes every rank's anchor (persisted,
// barrier, recorded), so `durable` is equal on all ranks and their anchors stay in step.
template <lp::ChecksumKind CK, class Op>
std::size_t recover_lp(mem::Backend auto& be, const Op& op, const it::LpState& st,
                       lp::RecoveryStats& stats) {
  const std::size_t nb = op.lp_buffers();
  const auto d = static_cast<std::size_t>(be.load(st.durable));
  std::vector<std::int64_t> v(2 * nb);
  std::int64_t own = -1;
  for (std::size_t j = 0; j < nb; ++j) {
    v[j] = dist::held_point<CK>(be, op, st, j, d, stats);
    v[nb + j] = -v[j];
    own = std::max(own, v[j]);
  }
  if (control() != Control::kResumeOwn)
    op.comm->allreduce_min(v);  // v[j]: the least point any rank holds in j; -v[nb + j] the most
  std::int64_t g = -1;
  for (std::size_t j = 0; j < nb; ++j) {
    if (control() != Control::kNone)
      g = std::max(g, -v[nb + j]);
    else if (v[j] >= 0 && v[j] == -v[nb + j])
      g = std::max(g, v[j]);
  }
  if (g < 0)
    throw Error(ErrorCode::kPoolCorrupt,
                "lp: the ranks' pools hold no iteration in common (pools of different runs?)");
  const auto resume = static_cast<std::size_t>(g);
  dist::anchor(be, op, st, resume);
  last_agreement() = {static_cast<std::int64_t>(d), own, g};
  // Iterations this rank had begun and now runs again: those it held beyond the agreed point,
  // and the one it was in when it died.
  if (resume < op.iterations) {
    const std::size_t redone = static_cast<std::size_t>(std::max(own, g) - g) + 1;
    stats.regions_recomputed += redone * op.regions();
  }
  return resume;
}

// The row: iterative_rows.hpp's lp (its arrays, mutants and checks), with the coordinated run
// and the agreed recovery.
template <auto ShapeOf>
constexpr auto dist_lp_scheme() {
  constexpr auto local = run::iterative_lp_scheme<ShapeOf>();
  return scheme::Scheme{
      .name = local.name,
      .arrays = local.arrays,
      .run =
          [](mem::Backend auto& be, const auto& c, std::size_t first) {
            lp::with_checksum_kind(lp::checksum_of(c.params), [&](auto kind) {
              dist::run_lp<decltype(kind)::value>(be, c.op, run::iterative_lp_of(c), first);
            });
          },
      .recover = [](mem::Backend auto& be, const auto& c, scheme::RunReport& r) -> std::size_t {
        r.recovery_action = "lp-recovery (agreed across ranks)";
        return lp::with_checksum_kind(lp::checksum_of(c.params), [&](auto kind) {
          return dist::recover_lp<decltype(kind)::value>(be, c.op, run::iterative_lp_of(c),
                                                         r.recovery);
        });
      },
      .mutants = local.mutants,
      .validate = local.validate};
}

}  // namespace pmlab::dist
