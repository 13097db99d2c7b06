// `pmlab pool info|check|rm|reset`: check reports the counts the next run's recovery reports and
// leaves the file byte-identical (a pmlab run's pool and an lp::Loop pool); rm and reset refuse
// what is unsafe, and reset returns a pool left running to a clean start.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "../support/cli_fixture.hpp"
#include "pmlab/lp/loop.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::testing {
namespace {

class PoolCli : public PmlabCliTest {
 protected:
  PoolCli() : PmlabCliTest("pmlab-pool") {}
  [[nodiscard]] std::string bytes() const {
    std::ifstream in(pool(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
};

// A completed tmm run made to look interrupted (state running) with one value of C damaged:
// check finds the regions holding it inconsistent, the next run's recovery the same counts.
TEST_F(PoolCli, CheckPredictsTheNextRunsRecoveryAndChangesNothing) {
  auto r = pmlab({"run", "tmm", "--scheme", "lp", "--n", "48", "--bs", "16", "--pool", pool()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    pool::Pool p = pool::Pool::open(pool());
    p.array<double>("c")[5] += 1.0;
    p.set_state(pool::RunState::kRunning);
  }
  const std::string before = bytes();
  // check only reads: it opens the pool read-only under a shared lock, beside another reader
  // (a run, which locks exclusively, would be refused as busy).
  std::optional<pool::Pool> reader(pool::Pool::open_read_only(pool()));
  const auto c = pmlab({"pool", "check", "--pool", pool(), "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(bytes(), before) << "pool check changed the pool";
  const auto check = nlohmann::json::parse(c.out)["recovery"];
  EXPECT_GE(check["regions_inconsistent"].get<int>(), 1) << c.out;  // tmm's regions overlap in C
  const auto t = pmlab({"pool", "check", "--pool", pool()});
  EXPECT_NE(t.out.find("the pool was not changed"), std::string::npos) << t.out;
  EXPECT_EQ(pmlab({"run", "--pool", pool()}).exit_code, 3);  // a run is busy beside the reader
  EXPECT_EQ(bytes(), before);
  reader.reset();

  const auto run = pmlab({"run", "--pool", pool(), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rec = nlohmann::json::parse(run.out)["recovery"];
  for (const char* k : {"regions_validated", "regions_inconsistent", "regions_unwritten",
                        "regions_recomputed", "resume_point"})
    EXPECT_EQ(check[k], rec[k]) << k << "\ncheck: " << c.out << "\nrun: " << run.out;
  const auto done = nlohmann::json::parse(pmlab({"pool", "check", "--pool", pool(), "--json"}).out);
  EXPECT_EQ(done["state"], "done");
}

TEST_F(PoolCli, ChecksAnInterruptedLoopPool) {
  const std::uint64_t n = 1000;
  {
    lp::Loop loop(pool(), n, {{"z", n}}, {.outputs = {"z"}, .chunk = 100}, {},
                  {.threads = 1, .warn_if_emulated = false});
    double* z = loop.array("z");
    EXPECT_THROW(loop.run([&](std::uint64_t, std::uint64_t k) {
      if (k == 4) throw std::runtime_error("stop");
      for (std::uint64_t i = k * 100; i < k * 100 + 100; ++i) z[i] = 2.0;
    }),
                 std::runtime_error);
  }
  const std::string before = bytes();
  const auto c = pmlab({"pool", "check", "--pool", pool(), "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(bytes(), before);
  const auto doc = nlohmann::json::parse(c.out);
  EXPECT_EQ(doc["kind"], "loop");
  EXPECT_EQ(doc["recovery"]["regions_validated"], 4);
  EXPECT_EQ(doc["recovery"]["regions_unwritten"], 6);
  lp::Loop loop(pool(), n, {{"z", n}}, {.outputs = {"z"}, .chunk = 100}, {},
                {.threads = 1, .warn_if_emulated = false});
  double* z = loop.array("z");
  const auto r = loop.run([&](std::uint64_t, std::uint64_t k) {
    for (std::uint64_t i = k * 100; i < k * 100 + 100; ++i) z[i] = 2.0;
  });
  EXPECT_EQ(r.recovery.regions_validated, 4u);
  EXPECT_EQ(r.recovery.regions_recomputed, 6u);
}

TEST_F(PoolCli, InfoAndRmAndTheirRefusals) {
  EXPECT_EQ(pmlab({"pool", "check", "--pool", pool()}).exit_code, 3);  // no such file
  EXPECT_EQ(pmlab({"pool"}).exit_code, 2);                             // a subcommand is required
  auto r = pmlab({"run", "tmm", "--scheme", "lp", "--n", "32", "--bs", "16", "--pool", pool()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto info = pmlab({"pool", "info", "--pool", pool(), "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(nlohmann::json::parse(info.out)["state"], "done");
  {
    pool::Pool p = pool::Pool::open(pool());
    p.set_state(pool::RunState::kRunning);
    const auto busy = pmlab({"pool", "rm", "--pool", pool()});
    EXPECT_EQ(busy.exit_code, 3) << busy.err;  // in use: this test holds it
  }
  const auto refused = pmlab({"pool", "rm", "--pool", pool()});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_TRUE(std::filesystem::exists(pool()));
  const auto rm = pmlab({"pool", "rm", "--pool", pool(), "--force", "--json"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(std::filesystem::exists(pool()));
  EXPECT_TRUE(empty_dir());
  std::ofstream(pool()) << "not a pool";
  EXPECT_EQ(pmlab({"pool", "rm", "--pool", pool()}).exit_code, 3);
  EXPECT_TRUE(std::filesystem::exists(pool()));
}

// A tmm pool left running with an input damaged: reset rewrites the inputs (a reset that only
// set the state would leave A damaged and --verify would fail), the next run starts from the
// beginning and is bit-exact. What reset cannot do safely it refuses, changing nothing.
TEST_F(PoolCli, ResetReturnsAPoolLeftRunningToACleanStart) {
  auto r = pmlab({"run", "tmm", "--scheme", "lp", "--n", "48", "--bs", "16", "--pool", pool()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string done = bytes();
  const auto refused = pmlab({"pool", "reset", "--pool", pool()});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;  // a completed run, without --force
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(bytes(), done);
  {
    pool::Pool p = pool::Pool::open(pool());
    p.array<double>("a")[3] += 1.0;
    p.array<double>("c")[5] += 1.0;
    p.set_state(pool::RunState::kRunning);
    const auto busy = pmlab({"pool", "reset", "--pool", pool()});
    EXPECT_EQ(busy.exit_code, 3) << busy.err;  // in use: this test holds it
  }
  const auto reset = pmlab({"pool", "reset", "--pool", pool(), "--json"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  const auto doc = nlohmann::json::parse(reset.out);
  EXPECT_EQ(doc["state_before"], "running");
  EXPECT_EQ(doc["state"], "initialized");
  EXPECT_EQ(doc["changed"], true);
  EXPECT_EQ(nlohmann::json::parse(pmlab({"pool", "info", "--pool", pool(), "--json"}).out)["state"],
            "initialized");
  const std::string initialized = bytes();
  const auto again = pmlab({"pool", "reset", "--pool", pool(), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["changed"], false);
  EXPECT_EQ(bytes(), initialized);  // nothing to reset: untouched

  const auto run = pmlab({"run", "--pool", pool(), "--verify", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const auto rep = nlohmann::json::parse(run.out);
  EXPECT_EQ(rep["state_before"], "initialized");
  EXPECT_EQ(rep["resumed"], false);
  EXPECT_EQ(bytes().size(), done.size());
  const auto dir = std::filesystem::path(pool()).parent_path();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1)
      << "reset left a file beside the pool";
}

TEST_F(PoolCli, ResetRefusesALoopPoolAndANonPool) {
  const std::uint64_t n = 100;
  {
    lp::Loop loop(pool(), n, {{"z", n}}, {.outputs = {"z"}, .chunk = 10}, {},
                  {.threads = 1, .warn_if_emulated = false});
    EXPECT_THROW(loop.run([&](std::uint64_t, std::uint64_t) { throw std::runtime_error("stop"); }),
                 std::runtime_error);
  }
  const std::string before = bytes();
  const auto r = pmlab({"pool", "reset", "--pool", pool(), "--force"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("lp::Loop"), std::string::npos) << r.err;
  EXPECT_EQ(bytes(), before);
  std::filesystem::remove(pool());
  EXPECT_EQ(pmlab({"pool", "reset", "--pool", pool()}).exit_code, 3);  // no such file
  std::ofstream(pool()) << "not a pool";
  EXPECT_EQ(pmlab({"pool", "reset", "--pool", pool(), "--force"}).exit_code, 3);
}

}  // namespace
}  // namespace pmlab::testing
