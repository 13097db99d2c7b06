// Machine files: every configs/*.json equals its compiled-in preset field by field, files round
// trip, `--config FILE` and `--dump-config` work, and bad files are usage errors naming the key.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine_file.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kConfigs = fs::path(PMLAB_TEST_SOURCE_DIR) / ".." / "configs";

// Field-by-field: the file format writes every field, so equal documents are equal machines.
void expect_same_machine(const json& a, const json& b, const std::string& path = "") {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      ASSERT_TRUE(b.contains(k)) << path << "." << k;
      expect_same_machine(v, b.at(k), path + "." + k);
    }
    EXPECT_EQ(a.size(), b.size()) << path;
    return;
  }
  EXPECT_EQ(a, b) << path;
}

TEST(MachineFile, EveryPresetFileIsItsCompiledInPreset) {
  for (const auto name : sim::preset_names()) {
    const fs::path file = kConfigs / (std::string(name) + ".json");
    ASSERT_TRUE(fs::exists(file)) << file;
    const sim::SimParams loaded = sim::load_machine_file(file);
    expect_same_machine(sim::to_machine_file(loaded), sim::to_machine_file(sim::preset(name)),
                        std::string(name));
    // The report JSON (what SimGolden records) is the same too.
    EXPECT_EQ(sim::to_json(loaded), sim::to_json(sim::preset(name))) << name;
  }
  // And nothing else hides in configs/.
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(kConfigs)) files += e.path().extension() == ".json";
  EXPECT_EQ(files, sim::preset_names().size());
}

TEST(MachineFile, RoundTripsEveryFieldThatDiffersFromTheDefaults) {
  sim::SimParams p = sim::thesis_ch4();
  p.l2 = sim::LevelParams{"L2", 256 * 1024, 4, Cycles{7}, sim::Replacement::kSrrip};
  p.llc.name = "L3";
  p.seed = 77;
  p.same_line_filter = false;
  p.nt_stores = true;
  p.wc_buffers = 3;
  p.core.model = sim::CoreModel::kInterval;
  p.interleave_quantum = 5;
  p.flush_mc_hop = 40;
  p.preflush.enabled = true;
  p.preflush.line_change = true;
  p.preflush.l1_marks = true;
  // (A hardware barrier would be refused with PreFlush and non-temporal stores: not combined.)
  p.persistency.barrier = sim::Barrier::kNone;
  p.persistency.max_inflight = 4;
  p.persistency.pf_instant = true;
  p.nvm.row_buffer.wq_high = 0.75;
  p.nvm.write_queue = sim::WriteQueueModel::kShared;
  const json file = sim::to_machine_file(p);
  expect_same_machine(sim::to_machine_file(sim::from_machine_file(file, "test")), file);
}

std::string error_of(const json& doc) {
  try {
    (void)sim::from_machine_file(doc, "m.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "(accepted)";
}

TEST(MachineFile, BadKeysTypesAndValuesAreNamed) {
  const json good = sim::to_machine_file(sim::lp_isca18());
  json j = good;
  j["l1"]["sise_bytes"] = 1;
  EXPECT_NE(error_of(j).find("'l1.sise_bytes' is not a known key"), std::string::npos)
      << error_of(j);
  j = good;
  j["nvm"]["write_units"] = "16";
  EXPECT_NE(error_of(j).find("'nvm.write_units' must be an integer"), std::string::npos)
      << error_of(j);
  j = good;
  j["l1"]["ways"] = 99999999999;
  EXPECT_NE(error_of(j).find("'l1.ways' is 99999999999, above"), std::string::npos) << error_of(j);
  j = good;
  j["core"]["mshrs"] = -1;
  EXPECT_NE(error_of(j).find("'core.mshrs' is -1, below"), std::string::npos) << error_of(j);
  j = good;
  j["llc"]["replacement"] = "fifo";
  EXPECT_NE(error_of(j).find("'llc.replacement' is 'fifo'"), std::string::npos) << error_of(j);
  j = good;
  j["nvm"]["write_queue"] = "global";
  EXPECT_NE(error_of(j).find("'nvm.write_queue' is 'global'"), std::string::npos) << error_of(j);
  j = good;
  j["cores"] = 0;
  EXPECT_NE(error_of(j).find("impossible machine"), std::string::npos) << error_of(j);
  j = good;
  j["pmlab_machine"] = 2;
  EXPECT_NE(error_of(j).find("'pmlab_machine' is 2"), std::string::npos) << error_of(j);
}

class MachineFileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pmlab-machine-file-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  ProcessResult pmlab(std::vector<std::string> args) const {
    args.insert(args.begin(), PMLAB_BINARY);
    return run_process(args, (dir_ / "log").string());
  }
  fs::path dir_;
};

TEST_F(MachineFileCli, DumpedMachineRunsTheSameAsThePresetWithItsOverrides) {
  const auto dumped = pmlab({"sim", "tmm", "--config", "pact17", "--llc-size", "64K",
                             "--replacement", "random", "--dump-config"});
  ASSERT_EQ(dumped.exit_code, 0) << dumped.err;
  const fs::path file = dir_ / "mine.json";
  std::ofstream(file) << dumped.out;
  const std::vector<std::string> run{"--n", "32", "--bs", "8", "--scheme", "lp", "--json"};
  auto a = std::vector<std::string>{"sim", "tmm", "--config", file.string()};
  a.insert(a.end(), run.begin(), run.end());
  auto b = std::vector<std::string>{"sim",        "tmm", "--config",      "pact17",
                                    "--llc-size", "64K", "--replacement", "random"};
  b.insert(b.end(), run.begin(), run.end());
  const auto from_file = pmlab(a), from_flags = pmlab(b);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  ASSERT_EQ(from_flags.exit_code, 0) << from_flags.err;
  const json x = json::parse(from_file.out), y = json::parse(from_flags.out);
  EXPECT_EQ(x.at("cycles"), y.at("cycles"));
  EXPECT_EQ(x.at("nvm_writes"), y.at("nvm_writes"));
  // crash takes the same file as it is (its small-cache campaign defaults are for presets);
  // a flag given on the command line still applies.
  auto crash = pmlab({"crash", "tmm", "--config", file.string(), "--dump-config"});
  ASSERT_EQ(crash.exit_code, 0) << crash.err;
  EXPECT_EQ(json::parse(crash.out), json::parse(dumped.out));
  crash = pmlab({"crash", "tmm", "--config", file.string(), "--cores", "2", "--dump-config"});
  ASSERT_EQ(crash.exit_code, 0) << crash.err;
  EXPECT_EQ(json::parse(crash.out).at("cores"), 2);
  EXPECT_EQ(json::parse(crash.out).at("llc"), json::parse(dumped.out).at("llc"));
}

// The campaign's small LLC is whole sets of every preset's ways: 32 KiB where the ways divide
// it, the most sets that fit otherwise (haswell-ep's 20 ways: 25 sets).
TEST_F(MachineFileCli, CrashFitsItsSmallLlcToEveryPresetsWays) {
  for (const auto name : sim::preset_names()) {
    if (name == "cachegrind") continue;  // needs --D1/--LL
    const auto r = pmlab({"crash", "tmm", "--config", std::string(name), "--dump-config"});
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    const json llc = json::parse(r.out).at("llc");
    const std::uint64_t way_line = llc.at("ways").get<std::uint64_t>() * 64;
    EXPECT_EQ(llc.at("size_bytes").get<std::uint64_t>(), way_line * (32768 / way_line)) << name;
  }
  const auto given =
      pmlab({"crash", "tmm", "--config", "haswell-ep", "--llc-size", "40960", "--dump-config"});
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_EQ(json::parse(given.out).at("llc").at("size_bytes"), 40960);
}

TEST_F(MachineFileCli, BadFilesExitTwoNamingTheKey) {
  std::ofstream(dir_ / "typo.json") << R"({"pmlab_machine": 1, "l1": {"wayz": 8}})";
  auto r = pmlab({"sim", "tmm", "--config", (dir_ / "typo.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("'l1.wayz' is not a known key"), std::string::npos) << r.err;
  std::ofstream(dir_ / "broken.json") << "{\"cores\": ";
  r = pmlab({"crash", "tmm", "--config", (dir_ / "broken.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  r = pmlab({"sim", "tmm", "--config", (dir_ / "absent.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot be read"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pmlab::testing
