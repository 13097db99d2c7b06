// Crash campaigns: deterministic trials over uniform and corner crash points, with crashes in
// recovery.
#include "pmlab/driver/crash_campaign.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/sim/crash_image.hpp"

namespace pmlab::driver {
namespace {

struct FaultFree {
  std::uint64_t ops = 0;
  std::vector<sim::CommitPoint> commits;
};

FaultFree fault_free_run(const SimRunSpec& spec) {
  SimSession s(spec);
  s.run(0);
  return {s.backend().ops(), s.backend().commits()};
}

// Runs (crash at crash_op) → image → {recover → finish} with optional crashes inside recovery.
// `next_recovery_crash(ops_now)` returns 0 for "no more crashes" or an absolute op.
template <class NextCrash>
TrialResult execute_trial(const SimRunSpec& spec, std::uint64_t crash_op,
                          NextCrash&& next_recovery_crash) {
  TrialResult t;
  t.crash_op = crash_op;
  try {
    SimSession s(spec);
    auto& be = s.backend();
    be.arm_crash(crash_op);
    bool crashed = false;
    try {
      s.run(0);
    } catch (const sim::PowerFailure&) {
      crashed = true;
    }
    if (!crashed) {
      t.failure = "the run finished before the crash point";
      return t;
    }
    be.apply_crash_image();
    for (;;) {
      const std::uint64_t ops0 = be.ops();
      const std::uint64_t cycles0 = be.stats().cycles.value();
      std::uint64_t again = next_recovery_crash(ops0);
      if (again != 0) be.arm_crash(again);
      try {
        RunReport report;
        std::size_t resume = s.recover(report);
        t.recovery += report.recovery;
        t.recovery_ops = be.ops() - ops0;
        t.recovery_cycles = be.stats().cycles.value() - cycles0;
        s.run(resume);
        be.disarm_crash();
        break;
      } catch (const sim::PowerFailure& pf) {
        t.recovery_crashes.push_back(pf.op());
        be.apply_crash_image();
      }
    }
    auto v = s.verify();
    t.passed = v.ok();
    if (!t.passed)
      t.failure = std::to_string(v.mismatches) + " elements differ; first: " + v.first_mismatch;
  } catch (const std::exception& e) {
    t.failure = e.what();
  }
  return t;
}

}  // namespace

const char* to_string(CrashPointKind k) {
  switch (k) {
    case CrashPointKind::kUniform:
      return "uniform";
    case CrashPointKind::kFirstOp:
      return "first-op";
    case CrashPointKind::kLastOp:
      return "last-op";
    case CrashPointKind::kBeforeCommit:
      return "before-commit";
    case CrashPointKind::kAfterCommit:
      return "after-commit";
    case CrashPointKind::kInsideCommit:
      return "inside-commit";
  }
  return "?";
}

TrialResult replay_trial(const SimRunSpec& spec, std::uint64_t crash_op,
                         const std::vector<std::uint64_t>& recovery_crashes) {
  std::size_t next = 0;
  return execute_trial(spec, crash_op, [&](std::uint64_t ops_now) -> std::uint64_t {
    while (next < recovery_crashes.size()) {
      auto k = recovery_crashes[next++];
      if (k > ops_now) return k;
    }
    return 0;
  });
}

CampaignResult run_campaign(const CampaignOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  CampaignResult out;
  out.kernel = opt.spec.run.kernel;
  out.scheme = opt.spec.run.scheme;
  const FaultFree ff = fault_free_run(opt.spec);
  out.fault_free_ops = ff.ops;
  out.commits = ff.commits.size();
  for (std::uint64_t i = 0; i < opt.trials; ++i) {
    std::mt19937_64 rng(kernels::mix64(opt.seed ^ kernels::mix64(i)));
    // The first trials hit the corners, the rest are uniform (corners keep recurring at 1/4).
    CrashPointKind kind = CrashPointKind::kUniform;
    if (i == 0)
      kind = CrashPointKind::kFirstOp;
    else if (i == 1)
      kind = CrashPointKind::kLastOp;
    else if (!ff.commits.empty() && (i < 8 || rng() % 4 == 0))
      kind = static_cast<CrashPointKind>(3 + rng() % 3);
    std::uint64_t k = 1;
    const auto pick_commit = [&] { return ff.commits[rng() % ff.commits.size()].ops; };
    switch (kind) {
      case CrashPointKind::kUniform:
        k = 1 + rng() % ff.ops;
        break;
      case CrashPointKind::kFirstOp:
        k = 1;
        break;
      case CrashPointKind::kLastOp:
        k = ff.ops;
        break;
      // commit.ops = ops done when the region ended, i.e. after its last (tag) store.
      case CrashPointKind::kBeforeCommit:
        k = pick_commit();
        break;
      case CrashPointKind::kAfterCommit:
        k = pick_commit() + 1;
        break;
      case CrashPointKind::kInsideCommit:
        k = pick_commit() - 1;
        break;
    }
    k = std::clamp<std::uint64_t>(k, 1, ff.ops);
    int crashes_left = opt.max_recovery_crashes;
    std::bernoulli_distribution crash_again(opt.recovery_crash_rate);
    auto tr = execute_trial(opt.spec, k, [&](std::uint64_t ops_now) -> std::uint64_t {
      if (crashes_left-- <= 0 || !crash_again(rng)) return 0;
      // Somewhere in the remaining work; recovery is usually much shorter than a run,
      // so half of the draws land in the first 1% of it.
      const std::uint64_t span = std::max<std::uint64_t>(1, rng() % 2 ? ff.ops / 100 : ff.ops);
      return ops_now + 1 + rng() % span;
    });
    tr.index = i;
    tr.kind = kind;
    out.passed += tr.passed ? 1 : 0;
    out.results.push_back(std::move(tr));
    if (opt.progress) opt.progress(i + 1, opt.trials);
  }
  out.trials = opt.trials;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

nlohmann::json to_json(const CampaignResult& r, bool per_trial) {
  nlohmann::json j{{"kernel", r.kernel},
                   {"scheme", r.scheme},
                   {"fault_free_ops", r.fault_free_ops},
                   {"commits", r.commits},
                   {"trials", r.trials},
                   {"passed", r.passed},
                   {"failed", r.trials - r.passed},
                   {"seconds", r.seconds},
                   {"trials_per_second", r.trials_per_second()}};
  std::vector<std::uint64_t> work;
  std::uint64_t unnecessary = 0, recovery_crashes = 0;
  for (const auto& t : r.results) {
    work.push_back(t.recovery_ops);
    unnecessary += t.recovery.regions_unnecessary;
    recovery_crashes += t.recovery_crashes.size();
  }
  std::sort(work.begin(), work.end());
  auto pct = [&](double p) {
    return work.empty()
               ? 0
               : work[std::min(work.size() - 1, static_cast<std::size_t>(p * work.size()))];
  };
  j["recovery_ops"] = {
      {"median", pct(0.5)}, {"p90", pct(0.9)}, {"max", work.empty() ? 0 : work.back()}};
  j["unnecessary_recomputations"] = unnecessary;
  j["crashes_during_recovery"] = recovery_crashes;
  for (const auto& t : r.results) {
    if (!per_trial && t.passed) continue;
    nlohmann::json tj{{"trial", t.index},
                      {"crash_point", to_string(t.kind)},
                      {"crash_op", t.crash_op},
                      {"recovery_crashes", t.recovery_crashes},
                      {"passed", t.passed},
                      {"regions_validated", t.recovery.regions_validated},
                      {"regions_inconsistent", t.recovery.regions_inconsistent},
                      {"regions_recomputed", t.recovery.regions_recomputed},
                      {"regions_unnecessary", t.recovery.regions_unnecessary},
                      {"recovery_ops", t.recovery_ops},
                      {"recovery_cycles", t.recovery_cycles}};
    if (!t.passed) tj["failure"] = t.failure;
    j[t.passed ? "trials_detail" : "failures"].push_back(tj);
  }
  return j;
}

}  // namespace pmlab::driver
