// LU under WAL / checkpoint / hybrid: bit-exact vs base, write accounting, crash properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../support/rival_conformance.hpp"
#include "../support/rival_crash.hpp"
#include "pmlab/kernels/lu.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::testing {
namespace {

namespace lu = kernels::lu;

// Input A, working matrix W (A at "pool creation"), the scheme's arrays, base's factors.
struct LuData {
  static constexpr bool kHasHybrid = true;
  std::size_t n, bs;
  std::unique_ptr<double[], scheme_test::FreeDeleter> a, w;
  lu::Operands op;
  PoolArrays pool;
  std::vector<double> expected;

  LuData(std::size_t n_, std::size_t bs_, std::uint64_t seed)
      : n(n_),
        bs(bs_),
        a(scheme_test::zeroed<double>(n * n)),
        w(scheme_test::zeroed<double>(n * n)) {
    lu::fill_input(a.get(), n, seed);
    op = lu::Operands{{a.get(), n, n}, {w.get(), n, n}, {n, bs}};
    expected.assign(a.get(), a.get() + n * n);
    mem::PlainBackend be;
    lu::run_base(be, lu::Operands{{a.get(), n, n}, {expected.data(), n, n}, {n, bs}});
    reset();
  }
  void reset() {
    std::copy(a.get(), a.get() + n * n, w.get());
    pool.zero();
  }
  [[nodiscard]] bool exact() const { return same_bits(w.get(), expected); }
  [[nodiscard]] std::string label() const {
    return "lu n=" + std::to_string(n) + " bs=" + std::to_string(bs);
  }
  [[nodiscard]] double* work_data() const { return w.get(); }
  [[nodiscard]] std::size_t work_elems() const { return n * n; }
};

std::shared_ptr<LuData> lu_data(std::size_t n, std::size_t bs, std::uint64_t seed = 3) {
  return std::make_shared<LuData>(n, bs, seed);
}

// The conformance suites' view of lu under the rivals (tests/support/rival_conformance.hpp).
struct LuRivals : MatrixRivalDefaults {
  using Data = LuData;
  static constexpr const char* kName = "lu";
  static std::shared_ptr<Data> data(std::size_t n, std::size_t bs) {
    return pmlab::testing::lu_data(n, bs);
  }
  static std::shared_ptr<Data> random_data(std::mt19937_64& rng) {
    const std::size_t n = random_n(rng, 40), bs = 1 + rng() % 9;
    return pmlab::testing::lu_data(n, bs, rng());
  }
  static constexpr std::pair<std::size_t, std::size_t> kEveryOpSizes[] = {{4, 3}, {7, 3}};
  // Late crashes where hybrid's copies must save work over EagerRecompute.
  static constexpr std::tuple<std::size_t, std::size_t, std::size_t> kLateCrashCases[] = {
      {40, 4, 2}, {29, 3, 4}};
};
INSTANTIATE_TYPED_TEST_SUITE_P(KernelLuRivals, RivalConformance, LuRivals, RivalKernelName);
INSTANTIATE_TYPED_TEST_SUITE_P(KernelLuRivals, HybridConformance, LuRivals, RivalKernelName);

// Per op on tile (i, j): the tile (len(i)·len(j) doubles) and the
// progress word are logged, then progress, flag set and clear: tile + 4 extra stores, and
// 4 fences (log, flag, data, flag), where base has none.
TEST(KernelLuRivals, WalWritesTheTileLogPlusFourWordsAndFourFencesPerRegion) {
  for (auto [n, bs] : {std::pair{1, 1}, {9, 2}, {30, 7}}) {
    auto d = lu_data(n, bs);
    CountingBackend base, wal;
    lu::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kWal, 0);
    c.run(wal, 0);
    ASSERT_TRUE(d->exact());
    std::uint64_t regions = 0, extra = 0;
    const kernels::tiled::Tiling& tl = d->op.tiling;
    for (std::size_t i = 0; i < tl.tiles(); ++i)
      for (std::size_t j = 0; j < tl.tiles(); ++j) {
        regions += std::min(i, j) + 1;
        extra += (std::min(i, j) + 1) * (tl.len(i) * tl.len(j) + 4);
      }
    EXPECT_EQ(wal.regions, regions);
    EXPECT_EQ(wal.stores - base.stores, extra) << n << " " << bs;
    EXPECT_EQ(wal.fences, 4 * regions);
  }
}

// Every step but the last copies the trailing matrix from the slot's previous
// checkpoint on (two steps back) plus two header words; the end persists W in place and
// publishes completion (one word). Fences: two per checkpoint, two at the end.
TEST(KernelLuRivals, CheckpointCopiesOnlyTheTrailingMatrixSinceTheSlotsLastState) {
  for (auto [n, bs] : {std::pair{1, 1}, {9, 2}, {30, 7}, {31, 3}}) {
    auto d = lu_data(n, bs);
    CountingBackend base, cp;
    lu::run_base(base, d->op);
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kCp, 1);
    c.run(cp, 0);
    ASSERT_TRUE(d->exact());
    const std::size_t nt = d->op.tiles();
    std::uint64_t extra = 1;
    for (std::size_t done = 1; done < nt; ++done) {
      const std::size_t m = n - (done >= 3 ? done - 2 : 0) * bs;
      extra += m * m + 2;
    }
    EXPECT_EQ(cp.stores - base.stores, extra) << n << " " << bs;
    EXPECT_EQ(cp.fences, 2 * (nt - 1) + 2);
  }
}

// Hybrid = EP + after each step but the last, part (k mod X) of the tile rows (whole rows)
// copied, framed by two state-word stores and three fences.
TEST(KernelLuRivals, HybridAddsOnePartialCopyPerStepToEagerRecompute) {
  for (auto [n, bs, parts] : {std::tuple{9, 2, 2}, {30, 7, 3}, {31, 3, 4}, {20, 5, 8}}) {
    auto d = lu_data(n, bs);
    CountingBackend ep, hr;
    auto records = scheme_test::zeroed<scheme::IndexRecordLayout<1>>(lu::ep_records(d->op));
    lu::run_ep(ep, d->op, scheme::IndexRecordTable<1>(records.get(), lu::ep_records(d->op)));
    d->reset();
    auto c = make_case<CountingBackend>(d, Rival::kHr, parts);
    c.run(hr, 0);
    ASSERT_TRUE(d->exact());
    const std::size_t nt = d->op.tiles();
    std::uint64_t extra = 0, saves = 0;
    for (std::size_t k = 0; k + 1 < nt; ++k) {
      const std::size_t p = k % parts, u0 = nt * p / parts, u1 = nt * (p + 1) / parts;
      if (u0 == u1) continue;
      ++saves;
      extra += 2;
      extra += (std::min<std::size_t>(n, u1 * bs) - u0 * bs) * n;
    }
    EXPECT_EQ(hr.stores - ep.stores, extra) << n << " " << bs << " " << parts;
    EXPECT_EQ(hr.fences - ep.fences, 3 * saves);
  }
}

}  // namespace
}  // namespace pmlab::testing
