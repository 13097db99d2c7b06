// `pmlab sim` end to end (JSON keys, --vs base, LP vs eager writes, errors) and the SimSession
// crash/recover API.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

// A machine small enough that n = 128 spills C out of the LLC, so schemes differ in NVM writes.
const std::vector<std::string> kSmallMachine{"--config", "lp-isca18",  "--l1-size",
                                             "16K",      "--llc-size", "128K"};

class SimCli : public ::testing::Test {
 protected:
  ProcessResult pmlab(std::vector<std::string> args) {
    args.insert(args.begin(), {PMLAB_BINARY, "sim", "tmm", "--no-progress"});
    const std::string scratch =
        (fs::temp_directory_path() / ("pmlab-simcli-" + std::to_string(getpid()))).string();
    return run_process(args, scratch);
  }
  nlohmann::json sim_json(std::vector<std::string> args) {
    args.emplace_back("--json");
    const ProcessResult r = pmlab(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
  static std::vector<std::string> with(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
};

TEST_F(SimCli, JsonHasTheDocumentedKeys) {
  const auto j = sim_json({"--scheme", "lp", "--n", "64", "--bs", "16", "--config", "lp-isca18"});
  for (const char* k : {"kernel",
                        "scheme",
                        "config",
                        "n",
                        "bs",
                        "threads",
                        "checksum",
                        "seed",
                        "flush",
                        "drain",
                        "machine",
                        "ops",
                        "wall_seconds",
                        "refs_per_second",
                        "cycles",
                        "core_cycles",
                        "loads",
                        "stores",
                        "accesses",
                        "filtered_accesses",
                        "flushes",
                        "dirty_flushes",
                        "fences",
                        "fence_stall_cycles",
                        "nvm_reads",
                        "nvm_writes",
                        "nvm_writes_by_cause",
                        "write_queue_stall_cycles",
                        "levels",
                        "coherence",
                        "volatility",
                        "periodic_flush"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* c : {"eviction", "flush", "periodic", "drain"})
    EXPECT_TRUE(j["nvm_writes_by_cause"].contains(c)) << c;
  for (const char* l : {"L1", "L2"})
    for (const char* k : {"hits", "misses", "miss_rate", "evictions", "dirty_evictions"})
      EXPECT_TRUE(j["levels"][l].contains(k)) << l << "." << k;
  EXPECT_EQ(j["kernel"], "tmm");
  EXPECT_EQ(j["scheme"], "lp");
  EXPECT_EQ(j["threads"], 8);  // lp-isca18: eight worker threads
  EXPECT_EQ(j["machine"]["cores"], 9);
  EXPECT_EQ(j["machine"]["levels"][1]["size_bytes"], 512 * 1024);
  EXPECT_GT(j["cycles"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["nvm_reads"].get<std::uint64_t>(), 0u);  // cold misses: the inputs come from NVM
  EXPECT_EQ(j["levels"]["L2"]["misses"], j["nvm_reads"]);
  EXPECT_FALSE(j.contains("normalized"));
}

TEST_F(SimCli, VsBaseRatiosOfBaseAreExactlyOne) {
  const auto j = sim_json(with({"--scheme", "base", "--n", "128", "--vs", "base"}, kSmallMachine));
  ASSERT_TRUE(j.contains("normalized"));
  EXPECT_EQ(j["vs"], "base");
  EXPECT_EQ(j["base"]["nvm_writes"], j["nvm_writes"]);  // two separate sessions: deterministic
  int leaves = 0;
  auto check = [&](const auto& self, const nlohmann::json& x, const std::string& path) -> void {
    if (x.is_object()) {
      for (const auto& [k, v] : x.items()) self(self, v, path + "." + k);
      return;
    }
    ++leaves;
    // 0/0 (a count neither run had) is null, not 1; every other ratio of base to itself is 1.
    if (x.is_null()) {
      std::string pointer = path.substr(std::string("normalized").size());
      for (auto& c : pointer)
        if (c == '.') c = '/';
      EXPECT_EQ(j.at(nlohmann::json::json_pointer(pointer)), 0) << path;
      return;
    }
    ASSERT_TRUE(x.is_number()) << path << " = " << x;
    EXPECT_EQ(x.get<double>(), 1.0) << path;
  };
  check(check, j["normalized"], "normalized");
  EXPECT_GT(leaves, 20);
  EXPECT_GT(j["nvm_writes"].get<std::uint64_t>(), 0u);  // the small machine does write back
}

TEST_F(SimCli, LpWritesStayNearBaseWhileEagerSchemesWriteMore) {
  const auto lp = sim_json(with({"--scheme", "lp", "--n", "128", "--vs", "base"}, kSmallMachine));
  const double lp_writes = lp["normalized"]["nvm_writes"].get<double>();
  EXPECT_NEAR(lp_writes, 1.0, 0.03);
  EXPECT_EQ(lp["flushes"], 0);  // LP never flushes
  const auto ep =
      sim_json(with({"--scheme", "ep-ii", "--n", "128", "--vs", "base"}, kSmallMachine));
  EXPECT_GT(ep["normalized"]["nvm_writes"].get<double>(), lp_writes + 0.03);
  EXPECT_GT(ep["nvm_writes_by_cause"]["flush"].get<std::uint64_t>(), 0u);
  const auto wal =
      sim_json(with({"--scheme", "wal-ii", "--n", "128", "--vs", "base"}, kSmallMachine));
  EXPECT_GT(wal["normalized"]["nvm_writes"].get<double>(), 1.8);  // the undo log doubles C's writes
}

TEST_F(SimCli, EverySimulatedSchemeVerifiesBitExact) {
  for (const char* s :
       {"base", "lp", "ep-ii", "ep-jj", "wal-ii", "wal-jj", "cp", "hr-ii-x32", "hr-jj-x64"}) {
    const ProcessResult r = pmlab(with(
        {"--scheme", s, "--n", "40", "--bs", "16", "--threads", "3", "--verify"}, kSmallMachine));
    EXPECT_EQ(r.exit_code, 0) << s << ": " << r.err;
    EXPECT_NE(r.out.find("verify: OK"), std::string::npos) << s << ": " << r.out;
  }
}

TEST_F(SimCli, BadPresetsAndParametersExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--config", "gem5"}, "unknown simulator preset"},
      {{"--scheme", "nope"}, "unknown scheme"},
      {{"--n", "0"}, "--n"},
      {{"--threads", "0"}, "--threads"},
      {{"--threads", "65"}, "--threads"},
      {{"--cores", "0"}, "cores"},
      {{"--l1-size", "1000"}, "not a multiple"},
      {{"--l1-size", "12Q"}, "--l1-size"},
      {{"--llc-size", "16K"}, "inclusive"},
      {{"--llc-ways", "0"}, "ways"},
      {{"--l2-ways", "4"}, "--l2-size"},
      {{"--nvm-write-ns", "-5"}, "nvm.write_ns"},
      {{"--replacement", "fifo"}, "replacement"},
      {{"--flush", "sometimes"}, "flush"},
      {{"--llc-inclusion", "non-inclusive"}, "cores = 1"},
      {{"--D1", "65536,8,64"}, "--config cachegrind"},
      {{"--config", "cachegrind", "--D1", "65536,8,32"}, "line size 32"},
      {{"--config", "cachegrind", "--LL", "524288,8"}, "size,assoc,line"},
      {{"--vs", "nope"}, "unknown scheme"},
      {{"--checksum", "md5"}, "checksum"},
      {{"--periodic-flush", "soon"}, "--periodic-flush"},
      {{"--periodic-flush", "-5"}, "--periodic-flush"},
      {{"--periodic-flush", "0%"}, "--periodic-flush"},
      {{"--periodic-flush", "12x"}, "--periodic-flush"},
      {{"--core-model", "pipeline"}, "--core-model"},
      {{"--core-model", "interval", "--mshrs", "0"}, "mshrs"},
      {{"--issue-width", "0"}, "issue_width"},
  };
  for (const auto& [args, needle] : cases) {
    const ProcessResult r = pmlab(with(args, {"--n", args[0] == "--n" ? args[1] : "16"}));
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << joined << "stderr: " << r.err;
  }
  const ProcessResult unknown_kernel =
      run_process({PMLAB_BINARY, "sim", "gemv"}, "/tmp/pmlab-simcli-k");
  EXPECT_EQ(unknown_kernel.exit_code, 2);
  EXPECT_NE(unknown_kernel.err.find("unknown kernel"), std::string::npos) << unknown_kernel.err;
}

// The interval core model and fine-grained interleaving from the command line: the machine
// JSON says so, the result still verifies, the write count does not depend on the core model,
// and overlap makes the run shorter than the memory-only model's.
TEST_F(SimCli, IntervalCoreModelAndInterleavingQuantum) {
  const std::vector<std::string> run{"--scheme", "ep-ii", "--n", "64", "--bs", "16", "--verify"};
  const auto mem = sim_json(with(run, kSmallMachine));
  EXPECT_EQ(mem["machine"]["core"]["model"], "memory");
  EXPECT_EQ(mem["machine"]["interleave_quantum"], 0);
  const auto iv = sim_json(with(with(run, kSmallMachine), {"--core-model", "interval"}));
  EXPECT_EQ(iv["machine"]["core"]["model"], "interval");
  EXPECT_EQ(iv["machine"]["core"]["issue_width"], 4);
  EXPECT_EQ(iv["machine"]["core"]["rob_entries"], 196);
  EXPECT_EQ(iv["nvm_writes"], mem["nvm_writes"]);
  EXPECT_LT(iv["cycles"].get<double>(), mem["cycles"].get<double>());
  EXPECT_GT(iv["instructions"].get<double>(), 0);
  const auto q = sim_json(
      with(with(run, kSmallMachine), {"--core-model", "interval", "--interleave-quantum", "50"}));
  EXPECT_EQ(q["machine"]["interleave_quantum"], 50);
  EXPECT_EQ(q["verified"], true);
  EXPECT_EQ(iv["verified"], true);
}

TEST_F(SimCli, PmemobjIsRefused) {
  for (const char* vs : {"", "pmemobj"}) {
    std::vector<std::string> args{"--scheme", *vs ? "base" : "pmemobj", "--n", "16"};
    if (*vs) args.insert(args.end(), {"--vs", vs});
    const ProcessResult r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("'pmemobj' of tmm runs natively only"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;  // refused before anything ran
  }
}

// --periodic-flush P% is P percent of the run's own cycles; the cleaning then writes lines
// back under "periodic" and shortens the longest dirty stretch.
TEST_F(SimCli, PeriodicFlushAsCyclesOrPercentOfTheRun) {
  const std::vector<std::string> run{"--scheme", "lp", "--n", "64", "--bs", "16", "--threads", "1"};
  const auto off = sim_json(run);
  EXPECT_EQ(off["periodic_flush"]["cycles"], 0);
  EXPECT_EQ(off["nvm_writes_by_cause"]["periodic"], 0);
  const auto pct = sim_json(with(run, {"--periodic-flush", "2%"}));
  const auto cycles = off["cycles"].get<double>();
  EXPECT_EQ(pct["periodic_flush"]["cycles"], std::llround(cycles * 0.02));
  EXPECT_EQ(pct["periodic_flush"]["percent_of_run"], 2.0);
  EXPECT_EQ(pct["machine"]["periodic_flush_cycles"], pct["periodic_flush"]["cycles"]);
  EXPECT_GT(pct["nvm_writes_by_cause"]["periodic"].get<std::uint64_t>(), 0u);
  EXPECT_LT(pct["volatility"]["max_cycles"].get<double>(),
            off["volatility"]["open_max_cycles"].get<double>());
  // Given as cycles, the same period gives the same run.
  const auto abs = sim_json(
      with(run, {"--periodic-flush", std::to_string(pct["periodic_flush"]["cycles"].get<int>())}));
  EXPECT_EQ(abs["nvm_writes"], pct["nvm_writes"]);
  EXPECT_EQ(abs["periodic_flush"]["percent_of_run"], nullptr);
}

TEST_F(SimCli, CachegrindConfigTakesCachegrindGeometry) {
  const auto j = sim_json({"--scheme", "base", "--n", "32", "--config", "cachegrind", "--D1",
                           "32768,8,64", "--LL", "262144,16,64"});
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["machine"]["cores"], 1);
  EXPECT_EQ(j["machine"]["inclusive_llc"], false);
  EXPECT_EQ(j["machine"]["levels"][0]["size_bytes"], 32768);
  EXPECT_EQ(j["machine"]["levels"][1]["ways"], 16);
  // n = 32: 3 x 8 KB of matrices fit everywhere, so only compulsory misses remain.
  EXPECT_EQ(j["levels"]["D1"]["misses"], 3 * 32 * 32 * 8 / 64);
  EXPECT_EQ(j["levels"]["LL"]["misses"], 3 * 32 * 32 * 8 / 64);
}

// The library entry point crash campaigns use: crash mid-run, apply the image, recover, finish.
TEST(SimCliSession, CrashApplyRecoverFinishIsBitExact) {
  run::SimRunSpec spec;
  spec.run.kernel = "tmm";
  spec.run.n = 48;
  spec.run.bs = 16;
  spec.run.threads = 3;
  sim::MachineSettings small;
  small.set("cores", 4);
  small.set("l1-size", 4096);
  small.set("llc-size", 32768);
  spec.machine = sim::machine_from("lp-isca18", small);
  for (const char* scheme : {"lp", "ep-jj", "wal-ii"}) {
    spec.run.scheme = scheme;
    run::SimSession s(spec);
    auto& be = s.backend();
    be.arm_crash(s.estimated_ops() / 2);
    EXPECT_THROW(s.run(), sim::PowerFailure) << scheme;
    be.apply_crash_image();
    run::RunReport report;
    const std::size_t first = s.recover(report);
    EXPECT_LT(first, 3u) << scheme;
    s.run(first);
    EXPECT_TRUE(s.verify().ok()) << scheme << ": " << s.verify().first_mismatch;
  }
}

}  // namespace
}  // namespace pmlab::testing
