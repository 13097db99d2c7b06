// LP's anchor period on the iterative kernels (cg, jacobi; iterative.hpp "Lazy Persistency"):
// every period K recovers bit for bit from random crashes (also inside recovery) under both
// image models, each declared mutant is caught by the same campaign, and the pool holds
// K + 1 extra state buffers.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "negative_control_machine.hpp"
#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::run {
namespace {

using experiments::CampaignOptions;

TEST(LpAnchor, EveryPeriodRecoversBitExactlyAndEachMutantIsCaught) {
  for (const std::string kernel : {"cg", "jacobi"}) {
    for (const std::uint64_t k : {1u, 2u, 3u, 5u}) {
      CampaignOptions opt;
      // Sizes at which every mutant shows within the trials (cg's no-validate escaped 120
      // trials at n = 16 with K = 1: its few regions are mostly written back before the crash).
      const bool cg = kernel == "cg";
      opt.spec = test::negative_control_spec(kernel, "lp", cg ? 32 : 16);
      opt.spec.run.bs = cg ? 8 : 4;
      opt.spec.run.set_kernel_param("lp-anchor", k);
      opt.seed = test::evidence_seed();
      opt.trials = 120;
      const auto clean = experiments::run_campaign(opt);
      EXPECT_EQ(clean.passed, clean.trials) << kernel << " K=" << k;
      for (const mem::Mutation m : {mem::Mutation::kNoValidate, mem::Mutation::kNoFlush}) {
        const auto r = experiments::run_campaign(experiments::control_options(opt, m));
        EXPECT_LT(r.passed, r.trials)
            << kernel << " K=" << k << " --mutate " << mem::to_string(m) << ": the mutant escaped";
      }
    }
  }
}

TEST(LpAnchor, ThePoolHoldsKPlusOneExtraStateBuffers) {
  for (const std::string kernel : {"cg", "jacobi"}) {
    const KernelDriver& d = find_kernel(kernel);
    pool::RunParams p;
    p.kernel = kernel;
    p.scheme = "lp";
    p.n = 16;
    p.bs = 4;
    p.threads = 1;
    p.set_kernel_param("lp-anchor", 3);
    std::vector<std::string> buffers;
    for (const auto& a : d.arrays(p))
      if (a.name.rfind("lp_s", 0) == 0) buffers.push_back(a.name);
    EXPECT_EQ(buffers, (std::vector<std::string>{"lp_s1", "lp_s2", "lp_s3", "lp_s4"})) << kernel;
  }
}

}  // namespace
}  // namespace pmlab::run
