// The simulated machine: cores, private caches, inclusive shared LLC, ADR write queue, NVM.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <memory>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/sim/crash_image.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"
#include "pmlab/sim/tag_hash.hpp"

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
  // Seed 004, hardware barriers: the (core, epoch) tag of the line's unpersisted data, or -1.
  int epoch_core = -1;
  std::uint64_t epoch_seq = 0;
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
  // Interval core model (CoreModel::kInterval): instructions issued (some may still be
  // pending: see dispatched_insts), dispatch slots used in the current cycle, and the
  // instruction count at which the oldest incomplete load fills the reorder buffer (kNever when
  // none is outstanding). Memory model: insts counts the inline path's L1-hit cycles, dispatched
  // one per cycle; slot stays 0 and rob_limit kNever (Machine::served_load).
  std::uint64_t insts = 0;
  std::uint64_t slot = 0;
  std::uint64_t rob_limit = kNever;
  // Lazy dispatch (both core models): an access served inline (Machine::load/store) adds its
  // instructions to insts only. clock and slot include the dispatch of the instructions up to
  // dispatched_insts; the rest is added (dispatch_pending) when the core's clock is next needed:
  // its next miss, which adds its own dispatch in the same step, or any other operation. Exact,
  // because every access adds the same amount to insts and to clock * issue_width + slot. The
  // inline path stops for the reorder buffer (insts >= rob_limit) and, on a store, for the
  // periodic-cleaning deadline: deadline_stop is the insts at which clock would reach it
  // (kNever when cleaning is off). docs/simulator.md, "Speed".
  std::uint64_t dispatched_insts = 0;
  std::uint64_t deadline_stop = kNever;
  // L1 hit fast path (Machine::load/store), set up when the L1 is LRU with a power-of-two set
  // count (every preset): the L1's flat arrays, its LRU clock, and hits counted here.
  const std::uint64_t* l1_tags = nullptr;  // nullptr: no fast path
  const std::uint8_t* l1_state = nullptr;
  const std::uint8_t* l1_hash = nullptr;  // the L1's tag hashes; nullptr: compare every tag
  std::uint64_t* l1_stamp = nullptr;
  std::uint64_t* l1_now = nullptr;
  std::uint64_t l1_set_mask = 0;
  std::uint64_t l1_ways = 0;
  std::uint64_t l1_hits = 0;  // accesses the fast path served (all L1 hits)
  std::uint64_t l1_hit_stores = 0;
  // Way hints (with the fast path): per line & l1_hint_mask, the L1 slot where the line was last
  // found or filled. Only a guess, confirmed by that slot's tag (a line is in at most one slot),
  // so a stale or aliased hint costs the full lookup, never a wrong answer: 5 instructions per
  // L1 hit outside the filter instead of ~21 for the hashed set lookup.
  std::uint32_t* l1_hint = nullptr;
  std::uint64_t l1_hint_mask = 0;
  // The presets' case, tested once per access instead of four settings: an L1 fast path
  // (l1_tags set) with tag hashes and eight ways, and the same-line filter on.
  bool l1_lean8 = false;
};
// The issue width, with its shift when it is a power of two (every preset): dispatching then
// takes a shift where a division costs ~30 cycles.
struct IssueWidth {
  explicit IssueWidth(std::uint64_t w)
      : width(w), shift(static_cast<unsigned>(std::countr_zero(w))), pow2((w & (w - 1)) == 0) {}
  std::uint64_t width;
  unsigned shift;
  bool pow2;
};
// Adds a core's pending instructions (CoreState::dispatched_insts) to its slot and clock.
inline void dispatch_pending(CoreState& c, const IssueWidth& w) {
  const std::uint64_t slots = c.slot + (c.insts - c.dispatched_insts);
  c.dispatched_insts = c.insts;
  if (w.pow2) [[likely]] {
    c.clock += slots >> w.shift;
    c.slot = slots & (w.width - 1);
  } else {
    c.clock += slots / w.width;
    c.slot = slots % w.width;
  }
}
// CoreState::deadline_stop from the core's dispatched state: the first insts at which
// clock + (slot + insts - dispatched_insts) / issue_width >= deadline. Needed again whenever the
// clock moves other than by dispatch (a miss, a stall) while cleaning is on.
inline void refresh_deadline_stop(CoreState& c, const IssueWidth& w) {
  if (c.deadline == kNever) [[likely]] {
    c.deadline_stop = kNever;
    return;
  }
  if (c.clock >= c.deadline) {
    c.deadline_stop = c.dispatched_insts;  // due: the next store stops
    return;
  }
  const std::uint64_t cycles = c.deadline - c.clock;
  c.deadline_stop = cycles < (kNever - c.dispatched_insts) / w.width
                        ? c.dispatched_insts + cycles * w.width - c.slot
                        : kNever;
}
// Line state bits shared with the Cache (src/sim/cache.hpp checks they agree).
inline constexpr std::uint8_t kStateDirty = 1;
inline constexpr std::uint8_t kStateExclusive = 2;
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

  // A core as the inline access path wants it: its index and its per-core state, so that a
  // caller issuing every access of one thread from one core (SimBackend) does not index the
  // state on each access (5 instructions per access: sign extension, multiply by the state's
  // 192 bytes, add). Valid while the Machine lives (the state is owned by its heap-allocated
  // model, stable across moves).
  class CoreRef {
   public:
    CoreRef() = default;
    [[nodiscard]] int index() const { return index_; }

   private:
    friend class Machine;
    CoreRef(int index, detail::CoreState* state) : index_(index), state_(state) {}
    int index_ = 0;
    detail::CoreState* state_ = nullptr;
  };
  [[nodiscard]] CoreRef core_ref(int core) const { return {core, cores_ + core}; }

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
  void load(int core, LineAddr line) { load(core_ref(core), line); }
  // The inline path reads only the core's state; the slow paths it calls recover the index from
  // it (index_of), so that the index is not loaded on every access (1 instruction).
  void load(CoreRef ref, LineAddr line) {
    detail::CoreState& c = *ref.state_;
    if ((c.filter[line.value() & c.filter_mask] >> 1) == line.value()) {
      ++c.filtered;
      served_load(c);  // an L1 load hit: no periodic-cleaning check (see deadline)
      return;
    }
    if (c.l1_lean8) [[likely]]  // the presets' L1: no configuration tests
      load_via_l1<kLean8>(c, line);
    else if (c.l1_tags != nullptr)
      load_via_l1<kAnyL1>(c, line);
    else
      access_slow(index_of(c), line, false);
  }
  // `pc`: the storing instruction's id (SimBackend's StorePc); only PreFlush reads it, and with
  // PreFlush on every store takes the slow path (each must consult the predictor).
  void store(int core, LineAddr line, std::uint32_t pc = 0) {
    if (preflush_) [[unlikely]] {
      store_preflush(core, line, pc);
      return;
    }
    store_plain(core, line);
  }
  // store() for a caller that knows PreFlush is off (SimBackend's plain access path, which
  // sends every store through store() when PreFlush is on): no PreFlush test per store.
  void store_plain(int core, LineAddr line) { store_plain(core_ref(core), line); }
  void store_plain(CoreRef ref, LineAddr line) {
    detail::CoreState& c = *ref.state_;
    if (c.filter[line.value() & c.filter_mask] == ((line.value() << 1) | 1)) {
      ++c.filtered;
      ++c.filtered_stores;
      served_store(c);
      return;
    }
    if (c.l1_lean8) [[likely]]
      store_via_l1<kLean8>(c, line);
    else if (c.l1_tags != nullptr)
      store_via_l1<kAnyL1>(c, line);
    else
      access_slow(index_of(c), line, true);
  }
  // Flush instruction `mode` (not kNone) on `line`: clflush/clflushopt invalidate everywhere,
  // clwb keeps a clean copy; a line dirty anywhere costs exactly one NVM write.
  void flush(int core, LineAddr line, FlushMode mode);
  // sfence: waits for this core's outstanding flushes to be accepted by the controller.
  void fence(int core);
  // Seed 004: a persist barrier of `core` under a hardware barrier mode (LB, LB+IDT, LB+PF,
  // LB++; SimParams::persistency): the core's current epoch ends. `bsp`: a boundary the
  // hardware inserts in BSP bulk mode (persistency.bsp_epoch_stores), not a program's fence.
  void epoch_barrier(int core, bool bsp = false);
  // Naive write-through BSP (persistency.bsp_write_through): `core` has just stored to `line`;
  // a persistent line goes to NVM now and the core waits for its acceptance.
  void write_through(int core, LineAddr line);
  // Non-temporal store of bytes [off, off + size) of `line` (src/sim/nt_store.hpp).
  void store_nt(int core, LineAddr line, unsigned off, unsigned size);

  // Time across cores: fork copies one core's clock to all; join (a barrier) sets all to the max.
  // Between them `active_cores` cores run (0 = all), each with that share of the write queue.
  void fork_clocks(int from_core, int active_cores = 0);
  void join_clocks();

  // Seed 002's WBINVD over LLC slots [lo, hi) (a helper op; `last` ends the walk), and the
  // LLC's slot count. The helper core's own clock is swapped in around each of its ops.
  void wbinvd(int core, std::size_t lo, std::size_t hi, bool last);
  [[nodiscard]] std::size_t llc_slots() const;
  void set_clock(int core, Cycles t);
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
  // Lines [first, last) are DRAM (volatile): their misses and write-backs leave the NVM
  // statistics, the row buffer and the crash image. Off unless called; remove with the same pair.
  void add_volatile(LineAddr first, LineAddr last);
  void remove_volatile(LineAddr first, LineAddr last);
  // Seed 002's DRAM cache (SimParams::dram_cache; nothing when off): lines [first, last) placed
  // as one object, and their dirty resident lines written to NVM by `core`
  // (src/sim/dram_cache.hpp).
  void dram_cache_place(LineAddr first, LineAddr last);
  void dram_cache_flush(int core, LineAddr first, LineAddr last);

  [[nodiscard]] CrashImage& image();
  [[nodiscard]] const CrashImage& image() const;
  [[nodiscard]] const SimParams& params() const;
  [[nodiscard]] int cores() const;
  [[nodiscard]] LineState probe(int core, LineAddr line) const;
  [[nodiscard]] Cycles clock(int core) const;
  [[nodiscard]] SimStats stats() const;

 private:
  static constexpr std::uint64_t kNoWay = ~std::uint64_t{0};
  // The index of the core whose state `c` is: for the inline path's slow branches only.
  [[nodiscard]] int index_of(const detail::CoreState& c) const {
    return static_cast<int>(&c - cores_);
  }
  // The L1 slot holding `line`, or kNoWay: Cache::find over the core's L1 arrays.
  static std::uint64_t l1_lookup(const detail::CoreState& c, std::uint64_t line) {
    const std::uint64_t base = (line & c.l1_set_mask) * c.l1_ways;
    if (c.l1_hash != nullptr) [[likely]]
      return detail::find_hashed(c.l1_tags, c.l1_hash, base, c.l1_ways, line);
    const std::uint64_t* t = c.l1_tags + base;
    for (std::uint64_t w = 0; w < c.l1_ways; ++w)
      if (t[w] == line) return base + w;
    return kNoWay;
  }
  // l1_lookup for CoreState::l1_lean8's L1: eight ways with tag hashes, the way hint first.
  static std::uint64_t l1_lookup8(const detail::CoreState& c, std::uint64_t line) {
    std::uint32_t& hint = c.l1_hint[line & c.l1_hint_mask];
    if (c.l1_tags[hint] == line) [[likely]]
      return hint;
    const std::uint64_t s =
        detail::find_hashed8(c.l1_tags, c.l1_hash, (line & c.l1_set_mask) * 8, line);
    if (s != kNoWay) hint = static_cast<std::uint32_t>(s);
    return s;
  }
  // The inline path of an access the filter did not serve, on an L1 with the fast path
  // (CoreState::l1_tags). kLean8: the presets' L1 (CoreState::l1_lean8), whose settings need no
  // test: eight hashed ways, and the filter on.
  static constexpr bool kLean8 = true, kAnyL1 = false;
  template <bool Lean8>
  void load_via_l1(detail::CoreState& c, LineAddr line) {
    const std::uint64_t s = Lean8 ? l1_lookup8(c, line.value()) : l1_lookup(c, line.value());
    if (s == kNoWay) {
      load_miss(index_of(c), line);  // an L1 miss: the slow path need not search again
      return;
    }
    l1_hit<Lean8>(c, s, line.value());
    served_load(c);
  }
  template <bool Lean8>
  void store_via_l1(detail::CoreState& c, LineAddr line) {
    const std::uint64_t s = Lean8 ? l1_lookup8(c, line.value()) : l1_lookup(c, line.value());
    // Only a store to a line already held dirty and exclusive needs no coherence action and
    // opens no dirty stretch.
    constexpr std::uint8_t kDirtyExclusive = detail::kStateDirty | detail::kStateExclusive;
    if (s == kNoWay || c.l1_state[s] != kDirtyExclusive) {
      access_slow(index_of(c), line, true, s);
      return;
    }
    ++c.l1_hit_stores;
    l1_hit<Lean8>(c, s, line.value());
    served_store(c);
  }
  // An L1 hit outside the filter, exactly as Hierarchy::access does it: LRU touch, hit count,
  // and the line becomes its set's filter entry. The caller then counts its time (served_*).
  // FilterKnownOn (kLean8): the filter is on, so it is not tested.
  template <bool FilterKnownOn>
  void l1_hit(detail::CoreState& c, std::uint64_t s, std::uint64_t line) {
    // Every field read before the first store: the stamps are std::uint64_t, which may alias
    // any of the state's fields, so a read after a stamp store is a reload.
    std::uint64_t* const filter_entry = c.filter + (line & c.filter_mask);
    const std::uint64_t entry = (line << 1) | (c.l1_state[s] & detail::kStateDirty);
    std::uint64_t* const now = c.l1_now;
    std::uint64_t* const stamps = c.l1_stamp;
    const std::uint64_t stamp = *now + 1;
    *now = stamp;
    stamps[s] = stamp;
    ++c.l1_hits;
    if (FilterKnownOn || filter_on_) *filter_entry = entry;
  }
  // The time of an access served inline, added lazily: served_step_ goes to insts only (see
  // CoreState::dispatched_insts), and the next operation that needs the clock dispatches it.
  // Interval model: the access's instructions, issue_width per cycle (an L1 hit's latency is
  // hidden), and dispatch stops when the reorder buffer is full behind an incomplete load.
  // Memory model: the L1 latency in cycles, dispatched one per cycle (issue_ is 1 there), and
  // rob_limit stays kNever. Both models take this one path with no test of the model: 2
  // instructions per access fewer than a branch to `clock += latency` (commit 4a14bb5); the eager
  // update of slot and clock cost ~15 (commit 240b346).
  void served_load(detail::CoreState& c) {
    c.insts += served_step_;
    if (c.insts >= c.rob_limit) [[unlikely]]
      settle(index_of(c), false);
  }
  void served_store(detail::CoreState& c) {
    c.insts += served_step_;
    if (c.insts >= std::min(c.rob_limit, c.deadline_stop)) [[unlikely]]
      settle(index_of(c), true);
  }
  // Out of line: dispatches the core's pending instructions (memory model: cycles), then what
  // its last access would have met eagerly: a full reorder buffer (stall), for a store a due
  // periodic cleaning.
  void settle(int core, bool is_store);
  // Around every other operation: its core's pending instructions first (every core's when the
  // operation reads other cores' clocks), its deadline stop after.
  [[gnu::always_inline]] inline void before_op(int core) const;  // defined in machine.cpp
  [[gnu::always_inline]] inline void after_op(int core) const;
  void before_global() const;  // every core's pending instructions
  void after_global() const;   // every core's deadline stop
  // `l1_slot`: where the L1 holds the line (kNoWay: not held), if the caller has looked.
  void access_slow(int core, LineAddr line, bool is_store, std::uint64_t l1_slot = kUnsearched);
  // A load the inline L1 path found missing: access_slow(core, line, false, kNoWay), with
  // Hierarchy's lean miss inlined (one call per miss).
  void load_miss(int core, LineAddr line);
  static constexpr std::uint64_t kUnsearched = kNoWay - 1;
  void store_preflush(int core, LineAddr line, std::uint32_t pc);

  std::unique_ptr<Hierarchy> impl_;
  detail::CoreState* cores_ = nullptr;  // owned by impl_ (heap, stable across moves)
  // What an inline-served access adds to CoreState::insts, and how insts become cycles:
  // instructions and the issue width (interval model), or the L1 latency and 1 (memory model).
  std::uint64_t served_step_ = 1;
  detail::IssueWidth issue_{1};
  bool cross_core_ = false;  // hardware persist barriers: ops read others' clocks
  bool cleaning_ = false;    // periodic cleaning configured (deadlines may be set)
  bool filter_on_ = false;   // SimParams::same_line_filter
  bool functional_ = false;  // stop_modelling() was called
  bool preflush_ = false;    // SimParams::preflush.enabled
};

}  // namespace pmlab::sim
