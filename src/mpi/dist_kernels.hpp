// The distributed kernels as pmlab-mpi sees them: a catalog-style driver per kernel (its
// description satisfies run::ResumableKernel) plus what only a distributed run needs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pmlab/run/catalog.hpp"

namespace pmlab::dist {

// The kernel parameters every distributed pool stores beside the kernel's own: the job's rank
// count, this pool's rank and the job id. A pool of another job, size or rank is refused.
inline constexpr const char* kRanksParam = "ranks";
inline constexpr const char* kRankParam = "rank";
inline constexpr const char* kJobParam = "job";

struct DistDriver {
  run::KernelDriver driver;  // execute is the distributed one (agreement, barriers)
  // Every rank's state gathered on rank 0 in the single-process layout (empty elsewhere).
  std::function<std::vector<double>(const pool::Pool&)> gather_state;
  // The single-process pool's array that holds the same layout.
  std::string state_array;
};

[[nodiscard]] const std::vector<DistDriver>& dist_drivers();
[[nodiscard]] const DistDriver* dist_driver_named(const std::string& name);

}  // namespace pmlab::dist
