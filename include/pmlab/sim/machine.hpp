// The simulated machine: cores, private caches, inclusive shared LLC, ADR write queue, NVM.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/sim/crash_image.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"

namespace pmlab::sim {

// What a flush instruction does; kNone makes flush/fence no-ops (persistence off).
enum class FlushMode : std::uint8_t { kNone, kClflush, kClflushopt, kClwb };
[[nodiscard]] std::string_view to_string(FlushMode m);
[[nodiscard]] FlushMode flush_mode_from_string(std::string_view s);  // throws pmlab::Error

// Where a line currently lives, for tests and tools.
struct LineState {
  bool in_l1 = false;       // in the given core's L1
  bool in_l2 = false;       // in the given core's private L2 (false without one)
  bool in_llc = false;      // in the shared LLC
  bool dirty = false;       // dirty in any cache of any core (one NVM write to clean it)
  int private_copies = 0;   // cores whose private caches hold the line
};

class Hierarchy;  // src/sim/hierarchy.hpp

namespace detail {
inline constexpr std::uint64_t kNoLine = std::numeric_limits<std::uint64_t>::max();
// Per-core state touched on every access; one cache line per core so cores never share one.
struct alignas(64) CoreState {
  std::uint64_t last_line = kNoLine;  // same-line filter: L1 holds it and it is MRU
  bool last_dirty = false;            // ... and it is dirty in L1 (a store changes nothing)
  std::uint64_t clock = 0;            // core-local time in cycles
  std::uint64_t filtered = 0;         // accesses the filter served
  std::uint64_t filtered_stores = 0;
  std::uint64_t flush_done = 0;       // completion time of the latest outstanding flush
};
}  // namespace detail

// The model. Every method takes the simulated core that issues the operation.
// The hot path (load/store hitting the filter) is inline; everything else is in src/sim/.
class Machine {
 public:
  explicit Machine(SimParams params);  // validates params
  ~Machine();
  Machine(Machine&&) noexcept;
  Machine& operator=(Machine&&) noexcept;
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  // The filter is exact: if this core's previous access was to the same line, the line is in
  // its L1 (anything that removed or downgraded it since also cleared the filter) and is
  // already the most recently used way of its set. Re-touching it changes no LRU order (the
  // set's relative order is unchanged), no SRRIP state (RRPV already 0) and no random state,
  // and a load needs no coherence action; a store needs none when the line is already dirty.
  // So skipping the lookup yields identical future hits, misses and victims.
  void load(int core, LineAddr line) {
    detail::CoreState& c = cores_[core];
    if (c.last_line == line.value()) {
      ++c.filtered;
      c.clock += l1_latency_;
      return;
    }
    access_slow(core, line, false);
  }
  void store(int core, LineAddr line) {
    detail::CoreState& c = cores_[core];
    if (c.last_line == line.value() && c.last_dirty) {
      ++c.filtered;
      ++c.filtered_stores;
      c.clock += l1_latency_;
      return;
    }
    access_slow(core, line, true);
  }
  // Flush instruction `mode` (not kNone) on `line`: clflush/clflushopt invalidate everywhere,
  // clwb keeps a clean copy; a line dirty anywhere costs exactly one NVM write.
  void flush(int core, LineAddr line, FlushMode mode);
  // sfence: waits for this core's outstanding flushes to be accepted by the controller.
  void fence(int core);

  // Time across cores: fork copies one core's clock to all; join (a barrier) sets all to the max.
  void fork_clocks(int from_core);
  void join_clocks();

  // Writes every dirty line back (clean copies stay), counting each write under `cause`.
  void write_back_all(WriteCause cause);
  // Power failure: caches and write queue empty without any write-back (ADR: lines already
  // accepted by the controller are in the image). Stats and clocks are kept.
  void power_fail();
  void reset_stats();

  [[nodiscard]] CrashImage& image();
  [[nodiscard]] const CrashImage& image() const;
  [[nodiscard]] const SimParams& params() const;
  [[nodiscard]] int cores() const;
  [[nodiscard]] LineState probe(int core, LineAddr line) const;
  [[nodiscard]] Cycles clock(int core) const { return Cycles(cores_[core].clock); }
  [[nodiscard]] SimStats stats() const;

 private:
  void access_slow(int core, LineAddr line, bool is_store);

  std::unique_ptr<Hierarchy> impl_;
  detail::CoreState* cores_ = nullptr;  // owned by impl_ (heap, stable across moves)
  std::uint64_t l1_latency_ = 0;
};

}  // namespace pmlab::sim
