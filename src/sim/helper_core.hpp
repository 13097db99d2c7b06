// Seed 002 §4.2 in the simulator: the helper core's queue of flush_async and copy_async requests
// and its clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "pmlab/sim/stats.hpp"

namespace pmlab::sim {
class SimBackend;
}  // namespace pmlab::sim

namespace pmlab::sim::detail {

// One flush_async request: lines [first, end) written back per line, or (wbinvd) the whole
// cache walked in stretches of LLC slots; then one fence. A copy_async request (copy): bytes
// [dst, dst_end) copied from src on, one destination line per op (lines [first, end)), then one
// fence. `issued`: the requesting core's clock, before which the helper cannot start it.
struct HelperRequest {
  std::uint64_t first = 0, end = 0;
  bool wbinvd = false;
  bool copy = false;
  std::uintptr_t dst = 0, dst_end = 0, src = 0;
  std::uint64_t issued = 0;
};

// State only: SimBackend (src/sim/helper_core.cpp) runs the ops, because each is a counted op
// of its numbering (a crash point).
class HelperCore {
 public:
  explicit HelperCore(int core) { stats_.core = core; }
  [[nodiscard]] bool busy() const { return !queue_.empty(); }
  [[nodiscard]] int core() const { return stats_.core; }
  [[nodiscard]] std::uint64_t clock() const { return clock_; }
  [[nodiscard]] const HelperStats& stats() const { return stats_; }
  [[nodiscard]] const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans() const {
    return spans_;
  }

 private:
  friend class pmlab::sim::SimBackend;
  std::deque<HelperRequest> queue_;
  std::uint64_t cursor_ = 0;  // the front request's next line or LLC slot
  bool started_ = false;      // the front request has begun (its clock start is set)
  bool flushed_ = false;      // the front request's flushes are done: its fence is next
  std::uint64_t clock_ = 0;   // the helper's own time
  HelperStats stats_;
  // With SimBackend::record_fences on: [first op, last op] of each request's ops, for crash
  // campaigns that aim inside the helper's flushes.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans_;
};

}  // namespace pmlab::sim::detail
