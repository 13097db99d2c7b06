// WAL and Hybrid Recompute building blocks shared by tiled Cholesky and LU (one op on one tile
// per region, the granularity of their EagerRecompute).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/tiled_recovery.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/matrix.hpp"
#include "pmlab/scheme/band_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"

namespace pmlab::kernels::tiled {

// F is a tiled factorization as in tiled_recovery.hpp (tiles(), group(m), apply,
// for_each_element, restore_input, persist_tile) whose work() is its in-place working matrix.

[[nodiscard]] inline std::size_t unit_of(const Tiling& tl, Tile t) {
  return t.i * tl.tiles() + t.j;
}

// ---------------------------------------------------------------------------------------------
// WAL. Unit = tile (T² units, progress = ops applied to the tile). The log of tile (i, j) is
// its rows x cols packed at begin(i)·n + len(i)·begin(j): the tiles of a tile row tile that
// row's band of an n x n array, so the log area is exactly n² doubles and no two tiles share it.

[[nodiscard]] inline scheme::LogBlock<double> wal_tile_block(const Tiling& tl,
                                                             const mem::MatrixView<double>& work,
                                                             double* log, Tile t) {
  const std::size_t i0 = tl.begin(t.i), j0 = tl.begin(t.j), rows = tl.len(t.i);
  return {work.at(i0, j0), rows, tl.len(t.j), work.ld(), log + i0 * tl.n + rows * j0};
}

// Op q on tile t as one transaction: log the tile and its progress, apply, progress = q + 1,
// commit. Skipped if the tile's progress shows it committed before a crash.
template <mem::Backend B, class F>
void wal_op(B& be, const F& f, const scheme::WalUnits& wal, Tile t, std::size_t q) {
  const std::size_t u = unit_of(f.tiling, t);
  if (wal.progress_of(be, u) > q) return;
  const mem::RegionId id{static_cast<std::uint32_t>(q), static_cast<std::uint32_t>(u)};
  be.region_begin(id);
  wal.transact(
      be, u, q + 1, [&] { f.apply(be, t, q, lp::kIgnoreStored); },
      wal_tile_block(f.tiling, f.work(), wal.log, t));
  be.region_end(id);
}

// Rolls back every open transaction (each tile's log names only that tile, so they are
// independent), then returns the first step some tile still needs: tile t of group m needs op
// progress(t) while progress(t) <= m. Steps are barriers, so every tile is then at
// min(K, m + 1) or at K + 1, and the run (wal_op skipping committed ops) resumes at step K.
template <mem::Backend B, class F>
[[nodiscard]] std::size_t roll_back_wal(B& be, const F& f, const scheme::WalUnits& wal,
                                        lp::RecoveryStats& stats) {
  const std::size_t nt = f.tiles();
  std::vector<Tile> all;
  std::vector<std::size_t> group_of;
  for (std::size_t m = 0; m < nt; ++m)
    for (const Tile& t : f.group(m)) {
      all.push_back(t);
      group_of.push_back(m);
    }
  std::vector<std::size_t> needs(all.size(), nt);
  std::vector<lp::RecoveryStats> per(all.size());
  be.parallel_for(0, all.size(), [&](std::size_t x) {
    const std::size_t u = unit_of(f.tiling, all[x]);
    ++per[x].regions_validated;
    if (wal.roll_back(be, u, wal_tile_block(f.tiling, f.work(), wal.log, all[x])))
      ++per[x].regions_inconsistent;
    const auto v = static_cast<std::size_t>(wal.progress_of(be, u));
    if (v <= group_of[x]) needs[x] = v;
  });
  for (const auto& s : per) stats += s;
  return all.empty() ? 0 : *std::min_element(needs.begin(), needs.end());
}

// ---------------------------------------------------------------------------------------------
// Hybrid Recompute: EagerRecompute (ep_op, one IndexRecord per tile) plus a BandCopier whose
// bands are tile rows, saved after every step but the last. The copy taken after step d - 1
// holds tile (i, j) of group m at version min(d, m + 1).

struct HrState {
  scheme::IndexRecordTable<1> records;  // `ep_index`, one per tile (i·T + j)
  scheme::BandCopier copier;            // `hr_copy`, `hr_parts`
};

// EpTracker's bookkeeping, except for a tile whose record is in flight (its op torn): instead
// of the input (version 0) it restarts from the newest copy of it, which is restored, persisted
// and recorded before the tile's version is reported. Any version is a valid restart point:
// the skeleton resumes at the newest version of any tile and brings every other tile forward
// in dependency order, so the newest copy is used even if it is ahead of the torn op (possible
// after an earlier recovery restarted from an older copy).
template <class F>
struct HrTracker {
  const F& f;
  const HrState& hr;

  template <mem::Backend B>
  TileVersion find(B& be, Tile t, std::size_t group, lp::RecoveryStats& s) const {
    const auto rec = hr.records[unit_of(f.tiling, t)];
    const std::uint64_t w = rec.get(be, 0);
    ++s.regions_validated;
    if ((w & 1u) == 0) return {static_cast<std::size_t>(w >> 1), false};
    ++s.regions_inconsistent;
    std::size_t version = 0;
    const double* copy = nullptr;  // none usable: the input, version 0
    const auto held = hr.copier.held(be, t.i);
    for (std::size_t c = 0; c < 2; ++c) {
      if (held[c] == 0) continue;
      const std::size_t v = std::min<std::size_t>(held[c], group + 1);
      if (v > version) {
        version = v;
        copy = hr.copier.slot_data(c);
      }
    }
    if (copy == nullptr) {
      f.restore_input(be, t);
    } else {
      const auto work = f.work();
      const std::size_t ld = work.ld();
      f.for_each_element(t, [&](std::size_t i, std::size_t j) {
        be.store(work.at(i, j), be.load(copy + i * ld + j));
      });
    }
    f.persist_tile(be, t);
    rec.set(be, 0, ep_word(version, false));
    return {version, false};
  }
  template <mem::Backend B>
  void repair(B& be, Tile t, TileVersion from, std::size_t target, lp::RecoveryStats& s) const {
    EpTracker<F>{f, hr.records}.repair(be, t, from, target, s);
  }
};

template <mem::Backend B, class F>
[[nodiscard]] std::size_t recover_hr_tiles(B& be, const F& f, const HrState& hr,
                                           lp::RecoveryStats& stats) {
  return recover_tiles(be, f, HrTracker<F>{f, hr}, stats);
}

}  // namespace pmlab::kernels::tiled
