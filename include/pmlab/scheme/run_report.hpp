// What one run did to a pool: the loop's part (resumed, times) and the scheme's (its recovery).
#pragma once

#include <cstdint>
#include <string>

#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/helper_times.hpp"

namespace pmlab::scheme {

// What one `pmlab run` invocation did to a pool.
struct RunReport {
  bool resumed = false;            // the pool held an interrupted run
  std::string recovery_action;     // e.g. "lp-recovery", "restart", "none"
  lp::RecoveryStats recovery;      // LP and recompute schemes fill this in
  std::uint64_t resume_point = 0;  // outer-loop iteration where normal execution resumed
  double recovery_seconds = 0;
  double compute_seconds = 0;
  // Process CPU time (all threads) over the same span as compute_seconds: below
  // compute_seconds * threads when other processes took the cores (pmlab bench's busy check).
  double compute_cpu_seconds = 0;
  // Seed 002's flush helper thread (ipv): empty placement when the scheme used none.
  mem::HelperTimes helper;
};

}  // namespace pmlab::scheme
