// The kernels' negative-control campaigns' machine and seed, shared by crash_evidence_test.cpp
// and mutant_evidence_test.cpp.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include "pmlab/experiments/crash_campaign.hpp"

namespace pmlab::run::test {

// Fixed so that a CI failure replays; PMLAB_TEST_SEED explores others.
inline std::uint64_t evidence_seed() {
  const char* s = std::getenv("PMLAB_TEST_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : 11;
}

// Tiny caches (1 KiB L1s, a 4 KiB LLC, 2 cores) so that CI-sized runs evict, and so crash images
// hold torn regions.
inline SimRunSpec negative_control_spec(const std::string& kernel, const std::string& scheme,
                                        std::uint64_t n = 32) {
  SimRunSpec spec;
  spec.run.kernel = kernel;
  spec.run.scheme = scheme;
  spec.run.n = n;
  spec.run.bs = 8;
  spec.run.threads = 2;
  MachineOverrides o;
  o.cores = 2;
  o.l1_size = 1024;
  o.llc_size = 4096;
  o.l1_ways = 4;
  o.l2_size = 0;
  spec.machine = machine_from("lp-isca18", o);
  return spec;
}

// lp-isca18's own caches on 2 cores, for seed 002's helper copy (cp-nt-async): with them the
// iteration's work before its first store (jacobi's residual, cg's SpMV) hits in the caches and
// outruns the helper's copy, so a barrier placed too late lets the next iteration overwrite
// what the helper has not copied yet. Behind the tiny caches above that work misses, the helper
// always finishes first, and no placement of the barrier can matter (0 of 100 trials fail).
inline SimRunSpec lagging_helper_spec(const std::string& kernel, const std::string& scheme,
                                      std::uint64_t n) {
  SimRunSpec spec = negative_control_spec(kernel, scheme, n);
  MachineOverrides o;
  o.cores = 2;
  spec.machine = machine_from("lp-isca18", o);
  return spec;
}

}  // namespace pmlab::run::test
