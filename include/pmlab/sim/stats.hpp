// Simulator statistics: a value snapshot of counters, serialisable to JSON (docs/simulator.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/sim/row_buffer.hpp"

namespace pmlab::sim {

// Why a line was written to NVM.
enum class WriteCause : std::uint8_t {
  kEviction,  // dirty line evicted from the LLC (or back-invalidated with it)
  kFlush,     // clflush / clflushopt / clwb of a line dirty somewhere
  kPeriodic,  // periodic cache cleaning (LP §III-E hardware, SimParams::periodic_flush_cycles)
  kDrain,     // explicit end-of-run drain, via Machine::write_back_all
  // A write-combining buffer of non-temporal stores (SimParams::nt_stores).
  kNonTemporal,
  // Seed 004's epoch engine (hardware persist barriers only): a line written by an epoch flush
  // the core waited for (a conflict, capacity, an older epoch of a victim), or by a proactive
  // flush of a completed epoch (PF, off the critical path). Victims stay kEviction.
  kEpochOnline,
  kEpochProactive,
};
inline constexpr std::size_t kWriteCauseCount = 7;
// Causes 0..kWriteCauseCountOff-1 exist in every mode; the epoch causes only with a hardware
// barrier, so the JSON and text reports show them only then (existing outputs unchanged).
inline constexpr std::size_t kWriteCauseCountOff = 5;
[[nodiscard]] std::string_view to_string(WriteCause c);

struct LevelStats {
  std::string name;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;        // valid lines displaced by a fill
  std::uint64_t dirty_evictions = 0;  // of those, dirty ones (written to the level below / NVM)

  [[nodiscard]] std::uint64_t accesses() const { return hits + misses; }
  [[nodiscard]] double miss_rate() const {
    return accesses() == 0 ? 0.0 : static_cast<double>(misses) / static_cast<double>(accesses());
  }
};

struct NvmStats {
  std::uint64_t reads = 0;   // line reads (LLC misses)
  std::uint64_t writes = 0;  // line writes, = sum of writes_by_cause
  std::array<std::uint64_t, kWriteCauseCount> writes_by_cause{};
  std::uint64_t write_queue_stall_cycles = 0;  // core cycles lost to a full write queue
  std::optional<RowBufferStats> row_buffer;    // only when the row-buffer model is on
  // Lines in ranges marked volatile (DRAM, e.g. gemm --pack-mem dram): their LLC misses and
  // write-backs, kept out of reads/writes and the row buffer. Reported only when nonzero.
  std::uint64_t dram_reads = 0;
  std::uint64_t dram_writes = 0;

  [[nodiscard]] std::uint64_t writes_for(WriteCause c) const {
    return writes_by_cause[static_cast<std::size_t>(c)];
  }
};

struct CoherenceStats {
  std::uint64_t upgrades = 0;            // store to a shared line: other copies invalidated
  std::uint64_t interventions = 0;       // a remote exclusive copy was downgraded or taken
  std::uint64_t invalidations = 0;       // private copies invalidated by another core's store
  std::uint64_t back_invalidations = 0;  // private copies invalidated by an LLC eviction
};

// Volatility duration (LP §VI): how long a line stays dirty in the hierarchy, from the store
// that makes it newer than NVM to the write (eviction, flush, periodic cleaning, drain) that
// brings it there. Cycles of the clocks involved; a stretch that ends in a power failure counts
// in neither part.
struct VolatilityStats {
  std::uint64_t episodes = 0;         // dirty stretches that ended with an NVM write
  std::uint64_t max_cycles = 0;       // the longest of them
  std::uint64_t total_cycles = 0;     // their sum (for the mean)
  std::uint64_t open_lines = 0;       // lines still dirty at the snapshot
  std::uint64_t open_max_cycles = 0;  // the oldest of those, aged to the snapshot's cycles

  [[nodiscard]] double mean_cycles() const {
    return episodes == 0 ? 0.0 : static_cast<double>(total_cycles) / static_cast<double>(episodes);
  }
};

// PreFlush (thesis Ch. 5) counters, summed over cores; present only when it is on. Its NVM
// writes also count under nvm_writes_by_cause.flush (they are hardware-issued flushes).
struct PreflushStats {
  std::uint64_t issued = 0;               // PreFlushes started by a predicted last store
  std::uint64_t nvm_writes = 0;           // of those, lines that were dirty (one NVM write each)
  std::uint64_t correct = 0;              // real flushes ACKed early (FlushedTags hits)
  std::uint64_t mispredicted_store = 0;   // own store to a PreFlushed line (entry dropped)
  std::uint64_t nacked = 0;               // another core's store to a PreFlushed line (§5.3.7)
  std::uint64_t tag_evictions = 0;        // FlushedTags entries pushed out (FIFO) unused
  std::uint64_t marks_lost = 0;           // l1_marks: marks lost unused with an evicted L1 line
  std::uint64_t uncovered_flushes = 0;    // real flushes without a FlushedTags hit
  std::uint64_t signatures_inserted = 0;  // new signatures (a flush of a sampled line)
  // The directory's PreFlushers table (PreflushParams::dir_entries per core): entries pushed
  // out, and the PreFlushes those evictions had to NACK at once (lost early ACKs).
  std::uint64_t dir_evictions = 0;
  std::uint64_t dir_back_invalidations = 0;
  std::uint64_t dir_occupancy_max = 0;
  // Early ACKs whose line's durable bytes differed from its live bytes: 0 unless a negative
  // control (PreflushParams::own_store_check / nack off) broke transparency.
  std::uint64_t transparency_violations = 0;
  std::uint64_t storage_bytes_per_core = 0;
};

// The stream prefetcher's counters (SimParams::prefetch), summed over cores; present only when
// it is on. Its reads also count in nvm_reads and in the LLC's hits and misses.
struct PrefetchStats {
  std::uint64_t issued = 0;   // prefetches sent (the line was in no private cache of the core)
  std::uint64_t used = 0;     // demand accesses to a prefetched line not used before
  std::uint64_t late = 0;     // of those, the ones that waited for the prefetch (merged)
  std::uint64_t useless = 0;  // prefetched lines that left the L1 unused
  std::uint64_t dropped = 0;  // prefetches not sent: every MSHR busy (interval core)
  std::uint64_t streams = 0;  // streams allocated
};

// Why an epoch was flushed (seed 004, Fig. 12): it left naturally (all its lines evicted or
// still written at drain without any forced flush), or a request forced it.
enum class EpochCause : std::uint8_t {
  kNatural,      // its lines left by plain evictions; nothing forced it
  kIntra,        // the core stored to a line of one of its older epochs (Fig. 3b)
  kInterRaw,     // another core read one of its lines (Fig. 3a/4a; LB, or IDT overflow)
  kInterWaw,     // another core wrote one of its lines
  kReplacement,  // a younger epoch's line was evicted from the LLC
  kCapacity,     // a barrier found max_inflight epochs unpersisted
  kProactive,    // PF: flushed once completed, off the critical path
  kDrain,        // the end-of-run write-back
};
inline constexpr std::size_t kEpochCauseCount = 8;
[[nodiscard]] std::string_view to_string(EpochCause c);

// The epoch engine's counters, present only under a hardware barrier (lb, lb-idt, lb-pf, lb++).
struct EpochStats {
  std::uint64_t barriers = 0;       // program persist barriers
  std::uint64_t epochs = 0;         // epochs persisted (program epochs and split halves)
  std::uint64_t splits = 0;         // hardware-inserted epoch boundaries (Fig. 5b)
  std::uint64_t idt_deps = 0;       // dependences recorded instead of online flushes
  std::uint64_t idt_overflows = 0;  // dependences that found the registers full (LB fallback)
  std::uint64_t bsp_barriers = 0;   // BSP bulk mode: hardware epoch ends every N stores
  std::uint64_t log_writes = 0;     // BSP bulk mode with bsp_log: NVM log-entry writes
  std::uint64_t write_through = 0;  // naive write-through BSP: stores written through
  std::array<std::uint64_t, kEpochCauseCount> flushed_by{};    // persisted epochs by cause
  std::array<std::uint64_t, kEpochCauseCount> stall_cycles{};  // online waits by cause

  // Fig. 12: epochs flushed because a memory request needed it (intra, inter, replacement);
  // capacity is reported apart (the seed does not say whether it counts).
  [[nodiscard]] std::uint64_t conflicting() const;
  [[nodiscard]] double conflict_pct() const;
  [[nodiscard]] std::uint64_t stall_total() const;
};

// Seed 002's helper core (SimBackend::helper_flush_async), present only when a scheme used it.
// busy: cycles the helper spent on its ops; exposed: cycles the main thread waited for it at a
// flush_barrier. overlap = 1 - exposed / busy is the share of the flush cost hidden from the
// main thread (the paper's Fig. 13).
struct HelperStats {
  int core = 0;                       // the simulated core whose caches the helper uses
  std::uint64_t requests = 0;         // flush_async and copy_async calls
  std::uint64_t flush_ops = 0;        // per-line flushes the helper issued
  std::uint64_t copy_requests = 0;    // copy_async calls (cp-nt-async)
  std::uint64_t copy_ops = 0;         // destination lines the helper copied
  std::uint64_t wbinvd_ops = 0;       // WBINVD stretches (one op each)
  std::uint64_t wbinvd_requests = 0;  // requests written back by WBINVD (the 10 x LLC rule)
  std::uint64_t fences = 0;
  std::uint64_t barriers = 0;  // flush_barrier calls
  std::uint64_t busy_cycles = 0;
  std::uint64_t exposed_cycles = 0;
  [[nodiscard]] double overlap() const {
    return busy_cycles == 0
               ? 0.0
               : 1.0 - static_cast<double>(exposed_cycles) / static_cast<double>(busy_cycles);
  }
};

// Seed 002's DRAM cache in front of NVM (SimParams::dram_cache), present only when it is on.
struct DramCacheStats {
  std::uint64_t objects = 0;          // objects placed
  std::uint64_t refused_objects = 0;  // objects that did not fit whole (left in NVM)
  std::uint64_t placed_bytes = 0;     // whole lines
  std::uint64_t hits = 0;             // LLC misses served from DRAM instead of NVM
  std::uint64_t absorbed_writes = 0;  // write-backs that stayed in DRAM (not durable)
  std::uint64_t flushes = 0;          // dram_cache_flush calls
  std::uint64_t flushed_lines = 0;    // dirty lines they wrote to NVM
  std::uint64_t lost_lines = 0;       // dirty lines a power failure lost
  std::uint64_t dirty_lines = 0;      // dirty (not durable) now
};

struct SimStats {
  Cycles cycles{0};                 // max over cores of the per-core clocks
  std::vector<Cycles> core_cycles;  // per simulated core
  std::uint64_t loads = 0;
  std::uint64_t stores = 0;
  std::uint64_t flushes = 0;        // flush instructions executed (one per line)
  std::uint64_t dirty_flushes = 0;  // flushes that caused an NVM write
  std::uint64_t fences = 0;
  std::uint64_t fence_stall_cycles = 0;  // cycles sfence waited for outstanding flushes
  std::uint64_t filtered_accesses = 0;   // served by the same-line filter (counted as L1 hits)
  // Interval core model only (0 with the memory model): instructions dispatched, and cycles
  // dispatch waited for a full reorder buffer or for a free MSHR.
  std::uint64_t instructions = 0;
  std::uint64_t rob_stall_cycles = 0;
  std::uint64_t mshr_stall_cycles = 0;
  std::uint64_t mshr_full_events = 0;  // misses and flushes that found every MSHR busy
  // Store queue (CoreParams::store_queue): dispatch waited for a free entry, cycles and times
  // (the LP paper's Table VI "FUW" for EagerRecompute).
  std::uint64_t sq_full_stall_cycles = 0;
  std::uint64_t sq_full_events = 0;
  std::vector<LevelStats> levels;  // L1 (summed over cores), [L2], LLC
  NvmStats nvm;
  CoherenceStats coherence;
  VolatilityStats volatility;
  std::optional<PreflushStats> preflush;     // set when SimParams::preflush.enabled
  std::optional<PrefetchStats> prefetch;     // set when SimParams::prefetch is on
  std::optional<EpochStats> epochs;          // set under a hardware persist barrier (lb*)
  std::optional<HelperStats> helper;         // set when a scheme used seed 002's helper core
  std::optional<DramCacheStats> dram_cache;  // set when SimParams::dram_cache.enabled

  [[nodiscard]] std::uint64_t accesses() const { return loads + stores; }
  [[nodiscard]] const LevelStats& l1() const { return levels.front(); }
  [[nodiscard]] const LevelStats& llc() const { return levels.back(); }
};

// Keys: docs/simulator.md "JSON statistics". Callers include <nlohmann/json.hpp> to use it.
[[nodiscard]] nlohmann::json to_json(const SimStats& s);

}  // namespace pmlab::sim
