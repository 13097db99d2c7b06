// Crash image: registration, capture on write-back, armed power failures, applying the image.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::LineBuffer;
using testing::ParamsBuilder;

TEST(SimCrashImage, RegistrationCopiesLiveBytesAndRejectsOverlaps) {
  LineBuffer buf(4);
  buf.as<double>()[0] = 1.5;
  CrashImage img;
  img.add_range(buf.line_ptr(0), 2 * testing::kLine);
  buf.as<double>()[0] = 9.0;  // live changes after registration are not durable
  EXPECT_EQ(img.durable(buf.as<double>()), 1.5);
  EXPECT_TRUE(img.covers(buf.line_ptr(1) + 63));
  EXPECT_FALSE(img.covers(buf.line_ptr(2)));
  EXPECT_THROW(img.add_range(buf.line_ptr(1), 8), Error);
  EXPECT_THROW(img.add_range(buf.line_ptr(0) + 4, 200), Error);
  EXPECT_THROW(img.add_range(nullptr, 8), Error);
  EXPECT_THROW(img.add_range(buf.line_ptr(3), 0), Error);
  EXPECT_THROW((void)img.durable(reinterpret_cast<const double*>(buf.line_ptr(3))), Error);
  img.add_range(buf.line_ptr(2), 16);  // adjacent ranges are fine
  EXPECT_EQ(img.range_count(), 2u);
  EXPECT_EQ(img.shadow_of(buf.line_ptr(2)).size(), 16u);
}

TEST(SimCrashImage, CaptureCopiesOnlyBytesInsideRangesOfAPartialLine) {
  LineBuffer buf(2);
  CrashImage img;
  // Two ranges share line 0: [8, 24) and [40, 72), the second running into line 1.
  img.add_range(buf.line_ptr(0) + 8, 16);
  img.add_range(buf.line_ptr(0) + 40, 32);
  std::memset(buf.mem.get(), 0xAB, buf.bytes);
  img.capture_line(buf.line(0));
  auto a = img.shadow_of(buf.line_ptr(0) + 8);
  auto b = img.shadow_of(buf.line_ptr(0) + 40);
  for (std::byte x : a) EXPECT_EQ(x, std::byte{0xAB});
  for (std::size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i], i < 24 ? std::byte{0xAB} : std::byte{0}) << i;
  // Restoring writes only the ranges: the bytes between them keep their live value.
  std::memset(buf.mem.get(), 0x11, buf.bytes);
  img.restore_to_live();
  EXPECT_EQ(buf.mem.get()[0], 0x11);
  EXPECT_EQ(buf.mem.get()[8], 0xAB);
  EXPECT_EQ(buf.mem.get()[30], 0x11);
  EXPECT_EQ(buf.mem.get()[70], 0x00);
}

TEST(SimCrash, ArmedCrashThrowsBeforeTheKthOp) {
  SimBackend be(ParamsBuilder().build());
  LineBuffer buf(1);
  auto* x = buf.as<std::uint64_t>();
  be.register_persistent(x, 8 * sizeof(std::uint64_t));
  be.arm_crash(3);
  be.store(x + 0, std::uint64_t{1});
  be.store(x + 1, std::uint64_t{2});
  try {
    be.store(x + 2, std::uint64_t{3});
    FAIL() << "no power failure";
  } catch (const PowerFailure& pf) {
    EXPECT_EQ(pf.op(), 3u);
  }
  EXPECT_TRUE(be.crashed());
  EXPECT_EQ(be.ops(), 2u);
  EXPECT_EQ(x[2], 0u);  // op 3 never happened
  EXPECT_EQ(x[1], 2u);  // live memory still has the volatile value until the image is applied
  be.apply_crash_image();
  EXPECT_EQ(x[0], 0u);  // never written back
  EXPECT_EQ(x[1], 0u);
  EXPECT_FALSE(be.crashed());
  EXPECT_FALSE(be.machine().probe(0, line_of(x)).in_llc);  // caches are empty
}

TEST(SimCrash, ArmingRejectsPastPointsAndDisarmWorks) {
  SimBackend be(ParamsBuilder().build());
  LineBuffer buf(1);
  be.store(buf.as<double>(), 1.0);
  EXPECT_THROW(be.arm_crash(1), Error);
  EXPECT_THROW(be.arm_crash(0), Error);
  be.arm_crash(2);
  be.disarm_crash();
  EXPECT_NO_THROW(be.store(buf.as<double>(), 2.0));
}

// A tiny eager program: data[i] = i + 1, and every odd i is persisted (flush + fence).
// Ops: store (1), and for odd i flush (1) + fence (1).
void eager_program(SimBackend& be, std::uint64_t* data, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    be.store(data + i * 8, std::uint64_t{i + 1});  // one line per element
    if (i % 2 == 1) be.persist(data + i * 8, sizeof(std::uint64_t));
  }
}

TEST(SimCrash, EveryCrashPointLeavesExactlyTheFlushedValues) {
  constexpr std::size_t n = 12;
  for (FlushMode mode : {FlushMode::kClflush, FlushMode::kClflushopt, FlushMode::kClwb}) {
    // Count the ops of a fault-free run first.
    std::uint64_t total = 0;
    {
      SimBackend be(ParamsBuilder().llc(64, 8).build(), mode);
      LineBuffer buf(n);
      eager_program(be, buf.as<std::uint64_t>(), n);
      total = be.ops();
    }
    ASSERT_EQ(total, n + 2 * (n / 2));
    for (std::uint64_t k = 1; k <= total; ++k) {
      SimBackend be(ParamsBuilder().llc(64, 8).build(), mode);
      LineBuffer buf(n);
      auto* data = buf.as<std::uint64_t>();
      be.register_persistent(data, buf.bytes);
      be.arm_crash(k);
      EXPECT_THROW(eager_program(be, data, n), PowerFailure) << k;
      be.apply_crash_image();
      // Replay the op numbering: element i's store is op s_i, its flush (odd i) op s_i + 1.
      std::uint64_t op = 0;
      for (std::size_t i = 0; i < n; ++i) {
        ++op;  // store
        std::uint64_t expect = 0;
        if (i % 2 == 1) {
          ++op;                          // flush
          if (op < k) expect = i + 1;    // the flush happened: durable even before the fence (ADR)
          ++op;                          // fence
        }
        EXPECT_EQ(data[i * 8], expect) << to_string(mode) << " k=" << k << " i=" << i;
      }
    }
  }
}

TEST(SimCrash, EvictionsMakeUnflushedDataDurable) {
  SimBackend be(ParamsBuilder().l1(1, 1).llc(1, 2).build());
  LineBuffer buf(8);
  auto* data = buf.as<double>();
  be.register_persistent(data, buf.bytes);
  for (std::size_t i = 0; i < 8; ++i) be.store(data + i * 8, static_cast<double>(i + 1));
  be.arm_crash(be.ops() + 1);
  EXPECT_THROW((void)be.load(data), PowerFailure);
  be.apply_crash_image();
  // The LLC holds the last two lines; the six before were evicted dirty, i.e. written back.
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(data[i * 8], i < 6 ? static_cast<double>(i + 1) : 0.0) << i;
  EXPECT_EQ(be.stats().nvm.writes_for(WriteCause::kEviction), 6u);
}

TEST(SimCrash, CrashInsideParallelForRestoresSequentialStateAndCanRerun) {
  SimBackend be(ParamsBuilder().cores(4).build(), FlushMode::kClwb);
  LineBuffer buf(16);
  auto* data = buf.as<double>();
  be.register_persistent(data, buf.bytes);
  auto kernel = [&] {
    be.parallel_for(0, 16, [&](std::size_t i) {
      be.store(data + i * 8, 1.0);
      be.persist(data + i * 8, sizeof(double));
      be.region_end({0, static_cast<std::uint32_t>(i)});
    });
  };
  be.arm_crash(21);
  EXPECT_THROW(kernel(), PowerFailure);
  EXPECT_EQ(be.current_thread(), 0);
  // Round-robin: iterations 0, 4, 8, 12, 1, 5, ... each take 3 ops (store, flush, fence), so
  // six committed by op 18; the seventh (iteration 9) stored (op 19) and flushed (op 20).
  ASSERT_EQ(be.commits().size(), 6u);
  be.apply_crash_image();
  int durable = 0;
  for (std::size_t i = 0; i < 16; ++i) durable += data[i * 8] == 1.0 ? 1 : 0;
  EXPECT_EQ(durable, 7);  // the seventh's flush was accepted before its fence: durable (ADR)
  EXPECT_EQ(data[9 * 8], 1.0);
  kernel();  // recovery-style rerun after the image was applied
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(data[i * 8], 1.0);
}

TEST(SimCrash, CommitPointsBracketTheRegionCommit) {
  // Each region: store, flush, fence, region_end. A crash at commit.ops + 1 (just after the
  // commit) or at commit.ops (its fence) leaves the region durable: the flush was accepted by
  // the controller. A crash at commit.ops - 1 (its flush) does not.
  auto program = [](SimBackend& be, const LineBuffer& buf) {
    for (std::size_t i = 0; i < 4; ++i) {
      be.store(reinterpret_cast<double*>(buf.line_ptr(i)), 1.0);
      be.persist(buf.line_ptr(i), 8);
      be.region_end({0, static_cast<std::uint32_t>(i)});
    }
  };
  std::vector<CommitPoint> commits;
  {
    SimBackend be(ParamsBuilder().build(), FlushMode::kClflushopt);
    LineBuffer buf(4);
    program(be, buf);
    commits = be.commits();
  }
  ASSERT_EQ(commits.size(), 4u);
  const std::uint64_t total = commits.back().ops;
  for (const CommitPoint& c : commits) {
    for (std::uint64_t k : {c.ops + 1, c.ops, c.ops - 1}) {
      if (k > total) continue;
      SimBackend be(ParamsBuilder().build(), FlushMode::kClflushopt);
      LineBuffer buf(4);
      be.register_persistent(buf.mem.get(), buf.bytes);
      be.arm_crash(k);
      EXPECT_THROW(program(be, buf), PowerFailure) << k;
      be.apply_crash_image();
      const std::size_t region = c.region.inner;
      const double expect = k >= c.ops ? 1.0 : 0.0;
      EXPECT_EQ(*reinterpret_cast<double*>(buf.line_ptr(region)), expect) << region << " k=" << k;
      EXPECT_EQ(be.commits().size(), k == c.ops + 1 ? region + 1 : region);
    }
  }
}

TEST(SimCrash, RunsAreDeterministic) {
  auto run = [] {
    SimBackend be(ParamsBuilder().cores(2).l1(2, 2).llc(4, 2).build(), FlushMode::kClflushopt);
    LineBuffer buf(32);
    auto* d = buf.as<double>();
    be.parallel_for(0, 32, [&](std::size_t i) {
      be.store(d + (i * 8 + 3 * i) % (32 * 8), static_cast<double>(i));
      if (i % 3 == 0) be.persist(d + i * 8, 8);
    });
    return std::pair{be.ops(), to_json(be.stats()).dump()};
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace pmlab::sim
