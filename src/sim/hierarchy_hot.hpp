// The Hierarchy's per-miss inlined parts: interval dispatch, MSHRs, the ROB ring, the lean load
// miss. A header so that Machine::load_miss (src/sim/machine.cpp) inlines the lean miss whole:
// one call per L1 miss from the kernel's inline path instead of three.
#pragma once

#include <algorithm>
#include <cstdint>

#include "hierarchy.hpp"
#include "pmlab/sim/tag_hash.hpp"
#include "replacement.hpp"

namespace pmlab::sim {

namespace detail {
constexpr std::uint64_t bit_of(int core) {
  return std::uint64_t{1} << core;
}
}  // namespace detail

// Interval model (hierarchy.cpp, "Interval core model"): the access path's inlined parts.
inline void Hierarchy::dispatch(int core, std::uint64_t insts) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  // These instructions and any the inline path left pending, in one step.
  cs.insts += insts;
  detail::dispatch_pending(cs, issue_);
  if (cs.insts >= cs.rob_limit) rob_stall(core);
}

inline std::size_t Hierarchy::acquire_mshr(int core) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  const IntervalCore& ic = icore_[static_cast<std::size_t>(core)];
  // The first free MSHR, found by a scan that does nothing else: on tmm at n = 512 it stops
  // after 3.2 entries on average and all 16 are busy once in 270,000 misses (callgrind). Keeping
  // the running minimum in the same loop cost 34 instructions per miss, half of them for that
  // rare case, which now scans a second time (docs/simulator.md, "Speed"). Starting the
  // scan after the MSHR taken last would stop sooner (~15 instead of ~35 instructions per miss
  // on tmm with a 16K L1) and is unobservable while a core's clock only grows, but the seed-002
  // helper swaps its own clock into a worker's core (threads >= cores), and there the free MSHR
  // chosen changes later stalls (measured: jacobi ipv, 13,301,457 against 13,305,662 cycles).
  // Nor is it exact to take any free MSHR only until a clock first moves back: the entries freed
  // before then hold other stale times, which the earlier clock sees as busy (commit 798ba8a).
  // The sentinel after the last MSHR (always 0) stops the scan: 5 instructions per entry
  // instead of 7 with the bound check (commit 798ba8a).
  const std::uint64_t now = cs.clock;
  const std::uint64_t* const t = ic.mshr.data();
  const std::size_t n = ic.mshrs;
  std::size_t free = 0;
  while (t[free] > now) ++free;
  if (free < n) return free;
  std::size_t first = 0;  // all busy: the first of the earliest to complete
  for (std::size_t i = 1; i < n; ++i)
    if (t[i] < t[first]) first = i;
  const std::uint64_t earliest = t[first];
  mshr_stall_ += earliest - now;  // wait for it
  ++mshr_full_events_;
  cs.clock = earliest;
  return first;
}

inline void Hierarchy::long_latency(int core, std::uint64_t lat, bool load, std::uint64_t line) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  IntervalCore& ic = icore_[static_cast<std::size_t>(core)];
  const std::size_t m = acquire_mshr(core);
  const std::uint64_t done = cs.clock + lat;
  ic.mshr[m] = done;
  if (flush_after_fill_) ic.fill_line[m] = load ? kNoFill : line;  // nothing reads it otherwise
  // A store retires into the store buffer at once; its miss only holds the MSHR.
  if (!load) return;
  ic.last_retire = std::max(ic.last_retire, done);
  if (ic.count > ic.ring_mask) rob_stall(core);  // cannot happen: entries span < rob insts
  ic.ring.data()[(ic.head + ic.count) & ic.ring_mask] = {cs.insts, ic.last_retire};
  if (ic.count++ == 0) cs.rob_limit = cs.insts + rob_entries_;
}

inline bool Hierarchy::lean_load_miss(int core, std::uint64_t line) {
  // Through Cache::Raw's pointers, reads and 64-bit writes first, the byte-sized writes (states,
  // hashes, owners) last: a byte store may alias anything, so every pointer read after one is
  // read again from memory.
  const Cache::Raw& llc = lean_llc_;
  // fetch_from_llc's hit case without coherence actions. On an L1 miss this core cannot be the
  // owner (evict_private clears it), so any owner is a remote E/M copy: the general path.
  const std::size_t ls =
      detail::find_hashed(llc.tags, llc.hash, (line & llc.set_mask) * llc.ways, llc.ways, line);
  if (ls == kNoSlot || llc.owner[ls] >= 0) return false;
  const LeanCore& lc = lean_core_[static_cast<std::size_t>(core)];
  const Cache::Raw& l1 = lc.l1;
  LevelStats& l1_stats = *lc.stats;
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  ++loads_;
  ++l1_stats.misses;
  ++llc_.counters().hits;
  llc.stamp[ls] = ++*llc.now;  // LRU touch
  const std::uint64_t me = detail::bit_of(core);
  const std::uint64_t sharers = llc.sharers[ls];
  llc.sharers[ls] = sharers | me;
  // fill_private and evict_private for the last (only) private level, written out: calling
  // fill_private here (its level and mode branches) measured 6% slower on tmm n = 512 interval
  // (3.95-4.07 against 3.71-3.80 CPU s) and crash campaigns 3% slower.
  const std::size_t s1 = lru_oldest(l1.stamp, (line & l1.set_mask) * l1.ways, l1.ways);
  const std::uint64_t v = l1.tags[s1];
  const bool dirty = (l1.state[s1] & kDirty) != 0;
  const std::size_t vs = l1.link[s1];
  // Cache::fill for an L1 (no directory; its bytes below), and the link to the LLC slot.
  l1.tags[s1] = line;
  l1.stamp[s1] = ++*l1.now;
  l1.link[s1] = ls;
  cs.l1_hint[line & cs.l1_hint_mask] = static_cast<std::uint32_t>(s1);  // the next lookup's guess
  // The victim's directory entry (vs != ls: the LLC holds v there, and line at ls).
  const bool inclusive_victim = v != kInvalidTag && llc.tags[vs] == v;
  if (inclusive_victim) llc.sharers[vs] &= ~me;
  if (sharers == 0) llc.owner[ls] = static_cast<std::int8_t>(core);
  l1.state[s1] = sharers == 0 ? kExclusive : 0;
  l1.hash[s1] = detail::tag_hash(line);
  if (v != kInvalidTag) {
    ++l1_stats.evictions;
    if (dirty) ++l1_stats.dirty_evictions;
    if (inclusive_victim) {
      if (dirty) llc.state[vs] |= kDirty;
      if (llc.owner[vs] == core) llc.owner[vs] = -1;
    } else if (dirty) {  // a non-inclusive LLC dropped it: the dirty victim goes to NVM
      detail::dispatch_pending(cs, issue_);  // it reads the clock
      write_back_victim(v, core, take_since(kNoSlot, v));
    }
  }
  const std::uint64_t lat = llc_.latency().value();
  if (interval_) {
    dispatch(core, params_.core.insts_per_access);
    if (lat > l1_latency_) long_latency(core, lat, true, line);
  } else {
    detail::dispatch_pending(cs, issue_);  // the inline path's L1-hit cycles first
    cs.clock += lat;
  }
  // The filter entry of the line's L1 set (shared with the victim's): clean, so stores are not
  // skipped. LRU L1s record misses too (filter_on_hit_only_ is SRRIP's).
  filter_entry(core, line) = params_.same_line_filter ? line << 1 : detail::kNoEntry;
  if (cs.clock >= cs.deadline) [[unlikely]]
    periodic_tick(core);
  return true;
}

inline void Hierarchy::load_miss(int core, std::uint64_t line) {
  if (!lean_misses_ || !lean_load_miss(core, line)) access(core, line, false, kNoSlot);
}

}  // namespace pmlab::sim
