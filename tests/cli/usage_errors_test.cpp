// Bad numbers and impossible sizes are usage errors (exit 2) named clearly and refused before
// anything is created; a run whose first start fails leaves no pool behind.
#include <gtest/gtest.h>

#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../support/cli_fixture.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

class UsageErrors : public PmlabCliTest {
 protected:
  UsageErrors() : PmlabCliTest("pmlab-usage") {}
};

TEST_F(UsageErrors, NegativeSizeIsNamedNegative) {
  const auto r = pmlab({"run", "tmm", "--n", "-5", "--pool", (dir_ / "p").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("-5 is negative"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("18446744073709551611"), std::string::npos) << r.err;
  EXPECT_TRUE(empty_dir());
}

// gemm's micro-kernel computes GEPP1 in 8x24 tiles only; BLAS rivals are gemm's only.
TEST_F(UsageErrors, GemmMicroAndBlasRivalsRefuseWhatTheyCannotRun) {
  const std::string pool = (dir_ / "p").string();
  auto r = pmlab({"run", "gemm", "--micro", "auto", "--variant", "gepp2", "--pool", pool});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("needs --variant gepp1"), std::string::npos) << r.err;
  r = pmlab({"run", "gemm", "--micro", "auto", "--mr", "4", "--pool", pool});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("8x24"), std::string::npos) << r.err;
  r = pmlab({"bench", "tmm", "--n", "16", "--rivals", "blis", "--dir", dir_.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("tmm has no rival"), std::string::npos) << r.err;
  r = pmlab({"bench", "gemm", "--n", "16", "--rivals", "mkl", "--dir", dir_.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown BLAS rival 'mkl'"), std::string::npos) << r.err;
  EXPECT_TRUE(empty_dir());
}

TEST_F(UsageErrors, SeedBeyond64BitsIsRefusedNotCapped) {
  for (const char* verb : {"run", "sim"}) {
    std::vector<std::string> args{verb, "tmm", "--n", "16", "--seed", "18446744073709551616"};
    if (std::string(verb) == "run") args.insert(args.end(), {"--pool", (dir_ / "p").string()});
    const auto r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << verb << ": " << r.err;
    EXPECT_NE(r.err.find("larger than the largest accepted value"), std::string::npos) << r.err;
  }
  // The largest 64-bit seed itself is fine.
  const auto ok = pmlab({"sim", "tmm", "--n", "16", "--bs", "4", "--seed", "18446744073709551615"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(empty_dir());
}

TEST_F(UsageErrors, HugeCountsGetPmlabsOwnMessageOnEveryVerb) {
  const std::string pool = (dir_ / "p").string();
  const std::vector<std::vector<std::string>> cases{
      {"run", "tmm", "--pool", pool, "--threads", "99999999999"},
      {"sim", "tmm", "--threads", "99999999999"},
      {"crash", "tmm", "--threads", "99999999999"},
      {"bench", "tmm", "--threads", "99999999999"},
      {"sim", "tmm", "--cores", "99999999999"},
      {"sim", "tmm", "--cores", "-99999999999"},
      {"crash", "tmm", "--trials", "99999999999999999999999"},
      {"eval", "--seed", "99999999999999999999999"}};
  for (const auto& args : cases) {
    const auto r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[args.size() - 2] << ": " << r.err;
    EXPECT_NE(r.err.find(args[args.size() - 2]), std::string::npos) << r.err;  // names the flag
    EXPECT_EQ(r.err.find("Could not convert"), std::string::npos) << r.err;
    EXPECT_TRUE(r.err.find("range") != std::string::npos ||
                r.err.find("larger than the largest") != std::string::npos)
        << r.err;
  }
  EXPECT_TRUE(empty_dir());
}

TEST_F(UsageErrors, LeadingZerosAreDecimalNotOctal) {
  const auto r = pmlab({"sim", "tmm", "--n", "010", "--bs", "4", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"n\": 10"), std::string::npos) << r.out;
}

TEST_F(UsageErrors, PeriodicFlushAboveTheWholeRunIsRefused) {
  const auto r = pmlab({"sim", "tmm", "--n", "16", "--bs", "4", "--periodic-flush", "200%"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("(0, 100]"), std::string::npos) << r.err;
  const auto ok = pmlab({"sim", "tmm", "--n", "16", "--bs", "4", "--periodic-flush", "100%"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // A cycle count past 64 bits names the bound.
  const auto huge =
      pmlab({"sim", "tmm", "--n", "16", "--bs", "4", "--periodic-flush", "99999999999999999999"});
  EXPECT_EQ(huge.exit_code, 2) << huge.err;
  EXPECT_NE(huge.err.find("at most 18446744073709551615"), std::string::npos) << huge.err;
}

TEST_F(UsageErrors, PoolLargerThanTheFileSystemIsAUsageErrorUpFront) {
  // tmm n = 65536, bs = 256: three 32 GiB matrices and a 2^24-slot (512 MiB) checksum table,
  // which LP accepts (bs = 1 would be refused earlier, for its 128 GiB table).
  struct statvfs vfs {};
  ASSERT_EQ(::statvfs(dir_.c_str(), &vfs), 0);
  const double free_gib = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize) /
                          static_cast<double>(1ull << 30);
  if (free_gib > 96)
    GTEST_SKIP() << "this file system could hold the pool (" << free_gib << " GiB)";
  const auto r =
      pmlab({"run", "tmm", "--n", "65536", "--bs", "256", "--pool", (dir_ / "p").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("would need"), std::string::npos) << r.err;
  EXPECT_TRUE(empty_dir()) << "something was created before the size was checked";
}

TEST_F(UsageErrors, FailedPmemobjCreationLeavesNoPoolBehind) {
  // A file-size limit (ulimit -f, in 512-byte blocks) that the small pmlab pool fits in and
  // libpmemobj's own pool (>= 8 MiB) does not: its creation fails after the pmlab pool exists.
  const std::string pool = (dir_ / "p").string();
  const std::string cmd = std::string("ulimit -f 8192; trap '' XFSZ; exec ") + PMLAB_BINARY +
                          " run tmm --scheme pmemobj --n 64 --bs 16 --pool " + pool;
  const auto r = run_process({"/bin/sh", "-c", cmd}, dir_.string() + ".log");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("was removed"), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(dir_))
    ADD_FAILURE() << "left behind: " << e.path().filename();
}

}  // namespace
}  // namespace pmlab::testing
