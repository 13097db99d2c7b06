// The memory controller's bounded write queue draining into NVM write units (ADR timing).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace pmlab::sim {

// Write k arriving at time t is accepted (durable, ADR) at
//   accept_k = t                         while fewer than W writes are queued,
//   accept_k = max(t, start_{k-W})       otherwise (it waits for a queue slot to free),
// and leaves the queue for the earliest free write unit at
//   start_k  = max(accept_k, min_u free_u),   free_u := start_k + write_cycles.
// Writes are issued in arrival order; cores' clocks are only loosely synchronised, so an
// arrival may carry an earlier time than its predecessor (first-order model, documented).
class WriteQueue {
 public:
  WriteQueue(std::uint32_t entries, std::uint32_t units, std::uint64_t write_cycles)
      : start_(entries, 0), unit_free_(units, 0), write_cycles_(write_cycles) {}

  // Returns the acceptance time of a write arriving at `t`.
  std::uint64_t accept(std::uint64_t t) {
    const std::size_t slot = static_cast<std::size_t>(count_ % start_.size());
    std::uint64_t accepted = t;
    if (count_ >= start_.size()) accepted = std::max(t, start_[slot]);
    auto unit = std::min_element(unit_free_.begin(), unit_free_.end());
    const std::uint64_t start = std::max(accepted, *unit);
    *unit = start + write_cycles_;
    start_[slot] = start;
    ++count_;
    return accepted;
  }
  // Power failure or stats reset: the queue is empty (ADR drained it to NVM).
  void reset() {
    std::fill(start_.begin(), start_.end(), 0);
    std::fill(unit_free_.begin(), unit_free_.end(), 0);
    count_ = 0;
  }

 private:
  std::vector<std::uint64_t> start_;  // ring: issue time of the last W writes
  std::vector<std::uint64_t> unit_free_;
  std::uint64_t write_cycles_;
  std::uint64_t count_ = 0;
};

}  // namespace pmlab::sim
