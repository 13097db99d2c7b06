// Versioned-tile LP recovery for right-looking tiled factorizations (LU, Cholesky): per (step, tile) checksums.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/lp/region.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::kernels::tiled {

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
  lp::Region<K, B> region(be, table, slot, {static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(tile_id)});
  op([&](double v) { region.add(v); });
  region.commit();
}

// Recovery for a tiled factorization F in which every tile (i, j) undergoes ops 0..m, m being
// its group: ops q < m are trailing updates at step q, op m factors the tile at step m. The
// state of a tile after op q is a deterministic function of the (read-only) input, and every
// op stores the tile's whole canonical content once, so slot F.slot(q, t) — written when op q
// on t completed — identifies that state. Recovery:
//  1. finds each tile's version v (number of ops applied): the newest q whose slot matches the
//     tile's current checksum gives v = q + 1; none matching, the tile is at v = 0 if it still
//     equals the input, else it is "lost" and restored from the input;
//  2. resumes at step K = max v (no tile is ahead of K, so none has to be rolled back);
//  3. brings every tile of group m to target min(K, m + 1), groups in ascending order and the
//     diagonal tile first: op q of a tile only reads tiles of groups <= q, already final then.
// Repairs are persisted, then their slot committed durably, so a crash during recovery leaves a
// state that the next recovery handles the same way.
//
// F provides: tiles(); group(m) -> std::vector<Tile> (diagonal first); slot(q, t);
// checksum<K>(be, t); equals_input(be, t); restore_input(be, t); apply(be, t, q, on_store);
// persist_tile(be, t).
template <lp::ChecksumKind K, mem::Backend B, class F>
[[nodiscard]] std::size_t recover_tiled(B& be, const F& f, const lp::ChecksumTable& table,
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

  struct TileState {
    std::size_t version = 0;
    bool lost = false;
    lp::RecoveryStats stats;
  };
  std::vector<TileState> st(all.size());
  // 1. Versions. Memory does not change while slots are compared: one checksum per tile.
  be.parallel_for(0, all.size(), [&](std::size_t x) {
    const Tile t = all[x];
    TileState& s = st[x];
    const lp::ChecksumValue current = f.template checksum<K>(be, t);
    for (std::size_t q = group_of[x] + 1; q-- > 0;) {
      const auto verdict = table.check(be, f.slot(q, t), current);
      if (verdict == lp::SlotCheck::kUnwritten) {
        ++s.stats.regions_unwritten;
        continue;
      }
      ++s.stats.regions_validated;
      if (verdict == lp::SlotCheck::kMatch) {
        s.version = q + 1;
        return;
      }
      ++s.stats.regions_inconsistent;
    }
    s.lost = !f.equals_input(be, t);
  });
  // 2. Resume step.
  std::size_t resume = 0;
  for (const auto& s : st) resume = std::max(resume, s.version);
  // 3. Repairs in dependency order.
  for (std::size_t m = 0; m < nt; ++m) {
    const std::size_t target = std::min(resume, m + 1);
    auto repair = [&](std::size_t x) {
      TileState& s = st[x];
      if (!s.lost && s.version == target) return;
      const Tile t = all[x];
      if (s.lost) f.restore_input(be, t);
      lp::ChecksumValue last{};
      for (std::size_t q = s.lost ? 0 : s.version; q < target; ++q) {
        lp::Accumulator<K> acc;
        f.apply(be, t, q, [&](double v) { acc.add(v); });
        last = acc.value();
        ++s.stats.regions_recomputed;
      }
      f.persist_tile(be, t);
      if (target > 0) table.commit_durable(be, f.slot(target - 1, t), last);
    };
    repair(group_begin[m]);  // the diagonal tile: the rest of the group reads it
    be.parallel_for(group_begin[m] + 1, group_begin[m + 1], repair);
  }
  for (const auto& s : st) stats += s.stats;
  return resume;
}

}  // namespace pmlab::kernels::tiled
