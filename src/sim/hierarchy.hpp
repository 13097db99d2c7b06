// The cache hierarchy: private L1 (+L2) per core, inclusive shared LLC with a directory, NVM.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache.hpp"
#include "dram_cache.hpp"
#include "epochs.hpp"
#include "nt_store.hpp"
#include "pmlab/sim/crash_image.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/row_buffer.hpp"
#include "pmlab/sim/stats.hpp"
#include "preflush.hpp"
#include "shared_write_queue.hpp"
#include "stream_prefetcher.hpp"
#include "timed_nvm.hpp"
#include "write_queue.hpp"

namespace pmlab::sim {

// The LLC is inclusive of every private cache, as in gem5 Ruby's MESI_Two_Level that both
// papers simulate: an LLC eviction back-invalidates private copies, so "not in the LLC"
// means "not cached anywhere" and the LLC directory finds every copy without a broadcast.
// SimParams::inclusive_llc = false (1 core only; cachegrind's policy) keeps private copies
// on an LLC eviction; flushes and write_back_all then also look in the private caches.
// Coherence is MESI-like: a private copy is Shared (clean, read-only) or Exclusive (E/M,
// possibly dirty). Data always lives in real memory, so the model tracks only placement and
// dirtiness; a line is "dirty" if any copy has kDirty, and cleaning it is one NVM write.
class Hierarchy {
 public:
  explicit Hierarchy(const SimParams& p);
  ~Hierarchy();
  // Machine::add_volatile / remove_volatile.
  void add_volatile(std::uint64_t first, std::uint64_t last) { volatile_.push_back({first, last}); }
  void remove_volatile(std::uint64_t first, std::uint64_t last) {
    std::erase(volatile_, std::pair{first, last});
  }
  // Seed 002's DRAM cache (SimParams::dram_cache; both do nothing when it is off), defined in
  // src/sim/dram_cache.cpp: places lines [first, last) as one object; writes the dirty resident
  // lines of [first, last) to NVM, `core` waiting flush_cycles_per_line per line.
  void dram_cache_place(std::uint64_t first, std::uint64_t last);
  void dram_cache_flush(int core, std::uint64_t first, std::uint64_t last);

  // `l1_slot`: the line's L1 slot or kNoSlot when the caller has searched, else kUnsearched.
  static constexpr std::size_t kUnsearched = kNoSlot - 1;
  // `pc`: the storing instruction (SimBackend's StorePc), used by PreFlush only.
  // A miss the caller found by searching L1 itself (Machine's inline L1 path, which exists only
  // without a hardware persist barrier), so the epoch engine's before-access rules are not asked.
  void access(int core, std::uint64_t line, bool is_store, std::size_t l1_slot,
              std::uint32_t pc = 0);
  // Any other access: the epoch engine (if any) sees it first, then access().
  void access_unsearched(int core, std::uint64_t line, bool is_store, std::uint32_t pc = 0);
  // A load Machine's inline L1 path found missing: access(core, line, false, kNoSlot), through
  // lean_load_miss when it applies. Defined in hierarchy_hot.hpp, so that the caller
  // (Machine::load_miss) inlines the lean miss.
  [[gnu::always_inline]] inline void load_miss(int core, std::uint64_t line);
  void flush(int core, std::uint64_t line, FlushMode mode);
  void fence(int core);
  // Seed 004: a persist barrier under a hardware barrier mode (the epoch engine).
  void epoch_barrier(int core, bool bsp);
  void epoch_write_through(int core, std::uint64_t line);  // Machine::write_through
  // Non-temporal store of bytes [off, off + size) of `line` (SimParams::nt_stores).
  void store_nt(int core, std::uint64_t line, unsigned off, unsigned size);
  void fork_clocks(int from, int active_cores);
  void join_clocks();
  void write_back_all(WriteCause cause);
  // Seed 002's WBINVD, one stretch of LLC slots [lo, hi) at a time (src/sim/helper_core.cpp
  // runs one stretch per helper op): every line there is written back if dirty and invalidated
  // everywhere; `last` also covers a non-inclusive LLC's private-only lines.
  void wbinvd(int core, std::size_t lo, std::size_t hi, bool last);
  [[nodiscard]] std::size_t llc_slots() const { return llc_.slots(); }
  void power_fail();
  void reset_stats();
  // Periodic cleaning: cleans every LLC set whose due time `core`'s clock has reached.
  void periodic_tick(int core);
  void stop_modelling();  // Machine::stop_modelling: no more periodic cleaning
  // Interval model (CoreModel::kInterval): dispatch has reached the reorder-buffer limit.
  void rob_stall(int core);

  [[nodiscard]] LineState probe(int core, std::uint64_t line) const;
  [[nodiscard]] SimStats stats() const;
  [[nodiscard]] CrashImage& image() { return image_; }
  [[nodiscard]] const SimParams& params() const { return params_; }
  [[nodiscard]] bool interval() const { return interval_; }
  // How pending CoreState::insts become cycles: the issue width (interval model), or 1 (memory
  // model, whose inline path counts L1-hit cycles there: Machine::served_load).
  [[nodiscard]] const detail::IssueWidth& dispatch_width() const { return issue_; }
  [[nodiscard]] detail::CoreState* core_states() { return cores_.data(); }

 private:
  friend class EpochEngine;
  // An epoch flush writes back the line in LLC slot `slot` (clean copies stay, or with
  // invalidating_epoch_flush every copy goes) arriving at `t`; returns its acceptance time.
  std::uint64_t epoch_write_line(std::size_t slot, std::uint64_t t, int core, WriteCause cause);
  // A new epoch on `core`: stores to lines it holds dirty must reach the conflict check again.
  void clear_filter_dirty(int core);

  // Interval model, per core: the loads still able to block retirement (a ring in dispatch
  // order: instruction count at dispatch, in-order retirement time) and the MSHRs (completion
  // time of the miss or flush each holds; free once the clock has passed it).
  struct RobEntry {
    std::uint64_t inst;
    std::uint64_t retire;
  };
  // Cache-line aligned: its size (128 bytes) is then a power of two and indexing a shift.
  struct alignas(64) IntervalCore {
    std::vector<RobEntry> ring;  // power-of-two capacity >= rob_entries
    std::size_t ring_mask = 0;   // its capacity - 1
    std::size_t head = 0, count = 0;
    std::uint64_t last_retire = 0;
    // One entry per MSHR and a last one always 0 (free at any clock), which ends
    // acquire_mshr's scan without a bound check: `mshrs` entries are the MSHRs.
    std::vector<std::uint64_t> mshr;
    std::size_t mshrs = 0;
    // The line each MSHR's store miss is filling (kNoFill: a load, a flush or free); kept and
    // read only under CoreParams::flush_after_fill, so the default access path does not pay.
    std::vector<std::uint64_t> fill_line;
    // The store queue (CoreParams::store_queue): completion times of the entries in program
    // order, a ring of sq_entries; and the latest completion of any entry (what sfence and,
    // under TSO, the next entry wait for).
    std::vector<std::uint64_t> sq;
    std::size_t sq_head = 0, sq_count = 0;
    std::uint64_t sq_last_done = 0;
  };
  static constexpr std::uint64_t kNoFill = ~std::uint64_t{0};
  // Dispatches `insts` more instructions of `core`, with any the inline path left pending
  // (CoreState::dispatched_insts), and stalls if the reorder buffer is then full. Inlined: the
  // miss paths dispatch every access through it.
  [[gnu::always_inline]] inline void dispatch(int core, std::uint64_t insts);
  // A miss (or an upgrade) of `lat` cycles dispatched now: takes an MSHR (stalling while all
  // are busy) and, for a load, a place in the retirement order.
  // Always inlined: on a stream of misses its call and reloads were a third of its cost.
  [[gnu::always_inline]] inline void long_latency(int core, std::uint64_t lat, bool load,
                                                  std::uint64_t line);
  // The time a flush of `line` issued at `t` may start: after this core's outstanding store
  // miss on that line, if any (CoreParams::flush_after_fill).
  [[nodiscard]] std::uint64_t after_fill(int core, std::uint64_t line, std::uint64_t t) const;
  [[gnu::always_inline]] inline std::size_t acquire_mshr(int core);
  // Store queue: waits (stalling dispatch) for a free entry, then returns when an operation
  // ready at `t` is sent (under TSO after the previous entry completes); sq_push records its
  // completion.
  std::uint64_t sq_send(int core, std::uint64_t t);
  void sq_push(int core, std::uint64_t done);
  // When everything the core has issued is complete (the clock a barrier waits for).
  [[nodiscard]] std::uint64_t drained(int core) const;
  void reset_interval();  // forgets outstanding operations (barrier, power failure, reset)

  enum class Strip { kInvalidate, kDowngrade, kClean };

  // The commonest miss, specialised (the general path's mode branches and vector lookups cost
  // ~340 instructions per miss): a load, one private level, LRU everywhere, hashed lookups, no
  // optional mechanism, and the line in the LLC without another core's exclusive copy. Does
  // exactly what access() does in that case, statistic for statistic; returns false, having
  // changed nothing, when the case does not apply.
  [[gnu::always_inline]] inline bool lean_load_miss(int core, std::uint64_t line);
  bool lean_misses_ = false;  // the machine qualifies (constructor)
  // Its view of the caches (stable: no vector reallocates after the constructor).
  struct LeanCore {
    Cache::Raw l1;
    LevelStats* stats;
  };
  Cache::Raw lean_llc_{};
  std::vector<LeanCore> lean_core_;

  [[nodiscard]] Cache& priv(int core, int level) {
    return private_[static_cast<std::size_t>(core * npriv_ + level)];
  }
  [[nodiscard]] const Cache& priv(int core, int level) const {
    return private_[static_cast<std::size_t>(core * npriv_ + level)];
  }
  [[nodiscard]] std::uint64_t& filter_entry(int core, std::uint64_t line) {
    const detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
    return cs.filter[line & cs.filter_mask];
  }
  void forget_filter(int core, std::uint64_t line) {
    std::uint64_t& e = filter_entry(core, line);
    if ((e >> 1) == line) e = detail::kNoEntry;
  }
  bool strip_private(int core, std::uint64_t line, Strip how);
  // The miss path (fetch, fill, evict) is inlined into access(): one call per miss, not four.
  [[gnu::always_inline]] inline std::uint8_t fetch_from_llc(int core, std::uint64_t line,
                                                            bool is_store, std::uint64_t& lat,
                                                            std::size_t& llc_slot);
  [[gnu::always_inline]] inline std::size_t fill_private_levels(int core, std::uint64_t line,
                                                                bool is_store, bool in_l2,
                                                                std::uint8_t& st,
                                                                std::uint64_t& lat);
  std::uint64_t upgrade(int core, std::uint64_t line);
  [[gnu::always_inline]] inline std::size_t fill_private(int core, int level, std::uint64_t line,
                                                         std::uint8_t state);
  [[gnu::always_inline]] inline void evict_private(int core, int level,
                                                   std::size_t slot);  // for fill_private only
  void evict_llc(std::size_t slot, int core);
  // A flush's completion: it reaches the directory at t + LLC latency; a dirty line is then
  // written (counted under `cause`); with SimParams::flush_mc_hop the ACK comes back from the
  // controller (thesis §2.3.2). `cached`: the LLC holds the line (its state decides the home
  // agent's extra step, SimParams::home_agent).
  std::uint64_t flush_round_trip(std::uint64_t line, std::uint64_t t, bool dirty, bool cached,
                                 int core, std::uint64_t since);
  // PreFlush: the store just completed; asks the core's predictor and may PreFlush the line.
  void preflush_store(int core, std::uint64_t line, std::size_t l1_slot, std::uint32_t pc,
                      bool reached_directory);
  // Takes `line` out of every cache (the LLC and every private copy) without writing it;
  // returns whether a copy was dirty, and sets `since` to when it became so (kNever: unknown).
  bool remove_everywhere(std::uint64_t line, std::uint64_t& since);
  // A clflushopt ACKed early by an L1 mark: removes the (clean) line from every cache.
  void drop_clean_line(std::uint64_t line);
  // PreflushParams::l1_marks: `core`'s L1 lost `line` (and any PreFlush mark on it), evicted or
  // `invalidated`.
  void l1_line_left(int core, std::uint64_t line, bool invalidated) {
    if (pf_marks_) [[unlikely]]
      pf_[static_cast<std::size_t>(core)].line_left(line, invalidated);
  }
  // Stream prefetcher (SimParams::prefetch; hierarchy.cpp, "Stream prefetcher"). A demand access
  // found `core`'s L1 slot `s1` hidden: the prefetched line's first use; returns when its
  // prefetch completes (what the access waits for).
  std::uint64_t prefetch_use(int core, std::size_t s1);
  // The lines `r` asks for, each sent at `t` unless already in the core's private caches.
  void prefetch_issue(int core, const StreamPrefetcher::Requests& r, std::uint64_t t);
  void prefetch_line(int core, std::uint64_t line, std::uint64_t t);
  // `c`'s slot `s` is about to lose its line: an unused prefetched line counts as useless.
  void prefetch_left(const Cache& c, std::size_t s) {
    if (c.hidden(s)) [[unlikely]]
      ++pfs_.useless;
  }
  void write_back_victim(std::uint64_t line, int core, std::uint64_t since);
  // `since`: when the line became dirty (volatility duration), kNever if unknown.
  std::uint64_t nvm_write(std::uint64_t line, WriteCause cause, std::uint64_t t, int core,
                          std::uint64_t since);

  // Periodic cleaning (SimParams::periodic_flush_cycles = T over S LLC sets): set s is due at
  // p·T + (s+1)·T/S in period p = 0, 1, ...
  [[nodiscard]] std::uint64_t sweep_due() const;
  void clean_set(std::uint64_t set, std::uint64_t t, int core);
  void restart_sweep();  // clocks are back at 0
  void set_deadlines();

  // Volatility: a dirty stretch opens at the store that dirties a clean line and closes at its
  // NVM write. The stamp lives with the LLC copy; a non-inclusive LLC's private-only lines use
  // the map.
  void open_episode(int core, std::uint64_t line, std::size_t l1_slot, std::uint64_t t);
  std::uint64_t take_since(std::size_t llc_slot, std::uint64_t line);

  SimParams params_;
  int npriv_;
  std::vector<Cache> private_;  // core-major: core c's level l at c * npriv_ + l
  Cache llc_;
  std::vector<detail::CoreState> cores_;
  std::vector<std::uint64_t> filter_;   // cores x entries, see Machine::load
  std::vector<std::uint32_t> l1_hint_;  // cores x hints, see CoreState::l1_hint
  bool filter_on_hit_only_;             // SRRIP: a fill is not yet at RRPV 0
  std::vector<WriteQueue> wq_;  // per core, each with 1/share_ of the controller (write_queue.hpp)
  std::uint32_t share_ = 1;     // cores running a parallel loop (1 outside loops)
  SharedWriteQueue shared_wq_;  // used instead under WriteQueueModel::kShared
  bool shared_queue_;
  // The time the controller accepts a write `core` sends at `t`, by the machine's queue model.
  std::uint64_t queue_write(int core, std::uint64_t t) {
    return shared_queue_ ? shared_wq_.accept(t)
                         : wq_[static_cast<std::size_t>(core)].accept(t, share_);
  }
  std::optional<TimedNvm> timed_;  // WriteQueueModel::kBanks: reads and writes timed by bank
  CrashImage image_;
  WcBuffers wc_;  // non-temporal stores' write-combining buffers
  std::uint64_t nvm_read_cycles_;
  std::uint64_t flush_issue_;
  std::uint64_t fence_latency_;
  bool interval_;
  bool flush_after_fill_;  // CoreParams::flush_after_fill (interval model only)
  bool sq_;                // CoreParams::store_queue (interval model only)
  bool sq_tso_;
  std::uint64_t sq_full_stall_ = 0, sq_full_events_ = 0, mshr_full_events_ = 0;
  std::uint64_t l1_latency_, rob_entries_;
  detail::IssueWidth issue_;  // dispatch_width(), with its shift (detail::dispatch_pending)
  std::vector<IntervalCore> icore_;
  std::uint64_t rob_stall_ = 0, mshr_stall_ = 0;

  std::uint64_t period_ = 0;  // T; 0 = no periodic cleaning
  std::uint64_t sweep_set_ = 0, sweep_period_ = 0, next_due_ = detail::kNever;
  std::vector<std::uint64_t> since_;  // per LLC slot: when its line became dirty, or kNever
  std::unordered_map<std::uint64_t, std::uint64_t> private_since_;
  VolatilityStats vol_;

  std::uint64_t loads_ = 0, stores_ = 0, flushes_ = 0, dirty_flushes_ = 0, fences_ = 0;
  std::uint64_t fence_stall_ = 0;
  NvmStats nvm_;
  RowBufferModel rb_;  // fed only when params_.nvm.row_buffer.enabled
  // Volatile (DRAM) line ranges [first, last): outside the NVM statistics and the crash image.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> volatile_;
  [[nodiscard]] bool is_volatile(std::uint64_t line) const {
    for (const auto& [lo, hi] : volatile_)
      if (line >= lo && line < hi) return true;
    return false;
  }
  std::optional<DramCache> dram_;  // seed 002's DRAM cache, only when on
  CoherenceStats coh_;
  std::vector<Preflusher> pf_;
  PreflushDirectory pf_dir_{0};  // the directory's PreFlushers table (PreFlush on only)
  bool pf_marks_ = false;        // PreFlush on with l1_marks: no table, marks on L1 lines
  std::uint64_t pf_writes_ = 0,
                pf_violations_ = 0;      // per core when SimParams::preflush.enabled, else empty
  std::unique_ptr<EpochEngine> epochs_;  // only under a hardware persist barrier (lb*)
  // Stream prefetcher: one per core (empty when off); per L1 slot (core-major) when the
  // prefetch that filled it completes, meaningful while the slot is hidden (Cache::hide).
  std::vector<StreamPrefetcher> spf_;
  std::vector<std::uint64_t> pf_ready_;
  PrefetchStats pfs_;
  bool prefetch_ = false;
};

}  // namespace pmlab::sim
