// `pmlab info`, the metadata every --json carries, and sim's n/a for figures both runs left at 0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

class InfoCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pmlab-info-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  ProcessResult pmlab(std::vector<std::string> args) {
    args.insert(args.begin(), PMLAB_BINARY);
    return run_process(args, (dir_ / "proc").string());
  }
  std::string pool() const { return (dir_ / "x.pool").string(); }
  static void expect_meta(const nlohmann::json& j) {
    ASSERT_TRUE(j.contains("meta")) << j.dump();
    for (const char* k : {"pmlab_version", "git_revision", "compiler", "cpu", "date"}) {
      ASSERT_TRUE(j["meta"].contains(k)) << k;
      EXPECT_FALSE(j["meta"][k].get<std::string>().empty()) << k;
    }
  }
  fs::path dir_;
};

TEST_F(InfoCli, DescribesADonePoolInTextAndJson) {
  auto r = pmlab(
      {"run", "tmm", "--scheme", "lp", "--n", "48", "--bs", "16", "--pool", pool(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_meta(nlohmann::json::parse(r.out));

  auto t = pmlab({"info", "--pool", pool()});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("kernel tmm, scheme lp, n 48, bs 16"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("state done"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("LP progress: 9 of 9 checksum slots committed"), std::string::npos) << t.out;

  auto j = pmlab({"info", "--pool", pool(), "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  expect_meta(doc);
  EXPECT_EQ(doc["params"]["kernel"], "tmm");
  EXPECT_EQ(doc["state"], "done");
  EXPECT_EQ(doc["lp_progress"]["committed_slots"], 9);
  EXPECT_EQ(doc["arrays"].size(), 4u);
  EXPECT_TRUE(doc.contains("persistence_emulated"));
}

TEST_F(InfoCli, NamesTheSchemesArrays) {
  auto r =
      pmlab({"run", "cholesky", "--scheme", "wal", "--n", "32", "--bs", "8", "--pool", pool()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(pmlab({"info", "--pool", pool(), "--json"}).out);
  int scheme_arrays = 0;
  for (const auto& a : doc["arrays"]) scheme_arrays += a["owner"] == "scheme" ? 1 : 0;
  EXPECT_GT(scheme_arrays, 0) << doc.dump(2);
}

TEST_F(InfoCli, BadInputExitCodes) {
  EXPECT_EQ(pmlab({"info"}).exit_code, 2);                    // --pool is required
  EXPECT_EQ(pmlab({"info", "--pool", pool()}).exit_code, 3);  // no such file
  std::ofstream(pool()) << "not a pool";
  auto r = pmlab({"info", "--pool", pool()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("not a pmlab pool"), std::string::npos) << r.err;
}

TEST_F(InfoCli, SimSaysNotApplicableWhenBothRunsWriteNothing) {
  auto r = pmlab({"sim", "tmm", "--scheme", "lp", "--vs", "base", "--n", "16", "--bs", "8",
                  "--config", "lp-isca18"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("neither lp nor base wrote anything to NVM"), std::string::npos) << r.err;
  for (std::size_t at = r.out.find("NVM writes"); at != std::string::npos;) {
    const auto line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find("n/a"), std::string::npos) << line;
    EXPECT_EQ(line.find("1.0000x"), std::string::npos) << line;
    break;
  }
  auto j = pmlab({"sim", "tmm", "--scheme", "lp", "--vs", "base", "--n", "16", "--bs", "8",
                  "--config", "lp-isca18", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  expect_meta(doc);
  EXPECT_EQ(doc["warnings"].size(), 1u);
}

}  // namespace
}  // namespace pmlab::testing
