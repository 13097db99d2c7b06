// Tiled matrix multiplication (LP paper Fig. 4): base, Lazy Persistency (Fig. 8) and its recovery
// (Fig. 9).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/lp/region.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/matrix.hpp"

namespace pmlab::kernels::tmm {

// C (n x n) += A (n x n) * B (n x n), tiles of bs; C starts at zero.
struct Operands {
  mem::MatrixView<const double> a;
  mem::MatrixView<const double> b;
  mem::MatrixView<double> c;
  std::size_t n = 0;
  std::size_t bs = 1;

  [[nodiscard]] std::size_t tiles() const { return (n + bs - 1) / bs; }
  [[nodiscard]] std::size_t tile_end(std::size_t start) const { return std::min(start + bs, n); }
  // Checksum-table slot of region (kk tile kt, ii tile it): collision-free by construction.
  [[nodiscard]] std::size_t slot(std::size_t kt, std::size_t it) const { return kt * tiles() + it; }
  [[nodiscard]] std::size_t table_slots() const { return tiles() * tiles(); }
  // The rows [ii, ii+bs) of C are contiguous: one range to persist per panel.
  [[nodiscard]] const double* panel(std::size_t it) const { return c.row(it * bs); }
  [[nodiscard]] std::size_t panel_bytes(std::size_t it) const {
    return (tile_end(it * bs) - it * bs) * c.ld() * sizeof(double);
  }
};

// Tile (it, jt) of C at kk tile kt: the i, j, k loops of Fig. 4. Out of line, with everything in
// locals, the loop nest gets the registers to itself: when inlined into parallel_for's lambda the
// k loop spilled loop invariants to the stack and ran 25% more instructions than the raw-pointer
// loop (docs/backend-overhead.md). It does not know the scheme, so base and LP run this one
// function (docs/lp-native-cost.md).
template <mem::Backend B>
[[gnu::noinline]] lp::StoredBlock tile_step(B& be, const Operands& op, std::size_t kt,
                                            std::size_t it, std::size_t jj) {
  const std::size_t n = op.n, bs = op.bs;
  const double* const a = op.a.data();
  const double* const b = op.b.data();
  double* const c = op.c.data();
  const std::size_t lda = op.a.ld(), ldb = op.b.ld(), ldc = op.c.ld();
  const std::size_t kk = kt * bs, ii = it * bs;
  const std::size_t k_end = std::min(kk + bs, n), i_end = std::min(ii + bs, n);
  const std::size_t j_end = std::min(jj + bs, n);
  for (std::size_t i = ii; i < i_end; ++i) {
    std::size_t j = jj;
    // Where nothing observes the access order (a crash trial's native restart), four columns
    // at once: the one-column k loop below waits on each add's latency (a chain of bs dependent
    // adds), four independent sums overlap them. Each sum adds the same products in the same
    // k order, and a[i][k] is loaded (and counted) once per column as below, so every element
    // gets the same bits and the run the same op count (TmmTileStep.* checks both).
    if constexpr (mem::AccessOrderUnobserved<B>) {
      for (; j + 4 <= j_end; j += 4) {
        double* const cij = c + i * ldc + j;
        double s0 = be.load(cij), s1 = be.load(cij + 1), s2 = be.load(cij + 2),
               s3 = be.load(cij + 3);
        for (std::size_t k = kk; k < k_end; ++k) {
          const double* const bkj = b + k * ldb + j;
          s0 += be.load(a + i * lda + k) * be.load(bkj);
          s1 += be.load(a + i * lda + k) * be.load(bkj + 1);
          s2 += be.load(a + i * lda + k) * be.load(bkj + 2);
          s3 += be.load(a + i * lda + k) * be.load(bkj + 3);
        }
        be.store(cij, s0);
        be.store(cij + 1, s1);
        be.store(cij + 2, s2);
        be.store(cij + 3, s3);
      }
    }
    for (; j < j_end; ++j) {
      double sum = be.load(c + i * ldc + j);
      for (std::size_t k = kk; k < k_end; ++k)
        sum += be.load(a + i * lda + k) * be.load(b + k * ldb + j);
      be.store(c + i * ldc + j, sum);
    }
  }
  return lp::StoredBlock{c + ii * ldc + jj, i_end - ii, j_end - jj, ldc};
}

// One (kk, ii) step: the jj loop of Fig. 4 for panel ii at kk. Each finished jj tile of C goes
// to `on_stored` (the protocol of lp::kIgnoreStored): LP folds it into its checksum there,
// reading it back from L1 in wide vectors. Folding each value as it was stored instead cost 2
// instructions per C element per kk step, 2.3 % of the loop's (docs/lp-native-cost.md).
template <mem::Backend B, class OnStored>
void panel_step(B& be, const Operands& op, std::size_t kt, std::size_t it, OnStored&& on_stored) {
  for (std::size_t jj = 0; jj < op.n; jj += op.bs) on_stored(tile_step(be, op, kt, it, jj));
}

// Folds panel it's current C values into a checksum, in the same order panel_step stores them.
template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] lp::ChecksumValue panel_checksum(B& be, const Operands& op, std::size_t it) {
  lp::Accumulator<K> acc;
  const std::size_t ii = it * op.bs, i_end = op.tile_end(ii);
  for (std::size_t jj = 0; jj < op.n; jj += op.bs) {
    const std::size_t j_end = op.tile_end(jj);
    for (std::size_t i = ii; i < i_end; ++i)
      for (std::size_t j = jj; j < j_end; ++j) acc.add(be.load(op.c.at(i, j)));
  }
  return acc.value();
}

// Base tmm from kk tile `first_kt` on: no persistency at all.
template <mem::Backend B>
void run_base(B& be, const Operands& op, std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles();
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    be.parallel_for(0, nt, [&](std::size_t it) { panel_step(be, op, kt, it, lp::kIgnoreStored); });
    mem::outer_step_done(be);
  }
}

// LP tmm (Fig. 8): region = one ii iteration; its checksum goes to slot (kk, ii) with plain stores.
template <lp::ChecksumKind K, mem::Backend B>
void run_lp(B& be, const Operands& op, const lp::ChecksumTable& table, std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles();
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    be.parallel_for(0, nt, [&](std::size_t it) {
      lp::Region<K, B> region(be, table, op.slot(kt, it),
                              {static_cast<std::uint32_t>(kt), static_cast<std::uint32_t>(it)});
      panel_step(be, op, kt, it, lp::fold_stored_into(region));
      region.commit();
    });
    mem::outer_step_done(be);
  }
}

// Zeroes panel it (C's initial value) through the backend.
template <mem::Backend B>
void zero_panel(B& be, const Operands& op, std::size_t it) {
  const std::size_t ii = it * op.bs, i_end = op.tile_end(ii);
  for (std::size_t i = ii; i < i_end; ++i)
    for (std::size_t j = 0; j < op.n; ++j) be.store(op.c.at(i, j), 0.0);
}

// Repair(ii, kk) of Fig. 9 with the paper's optimization: recompute panel it only from the last
// kk tile before `target_kt` whose checksum still matches the panel (or from zero if none does),
// up to and including target_kt. The result and its checksum are persisted eagerly, so a crash
// during recovery leaves a state that recovery handles again.
template <lp::ChecksumKind K, mem::Backend B>
void repair_panel(B& be, const Operands& op, const lp::ChecksumTable& table, std::size_t it,
                  std::size_t target_kt, lp::ChecksumValue current, lp::RecoveryStats& stats) {
  std::size_t from_kt = 0;  // first kk tile to recompute
  bool matched = false;
  for (std::size_t kt = target_kt; kt-- > 0;) {
    auto verdict = table.check(be, op.slot(kt, it), current);
    if (verdict == lp::SlotCheck::kUnwritten) continue;
    ++stats.regions_validated;
    if (verdict == lp::SlotCheck::kMatch) {
      from_kt = kt + 1;
      matched = true;
      break;
    }
    ++stats.regions_inconsistent;
  }
  if (!matched) zero_panel(be, op, it);
  lp::ChecksumValue last{};
  for (std::size_t kt = from_kt; kt <= target_kt; ++kt) {
    lp::Accumulator<K> acc;
    panel_step(be, op, kt, it, lp::fold_stored_into(acc));
    last = acc.value();
    ++stats.regions_recomputed;
  }
  // R3: the panel already held its state after target_kt; only its checksum was lost.
  if (last == current) ++stats.regions_unnecessary;
  be.persist(op.panel(it), op.panel_bytes(it));
  table.commit_durable(be, op.slot(target_kt, it), last);
}

// Recovery of Fig. 9: find the latest kk tile with any matching region, repair every other
// panel up to it, and return the kk tile where normal LP execution resumes.
template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] std::size_t recover_lp(B& be, const Operands& op, const lp::ChecksumTable& table,
                                     lp::RecoveryStats& stats) {
  const std::size_t nt = op.tiles();
  // C does not change while slots are compared, so each panel's checksum is computed once.
  std::vector<lp::ChecksumValue> current(nt);
  be.parallel_for(0, nt, [&](std::size_t it) { current[it] = panel_checksum<K>(be, op, it); });
  for (std::size_t kt = nt; kt-- > 0;) {
    std::vector<lp::SlotCheck> verdicts(nt);
    bool any_match = false;
    for (std::size_t it = 0; it < nt; ++it) {
      verdicts[it] = table.check(be, op.slot(kt, it), current[it]);
      if (verdicts[it] == lp::SlotCheck::kUnwritten) {
        ++stats.regions_unwritten;
        continue;
      }
      ++stats.regions_validated;
      if (verdicts[it] == lp::SlotCheck::kMatch)
        any_match = true;
      else
        ++stats.regions_inconsistent;
    }
    if (!any_match) continue;
    // Panels are independent given A and B, so they are repaired in parallel.
    std::vector<lp::RecoveryStats> per_panel(nt);
    be.parallel_for(0, nt, [&](std::size_t it) {
      if (verdicts[it] != lp::SlotCheck::kMatch)
        repair_panel<K>(be, op, table, it, kt, current[it], per_panel[it]);
    });
    for (const auto& s : per_panel) stats += s;
    return kt + 1;
  }
  // No region of any kk matched: C is rebuilt from its initial value.
  be.parallel_for(0, nt, [&](std::size_t it) {
    zero_panel(be, op, it);
    be.persist(op.panel(it), op.panel_bytes(it));
  });
  return 0;
}

}  // namespace pmlab::kernels::tmm
