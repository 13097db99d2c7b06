// Crash campaigns: deterministic trials over uniform and corner crash points, with crashes in
// recovery; trials fork from one fault-free simulation at their crash points.
#include "pmlab/experiments/crash_campaign.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fork_pool.hpp"
#include "image_slots.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/user_kernel.hpp"
#include "pmlab/sim/crash_image.hpp"

namespace pmlab::experiments {

// The simulator session and the catalog this campaign drives (run layer).
using run::find_kernel;
using run::find_sim_kernel;
using run::KernelDriver;
using run::NativeRestart;
using run::RunReport;
using run::SimKernel;
using run::SimRunResult;
using run::SimRunSpec;
using run::SimSession;
using run::simulate;
using run::TailBackend;
namespace {

struct FaultFree {
  std::uint64_t ops = 0, cycles = 0;
  std::vector<sim::CommitPoint> commits;
  std::vector<std::uint64_t> fences;  // op numbers of the fences: persistence-protocol steps
  std::vector<std::pair<std::uint64_t, std::uint64_t>> helper_spans;  // seed 002's helper core
};

// PreFlush's mutants live in the simulated hardware, not in the backend: they are machine
// parameters, so the session must be built with them.
// Every session of a campaign carries its mutation from the start (the op numbering of the
// fault-free run must match the trials'), and tracks unfenced flushes when an adversarial image
// may be drawn.
void prepare(SimSession& s, mem::Mutation mutation, bool any_dirty) {
  s.backend().set_mutation(mutation);
  s.backend().track_unfenced(any_dirty);
}

// The epoch engine's and PreFlush's mutations live in the machine (PersistencyParams::debug,
// PreflushParams), which a session builds from its spec: every session of a campaign is made
// from this.
SimRunSpec mutated_spec(const SimRunSpec& spec, mem::Mutation m) {
  SimRunSpec s = spec;
  if (m == mem::Mutation::kPreflushNoOwnStore) s.machine.preflush.own_store_check = false;
  if (m == mem::Mutation::kPreflushNoNack) s.machine.preflush.nack = false;
  if (!mem::epoch_engine_mutation(m)) return s;
  auto& d = s.machine.persistency.debug;
  d.no_intra_flush = m == mem::Mutation::kLbNoIntraFlush;
  d.no_replacement_order = m == mem::Mutation::kLbNoReplacementOrder;
  d.no_split = m == mem::Mutation::kLbNoSplit;
  d.per_bank_no_arbiter = m == mem::Mutation::kLbPerBankNoArbiter;
  d.ignore_deps = m == mem::Mutation::kIdtIgnoreDeps;
  d.dep_only_waw = m == mem::Mutation::kIdtDepOnlyWaw;
  return s;
}

// Whether any of the campaign's image models perturbs the cache's image (tracks unfenced flushes).
bool any_perturbs(const std::vector<ImageModel>& images) {
  return std::ranges::any_of(images, [](ImageModel m) { return perturbs(m); });
}

FaultFree fault_free_run(const SimRunSpec& spec, mem::Mutation mutation) {
  SimSession s(mutated_spec(spec, mutation));
  prepare(s, mutation, false);
  s.backend().record_fences(true);
  s.run(0);
  return {s.backend().ops(), s.backend().stats().cycles.value(), s.backend().commits(),
          s.backend().fence_ops(), s.backend().helper_spans()};
}

// Where trial i cuts the power. Drawn from the trial's own generator, which then goes on to
// draw its crashes inside recovery: plan_trial(i) replays exactly, in any process.
struct TrialPlan {
  std::uint64_t index = 0;
  CrashPointKind kind = CrashPointKind::kUniform;
  std::uint64_t crash_op = 0;
};

std::mt19937_64 trial_rng(std::uint64_t seed, std::uint64_t i) {
  return std::mt19937_64(kernels::mix64(seed ^ kernels::mix64(i)));
}

std::uint64_t image_seed(std::uint64_t seed, std::uint64_t i) {
  return kernels::mix64(seed ^ kernels::mix64(i ^ 0x1ea9e5eedull));
}

// Trial i's image model, and its index among the trials of that model (which decides corners).
ImageModel image_of(const CampaignOptions& opt, std::uint64_t i) {
  return opt.images.empty() ? ImageModel::kCache : opt.images[i % opt.images.size()];
}
std::uint64_t rank_in_model(const CampaignOptions& opt, std::uint64_t i) {
  return opt.images.empty() ? i : i / opt.images.size();
}

TrialPlan plan_trial(const FaultFree& ff, std::uint64_t i, std::uint64_t rank,
                     std::mt19937_64& rng) {
  // Each model's first trials hit the corners, the rest are uniform (corners keep recurring
  // at 1/4).
  CrashPointKind kind = CrashPointKind::kUniform;
  const int commit_kinds = ff.commits.empty() ? 0 : 3, fence_kinds = ff.fences.empty() ? 0 : 3;
  if (rank == 0) {
    kind = CrashPointKind::kFirstOp;
  } else if (rank == 1) {
    kind = CrashPointKind::kLastOp;
  } else if (commit_kinds + fence_kinds > 0 && (rank < 8 || rng() % 4 == 0)) {
    const auto c = static_cast<int>(rng() % static_cast<std::uint64_t>(commit_kinds + fence_kinds));
    kind = c < commit_kinds ? static_cast<CrashPointKind>(3 + c)
                            : static_cast<CrashPointKind>(6 + c - commit_kinds);
  }
  std::uint64_t k = 1;
  const auto pick_commit = [&] { return ff.commits[rng() % ff.commits.size()].ops; };
  const auto pick_fence = [&] { return static_cast<std::size_t>(rng() % ff.fences.size()); };
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
    // A fence's op number: crashing at it leaves its step's flushes done, the fence not.
    case CrashPointKind::kBeforeFence:
      k = ff.fences[pick_fence()];
      break;
    case CrashPointKind::kAfterFence:
      k = ff.fences[pick_fence()] + 1 + rng() % 2;
      break;
    case CrashPointKind::kBetweenFences: {
      const std::size_t f = pick_fence();
      const std::uint64_t prev = f == 0 ? 0 : ff.fences[f - 1];
      k = prev + 1 + rng() % std::max<std::uint64_t>(1, ff.fences[f] - prev - 1);
      break;
    }
  }
  return {i, kind, std::clamp<std::uint64_t>(k, 1, ff.ops)};
}

// Where the restart about to run begins (ops done) and how many ops its recovery takes.
struct RecoverySpan {
  std::uint64_t start = 0, length = 0;
};

// Runs the recovery from the current crash image without a crash, then puts everything back as
// it was (image, memory, caches, recorded commits): the restart that follows runs exactly the
// same recovery, now known to take `length` ops from `start` on. Only the op count is wanted:
// with `native`, the recovery runs natively (unless it asks seed 002's helper core for work);
// else it runs unmodelled (a few ns per op instead of the miss path); if it asked seed
// 002's helper core for work, whose ops the clocks pace, it runs again with the model.
RecoverySpan measure_recovery(SimSession& s, bool native) {
  auto& be = s.backend();
  if (native) {
    // The same recovery at native speed, counting the simulator's ops (SimSession::
    // restart_native); memory then goes back to the image, which it did not touch.
    RunReport scratch;
    const auto r = s.restart_native(true, 0, scratch, /*run=*/false);
    if (r) be.apply_crash_image();
    if (r && !r->async_requested) {
      be.count_ops_run_elsewhere(r->recovery_ops);
      return {be.ops(), r->recovery_ops};
    }
  }
  auto& image = be.machine().image();
  const auto saved = image.save();
  const std::size_t commits = be.commits().size();
  const auto measure = [&](bool modelled) {
    const std::uint64_t ops0 = be.ops();
    RunReport scratch;
    if (!modelled) be.pause_modelling();
    try {
      (void)s.recover(scratch);
    } catch (...) {
      be.resume_modelling();
      throw;
    }
    be.resume_modelling();
    const std::uint64_t length = be.ops() - ops0;
    image.load(saved);
    be.apply_crash_image();
    be.forget_commits_from(commits);
    return length;
  };
  const std::uint64_t skipped = be.async_requests_skipped();
  std::uint64_t length = measure(false);
  if (be.async_requests_skipped() != skipped) length = measure(true);
  return {be.ops(), length};
}

// Draws the crashes after the first (0 = no more). `measure()` measures the next recovery:
// three in four draws land inside it (a crash in recovery is what the restart has to survive),
// the rest in the resumed run (half of those early in it).
auto recovery_crashes(const CampaignOptions& opt, const FaultFree& ff, std::mt19937_64& rng) {
  return [&opt, &ff, &rng, crashes_left = opt.max_recovery_crashes,
          crash_again = std::bernoulli_distribution(opt.recovery_crash_rate)](
             auto&& measure) mutable -> std::uint64_t {
    if (crashes_left-- <= 0 || !crash_again(rng)) return 0;
    const RecoverySpan r = measure();
    if (r.length > 0 && rng() % 4 != 0) return r.start + 1 + rng() % r.length;
    const std::uint64_t span = std::max<std::uint64_t>(1, rng() % 2 ? ff.ops / 100 : ff.ops);
    return r.start + r.length + 1 + rng() % span;
  };
}

// Trial i's generator past its plan: what draws its crashes after the first.
std::mt19937_64 draws_after_plan(const CampaignOptions& opt, const FaultFree& ff, std::uint64_t i) {
  std::mt19937_64 rng = trial_rng(opt.seed, i);
  (void)plan_trial(ff, i, rank_in_model(opt, i), rng);
  return rng;
}

// Whether trial i's restart after its first crash is cut again: the same draws as its own
// process makes (plan_trial, then the first call of recovery_crashes), without running anything.
bool restart_is_cut(const CampaignOptions& opt, const FaultFree& ff, std::uint64_t i) {
  std::mt19937_64 rng = draws_after_plan(opt, ff, i);
  bool measured = false;
  (void)recovery_crashes(opt, ff, rng)([&] {
    measured = true;
    return RecoverySpan{0, 0};
  });
  return measured;
}

// The odds of a perturbing model's draws (CrashImage::perturb).
sim::CrashImage::ReachOdds reach_odds(ImageModel m) {
  return m == ImageModel::kSkewed ? sim::CrashImage::ReachOdds::kSkewed
                                  : sim::CrashImage::ReachOdds::kHalf;
}

// The power failed: NVM's image (perturbed under the any-dirty and skewed models) becomes memory.
void apply_image(sim::SimBackend& be, ImageModel m, std::mt19937_64& image_rng) {
  if (perturbs(m)) be.machine().image().perturb(image_rng, reach_odds(m));
  be.apply_crash_image();
}

// Commits from index `from` on of a region that had committed before.
std::uint64_t repeated_commits(const std::vector<sim::CommitPoint>& commits, std::size_t from) {
  const auto key = [](const sim::CommitPoint& c) {
    return (std::uint64_t{c.region.outer} << 32) | c.region.inner;
  };
  std::unordered_set<std::uint64_t> seen;
  seen.reserve(commits.size());
  std::uint64_t repeated = 0;
  for (std::size_t i = 0; i < commits.size(); ++i) {
    const bool fresh = seen.insert(key(commits[i])).second;
    if (i >= from && !fresh) ++repeated;
  }
  return repeated;
}

// A restart's recovery ran to its end (natively or in the simulator) after a power failure at
// outer position `position_at_failure`, resuming the run at `resume`.
void note_recovery(TrialResult& t, std::uint64_t position_at_failure, std::size_t resume,
                   const RunReport& report, std::uint64_t ops, std::uint64_t cycles) {
  if (position_at_failure > resume)
    t.outer_redone = std::max<std::uint64_t>(t.outer_redone, position_at_failure - resume);
  t.recovery += report.recovery;
  t.recovery_ops = ops;
  t.recovery_cycles = cycles;
}

// The trial's run has ended: counts the regions it committed again (`commits` from index
// `commits_before` on repeat earlier ones) and judges its result.
void conclude_trial(SimSession& s, TrialResult& t, const std::vector<sim::CommitPoint>& commits,
                    std::size_t commits_before, const std::vector<std::byte>* verified_output) {
  t.regions_redone = t.recovery.regions_recomputed + repeated_commits(commits, commits_before);
  const auto out = s.output_bytes();
  if (verified_output != nullptr && !out.empty() && out.size() == verified_output->size() &&
      std::memcmp(out.data(), verified_output->data(), out.size()) == 0) {
    t.passed = true;
  } else {
    const auto v = s.verify();
    t.passed = v.ok();
    if (!t.passed)
      t.failure = std::to_string(v.mismatches) + " elements differ; first: " + v.first_mismatch;
  }
}

// The power has failed in `s`: image → {recover → finish} with crashes inside recovery, then
// compare. Once no further crash is armed, the rest of the run skips the cache model: only its
// result matters, and that does not depend on the model.
// The restart after the trial's last crash runs without the cache model unless
// `model_last_recovery` (then its recovery_cycles are measured). With `native_tail` that
// restart runs natively (SimSession::restart_native: the recovery unless it is modelled, and the
// rest of the run), counting the recovery's ops and the regions committed as the simulator
// would; replays and sequential trials keep it in the simulator, and the tests compare the two
// (CrashCampaign.TheNativeTailEqualsTheSimulatedOne).
// `first_image_applied` (or null): the first crash image is in place already (a batched trial,
// rewind_trial), drawn with this generator, which draws the later ones.
// `verified_output` (or null): the result of a fault-free run that the kernel's verify passed;
// a trial whose result has exactly these bytes passes without running verify's reference again
// (verify judges only those bytes, ResumableKernel::output); any other result is verified.
template <class NextCrash>
void finish_trial(SimSession& s, TrialResult& t, bool model_last_recovery, bool native_tail,
                  const std::vector<std::byte>* verified_output, NextCrash&& next_recovery_crash,
                  const std::mt19937_64* first_image_applied = nullptr) {
  try {
    auto& be = s.backend();
    std::mt19937_64 image_rng(t.image_seed);
    const std::size_t commits_before = be.commits().size();
    std::vector<sim::CommitPoint> tail_commits;  // the native tail's, after be.commits()
    if (first_image_applied != nullptr)
      image_rng = *first_image_applied;  // a batched trial's: in place, its draws made
    else
      apply_image(be, t.image, image_rng);
    for (;;) {
      const std::uint64_t position_at_failure = be.outer_position();
      const auto record_recovery = [&](std::size_t resume, const RunReport& report,
                                       std::uint64_t ops, std::uint64_t cycles) {
        note_recovery(t, position_at_failure, resume, report, ops, cycles);
      };
      const std::uint64_t again = next_recovery_crash([&] {
        const RecoverySpan r = measure_recovery(s, native_tail);
        t.recovery_lengths.push_back(r.length);
        return r;
      });
      // The last restart, natively: its recovery and the rest of the run (no crash can follow).
      if (again == 0 && native_tail && !model_last_recovery) {
        RunReport report;
        if (const auto r = s.restart_native(true, 0, report)) {
          record_recovery(r->resume, report, r->recovery_ops, 0);
          for (const mem::RegionId c : r->regions) tail_commits.push_back({c});
          break;
        }
      }
      const std::uint64_t ops0 = be.ops();
      const std::uint64_t cycles0 = be.stats().cycles.value();
      if (again != 0)
        be.arm_crash(again);
      else if (!model_last_recovery)
        be.stop_modelling();
      bool in_recovery = true;
      try {
        RunReport report;
        const std::size_t resume = s.recover(report);
        in_recovery = false;
        // Its cycles only where asked for: a recovery modelled just because a crash was armed
        // after it that the run ended before is not measured by default (its timing would
        // start from clocks the failure left, which a batched trial does not rebuild).
        record_recovery(resume, report, be.ops() - ops0,
                        model_last_recovery && be.machine().modelling()
                            ? be.stats().cycles.value() - cycles0
                            : 0);
        if (again == 0 && be.machine().modelling()) be.stop_modelling();
        std::optional<NativeRestart> rest;
        if (again == 0 && native_tail) rest = s.restart_native(false, resume, report);
        if (rest)
          for (const mem::RegionId r : rest->regions) tail_commits.push_back({r});
        else
          s.run(resume);
        be.disarm_crash();
        break;
      } catch (const sim::PowerFailure& pf) {
        t.recovery_crashes.push_back(pf.op());
        ++(in_recovery ? t.crashes_in_recovery : t.crashes_in_resumed_run);
        apply_image(be, t.image, image_rng);
      }
    }
    std::vector<sim::CommitPoint> commits = be.commits();
    commits.insert(commits.end(), tail_commits.begin(), tail_commits.end());
    conclude_trial(s, t, commits, commits_before, verified_output);
  } catch (const std::exception& e) {
    t.failure = e.what();
  }
}

// A trial in a fresh session that runs from the start to its crash point (replay, fallback).
template <class NextCrash>
TrialResult sequential_trial(const SimRunSpec& spec, std::uint64_t crash_op,
                             const TrialSetup& setup, NextCrash&& next_recovery_crash) {
  TrialResult t;
  t.crash_op = crash_op;
  t.image = setup.image;
  t.image_seed = setup.image_seed;
  try {
    SimSession s(mutated_spec(spec, setup.mutation));
    prepare(s, setup.mutation, perturbs(setup.image));
    s.backend().arm_crash(crash_op);
    try {
      s.run(0);
    } catch (const sim::PowerFailure&) {
      finish_trial(s, t, setup.model_last_recovery, false, nullptr, next_recovery_crash);
      return t;
    }
    t.failure = "the run finished before the crash point";
  } catch (const std::exception& e) {
    t.failure = e.what();
  }
  return t;
}

// --- Forked trials -------------------------------------------------------------------------

nlohmann::json trial_wire(const TrialResult& t) {
  const auto& r = t.recovery;
  return {{"crash_op", t.crash_op},
          {"recovery_crashes", t.recovery_crashes},
          {"phases", {t.crashes_in_recovery, t.crashes_in_resumed_run}},
          {"recovery_lengths", t.recovery_lengths},
          {"passed", t.passed},
          {"failure", t.failure},
          {"stats",
           {r.regions_validated, r.regions_inconsistent, r.regions_recomputed, r.regions_unwritten,
            r.regions_unnecessary}},
          {"recovery_ops", t.recovery_ops},
          {"recovery_cycles", t.recovery_cycles},
          {"regions_redone", t.regions_redone},
          {"outer_redone", t.outer_redone}};
}

void from_wire(const nlohmann::json& j, TrialResult& t) {
  t.crash_op = j.at("crash_op").get<std::uint64_t>();
  t.recovery_crashes = j.at("recovery_crashes").get<std::vector<std::uint64_t>>();
  t.crashes_in_recovery = j.at("phases").at(0).get<std::uint64_t>();
  t.crashes_in_resumed_run = j.at("phases").at(1).get<std::uint64_t>();
  t.recovery_lengths = j.at("recovery_lengths").get<std::vector<std::uint64_t>>();
  t.passed = j.at("passed").get<bool>();
  t.failure = j.at("failure").get<std::string>();
  const auto& st = j.at("stats");
  t.recovery.regions_validated = st.at(0).get<std::uint64_t>();
  t.recovery.regions_inconsistent = st.at(1).get<std::uint64_t>();
  t.recovery.regions_recomputed = st.at(2).get<std::uint64_t>();
  t.recovery.regions_unwritten = st.at(3).get<std::uint64_t>();
  t.recovery.regions_unnecessary = st.at(4).get<std::uint64_t>();
  t.recovery_ops = j.at("recovery_ops").get<std::uint64_t>();
  t.recovery_cycles = j.at("recovery_cycles").get<std::uint64_t>();
  t.regions_redone = j.at("regions_redone").get<std::uint64_t>();
  t.outer_redone = j.at("outer_redone").get<std::uint64_t>();
}

std::string death_text(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("the trial's process died of signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return fmt::format("the trial's process exited with status {} without a result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

// The pool is a shared mapping of a /dev/shm file: a forked child writing to it would write
// into the parent's run. Replacing it by a private anonymous copy at the same address makes
// every child's memory its own (copy-on-write) and changes nothing else.
void make_pool_private(pool::Pool& pool) {
  std::byte* base = pool.base();
  const std::size_t len = pool.size();
  std::vector<std::byte> copy(base, base + len);
  void* p =
      ::mmap(base, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED)
    throw Error(ErrorCode::kIo, fmt::format("cannot remap the crash campaign's pool privately: {}",
                                            std::strerror(errno)));
  std::memcpy(base, copy.data(), len);
}

// Whether forked trials restart natively (CampaignOptions::native_tail). Not under a hardware
// persist barrier (lb*): there the simulator counts a barrier as one op where the scheme's
// software epochs, which TailBackend runs, flush and fence, so a recovery's length would differ.
bool native_restarts(const CampaignOptions& opt) {
  return opt.native_tail && !opt.spec.machine.persistency.hardware();
}

// The result of the campaign's run without a crash, run natively (SimSession::restart_native)
// and passed by the kernel's verify; nullopt when it cannot be had or does not pass (then every
// trial runs verify itself).
// `restarts_natively` says whether the scheme has a native restart at all.
std::optional<std::vector<std::byte>> verified_fault_free_output(const CampaignOptions& opt,
                                                                 bool& restarts_natively) {
  SimSession ref(mutated_spec(opt.spec, opt.mutation));
  prepare(ref, opt.mutation, false);
  RunReport unused;
  restarts_natively = ref.restart_native(false, 0, unused).has_value();
  if (!restarts_natively || !ref.verify().ok()) return std::nullopt;
  const auto out = ref.output_bytes();
  if (out.empty()) return std::nullopt;
  return std::vector<std::byte>(out.begin(), out.end());
}

// The forked child's whole trial: finish it from the power failure, hand the result over, exit.
// Kept out of line so a profiler can name the per-trial cost (callgrind --toggle-collect).
// Trial i's result before its first crash: its plan's crash point and its image model, drawn
// from `rng` (trial_rng), which goes on to draw the crashes after the first.
TrialResult new_trial(const CampaignOptions& opt, const FaultFree& ff, std::uint64_t i,
                      std::mt19937_64& rng) {
  TrialResult t;
  t.crash_op = plan_trial(ff, i, rank_in_model(opt, i), rng).crash_op;
  t.image = image_of(opt, i);
  t.image_seed = image_seed(opt.seed, i);
  return t;
}

[[noreturn, gnu::noinline]] void run_child_trial(const CampaignOptions& opt, const FaultFree& ff,
                                                 SimSession& s, std::size_t i, ForkPool& children,
                                                 const std::vector<std::byte>* verified_output) {
  if (opt.kill_trial == i) ::raise(SIGKILL);
  try {
    std::mt19937_64 rng = trial_rng(opt.seed, i);
    TrialResult t = new_trial(opt, ff, i, rng);
    finish_trial(s, t, opt.model_last_recovery, native_restarts(opt), verified_output,
                 recovery_crashes(opt, ff, rng));
    children.finish_child(
        trial_wire(t).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 0);
  } catch (...) {
    children.finish_child({}, 4);
  }
}

// --- Batched trials ----------------------------------------------------------------------------
// After its power failure a trial needs its crash image and, if its restart is cut again
// (restart_is_cut), the simulator as the failure left it. The parent keeps each image at its
// crash point and forks one child per batch of trials: one fork() and exit instead of one per
// trial, which cost more than a light trial's own work (bench_fork; docs/crash-campaigns.md,
// "Light trials in batches"). In the child a light trial is finish_trial's last restart, natively,
// from its image. A trial cut again first puts the simulator back as its power failure left it
// (rewind_trial): the counters, the NVM image and memory, then the failure itself, which
// empties the caches and resets their replacement state. What a power failure keeps (clocks,
// statistics, periodic cleaning's schedule) it cannot put back, so such trials join batches
// only on machines where that cannot change what follows the failure (cut_again_batchable).
// A batch whose child dies runs again one trial per child, so that a death still names its
// trial.
constexpr std::size_t kBatchTrials = 16;
constexpr std::size_t kBatchBytes = std::size_t{4} << 20;  // images a batch keeps at most

struct BatchedTrial {
  std::size_t index = 0;
  bool cut_again = false;                 // restart_is_cut: its child also needs the simulator
  std::uint64_t ops = 0;                  // SimBackend::ops() at the crash
  std::uint64_t position_at_failure = 0;  // SimBackend::outer_position() at the crash
  std::size_t commits_before = 0;         // SimBackend::commits().size() at the crash
  std::size_t slot = 0;                   // its ImageSlots slot, which holds `image`
  std::span<const std::byte> image;       // the pool as the power failure leaves it
  std::mt19937_64 image_rng;  // the trial's image generator after its first image was drawn
};

// Whether trials cut again in their restart may run in batches: only where nothing a power
// failure leaves in the simulator can change what follows it. The failure empties the caches
// and resets their replacement policies (Cache::clear), the write queues, MSHRs and buffers;
// it keeps the clocks, which periodic cleaning's deadlines follow and which pace seed 002's
// helper core and PreFlush's early ACKs, and a hardware persist barrier's epoch state (whose
// scheme has no native restart anyway). Non-temporal stores batch: their write-combining buffers
// drain on events only (a full line, a full set of buffers, an sfence), never on a clock, and
// the failure empties them (CrashCampaignFork.BatchedTrialsEqualOneForkPerTrial, cp-nt with
// --wc-buffers).
bool cut_again_batchable(const CampaignOptions& opt, const FaultFree& ff) {
  const sim::SimParams& m = opt.spec.machine;
  return m.periodic_flush_cycles.value() == 0 && !m.preflush.enabled && !m.persistency.hardware() &&
         ff.helper_spans.empty();
}

// Trial i's crash image at the current op (the power fails before it), into `slot` of `slots`:
// the live pool with every persistent range as NVM holds it, perturbed as the trial's child
// would (apply_image, whose generator it keeps); nullopt if a persistent range lies outside the
// pool.
std::optional<BatchedTrial> capture_trial(SimSession& s, const CampaignOptions& opt, std::size_t i,
                                          bool cut_again, const ImageSlots& slots,
                                          std::size_t slot) {
  const sim::SimBackend& be = s.backend();
  const pool::Pool& pool = s.pool();
  BatchedTrial bt;
  bt.index = i;
  bt.cut_again = cut_again;
  bt.ops = be.ops();
  bt.position_at_failure = be.outer_position();
  bt.commits_before = be.commits().size();
  bt.slot = slot;
  const std::span<std::byte> image = slots.slot(slot).first(pool.size());
  std::memcpy(image.data(), pool.base(), pool.size());
  bt.image = image;
  bt.image_rng.seed(image_seed(opt.seed, i));
  const ImageModel model = image_of(opt, i);
  const bool inside = perturbs(model) ? be.image().perturbed_into(image, pool.base(), bt.image_rng,
                                                                  reach_odds(model))
                                      : be.image().restore_into(image, pool.base());
  if (!inside) return std::nullopt;
  return bt;
}

// The fault-free run's commits that trial bt's crash had made: the first bt.commits_before of
// `fault_free_commits` (those up to the batch child's fork).
std::vector<sim::CommitPoint> commits_at_crash(
    const BatchedTrial& bt, const std::vector<sim::CommitPoint>& fault_free_commits) {
  return {fault_free_commits.begin(),
          fault_free_commits.begin() + static_cast<std::ptrdiff_t>(bt.commits_before)};
}

// A light trial after its power failure: finish_trial's last restart alone, natively from its
// crash image, then its verdict.
void restart_from_image(SimSession& s, TrialResult& t, const BatchedTrial& bt,
                        std::vector<sim::CommitPoint> commits,
                        const std::vector<std::byte>* verified_output) {
  std::memcpy(s.pool().base(), bt.image.data(), bt.image.size());
  RunReport report;
  const auto r = s.restart_native(true, 0, report);
  if (!r) throw std::logic_error("the scheme has no native restart");
  note_recovery(t, bt.position_at_failure, r->resume, report, r->recovery_ops, 0);
  for (const mem::RegionId c : r->regions) commits.push_back({c});
  conclude_trial(s, t, commits, bt.commits_before, verified_output);
}

// Puts the simulator where trial bt's power failure left it, as far as what follows can tell
// (cut_again_batchable): its op count, outer position and commits, NVM and memory as its crash
// image, then the failure itself (apply_crash_image: caches emptied, crash disarmed).
void rewind_trial(SimSession& s, const BatchedTrial& bt, std::vector<sim::CommitPoint> commits) {
  sim::SimBackend& be = s.backend();
  be.rewind_to_failure(bt.ops, bt.position_at_failure, std::move(commits));
  if (!be.machine().image().load_from(bt.image, s.pool().base()))
    throw std::logic_error("a persistent range lies outside the pool");
  std::memcpy(s.pool().base(), bt.image.data(), bt.image.size());
  be.apply_crash_image();
}

// In a batch's child: trial bt from its crash image to its verdict, as its own child forked at
// its crash point would run it (run_child_trial). A trial cut again in its restart first has
// the simulator rewound to its power failure (rewind_trial); a light one needs only its image.
TrialResult batched_trial(const CampaignOptions& opt, const FaultFree& ff, SimSession& s,
                          const BatchedTrial& bt,
                          const std::vector<sim::CommitPoint>& fault_free_commits,
                          const std::vector<std::byte>* verified_output) {
  std::mt19937_64 rng = trial_rng(opt.seed, bt.index);
  TrialResult t = new_trial(opt, ff, bt.index, rng);
  if (opt.kill_trial == bt.index) ::raise(SIGKILL);
  try {
    if (!bt.cut_again) {
      restart_from_image(s, t, bt, commits_at_crash(bt, fault_free_commits), verified_output);
      return t;
    }
    rewind_trial(s, bt, commits_at_crash(bt, fault_free_commits));
  } catch (const std::exception& e) {
    t.failure = e.what();
    return t;
  }
  finish_trial(s, t, opt.model_last_recovery, native_restarts(opt), verified_output,
               recovery_crashes(opt, ff, rng), &bt.image_rng);
  return t;
}

// A batch's child: every trial of the batch, the results as one JSON array, exit.
[[noreturn, gnu::noinline]] void run_batch(const CampaignOptions& opt, const FaultFree& ff,
                                           SimSession& s, const std::vector<BatchedTrial>& batch,
                                           ForkPool& children,
                                           const std::vector<std::byte>* verified_output) {
  try {
    const std::vector<sim::CommitPoint> fault_free_commits = s.backend().commits();
    nlohmann::json all = nlohmann::json::array();
    for (const BatchedTrial& bt : batch) {
      // A restart that ran in the simulator without the cache model ended it for good
      // (finish_trial's fallback when a native restart is refused): the batch runs again, one
      // trial per child, rather than a trial on a machine that no longer models.
      if (bt.cut_again && !s.backend().machine().modelling())
        throw std::logic_error("the cache model was stopped by an earlier trial of the batch");
      all.push_back(trial_wire(batched_trial(opt, ff, s, bt, fault_free_commits, verified_output)));
    }
    children.finish_child(all.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 0);
  } catch (...) {
    children.finish_child({}, 4);
  }
}

// A batch's child ended: its trials' results into `results`; else why not ("" when read).
std::string read_batch(const std::string& payload, int wait_status,
                       const std::vector<BatchedTrial>& batch, std::vector<TrialResult>& results) {
  if (payload.empty()) return death_text(wait_status);
  try {
    const auto all = nlohmann::json::parse(payload);
    if (!all.is_array() || all.size() != batch.size())
      return "a batch's child reported another number of trials";
    for (std::size_t k = 0; k < batch.size(); ++k) from_wire(all[k], results[batch[k].index]);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// Runs the fault-free simulation once; at each planned crash point a child is forked that cuts
// the power there and finishes its trial, while this process goes on to the next point; trials
// are batched where they can be (above). Marks the trials it ran in `done`.
void run_forked(const CampaignOptions& opt, const FaultFree& ff,
                const std::vector<TrialPlan>& plans, CampaignResult& out, std::vector<bool>& done) {
  std::vector<std::size_t> order(plans.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return plans[a].crash_op < plans[b].crash_op;
  });
  std::uint64_t finished = 0;
  const auto finish = [&](std::size_t i) {
    done[i] = true;
    if (opt.progress) opt.progress(++finished, plans.size());
  };
  // A child's tag: a trial's index, or plans.size() + b for batch b.
  std::vector<std::vector<BatchedTrial>> batches;
  std::optional<ImageSlots> slots;  // the batched trials' images (made once the pool is known)
  std::vector<std::size_t> retry;   // batches whose child died: again, one trial per child
  ForkPool children(opt.jobs, [&](std::uint64_t tag, std::string payload, int status) {
    if (tag < plans.size()) {
      TrialResult& t = out.results[tag];
      try {
        if (payload.empty()) throw std::runtime_error(death_text(status));
        from_wire(nlohmann::json::parse(payload), t);
      } catch (const std::exception& e) {
        t.passed = false;
        t.failure = e.what();
      }
      finish(tag);
      return;
    }
    std::vector<BatchedTrial> batch = std::move(batches[tag - plans.size()]);
    const std::string failure = read_batch(payload, status, batch, out.results);
    if (failure.empty() || batch.size() == 1) {
      for (const BatchedTrial& bt : batch) {
        if (!failure.empty()) {
          out.results[bt.index].passed = false;
          out.results[bt.index].failure = failure;
        }
        finish(bt.index);
        slots->release(bt.slot);  // its child has ended
      }
      return;
    }
    for (BatchedTrial& bt : batch) {
      batches.push_back({});
      batches.back().push_back(std::move(bt));
      retry.push_back(batches.size() - 1);
    }
  });

  // Computed before the first fork, so every child inherits it.
  bool restarts_natively = false;
  const std::optional<std::vector<std::byte>> verified =
      native_restarts(opt) ? verified_fault_free_output(opt, restarts_natively) : std::nullopt;
  const std::vector<std::byte>* const verified_output = verified ? &*verified : nullptr;
  SimSession s(mutated_spec(opt.spec, opt.mutation));
  prepare(s, opt.mutation, any_perturbs(opt.images));
  make_pool_private(s.pool());
  sim::SimBackend& be = s.backend();
  // Trials are batched only where their child would restart natively from the image.
  std::size_t batch_size = 0;
  if (opt.batch_trials && restarts_natively && !opt.model_last_recovery)
    batch_size = std::clamp<std::size_t>(kBatchBytes / std::max<std::size_t>(1, s.pool().size()), 1,
                                         kBatchTrials);
  const bool batch_cut_again = batch_size > 0 && cut_again_batchable(opt, ff);
  // Slots for the batches that can be in flight: the one filling and one per running child.
  slots.emplace(s.pool().size(), batch_size * static_cast<std::size_t>(std::max(1, opt.jobs) + 1));
  std::vector<BatchedTrial> pending;
  std::optional<std::size_t> mine, my_batch;  // in a child: the trial or batch it runs
  // Forks batch b's child. During the run (`in_run`) the child returns true, to cut the power
  // and unwind the run before it runs its batch; after it, the child runs the batch and exits.
  const auto fork_batch = [&](std::size_t b, bool in_run) {
    if (children.fork_child(plans.size() + b)) {
      if (!in_run) run_batch(opt, ff, s, batches[b], children, verified_output);
      my_batch = b;
      return true;
    }
    ++out.batches;
    return false;
  };
  const auto flush_pending = [&](bool in_run) {
    if (pending.empty()) return false;
    out.batched_trials += pending.size();
    for (const BatchedTrial& bt : pending) out.batched_cut_again += bt.cut_again ? 1 : 0;
    batches.push_back(std::exchange(pending, {}));
    return fork_batch(batches.size() - 1, in_run);
  };
  std::size_t next = 0;
  sim::OpHook hook = [&](std::uint64_t op) {
    while (next < order.size() && plans[order[next]].crash_op == op) {
      const std::size_t i = order[next++];
      if (batch_size > 0) {
        const bool cut_again = restart_is_cut(opt, ff, i);
        if (!cut_again || batch_cut_again) {
          while (!slots->any_free() && children.running() > 0) children.poll(true);
          const std::size_t slot = slots->acquire();
          if (auto bt = capture_trial(s, opt, i, cut_again, *slots, slot)) {
            pending.push_back(std::move(*bt));
            if (pending.size() >= batch_size && flush_pending(true))
              return true;  // the batch's child: the power fails before this op
            continue;
          }
          slots->release(slot);
          batch_size = 0;  // a persistent range outside the pool: fork every trial
        }
      }
      if (children.fork_child(i)) {
        mine = i;
        return true;  // the child: the power fails before this op
      }
    }
    children.poll(false);  // keep the progress moving
    if (next < order.size()) be.arm_hook(plans[order[next]].crash_op, hook);
    return false;
  };
  if (!order.empty()) be.arm_hook(plans[order[0]].crash_op, hook);
  try {
    s.run(0);
  } catch (const sim::PowerFailure&) {
    if (!mine && !my_batch) throw;
  } catch (...) {
    if (mine || my_batch) children.finish_child({}, 4);
    throw;
  }
  if (mine)  // never returns
    run_child_trial(opt, ff, s, *mine, children, verified_output);
  if (my_batch)  // never returns
    run_batch(opt, ff, s, batches[*my_batch], children, verified_output);
  flush_pending(false);
  children.wait_all();
  while (!retry.empty()) {
    for (const std::size_t b : std::exchange(retry, {})) fork_batch(b, false);
    children.wait_all();
  }
}

std::uint64_t max_commits_within(std::vector<sim::CommitPoint> commits, std::uint64_t window) {
  if (window == 0 || commits.empty()) return 0;
  std::vector<std::uint64_t> t;
  t.reserve(commits.size());
  for (const auto& c : commits) t.push_back(c.clock.value());
  std::sort(t.begin(), t.end());
  std::uint64_t best = 0;
  for (std::size_t lo = 0, hi = 0; hi < t.size(); ++hi) {
    while (t[hi] - t[lo] >= window) ++lo;
    best = std::max<std::uint64_t>(best, hi - lo + 1);
  }
  return best;
}

}  // namespace

std::string_view to_string(CrashPointKind k) {
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
    case CrashPointKind::kBeforeFence:
      return "before-fence";
    case CrashPointKind::kAfterFence:
      return "after-fence";
    case CrashPointKind::kBetweenFences:
      return "between-fences";
  }
  return "?";
}

std::string_view to_string(ImageModel m) {
  switch (m) {
    case ImageModel::kCache:
      return "cache";
    case ImageModel::kAnyDirty:
      return "any-dirty";
    case ImageModel::kSkewed:
      return "skewed";
  }
  return "?";
}

ImageModel image_model_from_string(const std::string& s) {
  for (const ImageModel m : {ImageModel::kCache, ImageModel::kAnyDirty, ImageModel::kSkewed})
    if (s == to_string(m)) return m;
  throw Error(
      ErrorCode::kInvalidArgument,
      fmt::format("unknown crash image model '{}' (expected cache, any-dirty or skewed)", s));
}

mem::Mutation mutation_from_string(const std::string& s) {
  if (s == "none") return mem::Mutation::kNone;
  for (const mem::Mutation m : mem::kAllMutations)
    if (s == mem::to_string(m)) return m;
  std::vector<std::string_view> names{"none"};
  for (const mem::Mutation m : mem::kAllMutations) names.push_back(mem::to_string(m));
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown mutation '{}' (expected one of {})", s, fmt::join(names, ", ")));
}

// The original trial measured the recovery before each crash it armed, so the replay does too
// (the measuring run advances the op count).
TrialResult replay_trial(const SimRunSpec& spec, std::uint64_t crash_op,
                         const std::vector<std::uint64_t>& recovery_crashes,
                         const TrialSetup& setup) {
  std::size_t next = 0;
  return sequential_trial(spec, crash_op, setup, [&](auto&& measure) -> std::uint64_t {
    if (next >= recovery_crashes.size()) return 0;
    const RecoverySpan r = measure();
    while (next < recovery_crashes.size()) {
      auto k = recovery_crashes[next++];
      if (k > r.start) return k;
    }
    return 0;
  });
}

std::vector<ImageTally> tally_by_image(const CampaignResult& r) {
  std::vector<ImageTally> out;
  for (const ImageModel m : r.images) out.push_back({m, 0, 0});
  for (const auto& t : r.results) {
    for (auto& x : out) {
      if (x.image != t.image) continue;
      ++x.trials;
      x.passed += t.passed ? 1 : 0;
    }
  }
  return out;
}

CampaignResult run_campaign(const CampaignOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  CampaignResult out;
  out.kernel = opt.spec.run.kernel;
  out.scheme = opt.spec.run.scheme;
  if (opt.images.empty())
    throw Error(ErrorCode::kInvalidArgument, "a crash campaign needs at least one image model");
  require_crash_safe(opt.spec);
  // Under a hardware persist barrier (lb*) the machine orders NVM writes by epoch; the any-dirty
  // and skewed models would persist any dirty line regardless and report false failures.
  // Refused, so that such a campaign uses the cache image, which the epoch engine's writes shape
  // (docs/bep.md).
  if (opt.spec.machine.persistency.hardware())
    for (const ImageModel m : opt.images)
      if (perturbs(m))
        throw Error(
            ErrorCode::kInvalidArgument,
            fmt::format("the {} crash image ignores the epoch order a hardware barrier "
                        "({}) guarantees: use --images cache",
                        to_string(m), sim::to_string(opt.spec.machine.persistency.barrier)));
  // With the persist-order oracle on (--check-order), a violation in the fault-free run is
  // reported by every trial whose crash point lies after it (its run throws); the plan itself
  // comes from the same run without the oracle (the oracle changes no op).
  FaultFree ff;
  try {
    ff = fault_free_run(opt.spec, opt.mutation);
  } catch (const sim::OrderViolation&) {
    SimRunSpec plain = opt.spec;
    plain.machine.persistency.check_order = false;
    ff = fault_free_run(plain, opt.mutation);
  }
  out.images = opt.images;
  out.mutation = opt.mutation;
  out.fault_free_ops = ff.ops;
  out.fault_free_cycles = ff.cycles;
  out.commits = ff.commits.size();
  out.fences = ff.fences.size();
  out.periodic_flush_cycles = opt.spec.machine.periodic_flush_cycles.value();
  out.max_commits_per_period = max_commits_within(ff.commits, out.periodic_flush_cycles);
  std::vector<TrialPlan> plans;
  plans.reserve(opt.trials);
  for (std::uint64_t i = 0; i < opt.trials; ++i) {
    std::mt19937_64 rng = trial_rng(opt.seed, i);
    plans.push_back(plan_trial(ff, i, rank_in_model(opt, i), rng));
  }
  out.results.resize(opt.trials);
  for (const TrialPlan& p : plans) {
    out.results[p.index].index = p.index;
    out.results[p.index].kind = p.kind;
    out.results[p.index].crash_op = p.crash_op;
    out.results[p.index].image = image_of(opt, p.index);
    out.results[p.index].image_seed = image_seed(opt.seed, p.index);
  }
  std::vector<bool> done(opt.trials, false);
  // An order violation in the forking parent would end all its trials at once: with the oracle
  // on, each trial runs on its own.
  out.jobs = opt.spec.machine.persistency.check_order ? 0 : opt.jobs;
  if (out.jobs > 0) run_forked(opt, ff, plans, out, done);
  // Sequentially: with jobs = 0, and any trial the forked run did not reach.
  std::uint64_t finished = static_cast<std::uint64_t>(std::count(done.begin(), done.end(), true));
  for (const TrialPlan& p : plans) {
    if (done[p.index]) continue;
    std::mt19937_64 rng = draws_after_plan(opt, ff, p.index);
    TrialResult& t = out.results[p.index];
    t = sequential_trial(opt.spec, p.crash_op,
                         {image_of(opt, p.index), image_seed(opt.seed, p.index), opt.mutation,
                          opt.model_last_recovery},
                         recovery_crashes(opt, ff, rng));
    t.index = p.index;
    t.kind = p.kind;
    if (opt.progress) opt.progress(++finished, opt.trials);
  }
  for (const auto& t : out.results) out.passed += t.passed ? 1 : 0;
  out.helper_requests = ff.helper_spans.size();
  for (const auto& t : out.results) {
    const std::uint64_t k = t.crash_op;
    const bool in_helper =
        std::any_of(ff.helper_spans.begin(), ff.helper_spans.end(),
                    [k](const auto& h) { return k >= h.first && k <= h.second; });
    const auto f = std::lower_bound(ff.fences.begin(), ff.fences.end(), k >= 2 ? k - 2 : 0);
    const bool near_fence = f != ff.fences.end() && *f <= k + 2;
    CampaignResult::Phase& ph = in_helper    ? out.in_helper
                                : near_fence ? out.near_fence
                                             : out.elsewhere;
    ++ph.trials;
    ph.passed += t.passed ? 1 : 0;
  }
  out.trials = opt.trials;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

nlohmann::json to_json(const CampaignResult& r, bool per_trial) {
  nlohmann::json j{{"kernel", r.kernel},
                   {"scheme", r.scheme},
                   {"fault_free_ops", r.fault_free_ops},
                   {"fault_free_cycles", r.fault_free_cycles},
                   {"commits", r.commits},
                   {"fences", r.fences},
                   {"trials", r.trials},
                   {"passed", r.passed},
                   {"mutation", mem::to_string(r.mutation)},
                   {"failed", r.trials - r.passed},
                   {"jobs", r.jobs},
                   {"batched_trials", r.batched_trials},
                   {"batches", r.batches},
                   {"batched_cut_again", r.batched_cut_again},
                   {"seconds", r.seconds},
                   {"trials_per_second", r.trials_per_second()}};
  if (r.helper_requests > 0 || r.in_helper.trials > 0) {
    const auto phase = [](const CampaignResult::Phase& p) {
      return nlohmann::json{{"trials", p.trials}, {"passed", p.passed}};
    };
    j["helper_requests"] = r.helper_requests;
    j["first_crash_phase"] = {{"in_helper", phase(r.in_helper)},
                              {"near_fence", phase(r.near_fence)},
                              {"elsewhere", phase(r.elsewhere)}};
  }
  std::vector<std::uint64_t> work, recomputed, redone, outer_redone;
  std::uint64_t unnecessary = 0, in_recovery = 0, in_resumed = 0, inconsistent_max = 0;
  std::uint64_t targeted = 0, targeted_nonempty = 0;
  for (const auto& t : r.results) {
    work.push_back(t.recovery_ops);
    recomputed.push_back(t.recovery.regions_recomputed);
    redone.push_back(t.regions_redone);
    outer_redone.push_back(t.outer_redone);
    inconsistent_max = std::max(inconsistent_max, t.recovery.regions_inconsistent);
    unnecessary += t.recovery.regions_unnecessary;
    in_recovery += t.crashes_in_recovery;
    in_resumed += t.crashes_in_resumed_run;
    targeted += t.recovery_lengths.size();
    for (auto len : t.recovery_lengths) targeted_nonempty += len > 0 ? 1 : 0;
  }
  nlohmann::json models = nlohmann::json::array();
  for (const auto& x : tally_by_image(r))
    models.push_back({{"model", to_string(x.image)}, {"trials", x.trials}, {"passed", x.passed}});
  j["image_models"] = models;
  const auto summary = [](std::vector<std::uint64_t> v) {
    std::sort(v.begin(), v.end());
    const auto pct = [&](double p) {
      return v.empty() ? 0
                       : v[std::min(v.size() - 1,
                                    static_cast<std::size_t>(p * static_cast<double>(v.size())))];
    };
    return nlohmann::json{
        {"median", pct(0.5)}, {"p90", pct(0.9)}, {"max", v.empty() ? 0 : v.back()}};
  };
  j["recovery_ops"] = summary(work);
  j["regions_recomputed"] = summary(recomputed);
  j["regions_redone"] = summary(redone);
  j["outer_iterations_redone"] = summary(outer_redone);
  j["regions_inconsistent_max"] = inconsistent_max;
  j["periodic_flush_cycles"] = r.periodic_flush_cycles;
  j["max_commits_per_period"] = r.max_commits_per_period;
  j["unnecessary_recomputations"] = unnecessary;
  // Later crashes by where they landed: inside a recovery, or in the run resumed after it.
  j["crashes_during_recovery"] = in_recovery;
  j["crashes_in_resumed_run"] = in_resumed;
  j["recoveries_measured"] = targeted;
  j["recoveries_measured_nonempty"] = targeted_nonempty;
  for (const auto& t : r.results) {
    if (!per_trial && t.passed) continue;
    nlohmann::json tj{{"trial", t.index},
                      {"crash_point", to_string(t.kind)},
                      {"image", to_string(t.image)},
                      {"image_seed", t.image_seed},
                      {"crash_op", t.crash_op},
                      {"recovery_crashes", t.recovery_crashes},
                      {"crashes_in_recovery", t.crashes_in_recovery},
                      {"crashes_in_resumed_run", t.crashes_in_resumed_run},
                      {"passed", t.passed},
                      {"regions_validated", t.recovery.regions_validated},
                      {"regions_inconsistent", t.recovery.regions_inconsistent},
                      {"regions_recomputed", t.recovery.regions_recomputed},
                      {"regions_unnecessary", t.recovery.regions_unnecessary},
                      {"recovery_ops", t.recovery_ops},
                      {"recovery_cycles", t.recovery_cycles},
                      {"regions_redone", t.regions_redone},
                      {"outer_iterations_redone", t.outer_redone}};
    if (!t.passed) tj["failure"] = t.failure;
    j[t.passed ? "trials_detail" : "failures"].push_back(tj);
  }
  return j;
}

void require_crash_safe(const SimRunSpec& spec) {
  // The kernel's driver lists its rows that are not crash-safe (KernelDriver::crash_unsafe).
  const KernelDriver& kd = spec.user ? spec.user->driver : find_kernel(spec.run.kernel);
  if (!kd.crash_safe(spec.run.scheme))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} --scheme {} is a measurement row that gives up crash consistency "
                            "on purpose (it flushes nothing): a crash campaign has nothing to "
                            "test (use `pmlab sim` or `pmlab bench`)",
                            spec.run.kernel, spec.run.scheme));
}

std::vector<mem::Mutation> applicable_mutations(const SimRunSpec& spec) {
  const SimKernel& sk = spec.user ? spec.user->sim : find_sim_kernel(spec.run.kernel);
  // A kernel built without the declarations has none of its own.
  auto ms = sk.mutants ? sk.mutants(spec.run.scheme).list() : std::vector<mem::Mutation>{};
  // Under a hardware persist barrier (lb*) the BEP code neither flushes nor fences: dropping
  // them changes nothing, so they are no control there (the engine's own mutants are,
  // tests/sim/sim_oracle_test.cpp).
  // The epoch engine's own mutants apply only there (the idt- ones only with IDT). So does
  // no-split: without IDT a conflict on an ongoing epoch writes its lines so far at once and
  // nothing waits for the rest, so skipping the split breaks no persist order (the random-trace
  // property test runs it under lb-idt and lb++ only); with IDT it leaves Fig. 5's cycle.
  const auto& per = spec.machine.persistency;
  std::erase_if(ms, [&](mem::Mutation m) {
    if (m == mem::Mutation::kNoFlush || m == mem::Mutation::kNoFence) return per.hardware();
    // Seed 002's DRAM cache: without it dram_cache_flush does nothing, so dropping it neither.
    if (m == mem::Mutation::kDramCacheNoFlush) return !spec.machine.dram_cache.enabled;
    // Under the non-temporal store model (--wc-buffers) the helper's copy ends within the
    // residual of the iteration it copies, before the next one stores: a barrier moved after
    // those stores breaks nothing there (docs/seed002.md, "cp-nt-async"; jacobi and cg: 0 of
    // 400 trials fail with 4 or 10 buffers on 512, 32 and 4 KiB LLCs, docs/crash-campaigns.md).
    if (m == mem::Mutation::kCpBarrierAfterWrite) return spec.machine.nt_stores;
    if (mem::epoch_engine_mutation(m))
      return !per.hardware() ||
             ((mem::idt_mutation(m) || m == mem::Mutation::kLbNoSplit) && !per.idt());
    return false;
  });
  // PreFlush's negative controls apply to every campaign that runs it (the NACK only acts
  // between cores). Whether a kernel's campaign catches them is a finding, docs/preflush.md.
  if (spec.machine.preflush.enabled) {
    ms.push_back(mem::Mutation::kPreflushNoOwnStore);
    if (spec.machine.cores > 1) ms.push_back(mem::Mutation::kPreflushNoNack);
  }
  return ms;
}

bool keeps_preset_caches(const std::string& kernel, const std::string& scheme) {
  // False for a kernel or scheme the catalog does not know: the campaign's own checks refuse
  // those, naming the known ones (`pmlab crash` asks before it checks anything).
  const run::KernelDriver* k = run::kernel_driver_named(kernel);
  if (k == nullptr || std::find(k->schemes.begin(), k->schemes.end(), scheme) == k->schemes.end())
    return false;
  // Decided by what the row and its mutants declare, not by names (crash_campaign.hpp says why).
  const SimKernel& sk = find_sim_kernel(kernel);
  if (!sk.mutants) return false;
  const auto ms = sk.mutants(scheme).list();
  return std::any_of(ms.begin(), ms.end(), [](mem::Mutation m) {
    return mem::exposing_machine(m) == mem::ExposingMachine::kPreset;
  });
}

std::vector<ExposingStep> exposing_ladder(mem::ExposingMachine c) {
  std::vector<ExposingStep> out;
  out.push_back(ExposingStep{"the campaign's machine", {}, 0});
  if (c != mem::ExposingMachine::kEvictionsOrConflicts) return out;
  // Smaller caches evict lines that carry an epoch while older epochs are cached (replacement
  // order); each size exposes a different set of the five BEP workloads' mutants
  // (docs/crash-campaigns.md's table), so all three are tried, largest first.
  struct Size {
    const char* l1;
    const char* llc;
    int llc_kib;
  };
  for (const Size& z : {Size{"512", "4096", 4}, Size{"256", "2048", 2}, Size{"128", "1024", 1}})
    out.push_back(ExposingStep{fmt::format("{} B L1s, {} KiB LLC", z.l1, z.llc_kib),
                               sim::MachineSettings{{"l1-size", z.l1},
                                                    {"l1-ways", "2"},
                                                    {"l2-size", "0"},
                                                    {"llc-size", z.llc},
                                                    {"llc-ways", "4"}},
                               0});
  // More threads conflict on more lines (IDT's write-after-write rule needs two threads on one
  // line while the first one's epoch is unpersisted).
  out.push_back(ExposingStep{"4 cores, 4 threads", sim::MachineSettings{{"cores", "4"}}, 4});
  return out;
}

run::SimRunSpec exposing_spec(const run::SimRunSpec& spec, const ExposingStep& s) {
  run::SimRunSpec out = spec;
  if (!s.settings.empty()) out.machine = sim::machine_from(spec.machine, s.settings);
  if (s.threads > 0) out.run.threads = s.threads;
  return out;
}

sim::MachineSettings control_machine(const std::string& kernel, const std::string& scheme) {
  sim::MachineSettings o{{"cores", "2"}};
  if (keeps_preset_caches(kernel, scheme)) return o;
  return o.set("l1-size", "1024").set("llc-size", "4096").set("l1-ways", "4").set("l2-size", "0");
}

void require_applicable(const SimRunSpec& spec, mem::Mutation m) {
  if (m == mem::Mutation::kNone) return;
  const auto ok = applicable_mutations(spec);
  if (std::find(ok.begin(), ok.end(), m) != ok.end()) return;
  std::vector<std::string_view> names;
  for (const mem::Mutation x : ok) names.push_back(mem::to_string(x));
  throw Error(ErrorCode::kInvalidArgument,
              ok.empty() ? fmt::format("--mutate {}: no mutation applies to {} --scheme {} (its "
                                       "row declares no negative control)",
                                       mem::to_string(m), spec.run.kernel, spec.run.scheme)
                         : fmt::format("--mutate {} does not apply to {} --scheme {} (applicable: "
                                       "{})",
                                       mem::to_string(m), spec.run.kernel, spec.run.scheme,
                                       fmt::join(names, ", ")));
}

CampaignOptions control_options(const CampaignOptions& opt, mem::Mutation m) {
  CampaignOptions c = opt;
  c.mutation = m;
  c.progress = nullptr;
  if (m == mem::Mutation::kCommitEarly || m == mem::Mutation::kCpNoSfence)
    c.trials = opt.trials * kNarrowWindowTrialFactor;
  // cp-no-sfence: the cache image keeps every flush, fenced or not, so only the perturbing
  // models of the campaign (any-dirty, skewed) can see it.
  if (m == mem::Mutation::kCpNoSfence) {
    std::vector<ImageModel> perturbing;
    for (const ImageModel x : opt.images)
      if (perturbs(x)) perturbing.push_back(x);
    if (!perturbing.empty()) c.images = std::move(perturbing);
  }
  // An engine mutant breaks the persist order, which the benchmark's image check sees only
  // when a crash lands in the window it opens: the campaign runs the persist-order oracle too.
  if (mem::epoch_engine_mutation(m)) c.spec.machine.persistency.check_order = true;
  return c;
}

// Why mutant `m` is excused when its campaign missed it, or empty. PreFlush's two checks act
// only on what some runs never do: the NACK only when another core stores to a line this core
// PreFlushed (most kernels' threads write their own rows), the own-store check only when a core
// stores again to a line it PreFlushed (pmlab's loop extensions rarely mispredict). When the
// fault-free run never does it, a missed mutant is reported as not reached instead of missed.
namespace {

// not_reached on the fault-free run's PreFlush statistics (none: PreFlush off).
std::string not_reached_in(const std::optional<sim::PreflushStats>& pf, mem::Mutation m) {
  if (!pf) return {};
  if (m == mem::Mutation::kPreflushNoNack)
    return pf->nacked + pf->dir_back_invalidations > 0
               ? std::string{}
               : "the fault-free run never NACKs a PreFlush (no core stores to a line another "
                 "core PreFlushed)";
  return pf->mispredicted_store > 0 ? std::string{}
                                    : "the fault-free run never stores to a line it PreFlushed";
}

bool preflush_control(mem::Mutation m) {
  return m == mem::Mutation::kPreflushNoNack || m == mem::Mutation::kPreflushNoOwnStore;
}

}  // namespace

std::string not_reached(const SimRunSpec& spec, mem::Mutation m) {
  return preflush_control(m) ? not_reached_in(simulate(spec).stats.preflush, m) : std::string{};
}

namespace {

// Adds campaign `r`'s trials, failures, per-image tallies and time to `c`.
void add_campaign(ControlResult& c, const CampaignResult& r) {
  c.trials += r.trials;
  c.failed += r.trials - r.passed;
  c.seconds += r.seconds;
  for (const ImageTally& t : tally_by_image(r)) {
    auto it = std::find_if(c.by_image.begin(), c.by_image.end(),
                           [&](const ImageTally& x) { return x.image == t.image; });
    if (it == c.by_image.end()) {
      c.by_image.push_back(t);
    } else {
      it->trials += t.trials;
      it->passed += t.passed;
    }
  }
}

// Fresh trials for a control `c` (run as `opt`) that failed none: campaigns doubling its total
// until a trial fails or it has kControlTrialCap times its first campaign's trials
// (crash_campaign.hpp says why). Each extension draws from its own seed, so its trials are new.
void extend_missed_control(ControlResult& c, CampaignOptions opt) {
  const std::uint64_t cap = c.trials * kControlTrialCap, seed = opt.seed;
  while (!c.detected() && c.trials < cap) {
    opt.trials = std::min(c.trials, cap - c.trials);
    opt.seed = seed + 0x9E3779B97F4A7C15ULL * c.campaigns;  // a fresh stream per extension
    add_campaign(c, run_campaign(opt));
    ++c.campaigns;
  }
}

}  // namespace

std::vector<ControlResult> run_controls(const CampaignOptions& opt) {
  std::vector<ControlResult> out;
  std::optional<sim::PreflushStats> fault_free;  // simulated when a PreFlush control is missed
  // The unmutated campaign on each machine a control ended on other than the campaign's, run
  // once per machine: a control detected there shows what the campaign sees only if the
  // unbroken code passes there.
  struct Unmutated {
    std::string name;
    std::uint64_t trials = 0, passed = 0;
    std::vector<TrialResult> failures;
  };
  std::vector<Unmutated> unmutated;
  for (const mem::Mutation m : applicable_mutations(opt.spec)) {
    const CampaignOptions base = control_options(opt, m);
    std::vector<ExposingStep> ladder;
    for (ExposingStep& s : exposing_ladder(mem::exposing_machine(m))) {
      const bool allowed = s.settings.empty() || (s.threads > 0 ? opt.controls_may_change_threads
                                                                : opt.controls_may_change_caches);
      if (!allowed) continue;
      try {  // a step the row cannot run (e.g. more threads than it allows) is no step of it
        run::validate(exposing_spec(base.spec, s));
      } catch (const Error&) {
        continue;
      }
      ladder.push_back(std::move(s));
    }
    const auto on = [&](const ExposingStep& s) {
      CampaignOptions c = base;
      c.spec = exposing_spec(base.spec, s);
      return c;
    };
    // Pass 1: one campaign per machine of the ladder, up to the first that fails a trial.
    std::vector<ControlResult> tried(ladder.size());
    std::size_t at = ladder.size();
    for (std::size_t i = 0; i < ladder.size() && at == ladder.size(); ++i) {
      tried[i].machine = ladder[i];
      add_campaign(tried[i], run_campaign(on(ladder[i])));
      if (tried[i].detected()) at = i;
    }
    std::string excuse;
    if (at == ladder.size()) {
      if (preflush_control(m)) {
        if (!fault_free) fault_free = simulate(opt.spec).stats.preflush;  // once for both
        excuse = not_reached_in(fault_free, m);
      }
      // Pass 2: each machine in turn extended to kControlTrialCap x its trials. A miss the
      // fault-free run cannot reach stays excused as it is; more trials cannot help.
      for (std::size_t i = 0; i < ladder.size() && at == ladder.size() && excuse.empty(); ++i) {
        extend_missed_control(tried[i], on(ladder[i]));
        if (tried[i].detected()) at = i;
      }
    }
    // Its machine: the one that failed a trial, or (missed) the campaign's.
    const std::size_t mine = at == ladder.size() ? 0 : at;
    ControlResult& r = out.emplace_back(tried[mine]);
    r.not_reached = excuse;
    for (std::size_t j = 0; j < ladder.size(); ++j)
      if (j != mine && tried[j].trials > 0)
        r.passed_on.emplace_back(ladder[j].name, tried[j].trials);
    r.mutation = m;
    if (r.own_machine()) {
      auto it = std::find_if(unmutated.begin(), unmutated.end(),
                             [&](const Unmutated& u) { return u.name == r.machine.name; });
      if (it == unmutated.end()) {
        CampaignOptions clean = opt;
        clean.spec = exposing_spec(opt.spec, r.machine);
        clean.progress = nullptr;
        const CampaignResult cr = run_campaign(clean);
        Unmutated u{r.machine.name, cr.trials, cr.passed, {}};
        for (const TrialResult& t : cr.results)
          if (!t.passed) u.failures.push_back(t);
        unmutated.push_back(std::move(u));
        it = std::prev(unmutated.end());
      }
      r.unmutated_trials = it->trials;
      r.unmutated_passed = it->passed;
      r.unmutated_failures = it->failures;
      r.unmutated_spec = exposing_spec(opt.spec, r.machine);
    }
  }
  return out;
}

std::uint64_t mutants_detected(const std::vector<ControlResult>& c) {
  return static_cast<std::uint64_t>(
      std::count_if(c.begin(), c.end(), [](const ControlResult& x) { return x.detected(); }));
}

std::uint64_t unmutated_failures(const std::vector<ControlResult>& c) {
  std::vector<std::string> seen;
  std::uint64_t failed = 0;
  for (const ControlResult& x : c) {
    if (!x.own_machine()) continue;
    if (std::find(seen.begin(), seen.end(), x.machine.name) != seen.end()) continue;
    seen.push_back(x.machine.name);
    failed += x.unmutated_trials - x.unmutated_passed;
  }
  return failed;
}

std::uint64_t mutants_reached(const std::vector<ControlResult>& c) {
  return static_cast<std::uint64_t>(std::count_if(
      c.begin(), c.end(), [](const ControlResult& x) { return x.not_reached.empty(); }));
}

nlohmann::json to_json(const std::vector<ControlResult>& c) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& x : c) {
    nlohmann::json models = nlohmann::json::array();
    for (const auto& t : x.by_image)
      models.push_back({{"model", to_string(t.image)}, {"trials", t.trials}, {"passed", t.passed}});
    runs.push_back({{"mutation", mem::to_string(x.mutation)},
                    {"trials", x.trials},
                    {"failed", x.failed},
                    {"detected", x.detected()},
                    {"campaigns", x.campaigns},
                    {"image_models", models},
                    {"seconds", x.seconds}});
    // The machine it ran on (the first of its ladder that failed a trial), and the ones before.
    nlohmann::json machine{{"name", x.machine.name}, {"settings", nlohmann::json::object()}};
    for (const auto& [flag, value] : x.machine.settings.items()) machine["settings"][flag] = value;
    if (x.machine.threads > 0) machine["threads"] = x.machine.threads;
    if (x.own_machine())
      machine["unmutated"] = {{"trials", x.unmutated_trials}, {"passed", x.unmutated_passed}};
    nlohmann::json before = nlohmann::json::array();
    for (const auto& [name, trials] : x.passed_on)
      before.push_back({{"name", name}, {"trials", trials}, {"failed", 0}});
    machine["passed_on"] = before;
    runs.back()["machine"] = machine;
    if (!x.not_reached.empty()) runs.back()["not_reached"] = x.not_reached;
  }
  // "mutants": the controls that must be detected (every one the fault-free run reaches).
  return {{"mutants", mutants_reached(c)},
          {"declared", c.size()},
          {"detected", mutants_detected(c)},
          {"unmutated_failures", unmutated_failures(c)},
          {"runs", runs}};
}

}  // namespace pmlab::experiments
