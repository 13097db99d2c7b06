// The non-inclusive LLC (cachegrind's policy, 1 core): private copies survive LLC evictions, writes
// stay exact.
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::ParamsBuilder;

// 1 core; L1 one set of 4 ways; LLC one set of 2 ways (smaller than L1: allowed when not
// inclusive).
SimParams tiny(bool inclusive) {
  SimParams p = ParamsBuilder().l1(1, 4).llc(1, 2).build();
  p.inclusive_llc = inclusive;
  return p;
}

TEST(SimInclusion, NonInclusiveNeedsOneCore) {
  SimParams p = ParamsBuilder().cores(2).build();
  p.inclusive_llc = false;
  try {
    p.validate();
    FAIL() << "accepted a non-inclusive LLC with 2 cores";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("cores = 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Machine{tiny(true)}, Error);  // an inclusive LLC must hold what L1 holds
  EXPECT_NO_THROW(Machine{tiny(false)});
}

TEST(SimInclusion, LlcEvictionKeepsTheL1CopyAndCleansIt) {
  for (bool inclusive : {false, true}) {
    SimParams p = tiny(false);
    if (inclusive) p = ParamsBuilder().l1(1, 2).llc(1, 2).build();  // the smallest inclusive shape
    Machine m(p);
    m.store(0, LineAddr(0));
    m.load(0, LineAddr(1));
    m.load(0, LineAddr(2));  // the LLC's LRU line is 0
    const LineState s = m.probe(0, LineAddr(0));
    EXPECT_FALSE(s.in_llc);
    EXPECT_EQ(s.in_l1, !inclusive) << inclusive;
    EXPECT_FALSE(s.dirty);  // written back once, with the newest bytes, either way
    EXPECT_EQ(m.stats().nvm.writes_for(WriteCause::kEviction), 1u);
    m.load(0, LineAddr(0));
    EXPECT_EQ(m.stats().llc().misses, inclusive ? 4u : 3u) << "non-inclusive: still an L1 hit";
    EXPECT_EQ(m.stats().coherence.back_invalidations,
              inclusive ? 2u : 0u);  // 0, then 1 for 0's refill
  }
}

TEST(SimInclusion, PrivateOnlyDirtyLinesAreWrittenExactlyOnce) {
  Machine m(tiny(false));
  m.store(0, LineAddr(0));
  m.load(0, LineAddr(1));
  m.load(0, LineAddr(2));   // 0 leaves the LLC (1 write), stays in L1 clean
  m.store(0, LineAddr(0));  // dirty in L1 only
  EXPECT_TRUE(m.probe(0, LineAddr(0)).dirty);
  m.flush(0, LineAddr(0), FlushMode::kClwb);
  EXPECT_EQ(m.stats().nvm.writes_for(WriteCause::kFlush), 1u);
  EXPECT_TRUE(m.probe(0, LineAddr(0)).in_l1);
  EXPECT_FALSE(m.probe(0, LineAddr(0)).dirty);
  m.flush(0, LineAddr(0), FlushMode::kClwb);  // clean now: no write
  EXPECT_EQ(m.stats().nvm.writes, 2u);
  m.store(0, LineAddr(0));
  m.write_back_all(WriteCause::kDrain);
  EXPECT_EQ(m.stats().nvm.writes_for(WriteCause::kDrain), 1u);
  m.store(0, LineAddr(0));
  for (std::uint64_t l = 3; l < 7; ++l)
    m.load(0, LineAddr(l));  // evicts 0 from L1: straight to NVM
  EXPECT_FALSE(m.probe(0, LineAddr(0)).in_l1);
  EXPECT_EQ(m.stats().nvm.writes_for(WriteCause::kEviction), 2u);
  m.store(0, LineAddr(0));
  m.flush(0, LineAddr(0), FlushMode::kClflushopt);
  const LineState gone = m.probe(0, LineAddr(0));
  EXPECT_FALSE(gone.in_l1 || gone.in_llc || gone.dirty);
  EXPECT_EQ(m.stats().nvm.writes_for(WriteCause::kFlush), 2u);
}

TEST(SimInclusion, CrashImageHoldsExactlyWhatReachedNvm) {
  testing::LineBuffer buf(8);
  SimBackend be(tiny(false), FlushMode::kClwb, 1);
  be.register_persistent(buf.mem.get(), buf.bytes);
  auto* x = reinterpret_cast<std::uint64_t*>(buf.line_ptr(0));
  be.store(x, std::uint64_t{1});
  (void)be.load(reinterpret_cast<std::uint64_t*>(buf.line_ptr(1)));
  (void)be.load(
      reinterpret_cast<std::uint64_t*>(buf.line_ptr(2)));  // x's line leaves the LLC: 1 is durable
  be.store(x, std::uint64_t{2});                           // only in L1
  EXPECT_EQ(be.image().durable(x), 1u);
  be.flush(x);
  EXPECT_EQ(be.image().durable(x), 2u);
  be.store(x, std::uint64_t{3});
  be.arm_crash(be.ops() + 1);
  EXPECT_THROW(be.store(x, std::uint64_t{4}), PowerFailure);
  be.apply_crash_image();
  EXPECT_EQ(*x, 2u);
}

TEST(SimInclusion, FilterIsExactWithANonInclusiveLlc) {
  for (std::uint64_t seed : {1, 2, 3}) {
    SimParams p = ParamsBuilder().l1(2, 2).llc(2, 2).build();
    p.inclusive_llc = false;
    SimParams off = p;
    off.same_line_filter = false;
    Machine with(p), without(off);
    for (Machine* m : {&with, &without}) {
      std::mt19937_64 rng(seed);
      std::uint64_t line = 0;
      for (int i = 0; i < 20000; ++i) {
        const std::uint64_t r = rng() % 100;
        if (r < 50) {
        } else if (r < 85) {
          line = rng() % 24;
        } else if (r < 93) {
          m->flush(0, LineAddr(rng() % 24), static_cast<FlushMode>(1 + rng() % 3));
          continue;
        } else if (r < 99) {
          m->fence(0);
          continue;
        } else {
          m->write_back_all(WriteCause::kPeriodic);
          continue;
        }
        if (rng() % 3 == 0)
          m->store(0, LineAddr(line));
        else
          m->load(0, LineAddr(line));
      }
    }
    nlohmann::json a = to_json(with.stats()), b = to_json(without.stats());
    EXPECT_GT(a["filtered_accesses"].get<std::uint64_t>(), 1000u);
    a.erase("filtered_accesses");
    b.erase("filtered_accesses");
    EXPECT_EQ(a, b) << "seed " << seed;
    for (std::uint64_t l = 0; l < 24; ++l) {
      const LineState x = with.probe(0, LineAddr(l)), y = without.probe(0, LineAddr(l));
      EXPECT_EQ(x.in_l1, y.in_l1);
      EXPECT_EQ(x.in_llc, y.in_llc);
      EXPECT_EQ(x.dirty, y.dirty);
    }
  }
}

}  // namespace
}  // namespace pmlab::sim
