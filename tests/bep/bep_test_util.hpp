// Shared set-up of the BEP tests: simulated runs and crash campaigns of a catalog benchmark on a
// small 4-core machine under a chosen barrier.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/params.hpp"

namespace pmlab::bep::test {

// 4 cores with tiny caches so CI-sized runs evict (crashes leave partly persisted epochs).
inline run::SimRunSpec bench_spec(const std::string& kernel, const std::string& scheme,
                                  std::uint64_t n, std::uint32_t threads, std::uint64_t ops,
                                  sim::Barrier barrier = sim::Barrier::kSoftware,
                                  std::uint64_t llc_size = 8192, std::uint32_t llc_ways = 8) {
  run::SimRunSpec spec;
  spec.run.kernel = kernel;
  spec.run.scheme = scheme;
  spec.run.n = n;
  spec.run.bs = 8;
  spec.run.threads = threads;
  spec.run.seed = 7;
  spec.run.set_kernel_param("ops", ops);
  sim::MachineSettings o;
  o.set("cores", 4);
  o.set("l1-size", 1024);
  o.set("llc-size", llc_size);
  o.set("l1-ways", 4);
  o.set("llc-ways", llc_ways);
  o.set("l2-size", 0);
  spec.machine = sim::machine_from("lp-isca18", o);
  spec.machine.persistency.barrier = barrier;
  return spec;
}

// A fault-free simulated run, verified against the replay.
inline void expect_simulated_run_verifies(const run::SimRunSpec& spec) {
  run::SimRunSpec s = spec;
  s.verify = true;
  const auto r = run::simulate(s);
  ASSERT_TRUE(r.verify.has_value());
  EXPECT_TRUE(r.verify->ok()) << r.verify->first_mismatch;
  EXPECT_GT(r.verify->elements, 0u);
}

// A crash campaign (30% of restarts cut again) on the spec.
inline experiments::CampaignResult campaign(const run::SimRunSpec& spec, std::uint64_t trials,
                                            std::uint64_t seed = 5) {
  experiments::CampaignOptions opt;
  opt.spec = spec;
  opt.trials = trials;
  opt.seed = seed;
  // The any-dirty image ignores the epoch order a hardware barrier guarantees (docs/bep.md).
  if (spec.machine.persistency.hardware()) opt.images = {experiments::ImageModel::kCache};
  return experiments::run_campaign(opt);
}

inline void expect_all_pass(const experiments::CampaignResult& r) {
  EXPECT_EQ(r.passed, r.trials);
  for (const auto& t : r.results)
    if (!t.passed) {
      ADD_FAILURE() << "trial " << t.index << " crash_op " << t.crash_op << ": " << t.failure;
      break;
    }
}

}  // namespace pmlab::bep::test
