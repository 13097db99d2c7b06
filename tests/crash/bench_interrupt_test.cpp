// `pmlab bench` stopped by SIGTERM / Ctrl-C: exit 130 and no temporary pool left behind.
#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <string>

#include "../support/process.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

TEST(BenchInterrupt, SigtermRemovesTemporaryPoolsAndExits130) {
  const fs::path dir =
      fs::temp_directory_path() / ("pmlab-bench-interrupt-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // Far more repetitions than fit in the delay, so the signal lands mid-benchmark.
  const auto r = run_process({PMLAB_BINARY, "bench", "tmm", "--n", "160", "--reps", "1000",
                              "--schemes", "lp", "--quiet", "--dir", dir.string()},
                             (dir / "log").string(), std::chrono::milliseconds(700), SIGTERM);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  std::size_t left = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("pmlab-bench-")) ++left;
  EXPECT_EQ(left, 0u) << "temporary pools left in " << dir;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pmlab::testing
