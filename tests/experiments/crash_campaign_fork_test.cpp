// Forked crash campaigns: identical to sequential trials and replays; fence corners; periodic
// flush in campaigns; the fork pool's error paths.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <optional>

#include "../../src/experiments/fork_pool.hpp"
#include "pmlab/experiments/crash_campaign.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::experiments;  // the crash campaign under test

SimRunSpec tiny_spec(const std::string& scheme, std::uint64_t n, std::uint64_t bs,
                     std::uint32_t threads) {
  SimRunSpec spec;
  spec.run.kernel = "tmm";
  spec.run.scheme = scheme;
  spec.run.n = n;
  spec.run.bs = bs;
  spec.run.threads = threads;
  sim::MachineSettings o;
  o.set("cores", 2);
  o.set("l1-size", 1024);  // tiny caches: the runs evict, so crashes leave partial state
  o.set("llc-size", 4096);
  o.set("l1-ways", 4);
  o.set("l2-size", 0);
  spec.machine = sim::machine_from("lp-isca18", o);
  return spec;
}

// A forked campaign (2 children) on tiny_spec's machine with 2 threads.
CampaignOptions tiny_campaign(const std::string& scheme, std::uint64_t n, std::uint64_t bs,
                              std::uint64_t trials, std::uint64_t seed,
                              double recovery_crash_rate) {
  CampaignOptions opt;
  opt.spec = tiny_spec(scheme, n, bs, 2);
  opt.trials = trials;
  opt.seed = seed;
  opt.recovery_crash_rate = recovery_crash_rate;
  opt.jobs = 2;
  return opt;
}

void expect_same(const TrialResult& a, const TrialResult& b, const std::string& what) {
  EXPECT_EQ(a.index, b.index) << what;
  EXPECT_EQ(a.kind, b.kind) << what;
  EXPECT_EQ(a.crash_op, b.crash_op) << what;
  EXPECT_EQ(a.recovery_crashes, b.recovery_crashes) << what;
  EXPECT_EQ(a.image, b.image) << what;
  EXPECT_EQ(a.crashes_in_recovery, b.crashes_in_recovery) << what;
  EXPECT_EQ(a.recovery_lengths, b.recovery_lengths) << what;
  EXPECT_EQ(a.passed, b.passed) << what << ": " << a.failure << " / " << b.failure;
  EXPECT_EQ(a.recovery.regions_validated, b.recovery.regions_validated) << what;
  EXPECT_EQ(a.recovery.regions_inconsistent, b.recovery.regions_inconsistent) << what;
  EXPECT_EQ(a.recovery.regions_recomputed, b.recovery.regions_recomputed) << what;
  EXPECT_EQ(a.recovery.regions_unwritten, b.recovery.regions_unwritten) << what;
  EXPECT_EQ(a.recovery.regions_unnecessary, b.recovery.regions_unnecessary) << what;
  EXPECT_EQ(a.recovery_ops, b.recovery_ops) << what;
  EXPECT_EQ(a.recovery_cycles, b.recovery_cycles) << what;
  EXPECT_EQ(a.regions_redone, b.regions_redone) << what;
  EXPECT_EQ(a.outer_redone, b.outer_redone) << what;
  EXPECT_EQ(a.crashes_in_resumed_run, b.crashes_in_resumed_run) << what;
  EXPECT_EQ(a.image_seed, b.image_seed) << what;
}

// The forked campaign (children cut the power in a copy of one fault-free simulation) gives
// exactly the results of fresh simulations per trial, and every trial replays exactly.
TEST(CrashCampaignFork, ForkedTrialsEqualSequentialOnesAndReplays) {
  for (const char* scheme : {"lp", "ep-ii", "wal-jj"}) {
    CampaignOptions opt = tiny_campaign(scheme, 23, 5, 40, 5, 0.5);
    opt.spec.machine.periodic_flush_cycles = Cycles{scheme == std::string("lp") ? 3000u : 0u};
    const CampaignResult forked = run_campaign(opt);
    opt.jobs = 0;
    const CampaignResult sequential = run_campaign(opt);
    ASSERT_EQ(forked.results.size(), 40u);
    ASSERT_EQ(sequential.results.size(), 40u);
    EXPECT_EQ(forked.passed, 40u) << scheme;
    std::uint64_t in_recovery = 0;
    for (std::size_t i = 0; i < 40; ++i) {
      const std::string what = std::string(scheme) + " trial " + std::to_string(i);
      expect_same(forked.results[i], sequential.results[i], what);
      in_recovery += forked.results[i].crashes_in_recovery;
      if (i % 8 == 0) {
        TrialResult again =
            replay_trial(opt.spec, forked.results[i].crash_op, forked.results[i].recovery_crashes,
                         {forked.results[i].image, forked.results[i].image_seed, opt.mutation});
        again.index = forked.results[i].index;
        again.kind = forked.results[i].kind;
        expect_same(again, forked.results[i], what + " replayed");
      }
    }
    EXPECT_GT(in_recovery, 0u) << scheme;  // crashes inside recovery happened in the children
  }
}

// Trials run in batches from the crash images the parent kept; every field of every trial
// equals one child per trial forked at its crash point, on every image model (any-dirty perturbs
// a copy of the image; skewed too). Trials without a crash after the first need only their image;
// those cut again also need the simulator as their power failure left it, which the batch's child
// rebuilds (rewind_trial) on machines where nothing the failure keeps changes what follows:
// LRU, random and SRRIP replacement (the failure resets them), fine-grained interleaving. With
// periodic cleaning (deadlines that follow the clocks) and on a scheme whose seed 002 helper
// core the clocks pace, those trials fork at their crash points instead.
TEST(CrashCampaignFork, BatchedTrialsEqualOneForkPerTrial) {
  struct Case {
    const char* kernel;
    const char* scheme;
    sim::Replacement replacement = sim::Replacement::kLru;
    std::uint64_t quantum = 0;      // SimParams::interleave_quantum
    std::uint64_t cleaning = 0;     // SimParams::periodic_flush_cycles
    bool cut_again_batched = true;  // whether trials cut again may join batches
    bool skewed = false;            // all three image models (skewed perturbs a copy too)
    bool nt_stores = false;         // SimParams::nt_stores (--wc-buffers): cp-nt's copies
  };
  for (const Case c : {Case{"tmm", "lp"}, Case{"tmm", "wal-jj"}, Case{"tmm", "ep-ii"},
                       Case{"cg", "lp"}, Case{"tmm", "lp", sim::Replacement::kRandom},
                       Case{"tmm", "wal-ii", sim::Replacement::kSrrip, 50},
                       Case{"tmm", "lp", sim::Replacement::kLru, 0, 3000, false},
                       Case{"jacobi", "ipv", sim::Replacement::kLru, 0, 0, false},
                       Case{"tmm", "lp", sim::Replacement::kLru, 0, 0, true, true},
                       Case{"cg", "lp", sim::Replacement::kLru, 0, 0, true, true},
                       Case{"tmm", "cp-nt", sim::Replacement::kLru, 0, 0, true, false, true}}) {
    CampaignOptions opt = tiny_campaign(c.scheme, 23, 5, 60, 9, 0.4);
    opt.spec.run.kernel = c.kernel;
    for (sim::LevelParams* l : {&opt.spec.machine.l1, &opt.spec.machine.llc})
      l->replacement = c.replacement;
    opt.spec.machine.interleave_quantum = c.quantum;
    opt.spec.machine.periodic_flush_cycles = Cycles{c.cleaning};
    if (c.skewed) opt.images = {ImageModel::kCache, ImageModel::kAnyDirty, ImageModel::kSkewed};
    opt.spec.machine.nt_stores = c.nt_stores;
    const CampaignResult batched = run_campaign(opt);
    opt.batch_trials = false;
    const CampaignResult single = run_campaign(opt);
    const std::string what = std::string(c.kernel) + " " + c.scheme + " " +
                             std::string(sim::to_string(c.replacement)) + " quantum " +
                             std::to_string(c.quantum) + " cleaning " + std::to_string(c.cleaning) +
                             (c.skewed ? " skewed" : "") + (c.nt_stores ? " wc-buffers" : "");
    ASSERT_EQ(batched.results.size(), single.results.size()) << what;
    EXPECT_EQ(batched.passed, batched.trials) << what;
    std::uint64_t cut_again = 0;
    for (const TrialResult& t : single.results)
      cut_again += t.recovery_lengths.empty() ? 0 : 1;  // a restart after the first was measured
    ASSERT_GT(cut_again, 0u) << what;
    // Batches hold several trials (60 trials' images fit one batch's bytes): the light ones,
    // and those cut again where they may join.
    EXPECT_EQ(batched.batched_cut_again, c.cut_again_batched ? cut_again : 0) << what;
    EXPECT_EQ(batched.batched_trials, opt.trials - (c.cut_again_batched ? 0 : cut_again)) << what;
    EXPECT_LT(batched.batches, batched.batched_trials) << what;
    EXPECT_EQ(single.batched_trials, 0u) << what;
    for (std::size_t i = 0; i < batched.results.size(); ++i)
      expect_same(batched.results[i], single.results[i], what + " trial " + std::to_string(i));
  }
}

// A child that dies fails its own trial and no other: a batch whose child dies runs again one
// trial per child, so the trial that killed it is named, whether its restart was cut again or
// not (both kinds join batches on this machine).
TEST(CrashCampaignFork, ADeadChildFailsOnlyItsTrial) {
  CampaignOptions opt = tiny_campaign("lp", 23, 5, 50, 4, 0.4);
  const CampaignResult clean = run_campaign(opt);
  ASSERT_EQ(clean.passed, clean.trials);
  ASSERT_GT(clean.batched_trials, 0u);
  // One trial of each kind.
  std::optional<std::uint64_t> light, heavy;
  for (const TrialResult& t : clean.results) {
    const bool cut_again = !t.recovery_crashes.empty() || !t.recovery_lengths.empty();
    (cut_again ? heavy : light) = t.index;
  }
  ASSERT_TRUE(light && heavy);
  for (const std::uint64_t victim : {*light, *heavy}) {
    opt.kill_trial = victim;
    const CampaignResult r = run_campaign(opt);
    ASSERT_EQ(r.results.size(), clean.results.size());
    EXPECT_EQ(r.passed, r.trials - 1) << victim;
    EXPECT_FALSE(r.results[victim].passed);
    EXPECT_NE(r.results[victim].failure.find("signal 9"), std::string::npos)
        << r.results[victim].failure;
    for (std::size_t i = 0; i < r.results.size(); ++i)
      if (i != victim) expect_same(r.results[i], clean.results[i], "trial " + std::to_string(i));
  }
}

// The restart after a trial's last crash skips the cache model by default; modelling it
// (--model-recovery) measures its cycles and changes nothing else: same crash points, same
// measured recovery lengths (measured unmodelled either way), same results. ipv hands its
// flushes to the helper core.
TEST(CrashCampaignFork, ModellingTheLastRecoveryOnlyAddsItsCycles) {
  for (const char* scheme : {"lp", "wal-jj", "ipv"}) {
    CampaignOptions opt = tiny_campaign(scheme, 19, 4, 30, 11, 0.5);
    const CampaignResult fast = run_campaign(opt);
    opt.model_last_recovery = true;
    const CampaignResult modelled = run_campaign(opt);
    ASSERT_EQ(fast.results.size(), modelled.results.size());
    EXPECT_EQ(fast.passed, fast.trials) << scheme;
    std::uint64_t cycles = 0;
    for (std::size_t i = 0; i < fast.results.size(); ++i) {
      TrialResult a = fast.results[i];
      // Unmeasured by default, even where a crash armed after it kept the model on.
      EXPECT_EQ(a.recovery_cycles, 0u) << scheme << i;
      cycles += modelled.results[i].recovery_cycles;
      a.recovery_cycles = modelled.results[i].recovery_cycles;
      expect_same(a, modelled.results[i], std::string(scheme) + " trial " + std::to_string(i));
    }
    EXPECT_GT(cycles, 0u) << scheme << ": the modelled restarts took simulated time";
  }
}

// Eager schemes' protocols (undo log, index records, persists) end their steps in fences;
// campaigns aim at them: at a fence, just after one, and between two.
TEST(CrashCampaignFork, FenceCornersLandOnPersistenceProtocolSteps) {
  SimRunSpec spec = tiny_spec("wal-ii", 17, 4, 2);
  SimSession s(spec);
  s.backend().record_fences(true);
  s.run(0);
  const std::vector<std::uint64_t> fences = s.backend().fence_ops();
  ASSERT_GT(fences.size(), 10u);
  CampaignOptions opt;
  opt.spec = spec;
  opt.trials = 120;
  opt.seed = 17;
  const CampaignResult r = run_campaign(opt);
  EXPECT_EQ(r.fences, fences.size());
  EXPECT_EQ(r.passed, r.trials);
  std::map<CrashPointKind, int> seen;
  for (const TrialResult& t : r.results) {
    ++seen[t.kind];
    const auto at = std::lower_bound(fences.begin(), fences.end(), t.crash_op);
    switch (t.kind) {
      case CrashPointKind::kBeforeFence:
        EXPECT_TRUE(at != fences.end() && *at == t.crash_op) << t.crash_op;
        break;
      case CrashPointKind::kAfterFence:
        EXPECT_TRUE(std::binary_search(fences.begin(), fences.end(), t.crash_op - 1) ||
                    std::binary_search(fences.begin(), fences.end(), t.crash_op - 2))
            << t.crash_op;
        break;
      case CrashPointKind::kBetweenFences:
        EXPECT_TRUE(at != fences.end()) << t.crash_op;  // before some fence, after the previous
        break;
      default:
        break;
    }
  }
  EXPECT_GT(seen[CrashPointKind::kBeforeFence], 0);
  EXPECT_GT(seen[CrashPointKind::kAfterFence], 0);
  EXPECT_GT(seen[CrashPointKind::kBetweenFences], 0);
  EXPECT_EQ(seen[CrashPointKind::kBeforeCommit], 0);  // no LP regions in an eager scheme
}

// With periodic cleaning a region whose lines were all cleaned after it committed is durable:
// LP loses far less work than with a large cache that never evicts. (Not "at most the regions
// of one period": a tmm panel caught half written back matches no checksum and is rebuilt from
// zero, see docs/crash-campaigns.md "Periodic flush".)
TEST(CrashCampaignFork, PeriodicFlushBoundsTheWorkLost) {
  struct Redone {
    std::uint64_t median, max;
    CampaignResult r;
  };
  const auto redone = [](std::uint64_t period) {
    CampaignOptions opt;
    opt.spec = tiny_spec("lp", 32, 4, 2);
    sim::MachineSettings o;
    o.set("cores", 2);
    o.set("l2-size", 0);
    o.set("periodic-flush", period);
    opt.spec.machine = sim::machine_from("lp-isca18", o);  // 512 KiB LLC: nothing is ever evicted
    opt.trials = 60;
    opt.seed = 3;
    opt.recovery_crash_rate = 0;
    CampaignResult r = run_campaign(opt);
    EXPECT_EQ(r.passed, r.trials) << period;
    std::vector<std::uint64_t> v;
    for (const auto& t : r.results) v.push_back(t.regions_redone);
    std::sort(v.begin(), v.end());
    return Redone{v[v.size() / 2], v.back(), std::move(r)};
  };
  const Redone off = redone(0);
  EXPECT_GT(off.max, off.r.commits * 3 / 4);  // a late crash loses nearly everything
  const Redone on = redone(off.r.fault_free_cycles / 100);
  EXPECT_GT(on.r.max_commits_per_period, 0u);
  EXPECT_LT(on.median * 3, off.median);
  EXPECT_LT(on.max, off.max);
}

TEST(ForkPool, ReportsPayloadsExitCodesAndSignals) {
  std::map<std::uint64_t, std::pair<std::string, int>> done;
  {
    ForkPool pool(2, [&](std::uint64_t tag, std::string payload, int status) {
      done[tag] = {std::move(payload), status};
    });
    for (std::uint64_t tag = 0; tag < 5; ++tag) {
      if (!pool.fork_child(tag)) continue;
      if (tag == 3) ::raise(SIGKILL);  // a child that dies
      pool.finish_child(tag == 4 ? "" : std::string(10000 + tag, 'x'), tag == 4 ? 7 : 0);
    }
    pool.wait_all();
    EXPECT_EQ(pool.running(), 0u);
  }
  ASSERT_EQ(done.size(), 5u);
  for (std::uint64_t tag : {0u, 1u, 2u}) {
    EXPECT_EQ(done[tag].first.size(), 10000 + tag);  // more than a pipe's atomic write
    EXPECT_TRUE(WIFEXITED(done[tag].second) && WEXITSTATUS(done[tag].second) == 0);
  }
  EXPECT_TRUE(WIFSIGNALED(done[3].second));
  EXPECT_TRUE(done[3].first.empty());
  EXPECT_TRUE(WIFEXITED(done[4].second) && WEXITSTATUS(done[4].second) == 7);
}

}  // namespace
}  // namespace pmlab::run
