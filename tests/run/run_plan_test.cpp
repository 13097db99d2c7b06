// A run planned once (run::plan_run) is validated once: the execution it is passed to does not
// validate again, and an unplanned execution still validates itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../support/small_run.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/scheme/scheme.hpp"

namespace pmlab::run {
namespace {

namespace fs = std::filesystem;

struct PlanDir {
  fs::path path = fs::temp_directory_path() / ("pmlab-plan-" + std::to_string(::getpid()));
  PlanDir() { fs::create_directories(path); }
  ~PlanDir() { fs::remove_all(path); }
};

struct RunCounts {
  std::uint64_t validations = 0, row_lookups = 0;
};

// What a fresh run of tmm/lp counts from its plan to its end, `pmlab run`'s way.
RunCounts counts_of_a_fresh_run(bool planned) {
  PlanDir dir;
  const std::uint64_t validations = validations_made.load();
  const std::uint64_t lookups = scheme::row_lookups.load();
  RunPlan plan = plan_run(test::small_run(find_kernel("tmm"), "lp"));
  plan.params.layout_tag = plan.layout_tag;
  auto pool =
      pool::Pool::create((dir.path / "p").string(), plan.params, plan.arrays, plan.kernel->init);
  ExecOptions opt;
  opt.mode = persist::PersistMode::kNone;
  opt.planned = planned;
  (void)plan.kernel->execute(pool, opt);
  const RunCounts counts{validations_made.load() - validations,
                         scheme::row_lookups.load() - lookups};
  EXPECT_TRUE(plan.kernel->verify(pool).ok());
  return counts;
}

// One validation; the row looked up 6 times: validation 2 (is it there, its own check), arrays
// 1, layout tag 2 (its revision, its arrays), the run 1.
TEST(RunPlan, APlannedRunIsValidatedOnce) {
  const RunCounts c = counts_of_a_fresh_run(true);
  EXPECT_EQ(c.validations, 1u);
  EXPECT_EQ(c.row_lookups, 6u);
}

// An execution without a plan (bench, the kill tests' drivers) validates and checks the layout
// itself.
TEST(RunPlan, AnUnplannedExecutionValidatesItself) {
  const RunCounts c = counts_of_a_fresh_run(false);
  EXPECT_EQ(c.validations, 2u);
  EXPECT_EQ(c.row_lookups, 10u);
}

TEST(RunPlan, PlanningRefusesWhatValidationRefuses) {
  auto p = test::small_run(find_kernel("tmm"), "no-such-scheme");
  try {
    (void)plan_run(p);
    FAIL() << "planned a run of an unknown scheme";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  p.scheme = "lp";
  p.kernel = "no-such-kernel";
  EXPECT_THROW((void)plan_run(p), Error);
}

}  // namespace
}  // namespace pmlab::run
