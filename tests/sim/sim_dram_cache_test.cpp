// Seed 002 §3's DRAM cache in front of NVM: resident misses at DRAM latency, write-backs that
// stay in DRAM until dram_cache_flush, the crash image, and nothing at all while it is off.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../support/process.hpp"

#include "machine_probe.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::clk;
using testing::L;
using testing::LineBuffer;
using testing::ParamsBuilder;

// The spec's machine: ParamsBuilder's (1 GHz, L1 2 cycles, LLC 10 cycles, NVM read 100 ns =
// 100 cycles), a DRAM cache of 50 cycles that writes 21 cycles per line to NVM.
SimParams with_dram_cache(bool on = true) {
  SimParams p = ParamsBuilder().build();
  p.dram_cache.enabled = on;
  p.dram_cache.latency_cycles = 50;
  p.dram_cache.flush_cycles_per_line = 21;
  return p;
}

TEST(SimDramCache, AResidentMissCostsTheLlcLookupPlusDram) {
  Machine m(with_dram_cache());
  m.dram_cache_place(L(1), L(5));  // 4 resident lines
  std::uint64_t t = clk(m);
  m.load(0, L(1));
  // An L1 miss that also misses the LLC: the LLC lookup (10) + the DRAM cache (50) = 60.
  EXPECT_EQ(clk(m) - t, 60u);
  t = clk(m);
  m.load(0, L(9));  // not resident: the LLC lookup (10) + NVM (100 ns at 1 GHz) = 110
  EXPECT_EQ(clk(m) - t, 110u);
  const SimStats s = m.stats();
  ASSERT_TRUE(s.dram_cache.has_value());
  EXPECT_EQ(s.dram_cache->hits, 1u);
  EXPECT_EQ(s.nvm.reads, 1u);  // line 9 only
  EXPECT_EQ(s.dram_cache->placed_bytes, 4 * kCacheLineBytes);
}

TEST(SimDramCache, WriteBacksStayInDramUntilTheFlushWritesThemAtNvmBandwidth) {
  Machine m(with_dram_cache());
  m.dram_cache_place(L(1), L(5));
  for (std::uint64_t l = 1; l <= 4; ++l) {
    m.store(0, L(l));
    m.flush(0, L(l), FlushMode::kClwb);  // the write-back goes to DRAM
  }
  m.fence(0);
  SimStats s = m.stats();
  EXPECT_EQ(s.nvm.writes, 0u);
  EXPECT_EQ(s.dram_cache->absorbed_writes, 4u);
  EXPECT_EQ(s.dram_cache->dirty_lines, 4u);
  const std::uint64_t t = clk(m);
  m.dram_cache_flush(0, L(1), L(5));
  // 4 dirty lines at 21 cycles each: 4 NVM writes, done at t + 84.
  EXPECT_EQ(clk(m), t + 84);
  s = m.stats();
  EXPECT_EQ(s.nvm.writes, 4u);
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kFlush), 4u);
  EXPECT_EQ(s.dram_cache->flushed_lines, 4u);
  EXPECT_EQ(s.dram_cache->dirty_lines, 0u);
  // The lines stay resident and clean: a second flush writes nothing and costs nothing.
  m.dram_cache_flush(0, L(1), L(5));
  EXPECT_EQ(clk(m), t + 84);
  EXPECT_EQ(m.stats().nvm.writes, 4u);
}

TEST(SimDramCache, AnObjectThatDoesNotFitWholeStaysInNvm) {
  SimParams p = with_dram_cache();
  p.dram_cache.size_bytes = 4 * kCacheLineBytes;
  Machine m(p);
  m.dram_cache_place(L(1), L(4));    // 3 lines
  m.dram_cache_place(L(10), L(12));  // 2 more do not fit: refused, not split
  const std::uint64_t t = clk(m);
  m.load(0, L(10));
  EXPECT_EQ(clk(m) - t, 110u);  // from NVM
  EXPECT_EQ(m.stats().dram_cache->objects, 1u);
  EXPECT_EQ(m.stats().dram_cache->refused_objects, 1u);
}

// Four lines of doubles, persistent and placed, each stored once and written back with clwb +
// sfence: all four sit in DRAM.
struct FourLines {
  explicit FourLines(const SimParams& p) : be(p, FlushMode::kClwb, 1) {
    be.register_persistent(buf.mem.get(), buf.bytes);
    mem::dram_cache_place(be, buf.mem.get(), buf.bytes);
    for (std::size_t l = 0; l < 4; ++l) be.store(at(l), 1.0 + static_cast<double>(l));
    be.persist(buf.mem.get(), buf.bytes);
  }
  [[nodiscard]] double* at(std::size_t line) const {
    return buf.as<double>() + line * (kCacheLineBytes / sizeof(double));
  }
  void crash() {
    be.arm_crash(be.ops() + 1);
    EXPECT_THROW((void)be.load(at(0)), PowerFailure);
    be.apply_crash_image();
  }
  LineBuffer buf{4};
  SimBackend be;
};

TEST(SimDramCache, ACrashBeforeTheFlushLosesAllFourLinesAfterItNone) {
  {
    FourLines f(with_dram_cache());
    for (std::size_t l = 0; l < 4; ++l) EXPECT_EQ(f.be.image().durable(f.at(l)), 0.0) << l;
    f.crash();
    for (std::size_t l = 0; l < 4; ++l) EXPECT_EQ(*f.at(l), 0.0) << l;  // all four lost
    EXPECT_EQ(f.be.stats().dram_cache->lost_lines, 4u);
  }
  {
    FourLines f(with_dram_cache());
    mem::dram_cache_flush(f.be, f.buf.mem.get(), f.buf.bytes);
    f.crash();
    for (std::size_t l = 0; l < 4; ++l) EXPECT_EQ(*f.at(l), 1.0 + static_cast<double>(l)) << l;
    EXPECT_EQ(f.be.stats().dram_cache->lost_lines, 0u);
  }
}

TEST(SimDramCache, NvmReceivesWhatDramHeldNotBytesStoredSince) {
  FourLines f(with_dram_cache());
  f.be.store(f.at(0), 9.0);  // dirty in L1 again, not written back
  mem::dram_cache_flush(f.be, f.buf.mem.get(), f.buf.bytes);
  EXPECT_EQ(f.be.image().durable(f.at(0)), 1.0);
}

TEST(SimDramCache, TheNegativeControlDropsTheFlush) {
  FourLines f(with_dram_cache());
  f.be.set_mutation(mem::Mutation::kDramCacheNoFlush);
  mem::dram_cache_flush(f.be, f.buf.mem.get(), f.buf.bytes);
  EXPECT_EQ(f.be.image().durable(f.at(0)), 0.0);
  EXPECT_EQ(f.be.stats().dram_cache->flushes, 0u);
}

// Off (the default): placing and flushing change nothing, statistic for statistic, and the
// write-backs are durable at once.
TEST(SimDramCache, OffIsBitIdenticalToNoCalls) {
  const auto run = [](bool calls) {
    SimBackend be(with_dram_cache(false), FlushMode::kClwb, 1);
    LineBuffer buf(64);
    be.register_persistent(buf.mem.get(), buf.bytes);
    if (calls) mem::dram_cache_place(be, buf.mem.get(), buf.bytes);
    auto* d = buf.as<double>();
    for (std::size_t i = 0; i < buf.bytes / sizeof(double); ++i)
      be.store(d + i, be.load(d + (i * 7) % (buf.bytes / sizeof(double))) + 1.0);
    be.persist(buf.mem.get(), buf.bytes);
    if (calls) mem::dram_cache_flush(be, buf.mem.get(), buf.bytes);
    EXPECT_EQ(be.image().durable(d + 8), 1.0);
    return std::pair{to_json(be.stats()).dump(), be.ops()};
  };
  const auto with = run(true), without = run(false);
  EXPECT_EQ(with.first, without.first);
  EXPECT_EQ(with.second, without.second);
  EXPECT_EQ(with.first.find("dram_cache"), std::string::npos);
}

// On, with nothing placed: every figure but the DRAM cache's own block is what off gives.
TEST(SimDramCache, OnWithNothingPlacedChangesNoOtherFigure) {
  const auto run = [](bool on) {
    Machine m(with_dram_cache(on));
    for (std::uint64_t l = 0; l < 200; ++l) {
      m.store(0, L(l * 3));
      if (l % 5 == 0) m.flush(0, L(l), FlushMode::kClwb);
    }
    nlohmann::json j = to_json(m.stats());
    j.erase("dram_cache");
    return j.dump();
  };
  EXPECT_EQ(run(true), run(false));
}

// The CLI: `pmlab sim --json` reports the DRAM cache; `pmlab crash` with it on passes ipv and
// catches the control, which does not apply with it off.
TEST(SimDramCacheCli, CrashPassesIpvAndCatchesTheControlOnlyWithTheCacheOn) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("pmlab-dram-cache-{}", ::getpid());
  fs::create_directories(dir);
  const std::string log = (dir / "log").string();
  const auto sim =
      pmlab::testing::run_process({PMLAB_BINARY, "sim", "jacobi", "--scheme", "ipv", "--n", "64",
                                   "--bs", "8", "--dram-cache", "on", "--json", "--quiet"},
                                  log);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const nlohmann::json j = nlohmann::json::parse(sim.out);
  ASSERT_TRUE(j.contains("dram_cache")) << sim.out;
  EXPECT_GT(j["dram_cache"]["hits"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["dram_cache"]["flushed_lines"].get<std::uint64_t>(), 0u);
  const std::vector<std::string> crash{PMLAB_BINARY, "crash", "jacobi", "--scheme", "ipv",
                                       "--trials",   "40",    "--seed", "11"};
  auto on = crash;
  on.insert(on.end(), {"--dram-cache", "on"});
  const auto ok = pmlab::testing::run_process(on, log);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("dram-cache-no-flush"), std::string::npos) << ok.out;
  auto mutated = on;
  mutated.insert(mutated.end(), {"--mutate", "dram-cache-no-flush"});
  EXPECT_EQ(pmlab::testing::run_process(mutated, log).exit_code, 1);
  auto off = crash;
  off.insert(off.end(), {"--mutate", "dram-cache-no-flush"});
  EXPECT_EQ(pmlab::testing::run_process(off, log).exit_code, 2);  // does not apply
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pmlab::sim
