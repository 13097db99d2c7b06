// Seed 002's checkpoint copy modes (nt, clflush, par-clflush): exact copies, crash safety of a
// step checkpoint in every mode from every crash point, and the mutants the tests must catch.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "crash_backend.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/scheme/copy_mode.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"

namespace pmlab::scheme_test {
namespace {

constexpr scheme::CopyMode kModes[] = {scheme::CopyMode::kNt, scheme::CopyMode::kStoresClflush,
                                       scheme::CopyMode::kStoresParClflush};

// Odd offsets and lengths, neighbouring jobs sharing cache lines (rows of a trailing matrix).
std::vector<scheme::CopyJob> jobs_of(double* dst, const double* src, std::size_t n) {
  std::vector<scheme::CopyJob> jobs;
  for (std::size_t r = 1; r < n; ++r)
    jobs.push_back({dst + r * n + r / 2, src + r * n + r / 2, n - r / 2});
  return jobs;
}

TEST(SchemeCopyMode, EveryModeCopiesExactlyNativelyAndDurablyThroughABackend) {
  const std::size_t n = 97;
  std::vector<double> src(n * n);
  std::iota(src.begin(), src.end(), 1.0);
  auto verify = [&](const double* dst) {
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t c = 0; c < n; ++c)
        ASSERT_EQ(dst[r * n + c], r >= 1 && c >= r / 2 ? src[r * n + c] : 0.0) << r << "," << c;
  };
  for (const auto mode : kModes) {
    SCOPED_TRACE(std::string(scheme::to_string(mode)));
    for (int threads : {1, 2}) {
      mem::PlainBackend be({}, threads);
      auto dst = zeroed<double>(n * n);
      scheme::copy_jobs_durable_mode(be, jobs_of(dst.get(), src.data(), n), mode);
      verify(dst.get());
    }
    if (persist::cpu_supports(persist::FlushKind::kClwb)) {  // real clflush + sfence
      mem::NativeBackend<persist::CpuPersist<persist::FlushKind::kClwb>> be({}, 2);
      auto dst = zeroed<double>(n * n);
      scheme::copy_jobs_durable_mode(be, jobs_of(dst.get(), src.data(), n), mode);
      verify(dst.get());
    }
    CrashBackend crash(1, /*threads=*/3, /*shuffle=*/true);
    auto dst = zeroed<double>(n * n);
    scheme::copy_jobs_durable_mode(crash, jobs_of(dst.get(), src.data(), n), mode);
    crash.apply_crash_durable_only();  // durable on return: nothing may be lost
    verify(dst.get());
  }
}

TEST(SchemeCopyMode, IntervalIsPositive) {
  EXPECT_EQ(scheme::checkpoint_interval(), 1u);  // the paper's cadence by default
  EXPECT_THROW(scheme::set_checkpoint_interval(0), Error);
  scheme::set_checkpoint_interval(3);
  EXPECT_EQ(scheme::checkpoint_interval(), 3u);
  scheme::set_checkpoint_interval(1);
}

// In place, 6 steps over 40 elements: step s adds s + 1 to every element (uniform updates).
// Crash before every store, flush and fence of a run checkpointing after every step with
// `mode`, under three NVM images; restore, finish, compare bit for bit. Returns the number of
// (crash point, image) pairs that ended wrong.
std::size_t wrong_recoveries(scheme::CopyMode mode, int threads,
                             mem::Mutation mutation = mem::Mutation::kNone) {
  constexpr std::size_t kN = 40, kSteps = 6;
  auto x = zeroed<double>(kN);
  auto area = zeroed<double>(2 * kN);
  auto header = zeroed<scheme::StepCheckpointHeader>(1);
  const auto cp = scheme::StepCheckpoint(header.get(), area.get(), x.get(), kN, kSteps, 1,
                                         scheme::CheckpointMode::kDoubleBuffered)
                      .with_copy(mode);
  auto segs = [&](std::size_t, std::size_t, auto&& fn) { fn(std::size_t{0}, kN); };
  auto run = [&](CrashBackend& be, std::size_t first) {
    for (std::size_t s = first; s < kSteps; ++s) {
      for (std::size_t e = 0; e < kN; ++e)
        be.store(x.get() + e, be.load(x.get() + e) + static_cast<double>(s + 1));
      cp.after_step(be, s + 1, segs, [&] { be.persist(x.get(), kN * sizeof(double)); });
    }
  };
  auto initial = [&](CrashBackend& be) {
    for (std::size_t e = 0; e < kN; ++e) be.store(x.get() + e, 0.0);
    be.persist(x.get(), kN * sizeof(double));
  };
  auto reset = [&] {
    std::memset(x.get(), 0, kN * sizeof(double));
    std::memset(area.get(), 0, 2 * kN * sizeof(double));
    std::memset(header.get(), 0, sizeof(scheme::StepCheckpointHeader));
  };
  std::uint64_t total = 0;
  {
    CrashBackend counter(1, threads);
    counter.set_mutation(mutation);
    run(counter, 0);
    total = counter.ops();
  }
  std::size_t wrong = 0;
  for (std::uint64_t at = 1; at <= total; ++at)
    for (int image = 0; image < 3; ++image) {
      reset();
      CrashBackend be(at * 3 + static_cast<std::uint64_t>(image), threads, /*shuffle=*/true);
      be.set_mutation(mutation);
      be.arm(at);
      try {
        run(be, 0);
      } catch (const Crash&) {
      }
      if (image == 0) be.apply_crash_durable_only();
      if (image == 1) be.apply_crash(0.3);
      if (image == 2) be.apply_crash(1.0);
      be.disarm();
      run(be, cp.restore(be, segs, [&] { initial(be); }));
      bool ok = true;
      for (std::size_t e = 0; e < kN; ++e) ok = ok && x[e] == 21.0;  // 1 + 2 + ... + 6
      if (!ok) ++wrong;
    }
  return wrong;
}

TEST(SchemeCopyMode, ACheckpointInEveryModeSurvivesACrashAtEveryOp) {
  for (const auto mode : kModes)
    for (int threads : {1, 3})
      EXPECT_EQ(wrong_recoveries(mode, threads), 0u)
          << scheme::to_string(mode) << " threads " << threads;
}

// Negative controls: the same crash test catches a copy published without its fence and one
// published without being flushed, in every mode.
TEST(SchemeCopyMode, TheCrashTestCatchesAMissingFenceAndAMissingFlush) {
  for (const auto mutant : {mem::Mutation::kCpNoSfence, mem::Mutation::kCpNoFlush}) {
    for (const auto mode : kModes)
      EXPECT_GT(wrong_recoveries(mode, 1, mutant), 0u)
          << scheme::to_string(mode) << " mutant " << mem::to_string(mutant);
  }
}

}  // namespace
}  // namespace pmlab::scheme_test
