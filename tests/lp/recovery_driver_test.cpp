// The generic recovery driver for independent regions: repairs exactly the inconsistent regions.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "../support/eviction_model_backend.hpp"
#include "../support/test_seed.hpp"
#include "../support/tmm_fixture.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/lp/region.hpp"

namespace pmlab::testing {
namespace {

constexpr std::size_t kRegions = 24, kPerRegion = 16;

double value_of(std::size_t region, std::size_t k) {
  return static_cast<double>(region * 1000 + k) * 0.5 + 0.25;
}

// y[r][k] = f(r, k): 24 independent regions of 16 doubles (two cache lines each).
template <class B>
void compute_region(B& be, double* y, const lp::ChecksumTable& table, std::size_t r) {
  lp::Region<lp::ChecksumKind::kModular, B> region(be, table, r,
                                                   {0, static_cast<std::uint32_t>(r)});
  for (std::size_t k = 0; k < kPerRegion; ++k) region.store(y + r * kPerRegion + k, value_of(r, k));
  region.commit();
}

TEST(LpRecoveryDriver, RepairsOnlyMismatchedRegionsAndIsExactAfterRandomCrashes) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    auto y = aligned_zeroed<double>(kRegions * kPerRegion);
    auto slots = aligned_zeroed<lp::ChecksumSlot>(kRegions);
    lp::ChecksumTable table(slots.get(), kRegions);
    EvictionModelBackend be(rng());
    be.arm(1 + rng() % (kRegions * (kPerRegion + 3)));
    try {
      for (std::size_t r = 0; r < kRegions; ++r) compute_region(be, y.get(), table, r);
    } catch (const PowerCut&) {
    }
    be.apply_crash_image(0.5);
    auto checksum_of = [&](std::size_t r) {
      lp::Accumulator<lp::ChecksumKind::kModular> acc;
      for (std::size_t k = 0; k < kPerRegion; ++k) acc.add(be.load(y.get() + r * kPerRegion + k));
      return acc.value();
    };
    std::size_t repaired = 0;
    auto repair = [&](std::size_t r) {
      ++repaired;
      lp::Accumulator<lp::ChecksumKind::kModular> acc;
      for (std::size_t k = 0; k < kPerRegion; ++k) {
        be.store(y.get() + r * kPerRegion + k, value_of(r, k));
        acc.add(value_of(r, k));
      }
      be.persist(y.get() + r * kPerRegion, kPerRegion * sizeof(double));
      return acc.value();
    };
    auto st = lp::recover_independent_regions(be, table, kRegions, checksum_of, repair, true);
    EXPECT_EQ(st.regions_recomputed, repaired);
    EXPECT_EQ(st.regions_validated + st.regions_unwritten, kRegions);
    for (std::size_t r = 0; r < kRegions; ++r)
      for (std::size_t k = 0; k < kPerRegion; ++k)
        ASSERT_EQ(y[r * kPerRegion + k], value_of(r, k)) << "trial " << trial << " region " << r;
    // A second recovery finds everything consistent.
    auto again = lp::recover_independent_regions(be, table, kRegions, checksum_of, repair, true);
    EXPECT_EQ(again.regions_recomputed, 0u);
    EXPECT_EQ(again.regions_validated, kRegions);
  }
}

// Regions 0..23 of a second loop live in slots [kRegions, 2 kRegions) of a shared table; the
// first loop's slots hold other checksums. Recovery with the offset validates the right slots;
// the negative control (offset 0) reads the other loop's slots and repairs every region.
TEST(LpRecoveryDriver, SlotOffsetValidatesTheLoopsOwnSlots) {
  auto y = aligned_zeroed<double>(kRegions * kPerRegion);
  auto slots = aligned_zeroed<lp::ChecksumSlot>(2 * kRegions);
  lp::ChecksumTable table(slots.get(), 2 * kRegions);
  mem::PlainBackend be;
  for (std::size_t r = 0; r < kRegions; ++r) {
    table.commit(be, r, lp::ChecksumValue{r + 1, r + 2});  // the other loop's checksums
    lp::Region<lp::ChecksumKind::kModular, mem::PlainBackend> region(
        be, table, kRegions + r, {1, static_cast<std::uint32_t>(r)});
    for (std::size_t k = 0; k < kPerRegion; ++k)
      region.store(y.get() + r * kPerRegion + k, value_of(r, k));
    region.commit();
  }
  auto checksum_of = [&](std::size_t r) {
    lp::Accumulator<lp::ChecksumKind::kModular> acc;
    for (std::size_t k = 0; k < kPerRegion; ++k) acc.add(y[r * kPerRegion + k]);
    return acc.value();
  };
  std::size_t repaired = 0;
  auto repair = [&](std::size_t r) {
    ++repaired;
    return checksum_of(r);
  };
  const auto st =
      lp::recover_independent_regions(be, table, kRegions, kRegions, checksum_of, repair, true);
  EXPECT_EQ(st.regions_validated, kRegions);
  EXPECT_EQ(st.regions_recomputed, 0u);
  // Negative control: without the offset the first loop's slots mismatch everywhere.
  const auto wrong =
      lp::recover_independent_regions(be, table, kRegions, checksum_of, repair, true);
  EXPECT_EQ(wrong.regions_inconsistent, kRegions);
  EXPECT_EQ(repaired, kRegions);
}

}  // namespace
}  // namespace pmlab::testing
