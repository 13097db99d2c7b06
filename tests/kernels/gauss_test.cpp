// Gauss: textbook loop bit for bit, its LP slots and repair; the LP/EP conformance suite on Gauss.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "../support/eviction_model_backend.hpp"
#include "../support/lp_conformance.hpp"
#include "../support/test_scale.hpp"
#include "../support/test_seed.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/kernels/gauss.hpp"

namespace pmlab::testing {
namespace {

namespace ga = kernels::gauss;

struct GaussFixture {
  std::size_t n, bs;
  std::unique_ptr<double[], FreeDeleter> a, l;
  std::unique_ptr<lp::ChecksumSlot[], FreeDeleter> slots;
  ga::Operands op;
  lp::ChecksumTable table;

  GaussFixture(std::size_t n_, std::size_t bs_, std::uint64_t seed = 3)
      : n(n_),
        bs(bs_),
        a(aligned_zeroed<double>(n * (n + 1))),
        l(aligned_zeroed<double>(n * (n + 1))) {
    ga::fill_input(a.get(), n, seed);
    std::copy(a.get(), a.get() + n * (n + 1), l.get());
    op = ga::Operands{{a.get(), n, n + 1}, {l.get(), n, n + 1}, n, bs};
    slots = aligned_zeroed<lp::ChecksumSlot>(op.table_slots());
    table = lp::ChecksumTable(slots.get(), op.table_slots());
  }
  [[nodiscard]] std::vector<double> result() const { return {l.get(), l.get() + n * (n + 1)}; }
  [[nodiscard]] std::vector<double> reference() const {
    std::vector<double> out(a.get(), a.get() + n * (n + 1));
    mem::PlainBackend be;
    ga::run_base(be, ga::Operands{{a.get(), n, n + 1}, {out.data(), n, n + 1}, n, bs});
    return out;
  }
};

// The conformance suites' view of Gauss (tests/support/lp_conformance.hpp).
struct Gauss : MatrixKernelDefaults {
  using Fixture = GaussFixture;
  static constexpr const char* kName = "gauss";
  static std::size_t ep_records(const ga::Operands& op) { return op.blocks(); }
  static std::size_t completed(const Fixture& f) { return f.n - 1; }
  // Slots of regions that never exist (a block with no rows below step + 1) stay untagged.
  static void expect_every_slot_written(const Fixture& f) {
    for (std::size_t step = 0; step + 1 < f.n; ++step)
      for (std::size_t b = 0; b < f.op.blocks(); ++b)
        if (step + 2 < f.op.end_row(b)) {  // block b has rows below row step+1
          ASSERT_EQ(f.slots[f.op.live_slot(step, b)].tag,
                    lp::ChecksumTable::tag_for(f.op.live_slot(step, b)));
        }
    for (std::size_t i = 1; i < f.n; ++i)
      ASSERT_EQ(f.slots[f.op.row_slot(i)].tag, lp::ChecksumTable::tag_for(f.op.row_slot(i)));
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(KernelGauss, LpConformance, Gauss, KernelNameOf);

TEST(KernelGauss, BaseEqualsTextbookLoopBitForBitAndSolvesTheSystem) {
  for (auto [n, bs] : {std::pair{1, 1}, {2, 1}, {7, 3}, {17, 4}, {33, 40}, {64, 16}, {97, 10}}) {
    GaussFixture f(n, bs);
    mem::PlainBackend be;
    ga::run_base(be, f.op);
    const std::size_t ld = f.n + 1;
    std::vector<double> t(f.a.get(), f.a.get() + f.n * ld);  // the textbook triple loop
    for (std::size_t k = 0; k + 1 < f.n; ++k)
      for (std::size_t i = k + 1; i < f.n; ++i) {
        const double m = t[i * ld + k] / t[k * ld + k];
        t[i * ld + k] = 0.0;
        for (std::size_t j = k + 1; j < ld; ++j) t[i * ld + j] -= m * t[k * ld + j];
      }
    ASSERT_TRUE(bit_equal(f.result(), t)) << n << " " << bs;
    // Back substitution on [U | y] solves the original system.
    std::vector<double> x(f.n);
    for (std::size_t i = f.n; i-- > 0;) {
      double s = f.l[i * ld + f.n];
      for (std::size_t j = i + 1; j < f.n; ++j) s -= f.l[i * ld + j] * x[j];
      x[i] = s / f.l[i * ld + i];
    }
    for (std::size_t i = 0; i < f.n; ++i) {
      double r = -f.a[i * ld + f.n];
      for (std::size_t j = 0; j < f.n; ++j) r += f.a[i * ld + j] * x[j];
      ASSERT_NEAR(r, 0.0, 1e-13 * static_cast<double>(f.n) * static_cast<double>(f.n))
          << n << " row " << i;
      for (std::size_t j = 0; j < i; ++j)
        ASSERT_EQ(std::bit_cast<std::uint64_t>(f.l[i * ld + j]), 0u);
    }
  }
}

TEST(KernelGauss, SlotsAreACollisionFreeNumberingOfRegions) {
  GaussFixture f(70, 9);
  std::vector<int> seen(f.op.table_slots(), 0);
  for (std::size_t k = 0; k + 1 < f.n; ++k)
    for (std::size_t b = 0; b < f.op.blocks(); ++b) ++seen.at(f.op.live_slot(k, b));
  for (std::size_t i = 1; i < f.n; ++i) ++seen.at(f.op.row_slot(i));
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(KernelGauss, RecoveryRepairsALostFinalRowAndALostZero) {
  GaussFixture f(40, 6);
  mem::PlainBackend be;
  ga::run_lp<lp::ChecksumKind::kCrc32c>(be, f.op, f.table);
  const std::size_t ld = 41;
  f.l[2 * ld + 5] = 0.5;    // row 2 (final since step 1): its block (rows 0-5) must be redone
  f.l[30 * ld + 4] = 0.25;  // a zero below the diagonal
  lp::RecoveryStats st;
  EXPECT_EQ(ga::recover_lp<lp::ChecksumKind::kCrc32c>(be, f.op, f.table, st), f.n - 1);
  EXPECT_EQ(st.regions_recomputed, 5u);  // block 0 matches no state: from the input, steps 0..4
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
}

}  // namespace
}  // namespace pmlab::testing
