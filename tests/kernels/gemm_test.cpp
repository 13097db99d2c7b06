// gemm's math: every variant, packed or not, any n and blocking, gives naive's bits (fma in
// ascending k); schemes' runs equal base; variant names round-trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "pmlab/kernels/gemm.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/pack_arena.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::kernels::gemm {
namespace {

struct Mats {
  std::size_t n;
  std::vector<double> a, b, c;
  explicit Mats(std::size_t n_) : n(n_), a(n * n), b(n * n), c(n * n, 0.0) {
    for (std::size_t i = 0; i < n * n; ++i) {
      a[i] = input_value(7, 0, i);
      b[i] = input_value(7, 1, i);
    }
  }
  Operands op(std::size_t bs, Config cfg) {
    return {{a.data(), n, n}, {b.data(), n, n}, {c.data(), n, n}, n, bs, cfg};
  }
  std::vector<double> reference() const {
    std::vector<double> r(n * n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (std::size_t k = 0; k < n; ++k) acc = std::fma(a[i * n + k], b[k * n + j], acc);
        r[i * n + j] = acc;
      }
    return r;
  }
};

bool same_bits(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

TEST(Gemm, EveryVariantPackedOrNotGivesNaivesBits) {
  for (std::size_t n : {1, 7, 33, 70}) {
    Mats m(n);
    const auto want = m.reference();
    for (std::size_t bs : {1, 5, 16, 64}) {
      for (Variant v : kFigureOrder)
        for (int pack : {0, 1, 2})  // 2: packed in micro-panels (--pack-layout panels)
          for (auto [mr, nr] : {std::pair{4u, 8u}, std::pair{3u, 5u}})
            for (bool rows : {false, true}) {
              std::fill(m.c.begin(), m.c.end(), 0.0);
              mem::PlainBackend be({}, 2);
              Config cfg{v, pack != 0, mr, nr};
              cfg.row_order = rows;
              cfg.pack_panels = pack == 2;
              run_base(be, m.op(bs, cfg));
              EXPECT_TRUE(same_bits(m.c, want))
                  << to_string(v) << " pack " << pack << " n " << n << " bs " << bs << " mr " << mr
                  << " nr " << nr << " rows " << rows;
            }
    }
  }
}

// --mc, --kc, --nc apart: row panels, k steps and column panels of three sizes (and blocks
// larger than n, clamped), every variant, packed in both layouts or not, still naive's bits.
TEST(Gemm, UnequalBlockingGivesNaivesBits) {
  struct Blocking {
    std::size_t mc, kc, nc;
  };
  for (std::size_t n : {33, 70}) {
    Mats m(n);
    const auto want = m.reference();
    for (Blocking bl : {Blocking{8, 16, 24}, Blocking{24, 5, 8}, Blocking{7, 33, 100}})
      for (Variant v : kFigureOrder)
        for (int pack : {0, 1, 2}) {
          std::fill(m.c.begin(), m.c.end(), 0.0);
          mem::PlainBackend be({}, 2);
          Config cfg{v, pack != 0, 3, 5};
          cfg.pack_panels = pack == 2;
          cfg.mc = bl.mc;
          cfg.kc = bl.kc;
          cfg.nc = bl.nc;
          run_base(be, m.op(16, cfg));
          EXPECT_TRUE(same_bits(m.c, want))
              << to_string(v) << " pack " << pack << " n " << n << " mc " << bl.mc << " kc "
              << bl.kc << " nc " << bl.nc;
        }
  }
}

TEST(Gemm, VariantNamesRoundTrip) {
  for (Variant v : kFigureOrder) EXPECT_EQ(variant_from_string(to_string(v)), v);
  EXPECT_EQ(variant_from_string("gemp2"), Variant::kGemp2);
  EXPECT_FALSE(variant_from_string("gemm"));
}

// The persist hooks do not change the arithmetic: ep-lazy, ep-eager and lp give base's bits, and
// leave every panel's counter at "done".
TEST(Gemm, SchemesComputeTheSameBitsAndFinishEveryPanel) {
  const std::size_t n = 37, bs = 8;
  Mats m(n);
  const auto want = m.reference();
  for (Variant v : kFigureOrder) {
    const Operands op = m.op(bs, {v, true, 4, 8});
    mem::PlainBackend be({}, 2);
    for (Grain g : {Grain::kLazy, Grain::kEager}) {
      std::fill(m.c.begin(), m.c.end(), 0.0);
      std::vector<scheme::IndexRecordLayout<1>> recs(op.panels());
      std::memset(static_cast<void*>(recs.data()), 0, recs.size() * sizeof(recs[0]));
      const scheme::IndexRecordTable<1> table(recs.data(), recs.size());
      if (g == Grain::kLazy)
        run_ep<Grain::kLazy>(be, op, table);
      else
        run_ep<Grain::kEager>(be, op, table);
      EXPECT_TRUE(same_bits(m.c, want)) << to_string(v);
      for (std::size_t p = 0; p < op.panels(); ++p)
        EXPECT_EQ(table[p].get(be, 0), done_count(op, p, g)) << to_string(v) << " panel " << p;
    }
    std::fill(m.c.begin(), m.c.end(), 0.0);
    std::vector<std::byte> slots(lp::ChecksumTable::bytes_for(op.table_slots()));
    const lp::ChecksumTable table(reinterpret_cast<lp::ChecksumSlot*>(slots.data()),
                                  op.table_slots());
    run_lp<lp::ChecksumKind::kModular>(be, op, table);
    EXPECT_TRUE(same_bits(m.c, want)) << to_string(v);
    // Recovery of a finished run recomputes nothing; of a zeroed C, recomputes every panel.
    lp::RecoveryStats st;
    EXPECT_EQ(recover_lp<lp::ChecksumKind::kModular>(be, op, table, st), op.outer_count());
    EXPECT_EQ(st.regions_recomputed, 0u) << to_string(v);
    std::fill(m.c.begin(), m.c.end(), 0.0);
    lp::RecoveryStats st2;
    (void)recover_lp<lp::ChecksumKind::kModular>(be, op, table, st2);
    EXPECT_TRUE(same_bits(m.c, want)) << to_string(v);
    EXPECT_EQ(st2.regions_recomputed, op.table_slots()) << to_string(v);
  }
}

// --pack-mem dram: the packing buffers' traffic leaves the NVM statistics (and the row buffer)
// and shows up as dram_reads/dram_writes; C's bits and the unpacked run's counts are unchanged.
TEST(Gemm, PackMemDramKeepsPackingBuffersOutOfTheNvmStatistics) {
  const std::size_t n = 96;
  Mats m(n);
  const auto want = m.reference();
  sim::SimParams p = sim::preset("thesis-ch4");
  p.llc.size_bytes = 128 * 1024;  // A, B, C (216 KiB) overflow it; >= the private caches
  p.threads = 2;
  const auto run = [&](Variant v, bool pack, bool dram) {
    std::fill(m.c.begin(), m.c.end(), 0.0);
    sim::SimBackend be(p);
    Config cfg{v, pack, 4, 8};
    cfg.pack_dram = dram;
    run_base(be, m.op(16, cfg));
    EXPECT_TRUE(same_bits(m.c, want)) << to_string(v) << " pack " << pack << " dram " << dram;
    return be.stats().nvm;
  };
  for (Variant v : {Variant::kGepp1, Variant::kGemp1}) {
    const auto nvm = run(v, true, false), dram = run(v, true, true);
    EXPECT_EQ(nvm.dram_reads + nvm.dram_writes, 0u);
    // Whether a buffer line is evicted dirty depends on where the heap puts it (LLC sets), so
    // only the misses (the first store to a fresh buffer line fetches it) are asserted.
    EXPECT_GT(dram.dram_reads, 0u) << to_string(v);
    EXPECT_LT(dram.reads, nvm.reads) << to_string(v);
    ASSERT_TRUE(dram.row_buffer.has_value());
    // Unpacked, the option has nothing to mark.
    const auto plain = run(v, false, false), plain_dram = run(v, false, true);
    EXPECT_EQ(plain.writes, plain_dram.writes);
    EXPECT_EQ(plain_dram.dram_writes, 0u);
  }
}

// --pack-layout panels: with n a power of two, a row-major packed B̃'s walk along k strides by
// n doubles and stays in one L1 set; micro-panels make it unit-stride. Same bits, far fewer L1
// misses for GEPP1 (docs/gemm.md, point 7); the row-major layout is what a control must show.
TEST(Gemm, MicroPanelPackingRemovesGepp1sL1SetConflicts) {
  const std::size_t n = 128;
  Mats m(n);
  const auto want = m.reference();
  sim::SimParams p = sim::preset("thesis-ch4");
  p.l1 = {"L1", 16 * 4 * 64, 4, Cycles{2}, sim::Replacement::kLru};  // a 1 KiB set span
  p.threads = 2;
  const auto l1_misses = [&](bool panels) {
    std::fill(m.c.begin(), m.c.end(), 0.0);
    sim::SimBackend be(p);
    Config cfg{Variant::kGepp1, true, 4, 8};
    cfg.pack_panels = panels;
    run_base(be, m.op(16, cfg));
    EXPECT_TRUE(same_bits(m.c, want)) << "panels " << panels;
    return be.stats().levels.front().misses;
  };
  const auto rows = l1_misses(false), panels = l1_misses(true);
  EXPECT_LT(panels * 4, rows) << "rows " << rows << " panels " << panels;
}

// The simulator models caches and rows by address, so a packed run's statistics must not depend
// on where the heap is: the same run before and after other allocations moved the heap's state
// gives the same figures. With std::vector buffers (before PackArena) the LLC misses and row
// writes moved between runs and builds (docs/gemm.md, "Packing buffers").
TEST(Gemm, PackedRunsGiveTheSameStatisticsWhereverTheHeapIs) {
  const std::size_t n = 96;
  Mats m(n);
  sim::SimParams p = sim::preset("thesis-ch4");
  p.llc.size_bytes = 128 * 1024;
  p.threads = 2;
  const auto run = [&] {
    std::fill(m.c.begin(), m.c.end(), 0.0);
    sim::SimBackend be(p);
    run_base(be, m.op(16, Config{Variant::kGepm2, true, 4, 8}));
    return be.stats();
  };
  const sim::SimStats first = run();
  std::vector<std::unique_ptr<char[]>> ballast;  // odd sizes, kept alive: the heap moves on
  for (std::size_t i = 1; i <= 64; ++i) ballast.emplace_back(new char[i * 1000 + 48]);
  const sim::SimStats second = run();
  EXPECT_EQ(first.levels.at(0).misses, second.levels.at(0).misses);
  EXPECT_EQ(first.levels.back().misses, second.levels.back().misses);
  EXPECT_EQ(first.levels.back().dirty_evictions, second.levels.back().dirty_evictions);
  EXPECT_EQ(first.nvm.writes, second.nvm.writes);
  ASSERT_TRUE(first.nvm.row_buffer.has_value() && second.nvm.row_buffer.has_value());
  EXPECT_EQ(first.nvm.row_buffer->row_writes_total(), second.nvm.row_buffer->row_writes_total());
  EXPECT_EQ(first.cycles.value(), second.cycles.value());
}

TEST(PackArena, SlotsAreAlignedZeroedAndReusedLastGivenBackFirst) {
  PackArena arena(1000);  // 8,000 bytes: one 16 KiB stride per slot
  std::vector<std::span<double>> slots;
  for (std::size_t i = 0; i < PackArena::kSlotsPerChunk + 1; ++i) slots.push_back(arena.take());
  const auto at = [](std::span<double> s) { return reinterpret_cast<std::uintptr_t>(s.data()); };
  EXPECT_EQ(at(slots[0]) % PackArena::kChunkAlignment, 0u);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    ASSERT_EQ(slots[i].size(), 1000u);
    for (double x : slots[i]) ASSERT_EQ(x, 0.0);
    if (i > 0 && i < PackArena::kSlotsPerChunk) {  // in address order, one stride apart
      EXPECT_EQ(at(slots[i]) - at(slots[i - 1]), PackArena::kSlotAlignment);
    }
  }
  EXPECT_EQ(at(slots.back()) % PackArena::kChunkAlignment, 0u);  // a second chunk
  arena.give_back(slots[1]);
  arena.give_back(slots[0]);
  EXPECT_EQ(arena.take().data(), slots[0].data());  // last given back, first taken
  EXPECT_EQ(arena.take().data(), slots[1].data());
}

}  // namespace
}  // namespace pmlab::kernels::gemm
