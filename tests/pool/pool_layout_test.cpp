// Pool layout checks: sizes that would wrap or exceed the disk are refused up front, and a header
// that passes its CRC but lays arrays over each other (or not as its parameters say) is corrupt.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <limits>
#include <string>

#include "../../src/pool/disk_format.hpp"
#include "pmlab/core/crc32c.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::pool {
namespace {

namespace fs = std::filesystem;

class PoolLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pmlab-pool-layout-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "p").string();
    (void)Pool::create(path_, RunParams{}, {{"a", 1000}, {"b", 1000}}, nullptr);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rewrites the header through `edit` and seals it with a correct CRC, as a crafted file would.
  template <class Edit>
  void forge(Edit&& edit) {
    const int fd = ::open(path_.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    disk::Header h{};
    ASSERT_EQ(::pread(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
    edit(h);
    h.header_crc = crc32c(&h, offsetof(disk::Header, header_crc));
    ASSERT_EQ(::pwrite(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
    ::close(fd);
  }
  static void expect_corrupt(const std::string& path, const std::string& why) {
    try {
      (void)Pool::open(path);
      ADD_FAILURE() << "opened a pool that should be corrupt: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPoolCorrupt) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(PoolLayout, SizesThatWouldWrapAroundAreInvalidArguments) {
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max() - 100;
  for (const auto& arrays :
       {std::vector<ArraySpec>{{"a", huge}},
        std::vector<ArraySpec>{{"a", kMaxPoolBytes / 2}, {"b", kMaxPoolBytes / 2}}}) {
    try {
      (void)pool_file_bytes(arrays);
      ADD_FAILURE() << "accepted a layout beyond " << kMaxPoolBytes << " bytes";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_EQ(pool_file_bytes({{"a", 1}, {"b", 1}}), 8192u);  // header, then two aligned arrays
}

TEST_F(PoolLayout, PoolLargerThanTheFreeSpaceIsAnInvalidArgument) {
  try {
    require_room_for_pool(path_, kMaxPoolBytes);
    GTEST_SKIP() << "this file system has 64 TiB free";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("would need"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(require_room_for_pool(path_, 4096));
}

TEST_F(PoolLayout, OverlappingArraysAreCorruptEvenWithAValidChecksum) {
  forge([](disk::Header& h) { h.arrays[1].offset = h.arrays[0].offset + 64; });
  expect_corrupt(path_, "overlaps");
}

TEST_F(PoolLayout, DuplicateArrayNamesAreCorrupt) {
  forge([](disk::Header& h) { h.arrays[1].name[0] = 'a'; });
  expect_corrupt(path_, "two arrays are named 'a'");
}

TEST_F(PoolLayout, ArraysOtherThanTheParametersSayAreCorrupt) {
  Pool pool = Pool::open(path_);
  EXPECT_NO_THROW(pool.require_layout({{"a", 1000}, {"b", 1000}}));
  try {
    pool.require_layout({{"a", 1000}, {"b", 2000}});
    ADD_FAILURE() << "a smaller array than the parameters need was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPoolCorrupt) << e.what();
  }
}

}  // namespace
}  // namespace pmlab::pool
