// Crash campaigns that can see the bugs they rule out: adversarial images, negative controls
// (every kernel x scheme fails under each mutation that breaks it), later crashes by phase.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/crash_safe_cases.hpp"
#include "../support/process.hpp"
#include "../support/test_scale.hpp"
#include "negative_control_machine.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/sim/crash_image.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::experiments;  // the crash campaign under test

using Case = pmlab::test::CrashSafeCase;

std::vector<Case> cases() {
  return pmlab::test::crash_safe_cases();
}

bool simulable(const Case& c) {
  try {
    validate(test::negative_control_spec(c.kernel, c.scheme));
    return true;
  } catch (const Error&) {
    return false;
  }
}

// --- The any-dirty image model (and its skewed odds: tests/crash/skewed_image_test.cpp) ------

alignas(64) std::uint64_t g_mem[32];  // four lines

using Odds = sim::CrashImage::ReachOdds;

class AnyDirtyImage : public ::testing::TestWithParam<Odds> {};

TEST_P(AnyDirtyImage, UnfencedFlushesMayBeLostFencedOnesNever) {
  int lost_unfenced = 0, kept_unfenced = 0;
  for (std::uint64_t seed = 0; seed < 64; ++seed) {
    std::memset(g_mem, 0, sizeof g_mem);
    sim::CrashImage img;
    img.add_range(g_mem, sizeof g_mem);
    const auto line = [](int l) {
      return LineAddr(reinterpret_cast<std::uintptr_t>(&g_mem[8 * l]) / 64);
    };
    // Line 0: flushed and fenced. Line 1: flushed, not fenced.
    g_mem[0] = 1;
    img.note_flush(line(0), 0);
    img.capture_line(line(0));
    img.note_fence(0);
    g_mem[8] = 2;
    img.note_flush(line(1), 0);
    img.capture_line(line(1));
    std::mt19937_64 rng(seed);
    img.perturb(rng, GetParam());
    EXPECT_EQ(img.durable(&g_mem[0]), 1u);
    (img.durable(&g_mem[8]) == 2u ? kept_unfenced : lost_unfenced) += 1;
    EXPECT_EQ(img.unfenced_lines(), 0u);
  }
  EXPECT_GT(lost_unfenced, 0);
  EXPECT_GT(kept_unfenced, 0);
}

TEST_P(AnyDirtyImage, DirtyLinesMayReachNvmWholeCleanOnesStay) {
  int reached = 0, not_reached = 0;
  for (std::uint64_t seed = 0; seed < 64; ++seed) {
    std::memset(g_mem, 0, sizeof g_mem);
    sim::CrashImage img;
    img.add_range(g_mem, sizeof g_mem);
    g_mem[16] = 7;  // line 2 dirty: two words
    g_mem[23] = 9;
    std::mt19937_64 rng(seed);
    img.perturb(rng, GetParam());
    const auto a = img.durable(&g_mem[16]), b = img.durable(&g_mem[23]);
    EXPECT_EQ(a == 7u, b == 9u) << "a line reaches NVM whole";
    (a == 7u ? reached : not_reached) += 1;
    EXPECT_EQ(img.durable(&g_mem[0]), 0u);
  }
  EXPECT_GT(reached, 0);
  EXPECT_GT(not_reached, 0);
}

INSTANTIATE_TEST_SUITE_P(BothOdds, AnyDirtyImage, ::testing::Values(Odds::kHalf, Odds::kSkewed),
                         [](const auto& odds) {
                           return std::string(odds.param == Odds::kHalf ? "Half" : "Skewed");
                         });

// --- Campaign reports ----------------------------------------------------------------------

TEST(CrashEvidence, CampaignsUseEveryDefaultImageModelAndCountEach) {
  CampaignOptions opt;
  opt.spec = test::negative_control_spec("tmm", "cp");
  opt.trials = 40;
  opt.seed = test::evidence_seed();
  const auto r = run_campaign(opt);
  const auto tally = tally_by_image(r);
  ASSERT_EQ(tally.size(), 3u);
  EXPECT_EQ(tally[0].image, ImageModel::kCache);
  EXPECT_EQ(tally[1].image, ImageModel::kAnyDirty);
  EXPECT_EQ(tally[2].image, ImageModel::kSkewed);
  EXPECT_EQ(tally[0].trials, 14u);  // trial i uses model i % 3
  EXPECT_EQ(tally[0].trials + tally[1].trials + tally[2].trials, 40u);
  EXPECT_EQ(tally[0].passed + tally[1].passed + tally[2].passed, r.passed);
  const auto j = to_json(r, false);
  ASSERT_EQ(j["image_models"].size(), 3u);
  EXPECT_EQ(j["image_models"][1]["model"], "any-dirty");
  EXPECT_EQ(j["image_models"][2]["model"], "skewed");
  EXPECT_EQ(j["mutation"], "none");
}

// The finding: with every flush dropped, the cache's LRU image alone lets checkpointing
// pass; the any-dirty model catches it.
TEST(CrashEvidence, AnyDirtyCatchesWhatTheCacheImageMisses) {
  CampaignOptions opt;
  opt.spec = test::negative_control_spec("tmm", "cp");
  opt.trials = 100;
  opt.seed = test::evidence_seed();
  opt.mutation = mem::Mutation::kNoFence;
  opt.images = {ImageModel::kCache, ImageModel::kAnyDirty};
  const auto t = tally_by_image(run_campaign(opt));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_LT(t[1].passed, t[1].trials) << "any-dirty must detect the missing fences";
}

// A failed trial under a mutation and the any-dirty model replays exactly.
TEST(CrashEvidence, MutatedAnyDirtyTrialsReplay) {
  CampaignOptions opt;
  opt.spec = test::negative_control_spec("tmm", "wal-ii");
  opt.trials = 60;
  opt.seed = test::evidence_seed();
  opt.recovery_crash_rate = 0.5;
  opt.mutation = mem::Mutation::kNoFlush;
  EXPECT_GT(test::expect_failed_trials_replay(opt, run_campaign(opt)), 0);
}

// --- Negative controls: every kernel x scheme fails under each mutation that breaks it ------

class NegativeControls : public ::testing::TestWithParam<Case> {};

TEST_P(NegativeControls, EveryApplicableMutantIsDetected) {
  const Case& c = GetParam();
  if (!simulable(c)) GTEST_SKIP() << "runs natively only";
  CampaignOptions opt;
  // jacobi's state is n^2 doubles: at n = 32 (8 KiB a buffer) LP's checksum read-back evicts
  // the whole output from the 4 KiB LLC before any slot is written, so no crash image can
  // separate a slot from its data and no-validate is harmless there (0 of 2000 trials fail);
  // at n = 16 the output stays cached and the mutant is seen.
  opt.spec = test::negative_control_spec(c.kernel, c.scheme, c.kernel == "jacobi" ? 16 : 32);
  opt.seed = test::evidence_seed();
  // The sanitizer run (PMLAB_TEST_SCALE < 1) starts every campaign smaller; a mutant it misses
  // then gets the full campaign below, so detection is asserted at either scale.
  constexpr std::uint64_t kFullTrials = 100;
  opt.trials = pmlab::test::scaled_trials(kFullTrials, 20);
  const auto clean = run_campaign(opt);
  EXPECT_EQ(clean.passed, clean.trials) << "the unmutated campaign must pass";
  const auto mutants = applicable_mutations(opt.spec);
  // The rows of pmlab's own protocols keep their declarations; any other row (e.g. a new
  // kernel's) may declare none, and then simply has no control.
  for (const char* family : {"lp", "ep", "wal", "cp", "hr", "ipv"}) {
    if (c.scheme.starts_with(family)) {
      EXPECT_FALSE(mutants.empty()) << c.scheme;
    }
  }
  for (const mem::Mutation m : mutants) {
    // As pmlab crash and eval run it: more trials for the narrow-window mutants.
    auto r = run_campaign(control_options(opt, m));
    if (r.passed == r.trials && opt.trials < kFullTrials) {
      CampaignOptions full = opt;
      full.trials = kFullTrials;
      r = run_campaign(control_options(full, m));
    }
    EXPECT_LT(r.passed, r.trials) << c.kernel << " " << c.scheme << " --mutate "
                                  << mem::to_string(m) << " seed " << opt.seed
                                  << ": the campaign did not detect the mutant";
  }
}

INSTANTIATE_TEST_SUITE_P(AllSimulable, NegativeControls, ::testing::ValuesIn(cases()),
                         pmlab::test::CrashSafeCaseName{});

// --- Later crashes by phase ----------------------------------------------------------------

class RecoveryPhases : public ::testing::TestWithParam<Case> {};

// With every restart cut again, the crash points drawn within the measured recovery land in
// it: each trial's later crashes are split by phase, and most land in recovery.
TEST_P(RecoveryPhases, CrashesLandInsideTheMeasuredRecovery) {
  const Case& c = GetParam();
  if (!simulable(c) || c.scheme == "base") GTEST_SKIP();
  CampaignOptions opt;
  opt.spec = test::negative_control_spec(c.kernel, c.scheme);
  opt.seed = test::evidence_seed();
  opt.trials = 40;
  opt.recovery_crash_rate = 1.0;
  const auto r = run_campaign(opt);
  EXPECT_EQ(r.passed, r.trials);
  std::uint64_t in_recovery = 0, in_resumed = 0, nonempty = 0;
  for (const auto& t : r.results) {
    EXPECT_EQ(t.crashes_in_recovery + t.crashes_in_resumed_run, t.recovery_crashes.size())
        << "trial " << t.index;
    EXPECT_LE(t.recovery_crashes.size(), t.recovery_lengths.size()) << "trial " << t.index;
    in_recovery += t.crashes_in_recovery;
    in_resumed += t.crashes_in_resumed_run;
    for (auto len : t.recovery_lengths) nonempty += len > 0 ? 1 : 0;
  }
  ASSERT_GT(nonempty, 0u) << "no recovery had any work";
  EXPECT_GT(in_recovery, 0u);
  // Three in four draws target a non-empty recovery; allow for sampling noise.
  EXPECT_GE(in_recovery * 2, nonempty)
      << in_recovery << " of " << nonempty << " (" << in_resumed << " in the resumed run)";
}

INSTANTIATE_TEST_SUITE_P(AllSimulable, RecoveryPhases, ::testing::ValuesIn(cases()),
                         pmlab::test::CrashSafeCaseName{});

}  // namespace
}  // namespace pmlab::run

// --- CLI ---------------------------------------------------------------------------------

namespace pmlab::testing {
namespace {

ProcessResult run_verb(const std::string& verb, std::vector<std::string> args) {
  args.insert(args.begin(), {PMLAB_BINARY, verb});
  const auto scratch =
      std::filesystem::temp_directory_path() / ("pmlab-evidence-" + std::to_string(getpid()));
  return run_process(args, scratch.string());
}
ProcessResult crash(std::vector<std::string> args) {
  return run_verb("crash", std::move(args));
}

TEST(CrashEvidenceCli, MutantCampaignFailsAndControlsAreReported) {
  const auto mutated = crash({"tmm", "--scheme", "wal-ii", "--n", "32", "--trials", "60", "--seed",
                              "11", "--mutate", "no-flush"});
  EXPECT_EQ(mutated.exit_code, 1) << mutated.out << mutated.err;
  EXPECT_NE(mutated.out.find("mutant no-flush"), std::string::npos) << mutated.out;

  const auto clean =
      crash({"tmm", "--scheme", "wal-ii", "--n", "32", "--trials", "60", "--seed", "11", "--json"});
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  const auto j = nlohmann::json::parse(clean.out);
  EXPECT_EQ(j["image_models"].size(), 3u);  // cache, any-dirty, skewed
  EXPECT_EQ(j["controls"]["mutants"], 3);
  EXPECT_GE(j["controls"]["detected"].get<int>(), 2);
  EXPECT_TRUE(j.contains("crashes_in_resumed_run"));

  const auto text = crash({"tmm", "--scheme", "lp", "--n", "32", "--trials", "60", "--seed", "11"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("detects 1/1 mutants"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("any-dirty 20/20"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("skewed 20/20"), std::string::npos) << text.out;
}

TEST(CrashEvidenceCli, BadMutationOrImageIsAUsageError) {
  EXPECT_EQ(crash({"tmm", "--mutate", "no-such"}).exit_code, 2);
  EXPECT_EQ(crash({"tmm", "--images", "lru"}).exit_code, 2);
}

// The scheme's row decides which --mutate values apply: another is refused before anything
// runs, naming the applicable ones; a scheme that declares none names that.
TEST(CrashEvidenceCli, InapplicableMutationIsAUsageErrorNamingTheApplicableOnes) {
  const auto lp = crash({"tmm", "--scheme", "lp", "--n", "16", "--mutate", "no-flush"});
  EXPECT_EQ(lp.exit_code, 2) << lp.out << lp.err;
  EXPECT_NE(lp.err.find("applicable: no-validate"), std::string::npos) << lp.err;
  const auto cp = crash({"gauss", "--scheme", "cp", "--n", "16", "--mutate", "ipv-skip-flush"});
  EXPECT_EQ(cp.exit_code, 2) << cp.err;
  EXPECT_NE(cp.err.find("applicable: no-flush, no-fence, commit-early"), std::string::npos)
      << cp.err;
  const auto base = crash({"tmm", "--scheme", "base", "--n", "16", "--mutate", "no-fence"});
  EXPECT_EQ(base.exit_code, 2) << base.err;
  EXPECT_NE(base.err.find("no mutation applies"), std::string::npos) << base.err;
}

// tmm at n = 65536 needs 96 GiB of scratch arrays: refused before anything is allocated, with
// the usage exit code, by both verbs whose scratch pools live on /dev/shm.
TEST(CrashEvidenceCli, ScratchArraysThatCannotFitAreRefusedUpFront) {
  for (const std::string verb : {"sim", "crash"}) {
    const auto r = run_verb(verb, {"tmm", "--scheme", "lp", "--n", "65536", "--bs", "64"});
    EXPECT_EQ(r.exit_code, 2) << verb << r.out << r.err;
    EXPECT_TRUE(r.err.find("free") != std::string::npos ||
                r.err.find("MemAvailable") != std::string::npos)
        << verb << ": " << r.err;
    EXPECT_NE(r.err.find("smaller --n"), std::string::npos) << verb << ": " << r.err;
  }
}

// The former environment-variable mutants are --mutate values, and their campaigns fail.
TEST(CrashEvidenceCli, CopyAndVersioningMutantsAreMutateValues) {
  for (const auto& [scheme, mutant] : std::vector<std::pair<std::string, std::string>>{
           {"cp-clflush", "cp-no-flush"}, {"ipv-sync", "ipv-skip-flush"}}) {
    const auto r = crash({"tmm", "--scheme", scheme, "--n", "32", "--trials", "60", "--seed", "11",
                          "--mutate", mutant});
    EXPECT_EQ(r.exit_code, 1) << scheme << " " << mutant << r.out << r.err;
    EXPECT_NE(r.out.find("mutant " + mutant), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace pmlab::testing
