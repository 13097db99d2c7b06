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
  spec.machine = machine_from("lp-isca18", experiments::control_machine(kernel, scheme));
  return spec;
}

}  // namespace pmlab::run::test
