// The native flush helper thread's times over a run (seed 002 §4.2): busy, exposed, placement.
#pragma once

#include <cstdint>
#include <string>

namespace pmlab::mem {

// What seed 002's flush helper thread did during a run (scheme::AsyncFlusher adds to it when it
// stops): the time it spent writing back, the time the main thread waited for it, where it ran.
struct HelperTimes {
  std::uint64_t busy_ns = 0;     // helper thread flushing
  std::uint64_t exposed_ns = 0;  // main thread blocked in flush_barrier
  std::string placement;         // "cpu N" or "unpinned (no idle cpu)"; empty: no helper ran
  // Adds another stretch of the helper's work (another run, another start of the helper): the
  // times add up; the placement is the newest one given.
  HelperTimes& operator+=(const HelperTimes& o) {
    busy_ns += o.busy_ns;
    exposed_ns += o.exposed_ns;
    if (!o.placement.empty()) placement = o.placement;
    return *this;
  }
  // Share of the helper's flush time the main thread did not wait for (the paper's Fig. 13
  // overlap); 0 when the helper flushed nothing.
  [[nodiscard]] double hidden_fraction() const {
    if (busy_ns == 0) return 0.0;
    const double hidden = static_cast<double>(busy_ns) - static_cast<double>(exposed_ns);
    return hidden <= 0 ? 0.0 : hidden / static_cast<double>(busy_ns);
  }
};

}  // namespace pmlab::mem
