// pmlab run's progress: every scheme row of every kernel that declares its outer-step count
// reports exactly that many outer steps on a fresh run, and a resumed run starts at its resume
// point (so a row that forgets mem::outer_step_done, or calls it twice, fails here).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "../support/small_run.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::run {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("pmlab-steps-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

struct Row {
  std::string kernel, scheme;
};
void PrintTo(const Row& r, std::ostream* os) {
  *os << r.kernel << " " << r.scheme;
}

std::vector<Row> rows_with_declared_steps() {
  std::vector<Row> rows;
  for (const auto& k : kernel_drivers())
    if (k.outer_steps)
      for (const auto& s : k.schemes) rows.push_back({k.name, s});
  return rows;
}

class OuterSteps : public ::testing::TestWithParam<Row> {};

TEST_P(OuterSteps, AFreshRunReportsEveryDeclaredOuterStepOnce) {
  const auto& k = find_kernel(GetParam().kernel);
  const auto p = test::small_run(k, GetParam().scheme);
  k.validate(p);
  TempDir dir;
  auto pool = pool::Pool::create((dir.path / "p").string(), p, k.arrays(p), k.init);
  std::atomic<std::uint64_t> steps{0};
  ExecOptions opt;
  opt.mode = persist::PersistMode::kNone;  // the count, not the flushes, is under test
  opt.steps_done = &steps;
  const auto report = k.execute(pool, opt);
  EXPECT_EQ(report.resume_point, 0u);
  EXPECT_EQ(steps.load(), k.outer_steps(p))
      << GetParam().kernel << " " << GetParam().scheme
      << ": the bar would not end at its total (a loop without mem::outer_step_done, or one "
         "calling it twice)";
  EXPECT_TRUE(k.verify(pool).ok());
}

INSTANTIATE_TEST_SUITE_P(AllDeclaring, OuterSteps, ::testing::ValuesIn(rows_with_declared_steps()),
                         [](const auto& row) {
                           std::string s = row.param.kernel + "_" + row.param.scheme;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

// The loop kernels all declare it; only the BEP micro-benchmarks (no outer iteration of a
// loop nest) may go without, and then run draws no bar.
TEST(OuterStepsCatalog, EveryLoopKernelDeclaresItsOuterSteps) {
  for (const char* name :
       {"tmm", "cholesky", "lu", "gauss", "conv2d", "fft", "cg", "jacobi", "gemm"})
    EXPECT_TRUE(find_kernel(name).outer_steps != nullptr) << name;
}

// Without a counter the native backend publishes nothing (the default of every run).
TEST(OuterStepsCatalog, ARunWithoutACounterIsUnaffected) {
  const auto& k = find_kernel("tmm");
  const auto p = test::small_run(k, "lp");
  TempDir dir;
  auto pool = pool::Pool::create((dir.path / "q").string(), p, k.arrays(p), k.init);
  ExecOptions opt;
  opt.mode = persist::PersistMode::kNone;
  (void)k.execute(pool, opt);
  EXPECT_TRUE(k.verify(pool).ok());
}

}  // namespace
}  // namespace pmlab::run
