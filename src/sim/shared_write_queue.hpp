// The memory controller's write queue shared by every core, booked by time, not arrival order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pmlab::sim {

// Why not WriteQueue (a FIFO) with one instance for all cores: the simulator runs the cores in
// turns, so one core's clock may be far ahead of another's; a FIFO fed in simulation order would
// make the core that is behind wait for writes issued in another core's future. Here time is cut
// into slots of write_cycles, and each slot starts at most `units` writes (the NVM's write
// units). A write arriving at t starts at the beginning of the first slot at or after t with a
// unit free (or at t itself, inside its own slot), whichever core booked the other writes and in
// whatever order. It is accepted (durable, ADR) once a queue entry frees: the `entries` writes
// queued ahead of it drain in entries / units slots, so
//   accept = max(t, start - ceil(entries / units) * write_cycles).
// Throughput is therefore units per write_cycles for the whole machine, and a core writing a
// burst while the others compute has every unit, as one controller queue gives it (gem5).
// Slots live in a ring (kSlots of them); a slot older than the ring's span is forgotten.
class SharedWriteQueue {
 public:
  SharedWriteQueue(std::uint32_t entries, std::uint32_t units, std::uint64_t write_cycles)
      : units_(std::max<std::uint32_t>(1, units)),
        write_cycles_(std::max<std::uint64_t>(1, write_cycles)),
        lead_(((std::max<std::uint64_t>(1, entries) + units_ - 1) / units_) * write_cycles_) {}

  // Returns the acceptance time of a write arriving at `t`.
  std::uint64_t accept(std::uint64_t t) {
    if (slot_of_.empty()) {  // allocated on first use: machines in the per-core mode pay nothing
      slot_of_.assign(kSlots, kFree);
      used_.assign(kSlots, 0);
    }
    for (std::uint64_t slot = t / write_cycles_;; ++slot) {
      const std::size_t i = static_cast<std::size_t>(slot & (kSlots - 1));
      if (slot_of_[i] != slot) {
        // A newer slot holds the cell: this one is older than the ring's span; do not book it.
        if (slot_of_[i] != kFree && slot_of_[i] > slot) return t;
        slot_of_[i] = slot;
        used_[i] = 0;
      }
      if (used_[i] >= units_) continue;
      ++used_[i];
      const std::uint64_t start = std::max(t, slot * write_cycles_);
      return start > t + lead_ ? start - lead_ : t;
    }
  }
  // Power failure or stats reset: the queue is empty (ADR drained it to NVM).
  void reset() {
    std::fill(slot_of_.begin(), slot_of_.end(), kFree);
    std::fill(used_.begin(), used_.end(), 0);
  }

 private:
  static constexpr std::size_t kSlots = std::size_t{1} << 18;  // 157 M cycles at 600 per write
  static constexpr std::uint64_t kFree = ~std::uint64_t{0};
  std::uint32_t units_;
  std::uint64_t write_cycles_;
  std::uint64_t lead_;                  // how far ahead of its start a write is accepted
  std::vector<std::uint64_t> slot_of_;  // per ring cell: the slot it counts, or kFree
  std::vector<std::uint32_t> used_;     // writes starting in that slot
};

}  // namespace pmlab::sim
