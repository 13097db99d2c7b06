// Versioned-tile recovery (LP and EagerRecompute) shared by tiled LU and Cholesky.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/lp/region.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/eager_region.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/lines.hpp"

namespace pmlab::kernels::tiled {

// Base of a tiled factorization's Operands: makes this namespace one that argument-dependent
// lookup searches, so the schemes of tiled_factorization.hpp serve every such kernel.
struct Factorization {};

// A tile by (block row, block column).
struct Tile {
  std::size_t i = 0, j = 0;
  friend bool operator==(const Tile&, const Tile&) = default;
};

// Square tiling of an n x n matrix into bs x bs tiles; edge tiles are short (any n, bs >= 1).
struct Tiling {
  std::size_t n = 0, bs = 1;
  [[nodiscard]] std::size_t tiles() const { return (n + bs - 1) / bs; }
  [[nodiscard]] std::size_t begin(std::size_t t) const { return t * bs; }
  [[nodiscard]] std::size_t len(std::size_t t) const { return std::min(bs, n - t * bs); }
};

// The per-tile operations of an in-place tiled factorization's recovery, written once for every
// such kernel. `Self` (the kernel's Operands, deriving from this) provides `a` (the read-only
// input), `work()` (the matrix factored in place), `tiling` and `row_cols(t, r)`: how many
// columns of tile t's row r belong to the tile (Cholesky's diagonal tiles are lower triangles).
template <class Self>
struct InPlaceTiles : Factorization {
  // Calls fn(i, j) for every element of tile t, row by row.
  template <class Fn>
  void for_each_element(Tile t, Fn&& fn) const {
    const auto& s = self();
    const std::size_t i0 = s.tiling.begin(t.i), j0 = s.tiling.begin(t.j);
    for (std::size_t r = 0; r < s.tiling.len(t.i); ++r)
      for (std::size_t c = 0; c < s.row_cols(t, r); ++c) fn(i0 + r, j0 + c);
  }
  // The tile's checksum as stored by LP, in element order.
  template <lp::ChecksumKind K, mem::Backend B>
  [[nodiscard]] lp::ChecksumValue checksum(B& be, Tile t) const {
    lp::Accumulator<K> acc;
    const auto w = self().work();
    for_each_element(t, [&](std::size_t i, std::size_t j) { acc.add(be.load(w.at(i, j))); });
    return acc.value();
  }
  // Whether the tile still holds the input, bit for bit (no op has touched it yet).
  template <mem::Backend B>
  [[nodiscard]] bool equals_input(B& be, Tile t) const {
    const auto w = self().work();
    const auto& a = self().a;
    bool same = true;
    for_each_element(t, [&](std::size_t i, std::size_t j) {
      same = same && std::bit_cast<std::uint64_t>(be.load(w.at(i, j))) ==
                         std::bit_cast<std::uint64_t>(be.load(a.at(i, j)));
    });
    return same;
  }
  // Puts the input back into the tile (recovery restarts its ops from the first).
  template <mem::Backend B>
  void restore_input(B& be, Tile t) const {
    const auto w = self().work();
    const auto& a = self().a;
    for_each_element(
        t, [&](std::size_t i, std::size_t j) { be.store(w.at(i, j), be.load(a.at(i, j))); });
  }
  // Flushes the tile's lines and fences.
  template <mem::Backend B>
  void persist_tile(B& be, Tile t) const {
    const auto& s = self();
    const auto w = s.work();
    scheme::flush_block(be, w.at(s.tiling.begin(t.i), s.tiling.begin(t.j)), s.tiling.len(t.i),
                        s.tiling.len(t.j), w.ld());
    be.fence();
  }

 private:
  [[nodiscard]] const Self& self() const { return static_cast<const Self&>(*this); }
};

// x -> (a, b) with a >= b >= 0 and x = a(a+1)/2 + b: enumerates a lower triangle row by row.
[[nodiscard]] inline std::pair<std::size_t, std::size_t> tri_unrank(std::size_t x) {
  auto a = static_cast<std::size_t>((std::sqrt(8.0 * static_cast<double>(x) + 1.0) - 1.0) / 2.0);
  while (a * (a + 1) / 2 > x) --a;
  while ((a + 1) * (a + 2) / 2 <= x) ++a;
  return {a, x - a * (a + 1) / 2};
}

// Runs one op as an LP region: its stores are folded into a thread-private checksum, which is
// committed to `slot` with plain stores (no flush, no fence).
template <lp::ChecksumKind K, mem::Backend B, class Op>
void lp_region(B& be, const lp::ChecksumTable& table, std::size_t slot, std::size_t step,
               std::size_t tile_id, Op&& op) {
  lp::Region<K, B> region(be, table, slot,
                          {static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(tile_id)});
  op(lp::fold_stored_into(region));
  region.commit();
}

// A tile's state as recovery finds it: ops 0..version-1 applied, or lost (matches no state:
// restore from the input).
struct TileVersion {
  std::size_t version = 0;
  bool lost = false;
};

// Recovery skeleton for a tiled factorization F in which every tile (i, j) undergoes ops 0..m,
// m being its group: ops q < m are trailing updates at step q, op m factors the tile at step m.
// The state of a tile after op q is a deterministic function of the (read-only) input.
//  1. Tracker::find names each tile's version (LP: from checksums, EP: from index records);
//  2. execution resumes at step K = max version (no tile is ahead of K: none is rolled back);
//  3. every tile of group m is brought to target min(K, m + 1) by Tracker::repair, groups in
//     ascending order and the diagonal tile first: op q of a tile only reads tiles of groups
//     <= q, which are final by then.
// Repairs are durable before their bookkeeping is, so a crash during recovery leaves a state
// that the next recovery handles the same way.
//
// F provides: tiles(); group(m) -> std::vector<Tile> (diagonal first); checksum<K>(be, t);
// equals_input(be, t); restore_input(be, t); apply(be, t, q, on_stored); persist_tile(be, t).
template <mem::Backend B, class F, class Tracker>
[[nodiscard]] std::size_t recover_tiles(B& be, const F& f, const Tracker& tracker,
                                        lp::RecoveryStats& stats) {
  const std::size_t nt = f.tiles();
  std::vector<Tile> all;
  std::vector<std::size_t> group_of, group_begin;
  for (std::size_t m = 0; m < nt; ++m) {
    group_begin.push_back(all.size());
    for (const Tile& t : f.group(m)) {
      all.push_back(t);
      group_of.push_back(m);
    }
  }
  group_begin.push_back(all.size());

  std::vector<TileVersion> ver(all.size());
  std::vector<lp::RecoveryStats> st(all.size());
  be.parallel_for(0, all.size(),
                  [&](std::size_t x) { ver[x] = tracker.find(be, all[x], group_of[x], st[x]); });
  std::size_t resume = 0;
  for (const auto& v : ver) resume = std::max(resume, v.version);
  for (std::size_t m = 0; m < nt; ++m) {
    const std::size_t target = std::min(resume, m + 1);
    auto repair = [&](std::size_t x) {
      if (!ver[x].lost && ver[x].version == target) return;
      tracker.repair(be, all[x], ver[x], target, st[x]);
    };
    repair(group_begin[m]);  // the diagonal tile: the rest of the group reads it
    be.parallel_for(group_begin[m] + 1, group_begin[m + 1], repair);
  }
  for (const auto& s : st) stats += s;
  return resume;
}

// LP bookkeeping: slot F.slot(q, t), written when op q on t completed, is the checksum of the
// tile's state after op q (every op stores the tile's whole canonical content once). The newest
// matching slot names the version; none matching, the tile is at 0 if it still equals the
// input, else lost. A repair is persisted, then its newest slot committed durably.
template <lp::ChecksumKind K, class F>
struct LpTracker {
  const F& f;
  const lp::ChecksumTable& table;

  template <mem::Backend B>
  TileVersion find(B& be, Tile t, std::size_t group, lp::RecoveryStats& s) const {
    // Memory does not change while slots are compared: one checksum per tile.
    const lp::ChecksumValue current = f.template checksum<K>(be, t);
    for (std::size_t q = group + 1; q-- > 0;) {
      const auto verdict = table.check(be, f.slot(q, t), current);
      if (verdict == lp::SlotCheck::kUnwritten) {
        ++s.regions_unwritten;
        continue;
      }
      ++s.regions_validated;
      if (verdict == lp::SlotCheck::kMatch) return {q + 1, false};
      ++s.regions_inconsistent;
    }
    return {0, !f.equals_input(be, t)};
  }
  template <mem::Backend B>
  void repair(B& be, Tile t, TileVersion from, std::size_t target, lp::RecoveryStats& s) const {
    if (from.lost) f.restore_input(be, t);
    lp::ChecksumValue last{};
    for (std::size_t q = from.lost ? 0 : from.version; q < target; ++q) {
      lp::Accumulator<K> acc;
      f.apply(be, t, q, lp::fold_stored_into(acc));
      last = acc.value();
      ++s.regions_recomputed;
    }
    f.persist_tile(be, t);
    if (target > 0) table.commit_durable(be, f.slot(target - 1, t), last);
  }
};

// LP recovery of a tiled factorization; returns the step where normal execution resumes.
template <lp::ChecksumKind K, mem::Backend B, class F>
[[nodiscard]] std::size_t recover_tiled(B& be, const F& f, const lp::ChecksumTable& table,
                                        lp::RecoveryStats& stats) {
  return recover_tiles(be, f, LpTracker<K, F>{f, table}, stats);
}

// ---------------------------------------------------------------------------------------------
// EagerRecompute (LP paper §VI's rival; thesis Fig. 3.1): the same regions, but each op's tile
// is flushed and its progress recorded durably. Ops update tiles in place and are not
// idempotent, so a record is also marked "in flight" (durably) before the op starts: a tile
// whose record is in flight may be torn and is recomputed from the input. Record (i, j) holds
// version << 1 | in_flight, one 64-byte record per tile (scheme::IndexRecordTable<1>).

[[nodiscard]] constexpr std::uint64_t ep_word(std::size_t version, bool in_flight) {
  return (static_cast<std::uint64_t>(version) << 1) | (in_flight ? 1u : 0u);
}

template <mem::Backend B, class F>
void ep_op(B& be, const F& f, const scheme::IndexRecordTable<1>& rec, Tile t, std::size_t q) {
  const auto r = rec[t.i * f.tiles() + t.j];
  const mem::RegionId id{static_cast<std::uint32_t>(q),
                         static_cast<std::uint32_t>(t.i * f.tiles() + t.j)};
  scheme::eager_region(
      be, id, r, {.in_flight = ep_word(q, true), .done = ep_word(q + 1, false)},
      [&] { f.apply(be, t, q, lp::kIgnoreStored); }, [&] { f.persist_tile(be, t); });
}

template <class F>
struct EpTracker {
  const F& f;
  const scheme::IndexRecordTable<1>& rec;

  template <mem::Backend B>
  TileVersion find(B& be, Tile t, std::size_t, lp::RecoveryStats& s) const {
    const std::uint64_t w = rec[t.i * f.tiles() + t.j].get(be, 0);
    ++s.regions_validated;
    if (w & 1u) {
      ++s.regions_inconsistent;
      return {0, true};
    }
    return {static_cast<std::size_t>(w >> 1), false};
  }
  template <mem::Backend B>
  void repair(B& be, Tile t, TileVersion from, std::size_t target, lp::RecoveryStats& s) const {
    const auto r = rec[t.i * f.tiles() + t.j];
    r.set(be, 0, ep_word(from.version, true));
    if (from.lost) f.restore_input(be, t);
    for (std::size_t q = from.lost ? 0 : from.version; q < target; ++q) {
      f.apply(be, t, q, lp::kIgnoreStored);
      ++s.regions_recomputed;
    }
    f.persist_tile(be, t);
    r.set(be, 0, ep_word(target, false));
  }
};

// EagerRecompute recovery of a tiled factorization; returns the step where execution resumes.
template <mem::Backend B, class F>
[[nodiscard]] std::size_t recover_tiled_ep(B& be, const F& f,
                                           const scheme::IndexRecordTable<1>& rec,
                                           lp::RecoveryStats& stats) {
  return recover_tiles(be, f, EpTracker<F>{f, rec}, stats);
}

}  // namespace pmlab::kernels::tiled
