// Persisted loop-index record: atomic multi-index update and rollback under every crash point.
#include <gtest/gtest.h>

#include "crash_backend.hpp"
#include "pmlab/scheme/index_record.hpp"

namespace pmlab::scheme_test {
namespace {

using Rec = scheme::IndexRecord<3>;
using Values = Rec::Values;

// Ops one update() issues, counted on an uninterrupted run.
std::uint64_t ops_of_update() {
  auto mem = zeroed<scheme::IndexRecordLayout<3>>(1);
  CrashBackend be;
  Rec(mem.get()).update(be, {1, 2, 3});
  return be.ops();
}

TEST(SchemeIndexRecord, ZeroFilledRecordReadsAsAllZeroAndNotInTransaction) {
  auto mem = zeroed<scheme::IndexRecordLayout<3>>(1);
  CrashBackend be;
  Rec r(mem.get());
  EXPECT_EQ(r.values(be), (Values{0, 0, 0}));
  EXPECT_FALSE(r.in_tx(be));
  EXPECT_FALSE(r.recover(be));
  EXPECT_EQ(be.ops(), 0u);  // nothing to roll back, nothing written
}

TEST(SchemeIndexRecord, UpdateFollowsTheLogFlagProtocolWithFourFences) {
  auto mem = zeroed<scheme::IndexRecordLayout<3>>(1);
  CrashBackend be;
  Rec r(mem.get());
  r.update(be, {7, 8, 9});
  EXPECT_EQ(be.fences(), 4u);  // log, flag set, values, flag clear: each durable before the next
  EXPECT_EQ(r.values(be), (Values{7, 8, 9}));
  EXPECT_EQ(mem[0].log[0], 0u);  // the log holds the previous values
  EXPECT_FALSE(r.in_tx(be));
}

TEST(SchemeIndexRecord, CrashAtEveryPointOfAnUpdateRecoversOldOrNewNeverAMix) {
  const Values before{10, 20, 30}, after{11, 0, 31};
  const std::uint64_t total = ops_of_update();
  ASSERT_GT(total, 8u);
  for (std::uint64_t k = 1; k <= total + 1; ++k) {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      auto mem = zeroed<scheme::IndexRecordLayout<3>>(1);
      CrashBackend be(seed);
      Rec r(mem.get());
      r.update(be, before);
      be.forget();  // `before` is durable
      be.arm(k);
      bool finished = true;
      try {
        r.update(be, after);
      } catch (const Crash&) {
        finished = false;
      }
      if (seed % 2 == 0)
        be.apply_crash(0.5);
      else
        be.apply_crash_durable_only();
      r.recover(be);
      const Values got = r.values(be);
      EXPECT_TRUE(got == before || got == after) << "k=" << k << " seed=" << seed;
      if (finished) {
        EXPECT_EQ(got, after) << "a completed update must survive, k=" << k;
      }
      EXPECT_FALSE(r.in_tx(be));
    }
  }
}

TEST(SchemeIndexRecord, CrashDuringRecoveryIsRecoveredAgain) {
  const Values before{1, 2, 3}, after{4, 5, 6};
  for (std::uint64_t k1 = 1; k1 <= ops_of_update(); ++k1) {
    for (std::uint64_t k2 = 1; k2 <= 8; ++k2) {
      auto mem = zeroed<scheme::IndexRecordLayout<3>>(1);
      CrashBackend be(k1 * 31 + k2);
      Rec r(mem.get());
      r.update(be, before);
      be.forget();
      be.arm(k1);
      try {
        r.update(be, after);
      } catch (const Crash&) {
      }
      be.apply_crash();
      be.arm(k2);
      try {
        r.recover(be);
      } catch (const Crash&) {
      }
      be.apply_crash();
      r.recover(be);
      const Values got = r.values(be);
      EXPECT_TRUE(got == before || got == after) << k1 << " " << k2;
    }
  }
}

TEST(SchemeIndexRecord, SetIsDurableOnReturnAndTouchesOneField) {
  auto mem = zeroed<scheme::IndexRecordLayout<2>>(2);
  CrashBackend be;
  scheme::IndexRecordTable<2> table(mem.get(), 2);
  table[1].set(be, 1, 42);
  be.apply_crash_durable_only();
  EXPECT_EQ(table[1].get(be, 1), 42u);
  EXPECT_EQ(table[1].get(be, 0), 0u);
  EXPECT_EQ(table[0].get(be, 1), 0u);  // records are separate lines: no collision
  EXPECT_EQ(scheme::IndexRecordTable<2>::bytes_for(2), 128u);
}

}  // namespace
}  // namespace pmlab::scheme_test
