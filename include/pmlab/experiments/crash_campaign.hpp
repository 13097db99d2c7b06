// Power-failure crash campaigns in the simulator: crash, restore the NVM image, recover, finish,
// compare.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/mem/mutation.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/machine_params.hpp"

namespace pmlab::experiments {

// Where in the run a trial cuts the power.
enum class CrashPointKind {
  kUniform,       // uniform over every op of the fault-free run
  kFirstOp,       // before the very first op
  kLastOp,        // before the last op
  kBeforeCommit,  // just before a region's checksum/commit store completes
  kAfterCommit,   // just after a region commit
  kInsideCommit,  // between the stores of one checksum-table slot
  // Inside persistence protocols (undo-log and index-record updates, persists), whose steps
  // end in fences: the fault-free run's fence ops place these.
  kBeforeFence,    // a step's stores and flushes happened, its fence did not
  kAfterFence,     // the first or second op after a fence did not happen (e.g. a flag store or its
                   // flush)
  kBetweenFences,  // uniform between two fences: inside a log copy or an index update
};
[[nodiscard]] std::string_view to_string(CrashPointKind k);

// What NVM holds after a power failure.
enum class ImageModel : std::uint8_t {
  // Exactly what the simulated caches wrote back: their evictions (LRU in every preset), flushes
  // and periodic cleaning. One eviction order only, the one the flushes happen to agree with.
  kCache,
  // Adversarial: the cache's image, then every flush not yet fenced may be undone and every
  // dirty line may have reached NVM with its current bytes, each independently with
  // probability 1/2 (CrashImage::perturb): the legal images the property tests' backend draws.
  kAnyDirty,
  // Adversarial, skewed: any-dirty's draws with one probability p per image, drawn uniformly
  // from [0, 1), instead of 1/2 for every line (CrashImage::ReachOdds::kSkewed). The same legal
  // images, weighted towards "almost every dirty line reached NVM" and "almost none": a validation
  // that must catch every checksum slot of an iteration durable but one data line not (p^8 at
  // 1/2 with eight slot lines) sees it in a few percent of these images instead of ~0.4 %.
  kSkewed,
};
// Whether the model perturbs the cache's image (any-dirty, skewed), and with which odds.
[[nodiscard]] constexpr bool perturbs(ImageModel m) {
  return m == ImageModel::kAnyDirty || m == ImageModel::kSkewed;
}
[[nodiscard]] std::string_view to_string(ImageModel m);
[[nodiscard]] ImageModel image_model_from_string(const std::string& s);  // throws kInvalidArgument
[[nodiscard]] mem::Mutation mutation_from_string(const std::string& s);  // throws kInvalidArgument
// Every campaign's default: the cache's own image and both adversarial ones. Without skewed,
// `pmlab crash cg --scheme lp` misses its declared no-validate control at every seed tried
// (docs/crash-campaigns.md, "The default command detects every declared control").
inline const std::vector<ImageModel> kDefaultImageModels{ImageModel::kCache, ImageModel::kAnyDirty,
                                                         ImageModel::kSkewed};

// Children forked at once by default, sanitized builds included. fork() under AddressSanitizer
// copies its shadow mappings (~10 ms), which made in-process trials the cheaper default there
// while every trial was a child of its own. With trials in batches (one child per batch) and
// the fault-free run simulated once, batchable campaigns run 2-10x faster forked than in
// process under ASan too, and the batch path (images in shared memory, rewound trials) now runs
// sanitized; campaigns whose trials cannot batch (hardware barriers) are slower forked, and the
// sanitizer suite's time did not change (docs/crash-campaigns.md, "Forked trials"). Results are
// identical either way (jobs = 0 still runs every trial in this process).
inline constexpr int kDefaultCampaignJobs = 2;

struct CampaignOptions {
  run::SimRunSpec spec;  // kernel run + machine (spec.verify is ignored)
  std::uint64_t trials = 200;
  std::uint64_t seed = 1;
  double recovery_crash_rate = 0.3;  // chance that a restart is itself cut (repeatedly)
  int max_recovery_crashes = 3;
  // Trial i uses images[i % size]; each model gets its own corner crash points.
  std::vector<ImageModel> images = kDefaultImageModels;
  // A negative control: the campaign runs a deliberately broken protocol and should fail.
  mem::Mutation mutation = mem::Mutation::kNone;
  // Trials running at once as fork()ed children of one fault-free simulation (each child cuts
  // the power at its crash point); 0 = one fresh simulation per trial, in this process.
  // Results are identical either way.
  int jobs = kDefaultCampaignJobs;
  // The restart after a trial's last crash (its recovery and the rest of the run) skips the
  // cache model by default: only its result is compared. On, that recovery is modelled and its
  // simulated cycles are reported (TrialResult::recovery_cycles), at several times the cost.
  bool model_last_recovery = false;
  // Forked trials run the rest of the run after that restart's recovery natively
  // (run::SimSession::run_native): its result and the regions it commits are what count, and both
  // are the simulator's (CrashCampaignFork.* compare them with sequential trials, which keep it
  // simulated). Off: simulated unmodelled, several times slower.
  bool native_tail = true;
  // Forked trials run in batches, one child per batch, from crash images the parent keeps:
  // fewer fork()s, the same results. A trial whose restart after its first crash is not cut
  // again (most of them) needs only its image; one that is cut again also needs the simulator
  // as the power failure left it, which the child rebuilds from the image only on machines
  // where nothing that survives a power failure can change what follows it (docs/crash-
  // campaigns.md, "Trials cut again join the batches too"); elsewhere such trials fork at their
  // crash points. Off: one child per trial, forked at its crash point (a measurement aid).
  bool batch_trials = true;
  // A test aid: the forked child that runs this trial kills itself (SIGKILL) before finishing
  // it, to check that a dead child fails its own trial and no other.
  std::optional<std::uint64_t> kill_trial;
  // Negative controls (run_controls): each runs on the first machine of its mutant's ladder
  // (mem::exposing_machine, exposing_ladder) on which it fails a trial, instead of on spec alone,
  // and the unmutated campaign runs on that machine too, so that a control detected there
  // means something. A step of the ladder that changes the caches runs only when
  // controls_may_change_caches, one that changes cores and threads only when
  // controls_may_change_threads: `pmlab crash` sets each unless the user chose them (a cache
  // size or associativity flag or a machine file; --cores or --threads). Both off: every control
  // runs on spec.
  bool controls_may_change_caches = false;
  bool controls_may_change_threads = false;
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

struct TrialResult {
  std::uint64_t index = 0;
  CrashPointKind kind = CrashPointKind::kUniform;
  std::uint64_t crash_op = 0;  // the op that did not happen
  ImageModel image = ImageModel::kCache;
  std::uint64_t image_seed = 0;  // draws of the any-dirty and skewed models (replay)
  // Ops (absolute) of the crashes after the first: cut inside a recovery or in the run that
  // resumed after it. Each such crash point is drawn after measuring how long the recovery it
  // targets is (a recovery from the same image, then undone): most land inside it.
  std::vector<std::uint64_t> recovery_crashes;
  std::uint64_t crashes_in_recovery = 0, crashes_in_resumed_run = 0;
  std::vector<std::uint64_t> recovery_lengths;  // measured ops of each targeted recovery
  bool passed = false;
  std::string failure;         // first mismatch or exception text
  lp::RecoveryStats recovery;  // summed over every recovery of the trial
  // Region executions that repeat work done before the crash: regions recomputed by recovery
  // plus region commits after the crash of a region (RegionId) that had already committed.
  std::uint64_t regions_redone = 0;
  // Outer iterations (the kernel's resume unit) finished before a power failure that the run
  // after it executes again: the outer position at the failure minus the resume point recovery
  // returned, the largest over the trial's failures. In-place versioning promises at most 1.
  std::uint64_t outer_redone = 0;
  std::uint64_t recovery_ops = 0;  // backend ops spent in recovery (last attempt)
  // Simulated cycles of the last recovery; 0 when it ran unmodelled (the default after the
  // trial's last crash, unless CampaignOptions::model_last_recovery).
  std::uint64_t recovery_cycles = 0;
};

struct CampaignResult {
  std::string kernel, scheme;
  std::uint64_t fault_free_ops = 0, commits = 0, fences = 0;
  std::uint64_t fault_free_cycles = 0;
  // With periodic cleaning (spec.machine.periodic_flush_cycles = T): the most region commits
  // of the fault-free run inside any T-cycle window, the scale recovery work should stay within.
  std::uint64_t periodic_flush_cycles = 0, max_commits_per_period = 0;
  std::uint64_t trials = 0, passed = 0;
  // Where each trial's first crash fell in the fault-free run's op numbering: inside a request
  // of seed 002's helper core (its flushes or its fence), within 2 ops of a fence (a commit
  // word's persist, a copy's publish), or elsewhere; with the passes of each.
  struct Phase {
    std::uint64_t trials = 0, passed = 0;
  };
  Phase in_helper, near_fence, elsewhere;
  std::uint64_t helper_requests = 0;  // helper requests in the fault-free run (0: no helper)
  std::vector<ImageModel> images;
  mem::Mutation mutation = mem::Mutation::kNone;
  int jobs = 0;  // forked trials at once (0: sequential)
  // Forked trials that ran in batches, one child per batch, from the crash images the parent
  // kept (docs/crash-campaigns.md), and how many of them were cut again in their restart.
  std::uint64_t batched_trials = 0, batches = 0, batched_cut_again = 0;
  double seconds = 0;
  std::vector<TrialResult> results;
  [[nodiscard]] double trials_per_second() const {
    return seconds > 0 ? static_cast<double>(trials) / seconds : 0;
  }
};

// Runs the campaign; every trial is deterministic given (seed, trial index), so a failure can be
// replayed with replay_trial(). After a trial's last crash the rest of its run is executed
// without the cache model (SimBackend::stop_modelling): only its result is compared.
[[nodiscard]] CampaignResult run_campaign(const CampaignOptions& opt);
// How a replayed trial's images are drawn and which mutation it runs.
struct TrialSetup {
  ImageModel image = ImageModel::kCache;
  std::uint64_t image_seed = 0;
  mem::Mutation mutation = mem::Mutation::kNone;
  bool model_last_recovery = false;  // CampaignOptions::model_last_recovery
};
// One trial with explicit crash points (first = the run's crash, rest = later crashes, each
// after the same measuring recovery the campaign ran).
[[nodiscard]] TrialResult replay_trial(const run::SimRunSpec& spec, std::uint64_t crash_op,
                                       const std::vector<std::uint64_t>& recovery_crashes,
                                       const TrialSetup& setup = {});

// Trials and passes of one image model in a campaign.
struct ImageTally {
  ImageModel image = ImageModel::kCache;
  std::uint64_t trials = 0, passed = 0;
};
[[nodiscard]] std::vector<ImageTally> tally_by_image(const CampaignResult& r);

[[nodiscard]] nlohmann::json to_json(const CampaignResult& r, bool per_trial);

// --- Negative controls ---------------------------------------------------------------------
// The machine of the kernels' small negative-control campaigns (eval's crash section and the
// tests'), on lp-isca18: 2 cores, and tiny caches (1 KiB 4-way L1s, no L2, a 4 KiB LLC) so that
// small runs evict and crash images hold torn regions. A row that declares the helper copy's
// barrier mutant (cp-barrier-after-write, cp-nt-async's) keeps lp-isca18's caches: behind tiny
// ones the work before an iteration's first store misses and the helper's copy always ends
// first, so that mutant could never be seen (docs/seed002.md, "cp-nt-async").
[[nodiscard]] sim::MachineSettings control_machine(const std::string& kernel,
                                                   const std::string& scheme);
// Whether the row declares a mutant whose exposing machine has the preset's caches
// (mem::ExposingMachine::kPreset: cp-barrier-after-write), so that its campaigns keep the preset's
// caches (control_machine, and `pmlab crash`'s default machine).
[[nodiscard]] bool keeps_preset_caches(const std::string& kernel, const std::string& scheme);
// One machine a negative control may run on: the campaign's spec with these machine settings
// and, if threads > 0, that many threads (cores raised to match).
struct ExposingStep {
  std::string name;  // "the campaign's machine", "512 B L1s, 4 KiB LLC", ...
  sim::MachineSettings settings;
  std::uint32_t threads = 0;
  [[nodiscard]] bool changes_caches() const { return !settings.empty() && threads == 0; }
};
// The machines a control of class `c` tries, in order (the first one that fails a trial is
// its machine): the campaign's alone for kCampaign and kPreset (a row declaring a kPreset mutant
// runs its whole campaign on the preset's caches); for kEvictionsOrConflicts the campaign's,
// then 512 B / 4 KiB, 256 B / 2 KiB and 128 B / 1 KiB L1s / LLC (no L2), then 4 cores and 4
// threads on the campaign's caches (mem/mutation.hpp says why).
[[nodiscard]] std::vector<ExposingStep> exposing_ladder(mem::ExposingMachine c);
// The spec of step `s` over the campaign's `spec`.
[[nodiscard]] run::SimRunSpec exposing_spec(const run::SimRunSpec& spec, const ExposingStep& s);
// The mutations that break the spec's scheme, i.e. that its campaign must detect: what the
// scheme's row declares (Scheme::mutants; the named sets are in scheme/rows.hpp). Empty for a
// row that declares none (base, a scheme without a persistence protocol).
[[nodiscard]] std::vector<mem::Mutation> applicable_mutations(const run::SimRunSpec& spec);
// Throws kInvalidArgument (a usage error) for a row that is not crash-safe (Scheme::crash_safe:
// ipv-nf); run_campaign calls it first.
void require_crash_safe(const run::SimRunSpec& spec);
// Throws kInvalidArgument (a usage error) naming the applicable mutations unless `m` is none or
// one of them.
void require_applicable(const run::SimRunSpec& spec, mem::Mutation m);

struct ControlResult {
  mem::Mutation mutation = mem::Mutation::kNone;
  std::uint64_t trials = 0, failed = 0;
  std::vector<ImageTally> by_image;  // passes per image model
  double seconds = 0;
  // Non-empty when the campaign missed the mutant and the fault-free run never reaches the
  // mechanism it removes (e.g. preflush-no-nack on a kernel whose cores never store to each
  // other's PreFlushed lines): why, and the miss is excused.
  std::string not_reached;
  // Campaigns run: more than 1 when the first failed no trial and fresh ones were added
  // (kControlTrialCap).
  std::uint64_t campaigns = 1;
  // The machine it ran on (the step of its ladder that failed a trial, or the last one tried),
  // and the steps before it, which failed none, with their trials.
  ExposingStep machine;
  std::vector<std::pair<std::string, std::uint64_t>> passed_on;
  // On a machine of its own (not the campaign's): the unmutated campaign there (the control's
  // seed, trials and images), once per such machine; a failed trial of it is a real failure.
  std::uint64_t unmutated_trials = 0, unmutated_passed = 0;
  std::vector<TrialResult> unmutated_failures;  // trials of `unmutated_spec`
  run::SimRunSpec unmutated_spec;
  [[nodiscard]] bool own_machine() const {
    return !machine.settings.empty() || machine.threads > 0;
  }
  [[nodiscard]] bool detected() const { return failed > 0; }
};
// The campaign a negative control runs on the campaign's machine: `opt` under mutation `m`
// (run_controls then moves it along the mutant's ladder, exposing_spec). Two mutants are visible
// only to a crash inside a window of a few ops, so they get kNarrowWindowTrialFactor times the
// trials: commit-early (a commit moved before its data) and cp-no-sfence (a copy left unfenced is
// fenced by the publish's own persist a few ops later); cp-no-sfence also runs only the any-dirty
// model when the campaign has it (the cache image keeps every flush, fenced or not).
inline constexpr std::uint64_t kNarrowWindowTrialFactor = 4;
// A control whose campaign failed no trial runs again on fresh trials (another seed), doubling
// its total each time, up to this many times its first campaign's trials. A mutant the campaign
// catches in 1 trial of 500 is then reported detected, with its rate, instead of missed in half
// the seeds; one it cannot catch is still missed, after 8x the trials. The controls' trials,
// failures and campaigns are printed, so the rate is what a reader judges
// (docs/crash-campaigns.md, "The default command detects every declared control").
inline constexpr std::uint64_t kControlTrialCap = 8;
[[nodiscard]] CampaignOptions control_options(const CampaignOptions& opt, mem::Mutation m);
// The campaign `opt` (its mutation ignored) once per applicable mutation (control_options) on
// each machine of the mutant's ladder (exposing_ladder, as opt allows) until one fails a trial;
// if none does, each machine in turn extended up to kControlTrialCap times its trials.
[[nodiscard]] std::vector<ControlResult> run_controls(const CampaignOptions& opt);
[[nodiscard]] std::uint64_t mutants_detected(const std::vector<ControlResult>& c);
// Why a missed mutant `m` is excused for `spec` (the fault-free run never reaches the mechanism
// it removes: PreFlush's NACK or own-store check), or empty.
[[nodiscard]] std::string not_reached(const run::SimRunSpec& spec, mem::Mutation m);
// The controls that must be detected (all but the missed ones the run never reaches): what
// mutants_detected must equal.
[[nodiscard]] std::uint64_t mutants_reached(const std::vector<ControlResult>& c);
// Unmutated trials that failed on the controls' own machines (each machine counted once).
[[nodiscard]] std::uint64_t unmutated_failures(const std::vector<ControlResult>& c);
// {"mutants": M, "detected": N, "runs": [{mutation, trials, failed, by_image, machine}]}
[[nodiscard]] nlohmann::json to_json(const std::vector<ControlResult>& c);

}  // namespace pmlab::experiments
