// Parameter validation messages and the paper presets' values (LP Table II, thesis Table 3.1).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/presets.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

// Asserts that validate() throws kInvalidArgument with a message containing `needle`.
void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected pmlab::Error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SimParams, DefaultsAreValid) {
  SimParams p;
  EXPECT_NO_THROW(p.validate());
  EXPECT_EQ(p.l1.sets(), 128u);  // 64KB / (8 ways x 64B)
  EXPECT_EQ(p.levels(), 2);
}

TEST(SimParams, RejectsImpossibleValuesWithTheFieldName) {
  const std::vector<std::pair<std::function<void(SimParams&)>, std::string>> cases{
      {[](SimParams& p) { p.cores = 0; }, "cores"},
      {[](SimParams& p) { p.cores = 65; }, "cores"},
      {[](SimParams& p) { p.threads = 0; }, "threads"},
      {[](SimParams& p) { p.freq_ghz = 0.0; }, "freq_ghz"},
      {[](SimParams& p) { p.l1.ways = 0; }, "l1.ways"},
      {[](SimParams& p) { p.l1.size_bytes = 0; }, "l1.size_bytes"},
      {[](SimParams& p) { p.llc.size_bytes = 1000; }, "not a multiple"},
      {[](SimParams& p) { p.nvm.read_ns = -1.0; }, "nvm.read_ns"},
      {[](SimParams& p) { p.nvm.write_ns = 0.0; }, "nvm.write_ns"},
      {[](SimParams& p) { p.nvm.write_queue_entries = 0; }, "write_queue_entries"},
      {[](SimParams& p) { p.nvm.write_units = 0; }, "write_units"},
      {[](SimParams& p) { p.llc.size_bytes = 32 * 1024; }, "inclusive"},
      {[](SimParams& p) {
         p.l2 = LevelParams{"L2", 32 * 1024, 8, Cycles{5}};
       },
       "inclusive"},
  };
  for (const auto& [mutate, needle] : cases) {
    auto params = std::make_unique<SimParams>();
    mutate(*params);
    expect_invalid([&] { params->validate(); }, needle);
  }
}

TEST(SimParams, MachineConstructionValidates) {
  SimParams p;
  p.l1.ways = 0;
  expect_invalid([&] { Machine m(p); }, "ways");
}

TEST(SimParams, ReplacementNamesRoundTrip) {
  for (Replacement r : {Replacement::kLru, Replacement::kRandom, Replacement::kSrrip})
    EXPECT_EQ(replacement_from_string(to_string(r)), r);
  expect_invalid([] { (void)replacement_from_string("fifo"); }, "fifo");
  EXPECT_EQ(flush_mode_from_string("clflushopt"), FlushMode::kClflushopt);
  expect_invalid([] { (void)flush_mode_from_string("pcommit"); }, "pcommit");
}

TEST(SimPresets, LpIsca18MatchesTableII) {
  const SimParams p = lp_isca18();
  EXPECT_EQ(p.name, "lp-isca18");
  EXPECT_EQ(p.cores, 9);
  EXPECT_EQ(p.threads, 8);
  EXPECT_DOUBLE_EQ(p.freq_ghz, 2.0);
  EXPECT_EQ(p.l1.size_bytes, 64u * 1024);
  EXPECT_EQ(p.l1.ways, 8u);
  EXPECT_EQ(p.l1.hit_latency, Cycles{2});
  EXPECT_FALSE(p.l2.has_value());
  EXPECT_EQ(p.llc.name, "L2");
  EXPECT_EQ(p.llc.size_bytes, 512u * 1024);
  EXPECT_EQ(p.llc.ways, 8u);
  EXPECT_EQ(p.llc.hit_latency, Cycles{11});
  EXPECT_EQ(p.nvm_read_cycles(), Cycles{300});   // 150 ns at 2 GHz
  EXPECT_EQ(p.nvm_write_cycles(), Cycles{600});  // 300 ns at 2 GHz
  EXPECT_EQ(p.nvm.write_queue_entries, 64u);
  EXPECT_EQ(preset("lp-isca18").llc.size_bytes, p.llc.size_bytes);
}

TEST(SimPresets, Pact17MatchesThesisTable31) {
  const SimParams p = pact17();
  EXPECT_EQ(p.cores, 8);
  EXPECT_EQ(p.threads, 8);
  EXPECT_EQ(p.l1.size_bytes, 64u * 1024);
  EXPECT_EQ(p.l1.ways, 16u);
  EXPECT_EQ(p.l1.hit_latency, Cycles{2});
  EXPECT_EQ(p.llc.size_bytes, 8u * 1024 * 1024);  // 1MB per core x 8
  EXPECT_EQ(p.llc.ways, 16u);
  EXPECT_EQ(p.llc.hit_latency, Cycles{20});
  EXPECT_EQ(p.nvm_read_cycles(), Cycles{120});   // 60 ns at 2 GHz
  EXPECT_EQ(p.nvm_write_cycles(), Cycles{300});  // 150 ns at 2 GHz
  EXPECT_EQ(pact17(4).llc.size_bytes, 4u * 1024 * 1024);
}

TEST(SimPresets, CachegrindLikeBuilderAndUnknownNames) {
  const SimParams p = cachegrind_like({32 * 1024, 8, 64}, {8 * 1024 * 1024, 16, 64});
  EXPECT_EQ(p.cores, 1);
  EXPECT_EQ(p.l1.name, "D1");
  EXPECT_EQ(p.l1.sets(), 64u);
  EXPECT_EQ(p.llc.name, "LL");
  EXPECT_EQ(p.llc.sets(), 8192u);
  EXPECT_EQ(p.llc.replacement, Replacement::kLru);
  expect_invalid(
      [] {
        (void)cachegrind_like({32 * 1024, 8, 32}, {8 * 1024 * 1024, 16, 64});
      },
      "line size 32");
  expect_invalid([] { (void)preset("gem5"); }, "lp-isca18, pact17");
}

}  // namespace
}  // namespace pmlab::sim
