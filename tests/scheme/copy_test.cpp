// Checkpoint copier (native NT fast path and backend path) and the hybrid partial copier.
#include <gtest/gtest.h>

#include <bit>
#include <vector>

#include "crash_backend.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/partial_copy.hpp"

namespace pmlab::scheme_test {
namespace {

std::vector<double> pattern(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = std::bit_cast<double>(0x3ff0'0000'0000'0000ull + i * 0x9e37'79b9ull);
  return v;
}

TEST(SchemeCheckpointCopy, NativeStreamingCopyIsExactForEveryAlignmentAndLength) {
  EXPECT_FALSE(scheme::nt_copy_isa().empty());
  const auto src = pattern(300);
  for (std::size_t off : {0u, 1u, 3u, 7u, 8u}) {
    for (std::size_t len : {0u, 1u, 2u, 7u, 8u, 9u, 31u, 64u, 200u}) {
      auto dst = zeroed<double>(320);
      scheme::nt_copy(dst.get() + off, src.data() + 5, len);
      for (std::size_t i = 0; i < 320; ++i) {
        const bool inside = i >= off && i < off + len;
        ASSERT_EQ(std::bit_cast<std::uint64_t>(dst[i]),
                  inside ? std::bit_cast<std::uint64_t>(src[5 + i - off]) : 0u)
            << "off " << off << " len " << len << " i " << i;
      }
    }
  }
}

TEST(SchemeCheckpointCopy, NativeBackendsTakeTheFastPathOthersDoNot) {
  static_assert(scheme::kIsNativeBackend<mem::NativeBackend<persist::NoPersist>>);
  static_assert(
      scheme::kIsNativeBackend<mem::NativeBackend<persist::CpuPersist<persist::FlushKind::kClwb>>>);
  static_assert(!scheme::kIsNativeBackend<CrashBackend>);
  static_assert(!scheme::kNtNeedsPersistCall<persist::CpuPersist<persist::FlushKind::kClflushopt>>);
  static_assert(scheme::kNtNeedsPersistCall<persist::Pmem2Persist>);
  const auto src = pattern(5000);
  auto dst = zeroed<double>(5000);
  mem::NativeBackend<persist::NoPersist> be({}, 2);
  scheme::copy_durable_parallel(
      be, {{dst.get(), src.data(), 2500}, {dst.get() + 2500, src.data() + 2500, 2500}});
  EXPECT_EQ(std::vector<double>(dst.get(), dst.get() + 5000), src);
  if (persist::cpu_supports(persist::FlushKind::kClwb)) {
    auto dst2 = zeroed<double>(5000);
    mem::NativeBackend<persist::CpuPersist<persist::FlushKind::kClwb>> cpu({}, 1);
    scheme::copy_durable(cpu, dst2.get() + 1, src.data(), 4999);
    EXPECT_EQ(std::vector<double>(dst2.get() + 1, dst2.get() + 5000),
              std::vector<double>(src.begin(), src.end() - 1));
  }
}

TEST(SchemeCheckpointCopy, BackendPathIsVisibleStoreByStoreAndDurableOnReturn) {
  const std::size_t n = scheme::kParallelCopyMin + 1000;  // large enough to be split over threads
  const auto src = pattern(n);
  auto dst = zeroed<double>(n);
  CrashBackend be(3, /*threads=*/3);
  scheme::copy_durable_parallel(be, {{dst.get(), src.data(), n}});
  EXPECT_EQ(be.fences(), 3u);      // one per thread's chunk
  EXPECT_GE(be.ops(), n + n / 8);  // every store and every line flush went through
  be.apply_crash_durable_only();   // only what was made durable survives
  EXPECT_EQ(std::vector<double>(dst.get(), dst.get() + n), src);
}

struct Partial {
  std::size_t elems, parts;
  std::unique_ptr<double[], FreeDeleter> out = zeroed<double>(elems);
  std::unique_ptr<double[], FreeDeleter> copies = zeroed<double>(2 * elems);
  std::unique_ptr<scheme::PartState[], FreeDeleter> states = zeroed<scheme::PartState>(parts);
  scheme::PartialCopier pc{out.get(), copies.get(), states.get(), elems, parts};
  void fill(double v) {
    for (std::size_t e = 0; e < elems; ++e) out[e] = v + static_cast<double>(e);
  }
};

TEST(SchemePartialCopy, PartsTileTheOutputExactlyForAnySize) {
  for (std::size_t elems : {1u, 5u, 31u, 32u, 33u, 1000u}) {
    for (std::size_t parts : {1u, 32u, 64u}) {
      Partial p{elems, parts};
      EXPECT_EQ(p.pc.part_begin(0), 0u);
      EXPECT_EQ(p.pc.part_begin(parts), elems);
      for (std::size_t e = 0; e < elems; ++e) {
        const std::size_t q = p.pc.part_of(e);
        ASSERT_LE(p.pc.part_begin(q), e);
        ASSERT_LT(e, p.pc.part_begin(q + 1)) << elems << " " << parts << " " << e;
      }
      if (elems >= parts) {  // 1/X of the output per outer iteration, give or take one element
        for (std::size_t q = 0; q < parts; ++q)
          EXPECT_LE(p.pc.part_begin(q + 1) - p.pc.part_begin(q), elems / parts + 1);
      }
    }
  }
}

TEST(SchemePartialCopy, SaveCyclesPartsAndSlotsAndRestoreUsesTheLatestCopy) {
  Partial p{100, 4};
  CrashBackend be;
  for (std::size_t t = 0; t < 6; ++t) {  // outer iterations 0..5: parts 0,1,2,3,0,1
    p.fill(100.0 * static_cast<double>(t + 1));
    p.pc.save(be, t, t + 1);
  }
  EXPECT_EQ(p.pc.latest(be, 0, 99).done, 5u);  // saved at t = 4 (slot 1); t = 0 in slot 0
  EXPECT_EQ(p.pc.latest(be, 0, 4).done, 1u);   // newest copy no newer than the limit
  EXPECT_EQ(p.pc.latest(be, 2, 99).done, 3u);
  EXPECT_EQ(p.pc.latest(be, 2, 2).slot, -1);  // nothing that old: recompute from zero
  std::vector<std::tuple<std::size_t, std::size_t, std::uint64_t>> pieces;
  p.fill(-1.0);
  p.pc.restore(be, 20, 60, 99, [&](std::size_t lo, std::size_t hi, std::uint64_t d) {
    pieces.emplace_back(lo, hi, d);
  });
  ASSERT_EQ(pieces.size(), 3u);  // parts 0 (..25), 1 (25..50), 2 (50..)
  EXPECT_EQ(pieces[0], std::make_tuple(20u, 25u, 5u));
  EXPECT_EQ(pieces[1], std::make_tuple(25u, 50u, 6u));
  EXPECT_EQ(pieces[2], std::make_tuple(50u, 60u, 3u));
  EXPECT_EQ(p.out[20], 500.0 + 20);
  EXPECT_EQ(p.out[30], 600.0 + 30);
  EXPECT_EQ(p.out[55], 300.0 + 55);
  EXPECT_EQ(p.out[19], -1.0 + 19);  // outside the range: untouched
}

TEST(SchemePartialCopy, CrashDuringASaveKeepsThePreviousCycleOfThatPart) {
  std::uint64_t total = 0;
  {
    Partial p{64, 2};
    CrashBackend be;
    p.pc.save(be, 0, 1);
    total = be.ops();
  }
  for (std::uint64_t k = 1; k <= total; ++k) {
    Partial p{64, 2};
    CrashBackend be(k);
    p.fill(10.0);
    p.pc.save(be, 0, 1);  // part 0, cycle 0 (slot 0)
    p.pc.save(be, 1, 2);
    be.forget();
    p.fill(30.0);
    be.arm(k);
    try {
      p.pc.save(be, 2, 3);  // part 0 again, cycle 1 (slot 1)
    } catch (const Crash&) {
    }
    be.apply_crash();
    const auto l = p.pc.latest(be, 0, 99);
    ASSERT_GE(l.slot, 0);
    EXPECT_TRUE(l.done == 1 || l.done == 3) << k;
    p.fill(-5.0);
    p.pc.restore(be, 0, 32, 99, [](std::size_t, std::size_t, std::uint64_t) {});
    for (std::size_t e = 0; e < 32; ++e)
      ASSERT_EQ(p.out[e], (l.done == 1 ? 10.0 : 30.0) + static_cast<double>(e))
          << "k " << k << " e " << e;
  }
}

}  // namespace
}  // namespace pmlab::scheme_test
