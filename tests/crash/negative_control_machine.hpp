// The kernels' negative-control campaigns' machine and seed, shared by crash_evidence_test.cpp
// and mutant_evidence_test.cpp.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "pmlab/experiments/crash_campaign.hpp"

namespace pmlab::run::test {

// Fixed so that a CI failure replays; PMLAB_TEST_SEED explores others.
inline std::uint64_t evidence_seed() {
  const char* s = std::getenv("PMLAB_TEST_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : 11;
}

// The kernels' negative-control machine (experiments::control_machine: tiny caches, 2 cores;
// lp-isca18's own caches for a row declaring cp-barrier-after-write, i.e. cp-nt-async).
inline SimRunSpec negative_control_spec(const std::string& kernel, const std::string& scheme,
                                        std::uint64_t n = 32) {
  SimRunSpec spec;
  spec.run.kernel = kernel;
  spec.run.scheme = scheme;
  spec.run.n = n;
  spec.run.bs = 8;
  spec.run.threads = 2;
  spec.machine = sim::machine_from("lp-isca18", experiments::control_machine(kernel, scheme));
  return spec;
}

// Replays up to five failed trials of campaign `r` (run with `opt`) from their crash points and
// image seeds: each fails again with the same failure and the same later crashes. Returns how
// many were replayed.
inline int expect_failed_trials_replay(const experiments::CampaignOptions& opt,
                                       const experiments::CampaignResult& r) {
  int replayed = 0;
  for (const experiments::TrialResult& t : r.results) {
    if (t.passed || replayed >= 5) continue;
    const experiments::TrialResult again = experiments::replay_trial(
        opt.spec, t.crash_op, t.recovery_crashes, {t.image, t.image_seed, opt.mutation});
    EXPECT_FALSE(again.passed) << "trial " << t.index;
    EXPECT_EQ(again.failure, t.failure) << "trial " << t.index;
    EXPECT_EQ(again.recovery_crashes, t.recovery_crashes) << "trial " << t.index;
    ++replayed;
  }
  return replayed;
}

}  // namespace pmlab::run::test
