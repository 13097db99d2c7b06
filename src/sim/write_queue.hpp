// The memory controller's bounded write queue draining into NVM write units (ADR timing).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pmlab::sim {

// With E entries and U units, write k arriving at time t is accepted (durable, ADR) at
//   accept_k = t                         while fewer than E writes are queued,
//   accept_k = max(t, start_{k-E})       otherwise (it waits for a queue slot to free),
// and leaves the queue for the earliest free write unit at
//   start_k  = max(accept_k, min_u free_u),   free_u := start_k + write_cycles.
// The Hierarchy keeps one such queue per core, each with its core's share of the controller
// (E = entries / share, U = units / share, at least 1), because the cores' clocks are only
// synchronised at loop boundaries: a single queue fed in simulation order would make a core
// wait for writes another core issues far in its own future.
class WriteQueue {
 public:
  WriteQueue(std::uint32_t entries, std::uint32_t units, std::uint64_t write_cycles)
      : start_(entries, 0), unit_free_(units, 0), write_cycles_(write_cycles) {}

  // Returns the acceptance time of a write arriving at `t`, using 1/share of the queue.
  std::uint64_t accept(std::uint64_t t, std::uint32_t share = 1) {
    const std::size_t entries = std::max<std::size_t>(1, start_.size() / share);
    const std::size_t units = std::max<std::size_t>(1, unit_free_.size() / share);
    std::uint64_t accepted = t;
    if (count_ >= entries) accepted = std::max(t, start_[(count_ - entries) % start_.size()]);
    auto unit = std::min_element(unit_free_.begin(),
                                 unit_free_.begin() + static_cast<std::ptrdiff_t>(units));
    const std::uint64_t start = std::max(accepted, *unit);
    *unit = start + write_cycles_;
    start_[count_ % start_.size()] = start;
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
