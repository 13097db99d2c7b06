// A damaged pool header is refused, never read: every single-bit flip of its 4096 bytes, the
// self-checked state word, older formats, files that are not pools, and read-only opening.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "../../src/pool/disk_format.hpp"
#include "pmlab/core/crc32c.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::pool {
namespace {

namespace fs = std::filesystem;

class PoolDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pmlab-pool-damage-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  [[nodiscard]] std::string path(const std::string& name = "p.pool") const {
    return (dir_ / name).string();
  }
  // An interrupted run's pool: started once, state running.
  void make_interrupted(const std::string& p) const {
    RunParams params;
    params.n = 10;
    params.bs = 3;
    params.kernel_params = {{"width", 7}};
    auto pool = Pool::create(p, params, {{"a", 800}, {"c", 800}},
                             [](Pool& pl) { pl.array<double>("a")[3] = 42.0; });
    pool.count_start();
    pool.set_state(RunState::kRunning);
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static void write_at(const std::string& p, std::size_t offset, const void* data,
                       std::size_t len) {
    const int fd = ::open(p.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, data, len, static_cast<off_t>(offset)), static_cast<ssize_t>(len));
    ::close(fd);
  }

  fs::path dir_;
};

// Each way of opening must refuse the file with kPoolCorrupt or kPoolVersion and a message naming
// the file.
template <class Open>
std::optional<std::string> refusal(const std::string& p, Open open) {
  try {
    open(p);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kPoolCorrupt && e.code() != ErrorCode::kPoolVersion)
      return "wrong error code: " + std::string(e.what());
    if (std::string(e.what()).find(p) == std::string::npos)
      return "message does not name the file: " + std::string(e.what());
    return std::nullopt;
  }
  return std::string("accepted");
}

// The acceptance property: one flipped bit anywhere in the header is refused by every opener and
// leaves the file byte for byte as it was. Catches any header byte no check covers (an unchecked
// state bit, a start count outside the check, padding nobody reads).
TEST_F(PoolDamage, EveryBitFlipOfTheHeaderIsRefusedAndChangesNothing) {
  make_interrupted(path("original.pool"));
  const std::string original = slurp(path("original.pool"));
  fs::copy_file(path("original.pool"), path());
  (void)Pool::open(path());  // the undamaged copy opens
  int failures = 0;
  for (std::size_t bit = 0; bit < disk::kHeaderBytes * 8 && failures < 10; ++bit) {
    std::string damaged = original;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    write_at(path(), bit / 8, damaged.data() + bit / 8, 1);
    for (const auto& [how, why] :
         {std::pair{"open", refusal(path(), [](const std::string& p) { (void)Pool::open(p); })},
          std::pair{"open_read_only",
                    refusal(path(), [](const std::string& p) { (void)Pool::open_read_only(p); })},
          std::pair{"read_params",
                    refusal(path(), [](const std::string& p) { (void)Pool::read_params(p); })}})
      if (why) {
        ADD_FAILURE() << "bit " << bit << " (byte " << bit / 8 << "), " << how << ": " << *why;
        ++failures;
      }
    if (slurp(path()) != damaged) {
      ADD_FAILURE() << "bit " << bit << ": refusing the pool changed it";
      ++failures;
    }
    write_at(path(), bit / 8, original.data() + bit / 8, 1);
  }
  EXPECT_EQ(slurp(path()), original);
}

// Catches a check that skips some of the word's bits (format 3's magic-only check let running
// and done differ in one bit) or a decode that ignores its check half.
TEST_F(PoolDamage, StateWordDetectsEveryFlipOfEveryValidWord) {
  for (std::uint8_t state = 1; state <= 3; ++state)
    for (std::uint32_t starts : {0u, 1u, 2u, 255u, 256u, 70000u, disk::kMaxStarts}) {
      const std::uint64_t w = disk::encode_state_word({state, starts});
      const auto back = disk::decode_state_word(w);
      ASSERT_TRUE(back.has_value());
      EXPECT_EQ(back->state, state);
      EXPECT_EQ(back->starts, starts);
      for (int b = 0; b < 64; ++b)
        EXPECT_FALSE(disk::decode_state_word(w ^ (1ull << b)).has_value())
            << "state " << int{state} << " starts " << starts << " bit " << b;
    }
  EXPECT_FALSE(disk::decode_state_word(0).has_value());  // a zeroed line is no state
}

// Crash consistency: each state change and each counted start is one store to the 8-byte word
// and to nothing else, so a crash leaves the old word or the new one. Catches a second field (a
// separate checksum or counter) that a crash could leave out of step with the word.
TEST_F(PoolDamage, StateChangesWriteOnlyTheStateWord) {
  make_interrupted(path());
  std::string before = slurp(path());
  for (int step = 0; step < 3; ++step) {
    {
      auto pool = Pool::open(path());
      if (step == 0) pool.count_start();
      if (step == 1) pool.set_state(RunState::kDone);
      if (step == 2) pool.set_state(RunState::kRunning);
    }
    const std::string after = slurp(path());
    ASSERT_EQ(after.size(), before.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
      if (after[i] != before[i]) {
        EXPECT_TRUE(i >= disk::kStateOffset && i < disk::kStateOffset + 8)
            << "step " << step << " changed byte " << i;
      }
    }
    EXPECT_NE(after, before) << "step " << step;
    before = after;
  }
  auto pool = Pool::open(path());
  EXPECT_EQ(pool.starts(), 2u);
  EXPECT_EQ(pool.state(), RunState::kRunning);
}

TEST_F(PoolDamage, StartsStopAtTheLargestCountTheWordHolds) {
  make_interrupted(path());
  const std::uint64_t near_max =
      disk::encode_state_word({static_cast<std::uint8_t>(RunState::kRunning), disk::kMaxStarts});
  write_at(path(), disk::kStateOffset, &near_max, sizeof near_max);
  auto pool = Pool::open(path());
  pool.count_start();
  EXPECT_EQ(pool.starts(), disk::kMaxStarts);
  EXPECT_EQ(pool.state(), RunState::kRunning);
}

// A pool written by an older pmlab (format 3: a valid CRC, the old state word) is named as
// such, not misread and not called damaged. Catches reading both formats by accident.
TEST_F(PoolDamage, OlderFormatIsRefusedWithItsVersionNamed) {
  make_interrupted(path());
  std::string bytes = slurp(path());
  disk::Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.version = 3;
  h.header_crc = crc32c(&h, offsetof(disk::Header, header_crc));
  write_at(path(), 0, &h, sizeof h);
  const std::uint64_t v3_running = 0x5354'4154'0000'0002ull;
  write_at(path(), disk::kStateOffset, &v3_running, sizeof v3_running);
  const std::string before = slurp(path());
  try {
    (void)Pool::open(path());
    FAIL() << "a format-3 pool was opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPoolVersion) << e.what();
    EXPECT_NE(std::string(e.what()).find("format version 3, written by an older pmlab"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(slurp(path()), before);
}

// Not a regular file: refused before it is opened (a FIFO would block an open for reading until
// a writer came; a device must not be touched).
TEST_F(PoolDamage, FilesThatAreNotRegularAreRefusedAtOnce) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  fs::create_directories(path("dir"));
  for (const auto& [p, kind] :
       {std::pair{path("fifo"), "a FIFO"}, std::pair{path("dir"), "a directory"},
        std::pair{std::string("/dev/null"), "a character device"}}) {
    for (int how = 0; how < 3; ++how) {
      try {
        if (how == 0) (void)Pool::open(p);
        if (how == 1) (void)Pool::open_read_only(p);
        if (how == 2) (void)Pool::read_params(p);
        ADD_FAILURE() << p << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kPoolCorrupt) << e.what();
        EXPECT_NE(std::string(e.what()).find(kind), std::string::npos) << e.what();
      }
    }
  }
}

// The access mode of the descriptor this process holds on `p` (from /proc/self/fdinfo), or -1.
int access_mode_of_open(const std::string& p) {
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec) != fs::path(p)) continue;
    std::ifstream info("/proc/self/fdinfo/" + e.path().filename().string());
    std::string key;
    while (info >> key)
      if (key == "flags:") {
        std::string octal;
        info >> octal;
        return static_cast<int>(std::stoul(octal, nullptr, 8)) & O_ACCMODE;
      }
  }
  return -1;
}

// `pmlab info`'s way in: O_RDONLY, a read-only mapping, a shared lock. Catches an open for
// writing (which a read-only file or mount refuses) and a state change through it.
TEST_F(PoolDamage, ReadOnlyOpenNeverAsksToWrite) {
  make_interrupted(path());
  const std::string before = slurp(path());
  {
    auto pool = Pool::open_read_only(path());
    EXPECT_TRUE(pool.read_only());
    EXPECT_EQ(access_mode_of_open(path()), O_RDONLY);
    EXPECT_EQ(pool.state(), RunState::kRunning);
    EXPECT_EQ(pool.starts(), 1u);
    EXPECT_EQ(pool.array<double>("a")[3], 42.0);
    EXPECT_THROW(pool.set_state(RunState::kDone), Error);
    EXPECT_THROW(pool.count_start(), Error);
    // Readers share the pool; a writer is kept out while one looks.
    auto second = Pool::open_read_only(path());
    try {
      (void)Pool::open(path());
      ADD_FAILURE() << "opened for writing while a reader held the pool";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPoolBusy) << e.what();
    }
  }
  {
    auto writer = Pool::open(path());
    EXPECT_EQ(access_mode_of_open(path()), O_RDWR);
    try {
      (void)Pool::open_read_only(path());
      ADD_FAILURE() << "a reader opened a pool a run holds";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPoolBusy) << e.what();
    }
  }
  EXPECT_EQ(slurp(path()), before);
}

}  // namespace
}  // namespace pmlab::pool
