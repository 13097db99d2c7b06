// LU: L·U ≈ A, its LP slot numbering and repair; the LP/EP conformance suite on LU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "../support/eviction_model_backend.hpp"
#include "../support/lp_conformance.hpp"
#include "../support/test_scale.hpp"
#include "../support/test_seed.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/lu.hpp"

namespace pmlab::testing {
namespace {

namespace lu = kernels::lu;

struct LuFixture {
  std::size_t n, bs;
  std::unique_ptr<double[], FreeDeleter> a, l;
  std::unique_ptr<lp::ChecksumSlot[], FreeDeleter> slots;
  lu::Operands op;
  lp::ChecksumTable table;

  LuFixture(std::size_t n_, std::size_t bs_, std::uint64_t seed = 3)
      : n(n_), bs(bs_), a(aligned_zeroed<double>(n * n)), l(aligned_zeroed<double>(n * n)) {
    lu::fill_input(a.get(), n, seed);
    std::copy(a.get(), a.get() + n * n, l.get());
    op = lu::Operands{{a.get(), n, n}, {l.get(), n, n}, {n, bs}};
    slots = aligned_zeroed<lp::ChecksumSlot>(op.table_slots());
    table = lp::ChecksumTable(slots.get(), op.table_slots());
  }
  [[nodiscard]] std::vector<double> result() const { return {l.get(), l.get() + n * n}; }
  [[nodiscard]] std::vector<double> reference() const {
    std::vector<double> out(n * n);
    std::copy(a.get(), a.get() + n * n, out.data());
    mem::PlainBackend be;
    lu::run_base(be, lu::Operands{{a.get(), n, n}, {out.data(), n, n}, {n, bs}});
    return out;
  }
};

// The conformance suites' view of LU (tests/support/lp_conformance.hpp).
struct Lu : MatrixKernelDefaults {
  using Fixture = LuFixture;
  static constexpr const char* kName = "lu";
  static std::size_t ep_records(const lu::Operands& op) { return lu::ep_records(op); }
  static std::size_t completed(const Fixture& f) { return f.op.tiles(); }
  static void expect_every_slot_written(const Fixture& f) {
    expect_every_slot_tagged(f.slots.get(), f.op.table_slots());
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(KernelLu, LpConformance, Lu, KernelNameOf);

TEST(KernelLu, BaseFactorsReproduceTheInputWithinRoundoff) {
  for (auto [n, bs] : {std::pair{1, 1}, {2, 1}, {7, 3}, {17, 4}, {33, 40}, {64, 16}, {97, 10}}) {
    LuFixture f(n, bs);
    mem::PlainBackend be;
    lu::run_base(be, f.op);
    for (std::size_t i = 0; i < f.n; ++i)
      for (std::size_t j = 0; j < f.n; ++j) {
        double s = 0.0;  // (L·U)_ij with L unit lower, U upper: an independent plain triple loop
        for (std::size_t k = 0; k <= std::min(i, j); ++k)
          s += (k == i ? 1.0 : f.l[i * f.n + k]) * f.l[k * f.n + j];
        ASSERT_NEAR(s, f.a[i * f.n + j], 1e-13 * static_cast<double>(f.n) * f.a[j * f.n + j])
            << n << " " << bs << " " << i << "," << j;
      }
  }
}

TEST(KernelLu, SlotsAreACollisionFreeNumberingOfStepTilePairs) {
  LuFixture f(70, 9);  // 8 tiles
  std::vector<int> seen(f.op.table_slots(), 0);
  const std::size_t nt = f.op.tiles();
  for (std::size_t q = 0; q < nt; ++q)
    for (std::size_t i = q; i < nt; ++i)
      for (std::size_t j = q; j < nt; ++j) ++seen.at(f.op.slot(q, {i, j}));
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(KernelLu, RecoveryRepairsALostFinalTileFromTheInput) {
  LuFixture f(40, 6);
  mem::PlainBackend be;
  lu::run_lp<lp::ChecksumKind::kCrc32c>(be, f.op, f.table);
  f.l[1 * 40 + 0] = 0.5;  // a lost write in tile (0, 0), which every other tile depends on
  lp::RecoveryStats st;
  EXPECT_EQ(lu::recover_lp<lp::ChecksumKind::kCrc32c>(be, f.op, f.table, st), f.op.tiles());
  EXPECT_EQ(st.regions_recomputed, 1u);  // only POTRF(0, 0): nothing else read the bad value
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
}

}  // namespace
}  // namespace pmlab::testing
