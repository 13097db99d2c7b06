// The simulator's shortcuts are exact: with and without the same-line filter or the lean miss
// path, every statistic and line state is equal.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::ParamsBuilder;

struct Config {
  const char* name;
  ParamsBuilder builder;
};

// A trace with much same-line reuse, cross-core sharing, flushes, fences and cleanings.
void run_trace(Machine& m, std::uint64_t seed, int cores) {
  std::mt19937_64 rng(seed);
  std::uint64_t line = 0;
  for (int i = 0; i < 20000; ++i) {
    const int core = static_cast<int>(rng() % static_cast<std::uint64_t>(cores));
    const std::uint64_t r = rng() % 100;
    if (r < 50) {
      // keep `line` (same-line reuse)
    } else if (r < 85) {
      line = rng() % 48;
    } else if (r < 92) {
      m.flush(core, LineAddr(rng() % 48), static_cast<FlushMode>(1 + rng() % 3));
      continue;
    } else if (r < 97) {
      m.fence(core);
      continue;
    } else if (r < 98) {
      m.write_back_all(WriteCause::kPeriodic);
      continue;
    }
    if (rng() % 3 == 0)
      m.store(core, LineAddr(line));
    else
      m.load(core, LineAddr(line));
  }
}

// Every core's view of every line the trace touches is the same on both machines.
void expect_same_lines(const Machine& a, const Machine& b, const std::string& what) {
  for (int c = 0; c < a.cores(); ++c)
    for (std::uint64_t l = 0; l < 48; ++l) {
      const LineState x = a.probe(c, LineAddr(l)), y = b.probe(c, LineAddr(l));
      EXPECT_EQ(x.in_l1, y.in_l1) << what;
      EXPECT_EQ(x.in_l2, y.in_l2) << what;
      EXPECT_EQ(x.in_llc, y.in_llc) << what;
      EXPECT_EQ(x.dirty, y.dirty) << what;
      EXPECT_EQ(x.private_copies, y.private_copies) << what;
    }
}

TEST(SimFilter, IsExactForEveryPolicyAndHierarchyShape) {
  const Config configs[] = {
      {"lru-2lvl", ParamsBuilder().cores(3).l1(2, 2).llc(4, 4)},
      {"srrip-2lvl",
       ParamsBuilder().cores(3).l1(2, 2, Replacement::kSrrip).llc(4, 4, Replacement::kSrrip)},
      {"random-2lvl",
       ParamsBuilder().cores(3).l1(2, 2, Replacement::kRandom).llc(4, 4, Replacement::kRandom)},
      {"lru-3lvl", ParamsBuilder().cores(2).l1(1, 2).l2(2, 2).llc(4, 4)},
      {"lru-1core", ParamsBuilder().l1(1, 1).llc(2, 1)},
      // Periodic cleaning clears the entries of the lines it cleans.
      {"periodic-2lvl", ParamsBuilder().cores(3).l1(2, 2).llc(4, 4).periodic(700)},
      {"periodic-3lvl", ParamsBuilder().cores(2).l1(1, 2).l2(2, 2).llc(4, 4).periodic(90)},
      {"periodic-noninclusive", ParamsBuilder().l1(2, 2).llc(2, 1).inclusive(false).periodic(500)},
  };
  for (const Config& cfg : configs) {
    for (std::uint64_t seed : {1, 2, 3}) {
      Machine with(ParamsBuilder(cfg.builder).filter(true).build());
      Machine without(ParamsBuilder(cfg.builder).filter(false).build());
      const int cores = with.cores();
      run_trace(with, seed, cores);
      run_trace(without, seed, cores);
      nlohmann::json a = to_json(with.stats()), b = to_json(without.stats());
      EXPECT_GT(a["filtered_accesses"].get<std::uint64_t>(), 1000u) << cfg.name;
      EXPECT_EQ(b["filtered_accesses"].get<std::uint64_t>(), 0u);
      a.erase("filtered_accesses");
      b.erase("filtered_accesses");
      EXPECT_EQ(a, b) << cfg.name << " seed " << seed;
      expect_same_lines(with, without, cfg.name);
    }
  }
}

// Hierarchy::lean_load_miss against access() on the machines it applies to (8-way hashed sets,
// LRU, one private level), including remote owners, dirty victims, a non-inclusive LLC and
// periodic cleaning; the trace reuses few enough lines that most loads miss L1 and hit the LLC.
TEST(SimLeanMiss, IsExactOnEveryMachineItAppliesTo) {
  const Config configs[] = {
      {"3-core", ParamsBuilder().cores(3).l1(1, 8).llc(4, 8)},
      {"3-core-interval", ParamsBuilder().cores(3).l1(1, 8).llc(4, 8).interval(4, 32, 4, 3)},
      {"2-core-periodic", ParamsBuilder().cores(2).l1(1, 8).llc(2, 8).periodic(400)},
      {"1-core-noninclusive", ParamsBuilder().l1(1, 8).llc(2, 8).inclusive(false)},
      {"16-way", ParamsBuilder().cores(2).l1(1, 16).llc(2, 16)},
  };
  for (const Config& cfg : configs) {
    for (std::uint64_t seed : {1, 2, 3}) {
      Machine lean(ParamsBuilder(cfg.builder).lean_misses(true).build());
      Machine general(ParamsBuilder(cfg.builder).lean_misses(false).build());
      const int cores = lean.cores();
      run_trace(lean, seed, cores);
      run_trace(general, seed, cores);
      const nlohmann::json a = to_json(lean.stats()), b = to_json(general.stats());
      EXPECT_GT(lean.stats().llc().hits, 1000u) << cfg.name;
      EXPECT_EQ(a, b) << cfg.name << " seed " << seed;
      for (int c = 0; c < cores; ++c) EXPECT_EQ(lean.clock(c), general.clock(c)) << cfg.name;
      expect_same_lines(lean, general, cfg.name);
    }
  }
}

}  // namespace
}  // namespace pmlab::sim
