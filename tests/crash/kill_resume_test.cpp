// Real crash tests: `pmlab run` is SIGKILLed at random moments and restarted until done; C must be
// bit-exact.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "../support/test_seed.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path scratch_dir(const std::string& tag) {
  auto d = fs::temp_directory_path() / ("pmlab-crash-" + std::to_string(getpid()) + "-" + tag);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// Campaigns from this many trials on assert that kills landed (smaller ones, as in the
// sanitizer run, look for memory errors only).
constexpr int kNonVacuityTrials = 20;

struct SchemeTally {
  int trials = 0, kills = 0, resumes_with_recovery_work = 0;
};

// One scheme: random sizes (non-multiples of bs included), 1 or 2 threads, random checksum kinds,
// random kill delays; every restart must succeed or be killed, never fail to open the pool.
// Wall time of a fault-free run of `scheme` at size n (process start + pool creation + compute).
double measure_run_ms(const std::string& kernel, const std::string& scheme, std::uint64_t n,
                      const fs::path& dir, const std::vector<std::string>& extra) {
  const std::string pool = (dir / "calibrate.pool").string();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> args{PMLAB_BINARY,      "run",  kernel, "--scheme", scheme, "--n",
                                std::to_string(n), "--bs", "16",   "--pool",   pool};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_process(args, (dir / "calibrate").string());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  fs::remove(pool);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return ms;
}

// `extra_trials` more trials run, one at a time, while no resume has recomputed work yet: a kill
// leaves recovery work only when it lands inside a region and is the run's last kill (about 1 trial
// in 10), so a fixed 20 trials would miss it in ~14% of campaigns and make the check a coin toss.
void kill_resume_campaign(const std::string& kernel, const std::string& scheme,
                          const std::vector<std::string>& extra, int trials, int extra_trials,
                          std::uint64_t seed, SchemeTally& tally) {
  std::mt19937_64 rng(seed);
  auto dir = scratch_dir(kernel + "-" + scheme + (extra.empty() ? "" : "-variant"));
  const auto& driver = run::find_kernel(kernel);
  const std::uint64_t max_n = driver.crash_test_max_n;
  auto legal = [&](std::uint64_t n) { return driver.n_power_of_two ? std::bit_floor(n) : n; };
  const std::uint64_t calib_n = legal(std::max<std::uint64_t>(1, max_n * 3 / 4));
  // Kill delays are drawn over the expected run time, so kills land anywhere in a run:
  // during start-up and pool creation, in the kernel, and during recovery of earlier kills.
  // The fastest of three: one slow start-up (a loaded machine) would stretch every kill delay
  // past the end of the short runs (the BEP benchmarks' runs are mostly start-up). A campaign
  // too small to assert that kills land (the sanitizer run's) measures it once.
  const int startup_runs = trials >= kNonVacuityTrials ? 3 : 1;
  double startup_ms = measure_run_ms(kernel, scheme, 1, dir, extra);
  for (int i = 1; i < startup_runs; ++i)
    startup_ms = std::min(startup_ms, measure_run_ms(kernel, scheme, 1, dir, extra));
  const double big_ms = measure_run_ms(kernel, scheme, calib_n, dir, extra);
  auto expected_ms = [&](std::uint64_t n, std::uint64_t threads) {
    // Cubic in n is right for the factorizations and tmm and pessimistic for the others,
    // whose kills then land earlier in the run; both are fine for a random kill time.
    const double c = static_cast<double>(calib_n);
    double scale = static_cast<double>(n * n * n) / (c * c * c) / static_cast<double>(threads);
    return startup_ms + std::max(0.0, big_ms - startup_ms) * scale;
  };
  const char* kinds[] = {"modular", "parity", "adler32", "modular-parity", "crc32c"};
  for (int t = 0;
       t < trials || (t < trials + extra_trials && tally.resumes_with_recovery_work == 0); ++t) {
    const std::uint64_t n = legal(1 + rng() % max_n), bs = 1 + rng() % 48, threads = 1 + rng() % 2;
    const std::string checksum = kinds[rng() % 5];
    const std::string pool = (dir / ("t" + std::to_string(t) + ".pool")).string();
    SCOPED_TRACE(::testing::Message() << kernel << " scheme " << scheme << " trial " << t
                                      << " seed " << seed << " n=" << n << " bs=" << bs
                                      << " threads=" << threads << " checksum=" << checksum);
    std::vector<std::string> create{PMLAB_BINARY,
                                    "run",
                                    kernel,
                                    "--scheme",
                                    scheme,
                                    "--n",
                                    std::to_string(n),
                                    "--bs",
                                    std::to_string(bs),
                                    "--threads",
                                    std::to_string(threads),
                                    "--checksum",
                                    checksum,
                                    "--pool",
                                    pool,
                                    "--verify",
                                    "--json"};
    create.insert(create.end(), extra.begin(), extra.end());
    // The run that completes also verifies (--verify on every attempt): a kill that lands
    // during the verification leaves a done pool, which the next attempt opens and verifies.
    nlohmann::json finished;
    // Kill delays up to ~the run time of the larger sizes; later attempts run to completion.
    bool done = false;
    for (int attempt = 0; attempt < 12 && !done; ++attempt) {
      std::optional<std::chrono::microseconds> kill_after;
      if (attempt < 6 && rng() % 5 != 0) {
        std::uniform_real_distribution<double> frac(0.0, 1.1);
        kill_after = std::chrono::microseconds(
            static_cast<std::int64_t>(1000.0 * frac(rng) * expected_ms(n, threads)));
      }
      // A kill during creation leaves no pool (only a PATH.creating.PID.* temporary, removed by
      // the next creation): the run must be re-issued
      // with its parameters; otherwise `--pool` alone resumes with the stored ones.
      auto args =
          !fs::exists(pool) ? create : std::vector<std::string>{PMLAB_BINARY, "run",      "--pool",
                                                                pool,         "--verify", "--json"};
      auto r = run_process(args, (dir / "proc").string(), kill_after);
      if (r.killed) {
        ++tally.kills;
        continue;
      }
      ASSERT_EQ(r.exit_code, 0) << "attempt " << attempt << " stderr: " << r.err;
      finished = json::parse(r.out);
      if (finished["resumed"].get<bool>() &&
          finished["recovery"]["regions_recomputed"].get<int>() > 0)
        ++tally.resumes_with_recovery_work;
      done = true;
    }
    ASSERT_TRUE(done);
    ASSERT_TRUE(finished["verified"].get<bool>()) << finished.dump();
    ++tally.trials;
    fs::remove(pool);
  }
  fs::remove_all(dir);
}

struct Case {
  std::string kernel, scheme;
  std::string label;              // the kernel's crash-test variant, empty for the default run
  std::vector<std::string> args;  // its options
  friend void PrintTo(const Case& c, std::ostream* os) {
    *os << c.kernel << " --scheme " << c.scheme;
    for (const auto& a : c.args) *os << " " << a;
  }
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& k : run::kernel_drivers()) {
    for (const auto& s : k.schemes)
      if (k.crash_safe(s)) cases.push_back({k.name, s, {}, {}});  // not ipv-nf (measurement)
    for (const auto& v : k.crash_test_variants)
      for (const auto& s : v.schemes) cases.push_back({k.name, s, v.label, v.args});
  }
  return cases;
}

class KillResume : public ::testing::TestWithParam<Case> {};

TEST_P(KillResume, RandomSigkillsThenRestartGiveBitExactResults) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  const int trials = env_int("PMLAB_CRASH_TRIALS", kNonVacuityTrials);
  const auto& [kernel, scheme, label, args] = GetParam();
  SchemeTally tally;
  // Non-vacuity is a statistical property: it is asserted for campaigns large enough to make
  // a false alarm negligible (the default 20 trials, extended for LP until a resume recomputed
  // work: with ~0.1 per trial, 150 extra trials miss with probability e^-15). The sanitizer run
  // uses a few trials to look for memory errors, where a kill landing or not is a coin toss.
  const bool assert_non_vacuity = trials >= kNonVacuityTrials;
  const int extra_trials = assert_non_vacuity && scheme == "lp" ? 5 * trials : 0;
  kill_resume_campaign(kernel, scheme, args, trials, extra_trials, seed, tally);
  std::printf(
      "[ kill -9 ] %s %s%s%s: %d trials bit-exact, %d SIGKILLs landed, %d resumes recomputed "
      "work\n",
      kernel.c_str(), scheme.c_str(), label.empty() ? "" : " ", label.c_str(), tally.trials,
      tally.kills, tally.resumes_with_recovery_work);
  EXPECT_GE(tally.trials, trials);
  if (assert_non_vacuity) {
    // The kills really interrupted runs (a kill drawn after a short run's end does not land).
    EXPECT_GE(tally.kills, trials / 3);
    // LP must really have had to recompute after some kills.
    if (scheme == "lp") {
      EXPECT_GE(tally.resumes_with_recovery_work, 1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllKernels, KillResume, ::testing::ValuesIn(all_cases()),
                         [](const auto& param_info) {
                           std::string s = param_info.param.kernel + "_" + param_info.param.scheme;
                           if (!param_info.param.label.empty()) s += "_" + param_info.param.label;
                           for (auto& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace pmlab::testing
