// Pool: create/open round trip, alignment, state, and clear errors that leave the file untouched.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "pmlab/core/crc32c.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::pool {
namespace {

namespace fs = std::filesystem;

class PoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pmlab-pool-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "p.pool") const { return (dir_ / name).string(); }

  static RunParams params() {
    RunParams p;
    p.n = 10;
    p.bs = 3;
    p.threads = 2;
    return p;
  }
  static std::vector<ArraySpec> arrays() { return {{"a", 800}, {"odd", 13}, {"c", 800}}; }
  Pool make(const std::string& p) {
    return Pool::create(p, params(), arrays(),
                        [](Pool& pool) { pool.array<double>("a")[3] = 42.0; });
  }
  // Only the given names are left in the test's directory: no temporary of any creation.
  void expect_only(const std::set<std::string>& names) const {
    std::set<std::string> found;
    for (const auto& e : fs::directory_iterator(dir_)) found.insert(e.path().filename().string());
    EXPECT_EQ(found, names);
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static void poke(const std::string& p, std::size_t offset, const std::string& bytes) {
    int fd = ::open(p.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
              static_cast<ssize_t>(bytes.size()));
    close(fd);
  }
  // Opening must fail with `code`, mention `fragment`, and leave the bytes unchanged.
  static void expect_open_fails(const std::string& p, ErrorCode code, const std::string& fragment,
                                const std::optional<RunParams>& expected = std::nullopt) {
    const auto before = slurp(p);
    try {
      (void)Pool::open(p, expected);
      FAIL() << "open succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_EQ(slurp(p), before) << "file was modified";
  }

  fs::path dir_;
};

TEST_F(PoolTest, CreateThenReopenKeepsParamsArraysAndData) {
  {
    auto pool = make(path());
    EXPECT_EQ(pool.state(), RunState::kInitialized);
    pool.set_state(RunState::kRunning);
    pool.count_start();
  }
  expect_only({"p.pool"});
  auto pool = Pool::open(path(), params());
  EXPECT_EQ(pool.params(), params());
  EXPECT_EQ(pool.state(), RunState::kRunning);
  EXPECT_EQ(pool.starts(), 1u);
  EXPECT_EQ(pool.array<double>("a")[3], 42.0);
  EXPECT_EQ(pool.array<double>("c")[99], 0.0);
  for (const auto& a : pool.arrays()) EXPECT_EQ(a.offset % 64, 0u) << a.name;
  EXPECT_THROW((void)pool.array_info("nope"), Error);
}

TEST_F(PoolTest, SecondOpenIsRefusedWhileLocked) {
  auto first = make(path());
  expect_open_fails(path(), ErrorCode::kPoolBusy, "in use by another process");
}

TEST_F(PoolTest, BadMagicIsReportedAsNotAPool) {
  { auto p = make(path()); }
  poke(path(), 0, "XXXX");
  expect_open_fails(path(), ErrorCode::kPoolCorrupt, "not a pmlab pool");
}

TEST_F(PoolTest, CorruptedParameterIsCaughtByHeaderChecksum) {
  { auto p = make(path()); }
  poke(path(), 64, std::string(1, '\x7f'));  // inside the n/bs fields
  expect_open_fails(path(), ErrorCode::kPoolCorrupt, "header checksum mismatch");
}

TEST_F(PoolTest, UnknownVersionIsNamed) {
  { auto p = make(path()); }
  poke(path(), 8, std::string("\x09\x00\x00\x00", 4));
  // A version no pmlab wrote, under a header CRC that fails: a damaged version field.
  expect_open_fails(path(), ErrorCode::kPoolCorrupt, "format version field reads 9");
  // The same version under a CRC that holds: a pool of a newer format.
  std::string header = slurp(path()).substr(0, 1600);
  const std::uint64_t crc = crc32c(header.data(), header.size());
  poke(path(), 1600, std::string(reinterpret_cast<const char*>(&crc), sizeof crc));
  expect_open_fails(path(), ErrorCode::kPoolVersion, "format version 9");
}

TEST_F(PoolTest, CorruptStateWordIsDetected) {
  { auto p = make(path()); }
  poke(path(), 2048, std::string(8, '\x55'));
  expect_open_fails(path(), ErrorCode::kPoolCorrupt, "run-state word");
}

TEST_F(PoolTest, TruncatedFileIsDetected) {
  { auto p = make(path()); }
  fs::resize_file(path(), fs::file_size(path()) - 4096);
  expect_open_fails(path(), ErrorCode::kPoolCorrupt, "header says");
  fs::resize_file(path(), 100);
  expect_open_fails(path(), ErrorCode::kPoolCorrupt, "only 100 bytes");
}

TEST_F(PoolTest, MismatchedParametersNameEveryDifferingField) {
  { auto p = make(path()); }
  auto other = params();
  other.n = 12;
  other.scheme = "base";
  expect_open_fails(path(), ErrorCode::kPoolMismatch, "n: pool has 10, asked for 12", other);
  expect_open_fails(path(), ErrorCode::kPoolMismatch, "scheme: pool has lp, asked for base", other);
}

// A kernel's own parameters are stored by name, compared by name, and bounded in number and
// name length before anything is written.
TEST_F(PoolTest, KernelParametersRoundTripAndMismatchesNameThem) {
  auto p = params();
  p.kernel = "conv2d";
  p.set_kernel_param("width", 7);
  p.set_kernel_param("variant", 3);
  { auto pool = Pool::create(path(), p, arrays(), {}); }
  EXPECT_EQ(Pool::read_params(path()), p);
  auto other = p;
  other.set_kernel_param("width", 5);
  other.kernel_params.pop_back();  // "variant" not asked for: reads as "(default)"
  try {
    auto pool = Pool::open(path(), other);
    FAIL() << "opened with other kernel parameters";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("width: pool has 7, asked for 5"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("variant: pool has 3, asked for (default)"),
              std::string::npos)
        << e.what();
  }
  auto many = params();
  for (std::size_t i = 0; i <= kMaxKernelParams; ++i)
    many.set_kernel_param("p" + std::to_string(i), i);
  EXPECT_THROW(Pool::create(path("many.pool"), many, arrays(), {}), Error);
  auto long_name = params();
  long_name.set_kernel_param("a-very-long-parameter", 1);
  EXPECT_THROW(Pool::create(path("long.pool"), long_name, arrays(), {}), Error);
  expect_only({"p.pool"});
}

TEST_F(PoolTest, UnwritableAndMissingPathsGiveClearErrors) {
  try {
    (void)make((dir_ / "no-such-dir" / "p.pool").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos);
  }
  try {
    (void)make("/proc/pmlab-test.pool");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
  }
  try {
    (void)Pool::open(path("missing.pool"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

TEST_F(PoolTest, ImpossibleSizesAreRejectedBeforeTouchingDisk) {
  EXPECT_THROW((void)Pool::create(path(), params(), {{"huge", 1ull << 50}}, nullptr), Error);
  expect_only({});
}

TEST_F(PoolTest, FullFileSystemGivesEnospcAndLeavesNoPool) {
  // A 1 MiB tmpfs is the honest way to hit ENOSPC; it needs CAP_SYS_ADMIN (CI runs as root).
  auto mnt = dir_ / "tiny";
  fs::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (not root): ENOSPC path not exercised";
  try {
    (void)Pool::create((mnt / "p.pool").string(), params(), {{"big", 8ull << 20}}, nullptr);
    ADD_FAILURE() << "create succeeded on a full file system";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("not enough space"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(mnt)) << "a pool or a temporary was left behind";
  umount(mnt.c_str());
}

TEST_F(PoolTest, InterruptedCreationLeavesOnlyATempFileThatIsReplaced) {
  // A creation killed before publishing leaves its temporary behind (PATH.creating in older
  // versions), never a half pool at PATH; nobody holds its lock, so the next creation removes it.
  std::ofstream(path() + ".creating") << "garbage from a killed creation";
  auto pool = make(path());
  EXPECT_TRUE(fs::exists(path()));
  expect_only({"p.pool"});
}

}  // namespace
}  // namespace pmlab::pool
