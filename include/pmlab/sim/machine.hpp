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
  bool in_l1 = false;      // in the given core's L1
  bool in_l2 = false;      // in the given core's private L2 (false without one)
  bool in_llc = false;     // in the shared LLC
  bool dirty = false;      // dirty in any cache of any core (one NVM write to clean it)
  int private_copies = 0;  // cores whose private caches hold the line
};

class Hierarchy;  // src/sim/hierarchy.hpp

namespace detail {
// Filter entry: (line << 1) | dirty; kNoEntry never matches a line (lines are < 2^58).
inline constexpr std::uint64_t kNoEntry = std::numeric_limits<std::uint64_t>::max();
// A time no clock reaches: the periodic-cleaning deadline when it is off.
inline constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
// Per-core state touched on every access; one cache line per core so cores never share one.
struct alignas(64) CoreState {
  std::uint64_t* filter = nullptr;  // per L1 set (or one entry): the set's last-accessed line
  std::uint64_t filter_mask = 0;
  std::uint64_t clock = 0;  // core-local time in cycles
  // Periodic cleaning: when the next LLC set is due (kNever when off). Checked after every op
  // except loads that hit L1: those neither see nor change dirtiness, so the cleaning can wait
  // for the core's next store, miss, flush, fence or barrier without any observable difference
  // (and the filtered load path, the hottest, stays as it was).
  std::uint64_t deadline = kNever;
  std::uint64_t filtered = 0;  // accesses the filter served
  std::uint64_t filtered_stores = 0;
  std::uint64_t flush_done = 0;  // completion time of the latest outstanding flush
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

  // The filter generalises "same line as last access" to one entry per L1 set: the line this
  // core accessed last in that set (with non-power-of-two set counts, a single entry, i.e.
  // exactly "same line as last access"). It is exact. Under LRU that line is its set's MRU
  // way, and re-touching the MRU way leaves the set's recency order unchanged, so future
  // hits, misses and victims are identical. Anything else that touches the set replaces the
  // entry, and every removal, downgrade or cleaning of the line by another core, a flush or
  // an LLC back-invalidation clears it. Random replacement keeps no hit state. SRRIP sets
  // RRPV 0 on a hit, so only hits (not fills) create entries. A load needs no coherence
  // action on an L1 hit; a store needs none only when the line is already dirty, which the
  // entry's low bit records.
  void load(int core, LineAddr line) {
    detail::CoreState& c = cores_[core];
    if ((c.filter[line.value() & c.filter_mask] >> 1) == line.value()) {
      ++c.filtered;
      c.clock += l1_latency_;  // an L1 load hit: no periodic-cleaning check (see deadline)
      return;
    }
    access_slow(core, line, false);
  }
  void store(int core, LineAddr line) {
    detail::CoreState& c = cores_[core];
    if (c.filter[line.value() & c.filter_mask] == ((line.value() << 1) | 1)) {
      ++c.filtered;
      ++c.filtered_stores;
      c.clock += l1_latency_;
      if (c.clock >= c.deadline) [[unlikely]]
        periodic_tick(core);
      return;
    }
    access_slow(core, line, true);
  }
  // Flush instruction `mode` (not kNone) on `line`: clflush/clflushopt invalidate everywhere,
  // clwb keeps a clean copy; a line dirty anywhere costs exactly one NVM write.
  void flush(int core, LineAddr line, FlushMode mode);
  // sfence: waits for this core's outstanding flushes to be accepted by the controller.
  void fence(int core);
  // Non-temporal store of bytes [off, off + size) of `line` (src/sim/nt_store.hpp).
  void store_nt(int core, LineAddr line, unsigned off, unsigned size);

  // Time across cores: fork copies one core's clock to all; join (a barrier) sets all to the max.
  // Between them `active_cores` cores run (0 = all), each with that share of the write queue.
  void fork_clocks(int from_core, int active_cores = 0);
  void join_clocks();

  // Writes every dirty line back (clean copies stay), counting each write under `cause`.
  void write_back_all(WriteCause cause);
  // From now on flushes and fences are ignored and periodic cleaning stops; the caller sends no
  // more accesses (SimBackend::stop_modelling). For finishing a run whose result is wanted but
  // whose cost is not (a crash trial after its last crash). One way.
  void stop_modelling();
  [[nodiscard]] bool modelling() const { return !functional_; }
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
  void periodic_tick(int core);  // out of line: runs once per LLC set per period

  std::unique_ptr<Hierarchy> impl_;
  detail::CoreState* cores_ = nullptr;  // owned by impl_ (heap, stable across moves)
  std::uint64_t l1_latency_ = 0;
  bool functional_ = false;  // stop_modelling() was called
};

}  // namespace pmlab::sim
