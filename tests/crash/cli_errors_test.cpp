// CLI behaviour on bad input: unknown flags, impossible sizes, corrupt and mismatched pools.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "../../src/pool/disk_format.hpp"
#include "../support/process.hpp"
#include "pmlab/core/crc32c.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pmlab-cli-" + std::to_string(getpid()) + "-" +
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
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  fs::path dir_;
};

TEST_F(CliErrors, UnknownFlagAndBadValuesExitTwo) {
  EXPECT_EQ(pmlab({"run", "tmm", "--pool", pool(), "--frobnicate"}).exit_code, 2);
  EXPECT_EQ(pmlab({"run", "tmm", "--pool", pool(), "--n", "0"}).exit_code, 2);
  EXPECT_EQ(pmlab({"run", "tmm", "--pool", pool(), "--bs", "0"}).exit_code, 2);
  EXPECT_EQ(pmlab({"run", "tmm", "--pool", pool(), "--n", "-5"}).exit_code, 2);
  EXPECT_EQ(pmlab({"run", "tmm", "--pool", pool(), "--checksum", "md5"}).exit_code, 2);
  EXPECT_EQ(pmlab({"run", "tmm", "--pool", pool(), "--scheme", "magic"}).exit_code, 2);
  EXPECT_EQ(pmlab({"run", "--pool", pool()}).exit_code, 2);  // no pool and no kernel
  EXPECT_FALSE(fs::exists(pool()));
}

TEST_F(CliErrors, HelpExplainsEveryOption) {
  auto r = pmlab({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt : {"--scheme", "--n", "--bs", "--threads", "--checksum", "--pool",
                          "--verify", "--json", "--persist", "--flush", "--seed"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}

TEST_F(CliErrors, CorruptHeaderExitsThreeAndLeavesFileUntouched) {
  ASSERT_EQ(pmlab({"run", "tmm", "--n", "20", "--bs", "7", "--pool", pool()}).exit_code, 0);
  {
    int fd = ::open(pool().c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, "\x01", 1, 70), 1);
    close(fd);
  }
  auto before = slurp(pool());
  auto r = pmlab({"run", "--pool", pool(), "--verify"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("header checksum mismatch"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(pool()), before);
}

// A pool whose layout tag is not this build's (written by a pmlab that lays its arrays out
// otherwise) is refused before anything reads its arrays; the same pool with its own tag runs.
TEST_F(CliErrors, PoolOfAnotherLayoutExitsThreeAndLeavesFileUntouched) {
  ASSERT_EQ(pmlab({"run", "tmm", "--n", "20", "--bs", "7", "--pool", pool()}).exit_code, 0);
  auto reseal_with_tag = [&](std::uint32_t tag) {
    const int fd = ::open(pool().c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    pool::disk::Header h{};
    ASSERT_EQ(::pread(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
    h.layout_tag = tag;
    h.header_crc = crc32c(&h, offsetof(pool::disk::Header, header_crc));
    ASSERT_EQ(::pwrite(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
    ::close(fd);
  };
  pool::disk::Header stamped{};
  {
    std::ifstream in(pool(), std::ios::binary);
    in.read(reinterpret_cast<char*>(&stamped), sizeof stamped);
  }
  ASSERT_NE(stamped.layout_tag, 0u) << "pmlab run stamps the layout it wrote";
  reseal_with_tag(stamped.layout_tag ^ 0x5a5a5a5au);
  const auto before = slurp(pool());
  auto r = pmlab({"run", "--pool", pool(), "--verify"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("written by another version"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(pool()), before);
  reseal_with_tag(stamped.layout_tag);
  EXPECT_EQ(pmlab({"run", "--pool", pool(), "--verify"}).exit_code, 0);
}

// The checksum kind is stored by name and parsed by LP only: a header (valid CRC) naming a kind
// this pmlab does not know is a pool it refuses, exit 3, before anything is written.
TEST_F(CliErrors, PoolNamingAnUnknownChecksumKindExitsThreeAndLeavesFileUntouched) {
  ASSERT_EQ(
      pmlab({"run", "tmm", "--n", "20", "--bs", "7", "--pool", pool(), "--checksum", "parity"})
          .exit_code,
      0);
  {
    const int fd = ::open(pool().c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    pool::disk::Header h{};
    ASSERT_EQ(::pread(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
    EXPECT_STREQ(h.checksum, "parity");
    std::memset(h.checksum, 0, sizeof h.checksum);
    std::memcpy(h.checksum, "md5", 3);
    h.header_crc = crc32c(&h, offsetof(pool::disk::Header, header_crc));
    ASSERT_EQ(::pwrite(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
    ::close(fd);
  }
  const auto before = slurp(pool());
  auto r = pmlab({"run", "--pool", pool(), "--verify"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("unknown checksum kind 'md5'"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(pool()), before);
}

TEST_F(CliErrors, MismatchedParametersExitThreeAndNameTheField) {
  ASSERT_EQ(pmlab({"run", "tmm", "--n", "20", "--bs", "7", "--pool", pool()}).exit_code, 0);
  auto before = slurp(pool());
  auto r = pmlab({"run", "tmm", "--n", "21", "--pool", pool()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("n: pool has 20, asked for 21"), std::string::npos) << r.err;
  r = pmlab({"run", "tmm", "--checksum", "crc32c", "--pool", pool()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("checksum: pool has modular, asked for crc32c"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(pool()), before);
  // Matching explicit parameters are fine, and --pool alone resumes with the stored ones.
  EXPECT_EQ(pmlab({"run", "tmm", "--n", "20", "--pool", pool(), "--verify"}).exit_code, 0);
  EXPECT_EQ(pmlab({"run", "--pool", pool(), "--verify"}).exit_code, 0);
}

TEST_F(CliErrors, EveryPersistModeAndFlushKindProducesAVerifiedResult) {
  int i = 0;
  for (const char* mode : {"cpu", "auto", "none"})
    for (const char* flush : {"clwb", "clflushopt", "clflush"}) {
      // Appended, not `"m" + std::to_string(i)`: GCC 12 warns (-Wrestrict) on that inlined
      // concatenation, a false positive (GCC bug 105329).
      std::string name = "m";
      name += std::to_string(i++);
      const std::string p = (dir_ / (name + ".pool")).string();
      auto r = pmlab({"run", "tmm", "--n", "33", "--bs", "8", "--pool", p, "--persist", mode,
                      "--flush", flush, "--verify", "--json"});
      ASSERT_EQ(r.exit_code, 0) << mode << " " << flush << ": " << r.err;
      EXPECT_TRUE(nlohmann::json::parse(r.out)["verified"].get<bool>());
    }
}

TEST_F(CliErrors, NotAPoolFileIsRefused) {
  std::ofstream(pool()) << std::string(5000, 'z');
  auto r = pmlab({"run", "--pool", pool()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("not a pmlab pool"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(pool()), std::string(5000, 'z'));
}

TEST_F(CliErrors, VerifyDetectsATamperedResult) {
  ASSERT_EQ(pmlab({"run", "tmm", "--n", "20", "--bs", "7", "--pool", pool()}).exit_code, 0);
  // Flip one bit of C[0][5]. Layout (docs/pool-format.md): header 4096 B, then a, b, c of
  // 20·20·8 = 3200 B each at 64-byte-aligned offsets 4096, 7296, 10496.
  {
    int fd = ::open(pool().c_str(), O_RDWR);
    char byte = 0;
    ASSERT_EQ(pread(fd, &byte, 1, 10496 + 8 * 5 + 3), 1);
    byte = static_cast<char>(byte ^ 0x10);
    ASSERT_EQ(pwrite(fd, &byte, 1, 10496 + 8 * 5 + 3), 1);
    close(fd);
  }
  auto r = pmlab({"run", "--pool", pool(), "--verify", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["verified"].get<bool>());
  EXPECT_EQ(j["mismatches"].get<int>(), 1);
}

}  // namespace
}  // namespace pmlab::testing
