// tmm under the eager rivals of LP: EagerRecompute (thesis Fig. 3.1-3.4), Hybrid Recompute
// (§3.2.1), undo-logging transactions (Fig. 2.6) and checkpointing, each with its recovery.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/tmm.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/eager_region.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/lines.hpp"
#include "pmlab/scheme/partial_copy.hpp"
#include "pmlab/scheme/undo_log.hpp"

namespace pmlab::kernels::tmm {

// ---------------------------------------------------------------------------------------------
// Shared pieces. All schemes keep per-panel (per ii tile) state: the ii loop is parallel, so a
// single lastPersistedII as in the thesis' serial pseudo-code would be written by every thread.
// Panels are independent given A and B, so a panel's state alone says what it needs.

// Rows [r0, r1) x columns [c0, c1) of C updated by kk tile kt: the i, j, k loops of panel_step,
// so every C element sees exactly the same sequence of additions (bit-exact recomputation).
template <mem::Backend B>
void update_rect(B& be, const Operands& op, std::size_t kt, std::size_t r0, std::size_t r1,
                 std::size_t c0, std::size_t c1) {
  const std::size_t kk = kt * op.bs, k_end = op.tile_end(kk), ldb = op.b.ld();
  // Row/column pointers held in locals: inlined into the larger eager loops, the indexed form
  // ran out of registers and spilled the B pointer inside the k loop (2x slower, measured).
  for (std::size_t i = r0; i < r1; ++i) {
    const double* a_row = op.a.row(i);
    double* c_row = op.c.row(i);
    for (std::size_t j = c0; j < c1; ++j) {
      double sum = be.load(c_row + j);
      const double* b_kj = op.b.at(kk, j);
      for (std::size_t k = kk; k < k_end; ++k, b_kj += ldb)
        sum += be.load(a_row + k) * be.load(b_kj);
      be.store(c_row + j, sum);
    }
  }
}

// Calls fn(r0, r1, c0, c1) for the rectangles covering row-major elements [e0, e1) of C.
template <class Fn>
void for_each_rect(std::size_t n, std::size_t e0, std::size_t e1, Fn&& fn) {
  if (e0 >= e1) return;
  if (std::size_t c = e0 % n; c != 0) {
    const std::size_t c_end = std::min(n, c + (e1 - e0));
    fn(e0 / n, e0 / n + 1, c, c_end);
    e0 += c_end - c;
  }
  if (const std::size_t rows = (e1 - e0) / n; rows > 0) {
    fn(e0 / n, e0 / n + rows, std::size_t{0}, n);
    e0 += rows * n;
  }
  if (e0 < e1) fn(e0 / n, e0 / n + 1, std::size_t{0}, e1 - e0);
}

// Rebuilds C elements [e0, e1) (row-major, C dense) to their value after `target` kk tiles:
// from the latest hybrid copy when there is one, else from zero (Fig. 3.3/3.4 step 2), then
// recomputes the missing tiles (step 3). Not persisted. Returns the kk tiles recomputed.
template <mem::Backend B>
std::uint64_t rebuild_range(B& be, const Operands& op, const scheme::PartialCopier* copier,
                            std::size_t e0, std::size_t e1, std::size_t target) {
  std::uint64_t steps = 0;
  auto recompute = [&](std::size_t lo, std::size_t hi, std::uint64_t from) {
    for (std::size_t kt = from; kt < target; ++kt)
      for_each_rect(op.n, lo, hi,
                    [&](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
                      update_rect(be, op, kt, r0, r1, c0, c1);
                    });
    steps = std::max<std::uint64_t>(steps, target - from);
  };
  if (copier != nullptr) {
    copier->restore(be, e0, e1, target, recompute);
  } else {
    for (std::size_t e = e0; e < e1; ++e) be.store(op.c.data() + e, 0.0);
    recompute(e0, e1, 0);
  }
  return steps;
}

// Flushes the lines of C tile (it, jt); no fence.
template <mem::Backend B>
void flush_tile(B& be, const Operands& op, std::size_t it, std::size_t jt) {
  const std::size_t ii = it * op.bs, jj = jt * op.bs;
  scheme::flush_block(be, static_cast<const double*>(op.c.at(ii, jj)), op.tile_end(ii) - ii,
                      op.tile_end(jj) - jj, op.c.ld());
}

inline std::size_t min_of(const std::vector<std::uint64_t>& v) {
  return v.empty() ? 0 : static_cast<std::size_t>(*std::min_element(v.begin(), v.end()));
}

// Runs fn(it, stats) for every panel in parallel and sums the per-panel stats.
template <mem::Backend B, class Fn>
void for_each_panel(B& be, std::size_t nt, lp::RecoveryStats& stats, Fn&& fn) {
  std::vector<lp::RecoveryStats> per(nt);
  be.parallel_for(0, nt, [&](std::size_t it) { fn(it, per[it]); });
  for (const auto& s : per) stats += s;
}

// ---------------------------------------------------------------------------------------------
// EagerRecompute and Hybrid Recompute. One IndexRecord<2> per panel ("ep_index"); the hybrid
// schemes add a PartialCopier over C that saves 1/X of C after every kk iteration.

struct EagerState {
  scheme::IndexRecordTable<2> records;            // one per panel
  const scheme::PartialCopier* copier = nullptr;  // Hybrid Recompute only
};

// ii granularity (Fig. 3.1). Field 0 of a panel's record is its progress word: 2kt+1 while kk
// tile kt is being applied (the panel may be dirty), 2kt+2 once it is durable. The thesis
// needs the log/flag transaction (lines 24-37) to reset lastPersistedII when kk advances; a
// per-panel word that names its kk needs no reset, so the kk advance costs nothing here. The
// "started" mark replaces the thesis' "next ii after lastPersistedII" rule, which only holds
// for one thread walking ii in order.
[[nodiscard]] constexpr std::uint64_t ep_started(std::size_t kt) {
  return 2 * kt + 1;
}
[[nodiscard]] constexpr std::uint64_t ep_done(std::size_t kt) {
  return 2 * kt + 2;
}

template <mem::Backend B>
void run_ep_ii(B& be, const Operands& op, const EagerState& st, std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles();
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    be.parallel_for(0, nt, [&](std::size_t it) {
      const auto rec = st.records[it];
      if (rec.get(be, 0) >= ep_done(kt)) return;  // finished before a crash
      scheme::eager_region(  // Fig. 3.1: lines 13-18 persist the panel, 19-22 the index
          be, std::nullopt, rec, {.in_flight = ep_started(kt), .done = ep_done(kt)},
          [&] { panel_step(be, op, kt, it, lp::kIgnoreStored); },
          [&] { be.persist(op.panel(it), op.panel_bytes(it)); });
    });
    if (st.copier != nullptr) st.copier->save(be, kt, kt + 1);
    mem::outer_step_done(be);
  }
}

// Fig. 3.4 per panel: a panel caught mid-tile is rebuilt to its state before that tile (zero or
// hybrid copy, recompute, persist) and its word rewound; the rest is already durable. Returns
// the first kk tile some panel still needs; run_ep_ii skips the panels that are ahead.
template <mem::Backend B>
[[nodiscard]] std::size_t recover_ep_ii(B& be, const Operands& op, const EagerState& st,
                                        lp::RecoveryStats& stats) {
  const std::size_t nt = op.tiles();
  std::vector<std::uint64_t> done(nt);
  for_each_panel(be, nt, stats, [&](std::size_t it, lp::RecoveryStats& s) {
    const auto rec = st.records[it];
    std::uint64_t w = rec.get(be, 0);
    ++s.regions_validated;
    if (w % 2 == 1) {
      const std::size_t kt = (w - 1) / 2;
      const std::size_t ii = it * op.bs, i_end = op.tile_end(ii);
      ++s.regions_inconsistent;
      s.regions_recomputed += rebuild_range(be, op, st.copier, ii * op.n, i_end * op.n, kt);
      be.persist(op.panel(it), op.panel_bytes(it));
      w = 2 * kt;  // = ep_done(kt - 1), or 0 for kt = 0
      rec.set(be, 0, w);
    }
    done[it] = w / 2;
  });
  return min_of(done);
}

// jj granularity (Fig. 3.2). A panel's record is {kk_done, jj_done}: kk tiles fully applied,
// and jj tiles of the next kk tile already durable. jj_done is bumped with one atomic store
// per tile (lines 12-19); the panel's kk advance {kk+1, 0} is the log/flag transaction
// (lines 21-34). The thesis' global kk transaction (lines 36-53) is unnecessary with
// per-panel records.
template <mem::Backend B>
void run_ep_jj(B& be, const Operands& op, const EagerState& st, std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles();
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    be.parallel_for(0, nt, [&](std::size_t it) {
      const auto rec = st.records[it];
      const auto [kd, jd] = rec.values(be);
      if (kd > kt) return;  // finished before a crash
      const std::size_t ii = it * op.bs, i_end = op.tile_end(ii);
      for (std::size_t jt = jd; jt < nt; ++jt) {
        update_rect(be, op, kt, ii, i_end, jt * op.bs, op.tile_end(jt * op.bs));
        flush_tile(be, op, it, jt);
        be.fence();
        rec.set(be, 1, jt + 1);
      }
      rec.update(be, {kt + 1, 0});
    });
    if (st.copier != nullptr) st.copier->save(be, kt, kt + 1);
    mem::outer_step_done(be);
  }
}

// Fig. 3.3 per panel: roll back an interrupted kk advance, then rebuild the one tile that may
// be dirty (tile jj_done of kk tile kk_done) to its state before that kk tile, and persist it.
template <mem::Backend B>
[[nodiscard]] std::size_t recover_ep_jj(B& be, const Operands& op, const EagerState& st,
                                        lp::RecoveryStats& stats) {
  const std::size_t nt = op.tiles();
  std::vector<std::uint64_t> done(nt);
  for_each_panel(be, nt, stats, [&](std::size_t it, lp::RecoveryStats& s) {
    const auto rec = st.records[it];
    if (rec.recover(be)) ++s.regions_inconsistent;
    const auto [kd, jd] = rec.values(be);
    ++s.regions_validated;
    if (kd < nt && jd < nt) {  // kd == nt: the panel is complete, nothing can be dirty
      const std::size_t ii = it * op.bs, i_end = op.tile_end(ii);
      const std::size_t jj = jd * op.bs, j_end = op.tile_end(jj);
      std::uint64_t steps = 0;
      for (std::size_t i = ii; i < i_end; ++i)
        steps =
            std::max(steps, rebuild_range(be, op, st.copier, i * op.n + jj, i * op.n + j_end, kd));
      s.regions_recomputed += steps;
      flush_tile(be, op, it, jd);
      be.fence();
    }
    done[it] = kd;
  });
  return min_of(done);
}

// ---------------------------------------------------------------------------------------------
// Write-ahead (undo) logging, Fig. 2.6. Each panel has an undo slot (flag line), an index line
// {kk_done, jj_done} logged in the same transaction as the data, and a log area: the whole
// panel (ii granularity, as cLog in Fig. 2.6) or one tile (jj granularity).

struct alignas(64) WalIndex {
  std::uint64_t value[2];  // {kk_done, jj_done}, one array so the log block may span both
  std::uint64_t log[2];
  std::uint64_t reserved[4];
};
inline constexpr std::size_t kWalKk = 0, kWalJj = 1;
static_assert(sizeof(WalIndex) == 64);

struct WalState {
  scheme::UndoHeader* headers = nullptr;  // one per panel
  WalIndex* index = nullptr;              // one per panel
  // The log area, ii: the whole panel it at row ii (n*n elements); jj: one b*b tile per panel.
  // Block format: a copy of the elements; entry format: one {offset, old value} record each.
  double* log = nullptr;
  scheme::LogEntry* entries = nullptr;
};

[[nodiscard]] inline scheme::LogBlock<std::uint64_t> wal_index_block(const WalState& st,
                                                                     std::size_t it) {
  return {st.index[it].value, 1, 2, 2, st.index[it].log};
}
// A rows x cols block of C at `data` whose log starts `log_at` elements into the log area.
template <scheme::LogFormat F>
[[nodiscard]] auto wal_block(const Operands& op, const WalState& st, double* data, std::size_t rows,
                             std::size_t cols, std::size_t log_at) {
  if constexpr (scheme::entry_format(F))
    return scheme::EntryLogBlock<double>{
        data, rows, cols, op.c.ld(), st.entries + log_at, F == scheme::LogFormat::kEntrySynced};
  else
    return scheme::LogBlock<double>{data, rows, cols, op.c.ld(), st.log + log_at};
}
template <scheme::LogFormat F>
[[nodiscard]] auto wal_panel_block(const Operands& op, const WalState& st, std::size_t it) {
  const std::size_t ii = it * op.bs;
  return wal_block<F>(op, st, op.c.row(ii), op.tile_end(ii) - ii, op.n, ii * op.n);
}
template <scheme::LogFormat F>
[[nodiscard]] auto wal_tile_block(const Operands& op, const WalState& st, std::size_t it,
                                  std::size_t jt) {
  const std::size_t ii = it * op.bs, jj = jt * op.bs, b = std::min(op.bs, op.n);
  return wal_block<F>(op, st, op.c.at(ii, jj), op.tile_end(ii) - ii, op.tile_end(jj) - jj,
                      it * b * b);
}

// Transaction = one ii iteration: log the panel and the index, update, commit.
template <scheme::LogFormat F, mem::Backend B>
void run_wal_ii(B& be, const Operands& op, const WalState& st, std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles();
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    be.parallel_for(0, nt, [&](std::size_t it) {
      if (be.load(&st.index[it].value[kWalKk]) > kt) return;
      const scheme::UndoLog tx(&st.headers[it]);
      const auto data = wal_panel_block<F>(op, st, it);
      const auto idx = wal_index_block(st, it);
      tx.begin(be, data, idx);
      panel_step(be, op, kt, it, lp::kIgnoreStored);
      be.store(&st.index[it].value[kWalKk], std::uint64_t{kt + 1});
      tx.commit(be, data, idx);
    });
    mem::outer_step_done(be);
  }
}

// Transaction = one jj iteration: log the tile and the index, update, commit. The last tile's
// transaction also advances the panel's kk (Fig. 2.6's index transaction folded in).
template <scheme::LogFormat F, mem::Backend B>
void run_wal_jj(B& be, const Operands& op, const WalState& st, std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles();
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    be.parallel_for(0, nt, [&](std::size_t it) {
      WalIndex* x = &st.index[it];
      if (be.load(&x->value[kWalKk]) > kt) return;
      const scheme::UndoLog tx(&st.headers[it]);
      const auto idx = wal_index_block(st, it);
      const std::size_t ii = it * op.bs, i_end = op.tile_end(ii);
      for (std::size_t jt = be.load(&x->value[kWalJj]); jt < nt; ++jt) {
        const auto data = wal_tile_block<F>(op, st, it, jt);
        tx.begin(be, data, idx);
        update_rect(be, op, kt, ii, i_end, jt * op.bs, op.tile_end(jt * op.bs));
        if (jt + 1 == nt) {
          be.store(&x->value[kWalKk], std::uint64_t{kt + 1});
          be.store(&x->value[kWalJj], std::uint64_t{0});
        } else {
          be.store(&x->value[kWalJj], std::uint64_t{jt + 1});
        }
        tx.commit(be, data, idx);
      }
    });
    mem::outer_step_done(be);
  }
}

// Rolls back every interrupted transaction; C and the indices are then consistent per panel.
// Returns the first kk tile some panel still needs; the run functions skip panels ahead of it.
template <scheme::LogFormat F, mem::Backend B>
[[nodiscard]] std::size_t recover_wal(B& be, const Operands& op, const WalState& st,
                                      bool jj_granularity, lp::RecoveryStats& stats) {
  const std::size_t nt = op.tiles();
  std::vector<std::uint64_t> done(nt);
  for_each_panel(be, nt, stats, [&](std::size_t it, lp::RecoveryStats& s) {
    const scheme::UndoLog tx(&st.headers[it]);
    const auto idx = wal_index_block(st, it);
    ++s.regions_validated;
    bool rolled_back = false;
    if (jj_granularity) {
      // The tile in flight is the one the logged (pre-transaction) jj_done names; the log is
      // durable whenever the flag is set.
      const std::size_t jt =
          tx.in_tx(be) ? static_cast<std::size_t>(be.load(&st.index[it].log[kWalJj])) : 0;
      rolled_back = tx.recover(be, wal_tile_block<F>(op, st, it, std::min(jt, nt - 1)), idx);
    } else {
      rolled_back = tx.recover(be, wal_panel_block<F>(op, st, it), idx);
    }
    if (rolled_back) ++s.regions_inconsistent;
    done[it] = be.load(&st.index[it].value[kWalKk]);
  });
  return min_of(done);
}

// ---------------------------------------------------------------------------------------------
// Checkpointing (thesis §2.3.7, tmm+CP): after every kk iteration a, b and c are copied to a
// checkpoint area with SIMD non-temporal stores. Two areas alternate, so a crash during a copy
// leaves the previous checkpoint intact; a header word published after the copy names it.

struct alignas(64) CpHeader {
  std::uint64_t done;  // kk tiles the newest complete checkpoint holds (0: none)
  std::uint64_t reserved[7];
};

struct CpState {
  double* area = nullptr;  // 2 slots x {a, b, c}, each rows*ld doubles
  CpHeader* header = nullptr;
};

[[nodiscard]] inline std::size_t cp_matrix_elems(const Operands& op) {
  return op.c.rows() * op.c.ld();
}

template <mem::Backend B>
void run_cp(B& be, const Operands& op, const CpState& st, std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles(), m = cp_matrix_elems(op);
  for (std::size_t kt = first_kt; kt < nt; ++kt) {
    be.parallel_for(0, nt, [&](std::size_t it) { panel_step(be, op, kt, it, lp::kIgnoreStored); });
    double* slot = st.area + ((kt + 1) % 2) * 3 * m;
    if (mem::mutated(be, mem::Mutation::kCommitEarly)) {  // negative control: publish first
      be.store(&st.header->done, std::uint64_t{kt + 1});
      be.persist(&st.header->done, sizeof(std::uint64_t));
    }
    scheme::copy_durable_parallel(
        be, {{slot, op.a.data(), m}, {slot + m, op.b.data(), m}, {slot + 2 * m, op.c.data(), m}});
    // Seed 002 §3's DRAM cache (--dram-cache on): C's DRAM-resident lines go to NVM at the
    // persistence point, the paper's Fig. 7 cost (the checkpoint itself copies the live C).
    mem::dram_cache_flush(be, op.c.data(), m * sizeof(double));
    be.store(&st.header->done, std::uint64_t{kt + 1});
    be.persist(&st.header->done, sizeof(std::uint64_t));
    mem::outer_step_done(be);
  }
}

// Restores c from the newest checkpoint (a and b are never written, so their copies already
// equal them) and resumes after it. Idempotent: the checkpoint is only read.
template <mem::Backend B>
[[nodiscard]] std::size_t recover_cp(B& be, const Operands& op, const CpState& st,
                                     lp::RecoveryStats& stats) {
  const std::size_t m = cp_matrix_elems(op);
  const std::uint64_t d = be.load(&st.header->done);
  ++stats.regions_validated;
  if (d == 0) {
    for (std::size_t e = 0; e < m; ++e) be.store(op.c.data() + e, 0.0);
    be.persist(op.c.data(), m * sizeof(double));
  } else {
    scheme::copy_durable_parallel(be, {{op.c.data(), st.area + (d % 2) * 3 * m + 2 * m, m}});
  }
  return static_cast<std::size_t>(d);
}

}  // namespace pmlab::kernels::tmm
