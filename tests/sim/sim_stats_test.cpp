// JSON statistics: the documented keys and their values for a small known run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pmlab/sim/machine.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::ParamsBuilder;

TEST(SimStats, JsonHasTheDocumentedKeysAndValues) {
  Machine m(ParamsBuilder().cores(2).l1(1, 1).llc(1, 2).build());
  m.store(0, LineAddr(1));
  m.store(0, LineAddr(1));  // filtered
  m.load(1, LineAddr(2));
  m.load(1, LineAddr(3));  // evicts dirty line 1
  m.store(1, LineAddr(3));
  m.flush(1, LineAddr(3), FlushMode::kClwb);
  m.fence(1);
  m.store(0, LineAddr(2));  // core 1's copy of 2 was dropped when 3 replaced it in its L1
  m.write_back_all(WriteCause::kDrain);
  const nlohmann::json j = to_json(m.stats());
  for (const char* key : {"cycles", "core_cycles", "loads", "stores", "accesses", "filtered_accesses", "flushes",
                          "dirty_flushes", "fences", "fence_stall_cycles", "nvm_reads", "nvm_writes",
                          "nvm_writes_by_cause", "write_queue_stall_cycles", "levels", "coherence"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["loads"], 2);
  EXPECT_EQ(j["stores"], 4);
  EXPECT_EQ(j["accesses"], 6);
  EXPECT_EQ(j["filtered_accesses"], 1);
  EXPECT_EQ(j["nvm_reads"], 3);
  EXPECT_EQ(j["nvm_writes"], 3);
  EXPECT_EQ(j["nvm_writes_by_cause"]["eviction"], 1);
  EXPECT_EQ(j["nvm_writes_by_cause"]["flush"], 1);
  EXPECT_EQ(j["nvm_writes_by_cause"]["drain"], 1);
  EXPECT_EQ(j["nvm_writes_by_cause"]["periodic"], 0);
  EXPECT_EQ(j["levels"]["L1"]["hits"], 2);  // the filtered store and core 1's store to 3
  EXPECT_EQ(j["levels"]["L1"]["misses"], 4);
  EXPECT_EQ(j["levels"]["L2"]["misses"], 3);
  EXPECT_EQ(j["levels"]["L2"]["hits"], 1);
  EXPECT_EQ(j["core_cycles"].size(), 2u);
  EXPECT_EQ(j["cycles"], std::max(j["core_cycles"][0].get<std::uint64_t>(), j["core_cycles"][1].get<std::uint64_t>()));
}

}  // namespace
}  // namespace pmlab::sim
