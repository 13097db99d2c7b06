// `pmlab run` and `pmlab info` on damaged pools, on paths that are not pools, on a read-only
// mount, and with names this pmlab does not know: a clear message, the documented exit code, and
// the pool file byte for byte as it was.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "../../src/pool/disk_format.hpp"
#include "../support/cli_fixture.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;
namespace disk = pool::disk;

class PoolDamageCli : public PmlabCliTest {
 protected:
  PoolDamageCli() : PmlabCliTest("pmlab-pool-damage") {}
  [[nodiscard]] std::string bytes() const {
    std::ifstream in(pool(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  void flip(std::size_t bit) const {
    const int fd = ::open(pool().c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    unsigned char b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(bit / 8)), 1);
    b = static_cast<unsigned char>(b ^ (1u << (bit % 8)));
    ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(bit / 8)), 1);
    ::close(fd);
  }
  // The state word as the file holds it, decoded; nullopt while the file is absent or short.
  [[nodiscard]] std::optional<disk::StateWord> state_on_disk() const {
    const int fd = ::open(pool().c_str(), O_RDONLY);
    if (fd < 0) return std::nullopt;
    std::uint64_t w = 0;
    const auto got = ::pread(fd, &w, sizeof w, disk::kStateOffset);
    ::close(fd);
    if (got != static_cast<ssize_t>(sizeof w)) return std::nullopt;
    return disk::decode_state_word(w);
  }
  // `args` must exit 3 naming the pool as damaged, without changing a byte of it.
  void expect_refused_unchanged(const std::vector<std::string>& args, const std::string& what) {
    const std::string before = bytes();
    const auto r = pmlab(args);
    EXPECT_EQ(r.exit_code, 3) << what << ": " << r.err;
    EXPECT_NE(r.err.find(pool()), std::string::npos) << what << ": " << r.err;
    EXPECT_TRUE(r.err.find("corrupt") != std::string::npos ||
                r.err.find("not a pmlab pool") != std::string::npos ||
                r.err.find("format version") != std::string::npos)
        << what << ": " << r.err;
    EXPECT_EQ(bytes(), before) << what << ": the pool was changed";
  }
};

// An interrupted run's pool with one bit flipped: every bit of the state word (one flip made
// running read as done, or done as running, with exit 0) and one bit of every 64-byte line of
// the header. `run` and `info` exit 3 and change nothing; undamaged, the pool still resumes.
TEST_F(PoolDamageCli, FlippedHeaderBitsExitThreeAndChangeNothing) {
  ASSERT_EQ(pmlab({"run", "tmm", "--n", "32", "--bs", "8", "--pool", pool()}).exit_code, 0);
  {
    pool::Pool p = pool::Pool::open(pool());
    p.set_state(pool::RunState::kRunning);  // as a crash leaves it
  }
  std::vector<std::size_t> bits;
  for (std::size_t b = 0; b < 64; ++b) bits.push_back(disk::kStateOffset * 8 + b);
  for (std::size_t line = 0; line < disk::kHeaderBytes / 64; ++line)
    bits.push_back(line * 64 * 8 + (line % 8) * 8 + line % 8);  // byte line*64 + line%8
  for (const std::size_t bit : bits) {
    flip(bit);
    const std::string what = "bit " + std::to_string(bit);
    expect_refused_unchanged({"run", "--pool", pool()}, "run, " + what);
    expect_refused_unchanged({"info", "--pool", pool()}, "info, " + what);
    flip(bit);
    if (HasFailure()) break;
  }
  const auto r = pmlab({"run", "--pool", pool(), "--verify", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["resumed"].get<bool>());
}

// The case, with a real interruption: a run killed mid-way leaves `running`; the flip
// of bit 0 makes it read `done` (format 3 then exited 0 with C unfinished). Exit 3, unchanged;
// flipped back, the run resumes and verifies.
TEST_F(PoolDamageCli, KilledRunWithAFlippedStateBitExitsThree) {
  bool signalled = false;
  const auto killed = run_process_signal_when(
      {PMLAB_BINARY, "run", "tmm", "--n", "1024", "--bs", "32", "--pool", pool(), "--quiet",
       "--persist", "auto"},
      dir_.string() + ".log",
      [&] {
        const auto s = state_on_disk();
        return s && s->state == static_cast<std::uint8_t>(pool::RunState::kRunning);
      },
      std::chrono::seconds(120), SIGKILL, &signalled);
  ASSERT_TRUE(signalled && killed.killed) << "the run ended before it could be interrupted";
  ASSERT_EQ(state_on_disk()->state, static_cast<std::uint8_t>(pool::RunState::kRunning));
  flip(disk::kStateOffset * 8);  // 2 (running) ^ 1 = 3 (done) in the state byte
  expect_refused_unchanged({"run", "--pool", pool()}, "run");
  expect_refused_unchanged({"info", "--pool", pool()}, "info");
  flip(disk::kStateOffset * 8);
  const auto r = pmlab({"run", "--pool", pool(), "--verify", "--json", "--persist", "auto"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["verified"].get<bool>());
}

// A FIFO blocked `run` and `info` for ever (opening it for reading waits for a writer); a
// directory or a device is no pool either. Each is refused at once (killed after 20 s if not).
TEST_F(PoolDamageCli, PoolPathsThatAreNotRegularFilesAreRefusedAtOnce) {
  const std::string fifo = (dir_ / "fifo").string(), dir = (dir_ / "dir").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directories(dir);
  for (const auto& [path, kind] : {std::pair{fifo, "a FIFO"}, std::pair{dir, "a directory"},
                                   std::pair{std::string("/dev/null"), "a character device"}})
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"run", "tmm", "--n", "16", "--pool", path},
          std::vector<std::string>{"run", "--pool", path},
          std::vector<std::string>{"info", "--pool", path},
          std::vector<std::string>{"pool", "check", "--pool", path}}) {
      std::vector<std::string> argv{PMLAB_BINARY};
      argv.insert(argv.end(), args.begin(), args.end());
      const auto r = run_process(argv, dir_.string() + ".log", std::chrono::seconds(20));
      ASSERT_FALSE(r.killed) << args[0] << " on " << path << " did not return";
      EXPECT_EQ(r.exit_code, 3) << args[0] << " on " << path << ": " << r.err;
      EXPECT_NE(r.err.find(kind), std::string::npos) << r.err;
    }
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
}

// `info` only reads: it works on a read-only mount (a bind mount made read-only in a mount
// namespace of its own), where `run`, which must write, is refused. Skipped where this process
// may not create a mount namespace.
TEST_F(PoolDamageCli, InfoWorksOnAReadOnlyMount) {
  ASSERT_EQ(pmlab({"run", "tmm", "--n", "16", "--bs", "4", "--pool", pool()}).exit_code, 0);
  {
    pool::Pool p = pool::Pool::open(pool());
    p.set_state(pool::RunState::kRunning);  // so that `run` would have to write
  }
  const std::string d = dir_.string();
  const auto in_read_only_mount = [&](const std::string& cmd) {
    // 77: no mount namespace here; 78: the mount is not read-only after all.
    const std::string script = "mount --bind -o ro '" + d + "' '" + d + "' || exit 77; " +
                               "touch '" + d + "/probe' 2>/dev/null && exit 78; exec " + cmd;
    return run_process({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script}, d + ".sh.log");
  };
  const std::string before = bytes();
  const auto info = in_read_only_mount(std::string(PMLAB_BINARY) + " info --json --pool " + pool());
  if (info.exit_code == 77 || info.exit_code == -1 || !fs::exists("/usr/bin/unshare"))
    GTEST_SKIP() << "cannot make a read-only mount here: " << info.err;
  ASSERT_NE(info.exit_code, 78) << "the bind mount stayed writable";
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(nlohmann::json::parse(info.out)["state"], "running") << info.out;
  const auto run = in_read_only_mount(std::string(PMLAB_BINARY) + " run --pool " + pool());
  EXPECT_EQ(run.exit_code, 3) << "run on a read-only mount: " << run.err;
  EXPECT_EQ(bytes(), before);
}

// Names this pmlab does not know are usage errors (2) on an existing pool as on a new one; a
// known kernel or scheme other than the pool's is a different run (3).
TEST_F(PoolDamageCli, UnknownKernelOrSchemeOnAnExistingPoolExitsTwo) {
  ASSERT_EQ(pmlab({"run", "tmm", "--n", "16", "--bs", "4", "--pool", pool()}).exit_code, 0);
  const std::string before = bytes();
  const auto nokernel = pmlab({"run", "nosuch", "--pool", pool()});
  EXPECT_EQ(nokernel.exit_code, 2) << nokernel.err;
  EXPECT_NE(nokernel.err.find("unknown kernel 'nosuch'"), std::string::npos) << nokernel.err;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "tmm", "--scheme", "nosuch", "--pool", pool()},
        std::vector<std::string>{"run", "--scheme", "nosuch", "--pool", pool()}}) {
    const auto r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("unknown scheme 'nosuch' for tmm"), std::string::npos) << r.err;
  }
  const auto other = pmlab({"run", "tmm", "--scheme", "cp", "--pool", pool()});
  EXPECT_EQ(other.exit_code, 3) << other.err;
  EXPECT_NE(other.err.find("holds a different run"), std::string::npos) << other.err;
  EXPECT_EQ(bytes(), before);
}

}  // namespace
}  // namespace pmlab::testing
