// lp::Loop: independent regions and phases, bit-exact against plain loops; recovery after an
// interrupted run (counts equal to check_loop_pool's, which leaves the file byte-identical);
// refusals; kill -9 at random protocol points.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../support/test_seed.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/lp/loop.hpp"
#include "pmlab/pmlab.h"

namespace {

using pmlab::lp::Loop;

struct LoopHeatParams {
  std::uint64_t n, steps, bs;
};

double loop_initial(std::uint64_t i) {
  return static_cast<double>((i * 2654435761u) % 1000) / 10.0;
}

// The unprotected heat stencil: the reference.
std::vector<double> loop_heat_reference(const LoopHeatParams& p) {
  std::vector<double> g[2] = {std::vector<double>(p.n * p.n), {}};
  for (std::uint64_t i = 0; i < p.n * p.n; ++i) g[0][i] = loop_initial(i);
  g[1] = g[0];
  for (std::uint64_t t = 0; t < p.steps; ++t)
    for (std::uint64_t i = 1; i + 1 < p.n; ++i)
      for (std::uint64_t j = 1; j + 1 < p.n; ++j) {
        const double* u = g[t % 2].data();
        g[(t + 1) % 2][i * p.n + j] =
            u[i * p.n + j] + 0.1 * (u[(i - 1) * p.n + j] + u[(i + 1) * p.n + j] +
                                    u[i * p.n + j - 1] + u[i * p.n + j + 1] - 4 * u[i * p.n + j]);
      }
  return g[p.steps % 2];
}

Loop make_heat_loop(const std::string& path, const LoopHeatParams& p, unsigned threads) {
  const std::uint64_t n = p.n;
  return Loop(path, p, {{"a", n * n}, {"b", n * n}},
              {.phases = p.steps,
               .outputs = {"b", "a"},
               .first = n,
               .last = n * (n - 1),
               .chunk = p.bs * n},
              [n](Loop& l) {
                for (std::uint64_t i = 0; i < n * n; ++i)
                  l.array("a")[i] = l.array("b")[i] = loop_initial(i);
              },
              {.name = "heat", .threads = threads, .warn_if_emulated = false});
}

// The region body: rows of band k of step t, the same arithmetic as the reference.
Loop::Body loop_heat_body(const Loop& loop, const LoopHeatParams& p,
                          std::uint64_t stop_at_call = 0) {
  double* g[2] = {loop.array("a"), loop.array("b")};
  auto calls = std::make_shared<std::uint64_t>(0);
  return [=](std::uint64_t t, std::uint64_t k) {
    if (stop_at_call != 0 && ++*calls == stop_at_call) throw std::runtime_error("stop");
    const double* u = g[t % 2];
    double* v = g[(t + 1) % 2];
    const std::uint64_t n = p.n;
    for (std::uint64_t i = 1 + k * p.bs; i < std::min(n - 1, 1 + (k + 1) * p.bs); ++i)
      for (std::uint64_t j = 1; j + 1 < n; ++j)
        v[i * n + j] =
            u[i * n + j] + 0.1 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] +
                                  u[i * n + j + 1] - 4 * u[i * n + j]);
  };
}

std::uint64_t loop_differing(const double* got, const std::vector<double>& want) {
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    bad += std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(want[i]);
  return bad;
}

std::string loop_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class LoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("pmlab-loop-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  [[nodiscard]] std::string pool(const std::string& name = "p") const {
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

TEST_F(LoopTest, IndependentRegionsAreComputedOnceAndNotAgain) {
  struct P {
    std::uint64_t n;
    double a;
  } const p{10000, 2.5};
  const auto make = [&] {
    return Loop(pool(), p, {{"x", p.n}, {"z", p.n}}, {.outputs = {"z"}, .chunk = 999},
                [&](Loop& l) {
                  for (std::uint64_t i = 0; i < p.n; ++i) l.array("x")[i] = loop_initial(i);
                },
                {.warn_if_emulated = false});
  };
  {
    Loop loop = make();
    EXPECT_TRUE(loop.created());
    EXPECT_EQ(loop.regions(), 11u);
    const double* x = loop.array("x");
    double* z = loop.array("z");
    const auto r = loop.run([&](std::uint64_t, std::uint64_t k) {
      for (std::uint64_t i = k * 999; i < std::min(p.n, (k + 1) * 999); ++i) z[i] = p.a * x[i] + 1;
    });
    EXPECT_FALSE(r.resumed);
    EXPECT_FALSE(r.already_done);
    for (std::uint64_t i = 0; i < p.n; ++i) ASSERT_EQ(z[i], p.a * loop_initial(i) + 1);
    EXPECT_EQ(loop.pool().state(), pmlab::pool::RunState::kDone);
  }
  Loop again = make();
  EXPECT_FALSE(again.created());
  const auto r2 = again.run([](std::uint64_t, std::uint64_t) { FAIL() << "ran a done loop"; });
  EXPECT_TRUE(r2.already_done);
}

TEST_F(LoopTest, PhasesAreBitExactWithThePlainLoopOnTwoThreads) {
  const LoopHeatParams p{40, 7, 5};
  Loop loop = make_heat_loop(pool(), p, 2);
  loop.run(loop_heat_body(loop, p));
  EXPECT_EQ(loop_differing(loop.array(p.steps % 2 ? "b" : "a"), loop_heat_reference(p)), 0u);
}

// An interrupted run (the body throws at its 20th call, in step 2) leaves the pool running;
// check_loop_pool predicts the next run's recovery without changing a byte; the run recovers.
// One committed band is then damaged by hand: recovery finds it inconsistent and redoes it.
TEST_F(LoopTest, RecoveryMatchesTheOfflineCheckAndIsBitExact) {
  const LoopHeatParams p{34, 6, 4};  // 8 bands per step
  {
    Loop loop = make_heat_loop(pool(), p, 1);
    EXPECT_THROW(loop.run(loop_heat_body(loop, p, 20)), std::runtime_error);
    EXPECT_EQ(loop.pool().state(), pmlab::pool::RunState::kRunning);
    // Step 2 (calls 17..24, writing grid b) committed bands 0..2; damage an interior value of
    // band 1 (rows 5..8).
    loop.array("b")[5 * 34 + 1] += 1.0;
  }
  const std::string before = loop_file_bytes(pool());
  const auto c = pmlab::lp::check_loop_pool(pool());
  EXPECT_EQ(loop_file_bytes(pool()), before) << "check changed the pool";
  EXPECT_EQ(c.state, pmlab::pool::RunState::kRunning);
  EXPECT_EQ(c.durable_phases, 2u);
  EXPECT_EQ(c.recovery.regions_validated, 3u);
  EXPECT_EQ(c.recovery.regions_inconsistent, 1u);
  EXPECT_EQ(c.recovery.regions_unwritten, 5u);
  EXPECT_EQ(c.recovery.regions_recomputed, 6u);

  {
    Loop loop = make_heat_loop(pool(), p, 2);
    const auto r = loop.run(loop_heat_body(loop, p));
    EXPECT_TRUE(r.resumed);
    EXPECT_EQ(r.resume_phase, 3u);
    EXPECT_EQ(r.recovery.regions_validated, c.recovery.regions_validated);
    EXPECT_EQ(r.recovery.regions_inconsistent, c.recovery.regions_inconsistent);
    EXPECT_EQ(r.recovery.regions_unwritten, c.recovery.regions_unwritten);
    EXPECT_EQ(r.recovery.regions_recomputed, c.recovery.regions_recomputed);
    EXPECT_EQ(loop_differing(loop.array(p.steps % 2 ? "b" : "a"), loop_heat_reference(p)), 0u);
  }  // the check below opens the pool: this Loop must have closed it
  EXPECT_EQ(pmlab::lp::check_loop_pool(pool()).recovery.regions_recomputed, 0u);
}

TEST_F(LoopTest, RefusesOtherParametersOtherLayoutsAndBadLayouts) {
  const LoopHeatParams p{20, 3, 4};
  { (void)make_heat_loop(pool(), p, 1); }
  try {
    (void)make_heat_loop(pool(), LoopHeatParams{20, 3, 5}, 1);  // same arrays, other bs and params
    FAIL() << "accepted other parameters";
  } catch (const pmlab::Error& e) {
    EXPECT_EQ(e.code(), pmlab::ErrorCode::kPoolMismatch) << e.what();
  }
  const auto bad = [&](pmlab::lp::LoopLayout l, const char* what) {
    try {
      Loop(pool("q"), p, {{"a", 10}}, std::move(l));
      ADD_FAILURE() << "accepted " << what;
    } catch (const pmlab::Error& e) {
      EXPECT_EQ(e.code(), pmlab::ErrorCode::kInvalidArgument) << what << ": " << e.what();
    }
  };
  bad({.outputs = {"a"}}, "a chunk of 0");
  bad({.outputs = {"c"}, .chunk = 1}, "an unknown output");
  bad({.outputs = {"a"}, .first = 5, .last = 11, .chunk = 1}, "a range past the array");
  bad({.phases = 0, .outputs = {"a"}, .chunk = 1}, "no phases");
  EXPECT_FALSE(std::filesystem::exists(pool("q")));
  EXPECT_THROW((void)pmlab::lp::check_loop_pool(pool("q")), pmlab::Error);
}

// The C API: statuses and messages instead of exceptions; a failing body leaves the pool
// running and the next run recovers it.
TEST_F(LoopTest, CApiReturnsStatusesAndRecovers) {
  const std::uint64_t params[2] = {100, 10};
  const auto describe_unchecked = [&](pmlab_loop* l) {
    pmlab_loop_add_array(l, "z", 100);
    pmlab_loop_set_layout(l, 1, "z", 0, 0, 10);
    pmlab_loop_set_params(l, params, sizeof params);
  };
  const auto describe = [&](pmlab_loop* l) {
    EXPECT_EQ(pmlab_loop_add_array(l, "z", 100), PMLAB_OK);
    EXPECT_EQ(pmlab_loop_set_layout(l, 1, "z", 0, 0, 10), PMLAB_OK);
    EXPECT_EQ(pmlab_loop_set_params(l, params, sizeof params), PMLAB_OK);
    EXPECT_EQ(pmlab_loop_set_option(l, "warn", "0"), PMLAB_OK);
    EXPECT_EQ(pmlab_loop_set_option(l, "threads", "1"), PMLAB_OK);
  };
  pmlab_loop* l = pmlab_loop_new();
  EXPECT_EQ(pmlab_loop_run(l, nullptr, nullptr, nullptr), PMLAB_E_INVALID);
  EXPECT_NE(std::string(pmlab_loop_error(l)).find("before pmlab_loop_open"), std::string::npos);
  pmlab_loop_free(l);
  for (const char* bad : {"persistence=fast", "colour=1"}) {
    l = pmlab_loop_new();
    const std::string kv(bad);
    const auto eq = kv.find('=');
    EXPECT_EQ(pmlab_loop_set_option(l, kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str()),
              PMLAB_E_INVALID)
        << bad;
    pmlab_loop_free(l);
  }
  // A handle keeps its first failure: later calls do nothing and return it, message kept.
  l = pmlab_loop_new();
  EXPECT_EQ(pmlab_loop_set_option(l, "colour", "1"), PMLAB_E_INVALID);
  describe_unchecked(l);
  EXPECT_EQ(pmlab_loop_open(l, pool().c_str(), nullptr, nullptr), PMLAB_E_INVALID);
  EXPECT_EQ(pmlab_loop_array(l, "z"), nullptr);
  EXPECT_NE(std::string(pmlab_loop_error(l)).find("colour"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(pool()));
  pmlab_loop_free(l);
  l = pmlab_loop_new();
  describe(l);
  ASSERT_EQ(pmlab_loop_open(l, pool().c_str(), nullptr, nullptr), PMLAB_OK);
  EXPECT_EQ(pmlab_loop_array(l, "nope"), nullptr);
  EXPECT_NE(std::string(pmlab_loop_error(l)).find("nope"), std::string::npos);
  pmlab_loop_free(l);
  l = pmlab_loop_new();
  describe(l);
  ASSERT_EQ(pmlab_loop_open(l, pool().c_str(), nullptr, nullptr), PMLAB_OK);
  const auto fill = [](void* z, std::uint64_t, std::uint64_t k) {
    if (k == 7) return 42;  // stops the run
    for (std::uint64_t i = k * 10; i < k * 10 + 10; ++i)
      static_cast<double*>(z)[i] = static_cast<double>(i);
    return 0;
  };
  double* z = pmlab_loop_array(l, "z");
  pmlab_report r;
  EXPECT_EQ(pmlab_loop_run(l, fill, z, &r), PMLAB_E_CALLBACK);
  EXPECT_NE(std::string(pmlab_loop_error(l)).find("returned 42"), std::string::npos);
  pmlab_loop_free(l);

  std::int32_t state = 0;
  std::uint64_t durable = 0;
  pmlab_report c;
  char msg[64];
  ASSERT_EQ(pmlab_loop_check(pool().c_str(), &state, &durable, &c, msg, sizeof msg), PMLAB_OK);
  EXPECT_EQ(state, 2);  // running
  EXPECT_EQ(c.regions_validated, 7u);
  EXPECT_EQ(c.regions_unwritten, 3u);
  EXPECT_EQ(pmlab_loop_check(pool("none").c_str(), &state, &durable, &c, msg, sizeof msg),
            PMLAB_E_IO);
  EXPECT_GT(std::strlen(msg), 0u);

  l = pmlab_loop_new();
  describe(l);
  ASSERT_EQ(pmlab_loop_open(l, pool().c_str(), nullptr, nullptr), PMLAB_OK);
  z = pmlab_loop_array(l, "z");
  ASSERT_EQ(pmlab_loop_run(
                l,
                [](void* zz, std::uint64_t, std::uint64_t k) {
                  for (std::uint64_t i = k * 10; i < k * 10 + 10; ++i)
                    static_cast<double*>(zz)[i] = static_cast<double>(i);
                  return 0;
                },
                z, &r),
            PMLAB_OK);
  EXPECT_EQ(r.resumed, 1);
  EXPECT_EQ(r.regions_recomputed, 3u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(z[i], static_cast<double>(i));
  pmlab_loop_free(l);

  const std::uint64_t other[2] = {100, 11};
  l = pmlab_loop_new();
  describe(l);
  EXPECT_EQ(pmlab_loop_set_params(l, other, sizeof other), PMLAB_OK);
  EXPECT_EQ(pmlab_loop_open(l, pool().c_str(), nullptr, nullptr), PMLAB_E_MISMATCH);
  pmlab_loop_free(l);
}

// pmlab_loop_add_input: a created pool's array starts as a copy of the caller's values (read
// once, at creation: an open that finds the pool never reads them), and init runs after it.
TEST_F(LoopTest, CApiInputsAreCopiedWhenThePoolIsCreated) {
  std::vector<double> in(40);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = 0.5 * static_cast<double>(i);
  const std::uint64_t params[1] = {40};
  const auto open = [&](const double* initial, pmlab_init_fn init) {
    pmlab_loop* l = pmlab_loop_new();
    pmlab_loop_add_input(l, "x", 40, initial);
    pmlab_loop_add_array(l, "y", 40);
    pmlab_loop_set_layout(l, 1, "y", 0, 0, 8);
    pmlab_loop_set_params(l, params, sizeof params);
    pmlab_loop_set_option(l, "warn", "0");
    EXPECT_EQ(pmlab_loop_open(l, pool().c_str(), init, nullptr), PMLAB_OK) << pmlab_loop_error(l);
    return l;
  };
  // init sees the copied input and may change it: it runs after the copy.
  pmlab_loop* l = open(in.data(), [](void*, pmlab_loop* lp) {
    double* x = pmlab_loop_array(lp, "x");
    if (x[3] != 1.5) return 1;
    x[0] = -1;
    return 0;
  });
  const double* x = pmlab_loop_array(l, "x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x[0], -1.0);
  for (std::size_t i = 1; i < in.size(); ++i) EXPECT_EQ(x[i], in[i]) << i;
  EXPECT_EQ(pmlab_loop_array(l, "y")[5], 0.0);
  pmlab_loop_free(l);
  std::vector<double> other(40, 9.0);
  l = open(other.data(), nullptr);
  EXPECT_EQ(pmlab_loop_array(l, "x")[1], 0.5);  // the pool's, not `other`
  pmlab_loop_free(l);
}

// The child of KillNineAtRandomPointsIsBitExact, a fresh process (this binary run again), so
// that its OpenMP threads never follow a fork: runs the heat loop on PMLAB_LOOP_TEST_POOL on two
// threads (PMLAB_LOOP_KILL_AT kills it) and writes its recovery counts to PMLAB_LOOP_TEST_COUNTS.
// Skipped when run by itself.
TEST(LoopKillChild, RunsTheLoopWhenSpawned) {
  const char* path = std::getenv("PMLAB_LOOP_TEST_POOL");
  if (path == nullptr) GTEST_SKIP() << "the kill test's child; nothing to do alone";
  const LoopHeatParams p{34, 6, 4};
  Loop loop = make_heat_loop(path, p, 2);
  const auto r = loop.run(loop_heat_body(loop, p));
  std::ofstream(std::getenv("PMLAB_LOOP_TEST_COUNTS"))
      << r.recovery.regions_validated << ' ' << r.recovery.regions_inconsistent << ' '
      << r.recovery.regions_unwritten << ' ' << r.recovery.regions_recomputed;
}

// kill -9 (the process SIGKILLs itself at protocol point E: PMLAB_LOOP_KILL_AT) at 24 random
// points of a two-thread run, every other one killed again during its recovery; a third process
// finishes the run; the result is bit-exact, and the check made between kills predicts the
// recovery that follows it.
TEST_F(LoopTest, KillNineAtRandomPointsIsBitExact) {
  const LoopHeatParams p{34, 6, 4};
  const std::vector<double> want = loop_heat_reference(p);
  std::uint64_t points = 0;
  {
    Loop loop = make_heat_loop(pool("count"), p, 1);
    points = loop.run(loop_heat_body(loop, p)).crash_points;
  }
  ASSERT_GT(points, 60u);
  const std::uint64_t seed = pmlab::test::test_seed();
  SCOPED_TRACE(pmlab::test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  // Runs the child on `path`, killed at `kill_at` unless 0; returns its wait status.
  const auto child = [&](const std::string& path, std::uint64_t kill_at) {
    const std::string counts = path + ".counts";
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("PMLAB_LOOP_TEST_POOL", path.c_str(), 1);
      setenv("PMLAB_LOOP_TEST_COUNTS", counts.c_str(), 1);
      if (kill_at != 0) setenv("PMLAB_LOOP_KILL_AT", std::to_string(kill_at).c_str(), 1);
      const int null = ::open("/dev/null", O_WRONLY);
      dup2(null, 1);
      execl("/proc/self/exe", "pmlab_tests", "--gtest_filter=LoopKillChild.*", nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  };
  const auto killed = [](int s) { return WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL; };
  for (int trial = 0; trial < 24; ++trial) {
    const std::string path = pool("t" + std::to_string(trial));
    const std::uint64_t at = 1 + rng() % points;
    SCOPED_TRACE("trial " + std::to_string(trial) + ", killed at point " + std::to_string(at));
    ASSERT_TRUE(killed(child(path, at)));
    if (trial % 2 == 1) (void)child(path, 1 + rng() % 8);  // killed again, in recovery
    const auto c = pmlab::lp::check_loop_pool(path);
    ASSERT_EQ(child(path, 0), 0);
    std::uint64_t v = 0, i = 0, u = 0, r = 0;
    std::ifstream(path + ".counts") >> v >> i >> u >> r;
    EXPECT_EQ(v, c.recovery.regions_validated);
    EXPECT_EQ(i, c.recovery.regions_inconsistent);
    EXPECT_EQ(u, c.recovery.regions_unwritten);
    EXPECT_EQ(r, c.recovery.regions_recomputed);
    Loop done = make_heat_loop(path, p, 1);
    EXPECT_TRUE(done.run(loop_heat_body(done, p)).already_done);
    EXPECT_EQ(loop_differing(done.array(p.steps % 2 ? "b" : "a"), want), 0u);
  }
}

}  // namespace
