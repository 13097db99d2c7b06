// Crash-testing a user's lp::Loop in the simulator with the campaign engine of `pmlab crash`,
// from the loop's own description: no ResumableKernel to write.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/lp/checksum_kind.hpp"
#include "pmlab/lp/loop.hpp"
#include "pmlab/sim/params.hpp"

namespace pmlab::experiments {

/// A user's loop as the crash test needs it: what lp::Loop's constructor and run() take, with
/// the body made for a given Loop. Every simulated run has a pool of its own, so the body must
/// find its arrays through that Loop (loop.array("a")), as a body made for the native Loop does.
struct LoopUnderTest {
  std::string name = "loop";  ///< reports and replay commands; at most 15 characters
  std::vector<lp::LoopArray> arrays;
  lp::LoopLayout layout;
  lp::Loop::Init init;                            ///< writes the inputs, as for lp::Loop
  std::function<lp::Loop::Body(lp::Loop&)> body;  ///< the body computing into `loop`'s arrays
  lp::ChecksumKind checksum = lp::ChecksumKind::kModular;
};

/// The machine a loop crash test runs on unless told otherwise: lp-isca18 with 2 cores and
/// caches far smaller than any loop worth protecting (1 KiB 4-way L1s, no L2, a 4 KiB 8-way
/// LLC), so that a small test loop evicts and its crash images hold torn regions. It is the
/// machine of the built-in kernels' negative controls (control_machine) for rows without a
/// helper copy, and the one LP's own control (no-validate) runs on here.
[[nodiscard]] sim::SimParams loop_crash_machine();

/// How a loop is crash-tested.
struct LoopCrashOptions {
  std::uint64_t trials = 200;  ///< trials of the campaign
  std::uint64_t seed = 1;      ///< every trial is deterministic given (seed, trial index)
  unsigned threads = 2;        ///< logical threads running a phase's regions (simulated cores)
  /// The simulated machine of the campaign and of its negative control.
  sim::SimParams machine = loop_crash_machine();
  int jobs = kDefaultCampaignJobs;  ///< forked trials at once (0: every trial in this process)
  /// Also run the loop under LP's declared negative control (no-validate: recovery trusts every
  /// committed checksum), which the campaign must detect or it proves nothing.
  bool control = true;
};

/// What crash_test found.
struct LoopCrashResult {
  CampaignResult campaign;              ///< the loop as written
  std::vector<ControlResult> controls;  ///< the negative control (empty without one)
  /// Every trial recovered bit-exactly and every control was detected.
  [[nodiscard]] bool passed() const;
};

/// Runs the crash campaign of `pmlab crash` on the loop: the loop's protocol (lp::Loop's, run
/// by loop_protocol::Protocol) on sim::SimBackend, power cut at uniform and adversarial points
/// and again inside recovery, NVM restored from the crash image, recovered, finished and
/// compared bit for bit with the loop's fault-free result (every array of the loop). The body
/// writes memory directly: each region's declared output range is stored again through the
/// simulator after the body returns, so the simulated caches see exactly the declared writes,
/// and a write outside them never reaches the simulated NVM — a loop that forgets to declare a
/// range it writes fails. Throws pmlab::Error (kInvalidArgument) for a loop lp::Loop refuses.
[[nodiscard]] LoopCrashResult crash_test(const LoopUnderTest& loop,
                                         const LoopCrashOptions& options = {});

/// One trial of crash_test again, from the numbers replay_arguments prints.
[[nodiscard]] TrialResult replay_loop_trial(const LoopUnderTest& loop,
                                            const LoopCrashOptions& options, std::uint64_t crash_op,
                                            const std::vector<std::uint64_t>& recovery_crashes,
                                            const TrialSetup& setup);

/// The arguments of crash_test_main that replay trial `t` of a campaign:
/// "--replay OP [--replay-recovery OP]... --replay-image MODEL [--replay-image-seed S]
/// [--mutate M]".
[[nodiscard]] std::string replay_arguments(const TrialResult& t,
                                           mem::Mutation mutation = mem::Mutation::kNone);

/// A crash-test program's main: `prog [--trials N] [--seed S] [--jobs J] [--no-control]` runs
/// crash_test and prints, for each failed trial, the command that replays it (`prog` and
/// replay_arguments); `prog --replay OP ...` replays one. Exit codes: 0 every trial recovered
/// and the control was detected (a replay: the trial passed), 1 a trial failed or the control
/// was missed, 2 usage, 3 an error (pmlab::Error). `defaults` are the options before the
/// command line's.
int crash_test_main(const LoopUnderTest& loop, int argc, char** argv,
                    const LoopCrashOptions& defaults = {});

}  // namespace pmlab::experiments
