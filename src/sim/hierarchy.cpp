// Cache hierarchy rules: lookups, fills, inclusive evictions, coherence, flushes, NVM writes.
#include "hierarchy.hpp"

#include "hierarchy_hot.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "pmlab/core/error.hpp"

namespace pmlab::sim {

namespace {
using detail::bit_of;

template <class Fn>
void for_each_core(std::uint64_t mask, Fn&& fn) {
  for (; mask != 0; mask &= mask - 1) fn(std::countr_zero(mask));
}

// Due times p·T + s·T/S: the products may exceed 64 bits for huge T.
__extension__ using U = unsigned __int128;
}  // namespace

Hierarchy::Hierarchy(const SimParams& p)
    : params_(p),
      npriv_(p.l2 ? 2 : 1),
      llc_(p.llc, true, p.seed ^ 0x11c),
      cores_(static_cast<std::size_t>(p.cores)),
      wq_(static_cast<std::size_t>(p.cores),
          WriteQueue(p.nvm.write_queue_entries, p.nvm.write_units, p.nvm_write_cycles().value())),
      shared_wq_(p.nvm.write_queue_entries, p.nvm.write_units, p.nvm_write_cycles().value()),
      shared_queue_(p.nvm.write_queue == WriteQueueModel::kShared),
      wc_(p.cores, p.wc_buffers),
      nvm_read_cycles_(p.nvm_read_cycles().value()),
      flush_issue_(p.flush_issue_latency.value()),
      fence_latency_(p.fence_latency.value()),
      interval_(p.core.model == CoreModel::kInterval),
      flush_after_fill_(interval_ && p.core.flush_after_fill),
      sq_(interval_ && p.core.store_queue),
      sq_tso_(p.core.sq_tso),
      l1_latency_(p.l1.hit_latency.value()),
      rob_entries_(p.core.rob_entries),
      issue_(interval_ ? p.core.issue_width : 1),
      rb_(p.nvm.row_buffer) {
  if (p.dram_cache.enabled) dram_.emplace(p.dram_cache);
  if (p.nvm.write_queue == WriteQueueModel::kBanks) {
    const RowBufferParams& r = p.nvm.row_buffer;
    const auto cyc = [&p](double ns) { return p.nvm_timing_cycles(ns).value(); };
    timed_.emplace(r, NvmTiming{cyc(r.t_rcd_ns), cyc(r.t_cl_ns), cyc(r.t_wr_ns), cyc(r.t_rp_ns),
                                cyc(r.t_burst_ns)});
  }
  if (interval_) {
    icore_.resize(cores_.size());
    for (auto& ic : icore_) {
      ic.ring.resize(std::bit_ceil(std::size_t{p.core.rob_entries}));
      ic.ring_mask = ic.ring.size() - 1;
      ic.mshr.assign(p.core.mshrs + 1, 0);  // + the scan's sentinel
      ic.mshrs = p.core.mshrs;
      ic.fill_line.assign(p.core.mshrs, kNoFill);
      if (sq_) ic.sq.assign(p.core.sq_entries, 0);
    }
  }
  const std::uint64_t sets = p.l1.sets();
  const std::uint64_t entries = std::has_single_bit(sets) ? sets : 1;
  filter_.assign(static_cast<std::size_t>(entries) * cores_.size(), detail::kNoEntry);
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    cores_[c].filter = filter_.data() + c * entries;
    cores_[c].filter_mask = entries - 1;
  }
  filter_on_hit_only_ = p.l1.replacement == Replacement::kSrrip;
  if (p.preflush.enabled) {
    pf_.assign(cores_.size(), Preflusher(p.preflush, p.l1.sets(), p.l1.ways));
    pf_dir_ = PreflushDirectory(std::size_t{p.preflush.dir_entries} * cores_.size());
    pf_marks_ = p.preflush.l1_marks;
  }
  period_ = p.periodic_flush_cycles.value();
  since_.assign(llc_.slots(), detail::kNever);
  restart_sweep();
  private_.reserve(static_cast<std::size_t>(p.cores * npriv_));
  for (int c = 0; c < p.cores; ++c) {
    const auto salt = static_cast<std::uint64_t>(c) * 0x9e3779b97f4a7c15ull;
    private_.emplace_back(p.l1, false, p.seed ^ salt);
    if (p.l2) private_.emplace_back(*p.l2, false, p.seed ^ salt ^ 0x12);
  }
  // Machine's inline L1 hit path: LRU L1s with power-of-two set counts (private_ is reserved,
  // so these pointers stay valid).
  // Under a hardware persist barrier every store outside the filter must reach the epoch
  // engine's conflict check, so the inline L1 hit path stays off (it has no such check).
  if (p.persistency.hardware())
    epochs_ = std::make_unique<EpochEngine>(*this, p.persistency, p.cores, llc_.slots());
  for (int c = 0; c < p.cores && !epochs_ && p.inline_l1_hits; ++c) {
    Cache& l1 = priv(c, 0);
    LruPolicy* lru = l1.lru();
    if (lru == nullptr || !l1.pow2_sets()) continue;
    detail::CoreState& cs = cores_[static_cast<std::size_t>(c)];
    cs.l1_tags = l1.tag_data();
    cs.l1_state = l1.state_data();
    cs.l1_hash = l1.hash_data();
    cs.l1_stamp = lru->stamp_data();
    cs.l1_now = lru->now_ptr();
    cs.l1_set_mask = l1.sets() - 1;
    cs.l1_ways = l1.ways();
    cs.l1_lean8 = cs.l1_hash != nullptr && cs.l1_ways == 8 && p.same_line_filter;
  }
  // Way hints (read only on the fast path, allocated for every core so none is ever null): twice
  // as many as the L1 has slots, so that a working set the size of the L1 seldom aliases; all
  // start at slot 0 (a valid slot, confirmed by its tag).
  const std::size_t hints = std::bit_ceil(std::size_t{2} * priv(0, 0).slots());
  l1_hint_.assign(hints * cores_.size(), 0);
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    cores_[c].l1_hint = l1_hint_.data() + c * hints;
    cores_[c].l1_hint_mask = hints - 1;
  }
  if (p.prefetch.on()) {
    // Unused prefetched L1 lines are hidden from the inline path's hashed lookups, so that
    // their first use reaches access(); the lean miss path does not train, so it stays off.
    prefetch_ = true;
    spf_.assign(cores_.size(), StreamPrefetcher(p.prefetch));
    pf_ready_.assign(cores_.size() * priv(0, 0).slots(), 0);
    for (int c = 0; c < p.cores; ++c) priv(c, 0).allow_hiding();
  }
  lean_misses_ = p.lean_miss_path && npriv_ == 1 && !epochs_ && pf_.empty() && !prefetch_ &&
                 llc_.lru() != nullptr && llc_.pow2_sets() && llc_.hash_data() != nullptr;
  for (const detail::CoreState& cs : cores_)
    lean_misses_ = lean_misses_ && cs.l1_tags != nullptr && cs.l1_hash != nullptr;
  if (lean_misses_) {
    lean_llc_ = llc_.raw();
    for (int c = 0; c < p.cores; ++c)
      lean_core_.push_back({priv(c, 0).raw(), &priv(c, 0).counters()});
  }
}

Hierarchy::~Hierarchy() = default;

// Removes, downgrades (to clean Shared) or cleans `core`'s private copies of `line`; returns
// whether any of them was dirty, so the caller can move that dirtiness down or write it.
bool Hierarchy::strip_private(int core, std::uint64_t line, Strip how) {
  bool dirty = false;
  for (int lv = 0; lv < npriv_; ++lv) {
    Cache& c = priv(core, lv);
    const std::size_t s = c.find(line);
    if (s == kNoSlot) continue;
    dirty |= (c.state(s) & kDirty) != 0;
    switch (how) {
      case Strip::kInvalidate:
        if (lv == 0) prefetch_left(c, s);
        c.invalidate(s);
        if (lv == 0) l1_line_left(core, line, true);
        break;
      case Strip::kDowngrade:
        c.set_state(s, 0);
        break;
      case Strip::kClean:
        c.drop_state(s, kDirty);
        break;
    }
  }
  forget_filter(core, line);
  return dirty;
}

void Hierarchy::access_unsearched(int core, std::uint64_t line, bool is_store, std::uint32_t pc) {
  // Seed 004: the conflict rules run before the access, so a forced flush writes the old bytes.
  if (epochs_) [[unlikely]]
    epochs_->before_access(core, line, is_store);
  access(core, line, is_store, kUnsearched, pc);
}

void Hierarchy::access(int core, std::uint64_t line, bool is_store, std::size_t l1_slot,
                       std::uint32_t pc) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  // The inline path's pending instructions (CoreState::dispatched_insts; memory model: cycles):
  // evictions below read the clock before this access's own dispatch.
  detail::dispatch_pending(cs, issue_);
  ++(is_store ? stores_ : loads_);
  Cache& l1 = priv(core, 0);
  std::uint64_t lat = 0;
  // The inline path cannot see a hidden (prefetched, unused) line: its "not found" is searched
  // again while the prefetcher is on.
  std::size_t s1 =
      l1_slot == kUnsearched || (prefetch_ && l1_slot == kNoSlot) ? l1.find(line) : l1_slot;
  const bool l1_hit = s1 != kNoSlot;
  // The prefetched line's completion when this is its first use (0: none, or complete).
  std::uint64_t pf_ready = 0;
  bool pf_used = false;
  if (l1_hit) {
    if (prefetch_ && l1.hidden(s1)) [[unlikely]] {
      pf_ready = prefetch_use(core, s1);
      pf_used = true;
    }
    ++l1.counters().hits;
    l1.touch(s1);
    lat = l1.latency().value();
  } else {
    ++l1.counters().misses;
    std::uint8_t st = 0;
    bool found = false;
    if (npriv_ == 2) {
      Cache& l2 = priv(core, 1);
      const std::size_t s2 = l2.find(line);
      if (s2 != kNoSlot) {
        ++l2.counters().hits;
        l2.touch(s2);
        st = static_cast<std::uint8_t>(l2.state(s2) &
                                       kExclusive);  // dirtiness stays in L2 until L1 writes back
        lat = l2.latency().value();
        found = true;
      } else {
        ++l2.counters().misses;
      }
    }
    s1 = fill_private_levels(core, line, is_store, found, st, lat);
  }
  bool newly_dirty = false;
  // Whether the store had to ask the directory (a miss or an upgrade): PreFlush's NACK point.
  const bool reached_directory = is_store && (!l1_hit || (l1.state(s1) & kExclusive) == 0);
  if (is_store) {
    const std::uint8_t st = l1.state(s1);
    if ((st & kExclusive) == 0) lat += upgrade(core, line);
    newly_dirty = (st & kDirty) == 0;  // filtered stores hit dirty lines only, never this
    l1.add_state(s1, kExclusive | kDirty);
    if (epochs_) [[unlikely]]
      epochs_->after_store(core, line, llc_.find(line));
  }
  // When the prefetcher sees this access: its dispatch (after any MSHR wait), or in the memory
  // model its start.
  std::uint64_t seen = 0;
  if (interval_) {
    dispatch(core, params_.core.insts_per_access);
    // A use of a prefetch still in flight waits for it (merged into its request).
    if (pf_ready > cs.clock) [[unlikely]] {
      ++pfs_.late;
      lat = std::max(lat, pf_ready - cs.clock);
    }
    if (lat > l1_latency_) {
      if (sq_ && is_store) sq_push(core, sq_send(core, cs.clock) + lat);
      long_latency(core, lat, !is_store, line);
    }
    seen = cs.clock;
  } else {
    if (pf_ready > cs.clock) [[unlikely]] {
      ++pfs_.late;
      lat = std::max(lat, pf_ready - cs.clock);
    }
    seen = cs.clock;
    cs.clock += lat;
  }
  if (newly_dirty) open_episode(core, line, s1, cs.clock);
  // This line is now the last one accessed in its L1 set (see Machine::load).
  const bool filter = params_.same_line_filter && (l1_hit || !filter_on_hit_only_);
  // The entry's "dirty" bit lets later stores skip everything. Under a hardware persist barrier
  // it must mean "stored in the core's current epoch" (the engine saw that store and tagged the
  // line), not merely "dirty in L1": a load of a line dirtied in an older epoch would otherwise
  // let the next store skip its intra-conflict check (found by the persist-order oracle).
  const bool skip_stores = (l1.state(s1) & kDirty) != 0 && (is_store || !epochs_);
  filter_entry(core, line) = filter ? (line << 1) | (skip_stores ? 1u : 0u) : detail::kNoEntry;
  if (is_store && !pf_.empty()) [[unlikely]]
    preflush_store(core, line, s1, pc, reached_directory);
  // The prefetcher trains on demand L1 misses and advances a stream on a prefetched line's use.
  if (prefetch_ && (!l1_hit || pf_used)) [[unlikely]] {
    StreamPrefetcher& spf = spf_[static_cast<std::size_t>(core)];
    prefetch_issue(core, pf_used ? spf.on_use(line) : spf.on_miss(line), seen);
  }
  // Not after L1 load hits (filtered or not, see CoreState::deadline). After the filter
  // update: cleaning this line must clear its entry.
  if (cs.clock >= cs.deadline && (is_store || !l1_hit)) [[unlikely]]
    periodic_tick(core);
}

// A store dirtied `line`'s L1 copy. If no copy was dirty, the line is now newer than NVM.
void Hierarchy::open_episode(int core, std::uint64_t line, std::size_t l1_slot, std::uint64_t t) {
  // With L1 as the last private level its link names the LLC slot (checked: a non-inclusive
  // LLC may have dropped the line); with a private L2, search.
  std::size_t ls = npriv_ == 1 ? priv(core, 0).link(l1_slot) : llc_.find(line);
  if (ls != kNoSlot && llc_.tag(ls) != line) ls = kNoSlot;
  if (ls != kNoSlot) {
    if (since_[ls] == detail::kNever) since_[ls] = t;
  } else {
    private_since_.try_emplace(line, t);  // non-inclusive LLC: held privately only
  }
}

// Ends `line`'s dirty stretch (its stamp is cleared); kNever if none was open.
std::uint64_t Hierarchy::take_since(std::size_t llc_slot, std::uint64_t line) {
  if (llc_slot != kNoSlot) return std::exchange(since_[llc_slot], detail::kNever);
  if (private_since_.empty()) return detail::kNever;
  const auto it = private_since_.find(line);
  if (it == private_since_.end()) return detail::kNever;
  const std::uint64_t t = it->second;
  private_since_.erase(it);
  return t;
}

// A private miss: find the line in the LLC (or NVM), update the directory, return the
// permission the private copy gets (kExclusive or 0 = Shared). Adds latency to `lat`.
std::uint8_t Hierarchy::fetch_from_llc(int core, std::uint64_t line, bool is_store,
                                       std::uint64_t& lat, std::size_t& llc_slot) {
  const std::uint64_t me = bit_of(core);
  const std::uint64_t llc_lat = llc_.latency().value();
  std::size_t s = llc_.find(line);
  llc_slot = s;
  if (s != kNoSlot) {
    ++llc_.counters().hits;
    llc_.touch(s);
    lat = llc_lat;
    const int owner = llc_.owner(s);
    const std::uint64_t sharers = llc_.sharers(s);
    bool dirty = false;
    if (is_store) {
      if (sharers != 0) {  // take the line: invalidate every other copy
        for_each_core(sharers, [&](int c) {
          dirty |= strip_private(c, line, Strip::kInvalidate);
          ++coh_.invalidations;
        });
        if (owner >= 0) ++coh_.interventions;
        lat += llc_lat;
      }
    } else if (owner >= 0) {  // remote E/M copy: downgrade it to Shared, dirtiness moves down
      dirty = strip_private(owner, line, Strip::kDowngrade);
      llc_.set_owner(s, -1);
      ++coh_.interventions;
      lat += llc_lat;
    }
    if (dirty) llc_.add_state(s, kDirty);
    if (is_store || sharers == 0) {
      llc_.set_sharers(s, me);
      llc_.set_owner(s, core);
      return kExclusive;
    }
    llc_.set_sharers(s, llc_.sharers(s) | me);
    return 0;
  }
  ++llc_.counters().misses;
  if (dram_ && dram_->resident(line)) [[unlikely]] {
    dram_->note_hit();  // seed 002's DRAM cache serves it: no NVM read
    lat = llc_lat + params_.dram_cache.latency_cycles;
  } else if (!volatile_.empty() && is_volatile(line)) {
    ++nvm_.dram_reads;  // same latency (the model has one memory), not an NVM read
    lat = llc_lat + nvm_read_cycles_;
  } else if (timed_) {
    ++nvm_.reads;
    // The request reaches the controller after the LLC lookup, at this core's clock.
    const std::uint64_t arrival = cores_[static_cast<std::size_t>(core)].clock + llc_lat;
    lat = llc_lat + (timed_->read(line, arrival) - arrival);
  } else {
    ++nvm_.reads;
    if (params_.nvm.row_buffer.enabled) rb_.on_read(line);
    lat = llc_lat + nvm_read_cycles_;
  }
  s = llc_.victim_for(line);
  llc_slot = s;
  if (llc_.tag(s) != kInvalidTag) evict_llc(s, core);
  llc_.fill(s, line, 0);
  llc_.set_sharers(s, me);
  llc_.set_owner(s, core);
  return kExclusive;
}

// `line` into `core`'s private levels after an L1 miss: from the LLC (or memory) into the last
// private level unless L2 held it (`in_l2`, state `st`), then into L1 of a two-level hierarchy.
// Returns its L1 slot; `st` and `lat` become the fetch's state and latency.
std::size_t Hierarchy::fill_private_levels(int core, std::uint64_t line, bool is_store, bool in_l2,
                                           std::uint8_t& st, std::uint64_t& lat) {
  std::size_t s1 = kNoSlot;
  if (!in_l2) {
    std::size_t ls = kNoSlot;
    st = fetch_from_llc(core, line, is_store, lat, ls);
    const std::size_t last = fill_private(core, npriv_ - 1, line, st);
    priv(core, npriv_ - 1).set_link(last, ls);
    if (npriv_ == 1) s1 = last;
  }
  if (npriv_ == 2) s1 = fill_private(core, 0, line, st);
  return s1;
}

// Store to a Shared private copy: invalidate the other copies, become the exclusive owner.
// Costs one LLC round trip.
std::uint64_t Hierarchy::upgrade(int core, std::uint64_t line) {
  ++coh_.upgrades;
  // Present when the LLC is inclusive; a non-inclusive LLC has one core, so no other copies.
  if (const std::size_t s = llc_.find(line); s != kNoSlot) {
    bool dirty = false;
    for_each_core(llc_.sharers(s) & ~bit_of(core), [&](int c) {
      dirty |= strip_private(c, line, Strip::kInvalidate);
      ++coh_.invalidations;
    });
    if (dirty) llc_.add_state(s, kDirty);
    llc_.set_sharers(s, bit_of(core));
    llc_.set_owner(s, core);
  }
  for (int lv = 1; lv < npriv_; ++lv) {
    Cache& c = priv(core, lv);
    const std::size_t ps = c.find(line);
    if (ps != kNoSlot) c.add_state(ps, kExclusive);
  }
  return llc_.latency().value();
}

std::size_t Hierarchy::fill_private(int core, int level, std::uint64_t line, std::uint8_t state) {
  Cache& c = priv(core, level);
  const std::size_t s = c.victim_for(line);
  if (c.tag(s) != kInvalidTag) evict_private(core, level, s);
  c.fill(s, line, state);
  return s;
}

// Private victim: an L1 victim above a private L2 merges its dirtiness into L2 (inclusion);
// a victim of the last private level takes its upper copies along and moves its dirtiness to
// the LLC, leaving the directory.
void Hierarchy::evict_private(int core, int level, std::size_t slot) {
  Cache& c = priv(core, level);
  const std::uint64_t v = c.tag(slot);
  bool dirty = (c.state(slot) & kDirty) != 0;
  // An L1 victim shares its L1 set, hence its filter entry, with the line access() installs
  // and then records there; only victims of lower levels must clear theirs.
  if (level > 0) forget_filter(core, v);
  if (level == 0) {
    prefetch_left(c, slot);
    l1_line_left(core, v, false);
  }
  ++c.counters().evictions;
  if (level == npriv_ - 1) {
    for (int up = 0; up < level; ++up) {
      Cache& u = priv(core, up);
      const std::size_t us = u.find(v);
      if (us == kNoSlot) continue;
      dirty |= (u.state(us) & kDirty) != 0;
      if (up == 0) prefetch_left(u, us);
      u.invalidate(us);
      if (up == 0) l1_line_left(core, v, false);
    }
    std::size_t ls = c.link(slot);
    if (llc_.tag(ls) != v) ls = kNoSlot;  // only a non-inclusive LLC can have dropped it
    if (ls == kNoSlot) {  // a non-inclusive LLC dropped it: a dirty victim goes to NVM directly
      if (dirty) write_back_victim(v, core, take_since(kNoSlot, v));
    } else {
      if (dirty) llc_.add_state(ls, kDirty);
      llc_.set_sharers(ls, llc_.sharers(ls) & ~bit_of(core));
      if (llc_.owner(ls) == core) llc_.set_owner(ls, -1);
    }
  } else if (dirty) {
    Cache& below = priv(core, level + 1);
    const std::size_t bs = below.find(v);
    below.add_state(bs, kDirty);
  }
  if (dirty) ++c.counters().dirty_evictions;
  // No invalidate: fill_private overwrites the slot's tag, state and policy state next.
}

// LLC victim: back-invalidate every private copy; dirty anywhere = one NVM write. A
// non-inclusive LLC (1 core) leaves the private copies in place but cleans them, so the
// newest bytes still leave exactly once and the crash image stays exact.
void Hierarchy::evict_llc(std::size_t slot, int core) {
  // A tagged victim is written only after everything its epoch must follow (replacement rule).
  const bool tagged = epochs_ && epochs_->tagged(slot);
  if (tagged) [[unlikely]]
    epochs_->before_victim(slot, core);
  const std::uint64_t v = llc_.tag(slot);
  const std::uint64_t since = take_since(slot, v);
  bool dirty = (llc_.state(slot) & kDirty) != 0;
  const bool inclusive = params_.inclusive_llc;
  for_each_core(llc_.sharers(slot), [&](int c) {
    dirty |= strip_private(c, v, inclusive ? Strip::kInvalidate : Strip::kClean);
    if (inclusive) ++coh_.back_invalidations;
  });
  ++llc_.counters().evictions;
  llc_.invalidate(slot);
  if (dirty) {
    ++llc_.counters().dirty_evictions;
    write_back_victim(v, core, since);
  }
  if (tagged) [[unlikely]]
    epochs_->after_victim(core);
}

// An evicted dirty line goes to the write queue; a full queue stalls the core whose miss
// caused the eviction.
void Hierarchy::write_back_victim(std::uint64_t v, int core, std::uint64_t since) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  const std::uint64_t accepted = nvm_write(v, WriteCause::kEviction, cs.clock, core, since);
  if (accepted > cs.clock) {
    nvm_.write_queue_stall_cycles += accepted - cs.clock;
    cs.clock = accepted;
  }
}

// One line reaches the persistence domain: count it, copy its live bytes to the crash image.
std::uint64_t Hierarchy::nvm_write(std::uint64_t line, WriteCause cause, std::uint64_t t, int core,
                                   std::uint64_t since) {
  if (since != detail::kNever) {
    // Clocks of different cores meet only at barriers: a stretch may look negative; it is 0.
    const std::uint64_t d = t > since ? t - since : 0;
    ++vol_.episodes;
    vol_.total_cycles += d;
    vol_.max_cycles = std::max(vol_.max_cycles, d);
  }
  if (!volatile_.empty() && is_volatile(line)) {
    ++nvm_.dram_writes;  // DRAM: not persistent, not queued at the NVM controller
    return t;
  }
  if (dram_ && dram_->resident(line)) [[unlikely]] {
    // Stays in the DRAM cache, not durable until dram_cache_flush.
    dram_->absorb(line, image_.covers_line(LineAddr(line)));
    return t;
  }
  ++nvm_.writes;
  ++nvm_.writes_by_cause[static_cast<std::size_t>(cause)];
  image_.capture_line(LineAddr(line));
  if (timed_) return timed_->write(line, t);
  if (params_.nvm.row_buffer.enabled) rb_.on_write(line);
  return queue_write(core, t);
}

void Hierarchy::flush(int core, std::uint64_t line, FlushMode mode) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  ++flushes_;
  // Interval model: one instruction, and a fill buffer (MSHR) held until the line is accepted.
  std::size_t mshr = 0;
  if (interval_) {
    dispatch(core, 1);
    mshr = acquire_mshr(core);
  } else {
    cs.clock += flush_issue_;
  }
  std::uint64_t t =
      flush_after_fill_ ? after_fill(core, line, cs.clock) : cs.clock;  // the core's clock goes on
  if (sq_) t = sq_send(core, t);
  if (flush_after_fill_) icore_[static_cast<std::size_t>(core)].fill_line[mshr] = kNoFill;
  // PreFlush considers clflushopt and clwb only (thesis §5.1), not the serialising clflush.
  if (!pf_.empty() && mode != FlushMode::kClflush) [[unlikely]] {
    const std::size_t s1 = priv(core, 0).find(line);
    Preflusher& pf = pf_[static_cast<std::size_t>(core)];
    if (const auto pf_done =
            pf.on_flush(line, s1 == kNoSlot ? Preflusher::kNoSlot : s1, mode == FlushMode::kClwb)) {
      // (4) ACKed early: the line was written back by its PreFlush and not stored to since, so
      // the caches need nothing. With several cores the flush still asks the directory (the
      // NACK race, §5.3.7). Never before the PreFlush itself completes.
      if (!image_.line_durable(LineAddr(line))) ++pf_violations_;
      pf_dir_.flushed(line, core);
      // An L1 mark's PreFlush kept the line cached; a clflushopt still removes it (clean: no
      // write, no wait).
      if (pf_marks_ && mode == FlushMode::kClflushopt) drop_clean_line(line);
      const std::uint64_t done =
          std::max(t + (params_.cores > 1 ? 2 * llc_.latency().value() : 1), *pf_done);
      cs.flush_done = std::max(cs.flush_done, done);
      if (interval_) icore_[static_cast<std::size_t>(core)].mshr[mshr] = done;
      if (cs.clock >= cs.deadline) [[unlikely]]
        periodic_tick(core);
      return;
    }
  }
  bool dirty = false;
  const bool keep = mode == FlushMode::kClwb;
  const std::size_t s = llc_.find(line);
  std::uint64_t since = detail::kNever;
  if (s != kNoSlot) {                // not in the LLC = not cached anywhere (inclusion)
    if (epochs_) epochs_->untag(s);  // an explicit flush takes the line out of its epoch
    since = take_since(s, line);
    dirty = (llc_.state(s) & kDirty) != 0;
    for_each_core(llc_.sharers(s), [&](int c) {
      dirty |= strip_private(c, line, keep ? Strip::kClean : Strip::kInvalidate);
    });
    if (keep)
      llc_.drop_state(s, kDirty);
    else
      llc_.invalidate(s);
  } else if (!params_
                  .inclusive_llc) {  // a non-inclusive LLC: the line may be cached privately only
    for (int c = 0; c < params_.cores; ++c)
      dirty |= strip_private(c, line, keep ? Strip::kClean : Strip::kInvalidate);
    since = take_since(kNoSlot, line);
  }
  if (dirty) ++dirty_flushes_;
  const std::uint64_t done = flush_round_trip(line, t, dirty, s != kNoSlot, core, since);
  if (sq_) sq_push(core, done);
  if (mode == FlushMode::kClflush)
    cs.clock = done;  // serialising: waits for itself
  else
    cs.flush_done = std::max(cs.flush_done, done);
  if (interval_) icore_[static_cast<std::size_t>(core)].mshr[mshr] = done;
  if (cs.clock >= cs.deadline) [[unlikely]]
    periodic_tick(core);
}

void Hierarchy::epoch_barrier(int core, bool bsp) {
  if (!epochs_)
    throw Error(ErrorCode::kUnsupported,
                "a persist barrier reaches the machine only under lb, lb-idt, lb-pf or lb++");
  // A BSP boundary is the hardware bumping its epoch ID: no fence instruction runs.
  if (!bsp) cores_[static_cast<std::size_t>(core)].clock += fence_latency_;
  epochs_->barrier(core, bsp);
}

void Hierarchy::epoch_write_through(int core, std::uint64_t line) {
  if (epochs_) epochs_->write_through(core, line);
}

std::uint64_t Hierarchy::epoch_write_line(std::size_t slot, std::uint64_t t, int core,
                                          WriteCause cause) {
  const std::uint64_t line = llc_.tag(slot);
  const bool inval = params_.persistency.invalidating_epoch_flush;
  bool dirty = (llc_.state(slot) & kDirty) != 0;
  for_each_core(llc_.sharers(slot), [&](int c) {
    dirty |= strip_private(c, line, inval ? Strip::kInvalidate : Strip::kClean);
  });
  const std::uint64_t since = take_since(slot, line);
  if (inval)
    llc_.invalidate(slot);
  else
    llc_.drop_state(slot, kDirty);
  return dirty ? nvm_write(line, cause, t, core, since) : t;
}

void Hierarchy::clear_filter_dirty(int core) {
  const detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  for (std::uint64_t i = 0; i <= cs.filter_mask; ++i)
    if (cs.filter[i] != detail::kNoEntry) cs.filter[i] &= ~std::uint64_t{1};
}

// A non-temporal store (x86 MOVNT*): a cached copy anywhere is removed first (written back if
// dirty, cause eviction); then the bytes go to a write-combining buffer, with no fill and no
// read for ownership. A buffer reaches the controller when its line is complete, when a new
// line needs a buffer and all are taken (oldest first), or at sfence; its write completes when
// the controller accepts it, which the next sfence waits for (flush_done).
void Hierarchy::store_nt(int core, std::uint64_t line, unsigned off, unsigned size) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  cs.clock += params_.l1.hit_latency.value();
  const std::uint64_t t = cs.clock;
  if (!wc_.holds(core, line)) {
    std::uint64_t since = detail::kNever;
    const bool dirty = remove_everywhere(line, since);
    if (dirty)
      cs.flush_done = std::max(cs.flush_done, nvm_write(line, WriteCause::kEviction,
                                                        t + llc_.latency().value(), core, since));
  }
  wc_.add(core, line, off, size, [&](std::uint64_t l) {
    cs.flush_done = std::max(
        cs.flush_done,
        nvm_write(l, WriteCause::kNonTemporal, t + llc_.latency().value(), core, detail::kNever));
  });
  if (cs.clock >= cs.deadline) [[unlikely]]
    periodic_tick(core);
}

std::uint64_t Hierarchy::flush_round_trip(std::uint64_t line, std::uint64_t t, bool dirty,
                                          bool cached, int core, std::uint64_t since) {
  const std::uint64_t hl = llc_.latency().value();
  const std::uint64_t hop = params_.flush_mc_hop;
  // First-order model (no hop, no home agent): done at the LLC, or when the controller accepts
  // the line. With a hop every flush goes to the directory and back, a dirty one also `hop`
  // each way to the controller; a home agent adds the hops and its own step for a clean or
  // uncached line (seed 002 Table 1).
  const bool round_trip = hop != 0 || params_.home_agent;
  if (!dirty) {
    if (params_.home_agent)
      return t + 2 * hl + 2 * hop +
             (cached ? params_.remote_snoop_cycles : params_.dir_lookup_cycles);
    return t + (round_trip ? 2 * hl : hl);
  }
  if (!round_trip) return nvm_write(line, WriteCause::kFlush, t + hl, core, since);
  return nvm_write(line, WriteCause::kFlush, t + hl + hop, core, since) + hop + hl;
}

void Hierarchy::preflush_store(int core, std::uint64_t line, std::size_t l1_slot, std::uint32_t pc,
                               bool reached_directory) {
  // The directory NACKs other cores' PreFlushes of this line (§5.3.7). A PreFlushed line is
  // never Exclusive elsewhere, so every other core's store to it reaches the directory.
  // With L1 marks the invalidation coherence sends that store does it (l1_line_left).
  if (reached_directory && !pf_marks_)
    for_each_core(pf_dir_.store(line, core),
                  [&](int c) { pf_[static_cast<std::size_t>(c)].nack(line); });
  Preflusher& pf = pf_[static_cast<std::size_t>(core)];
  Preflusher::Prediction pr = pf.on_store(line, l1_slot, pc);
  if (!pr.preflush) return;
  line = pr.line;
  if (pf_marks_) {
    // The mark needs the line in L1 (line-change PreFlushes the previous line, which may have
    // left); and the PreFlush keeps it there, written back, whatever the flush type.
    if (priv(core, 0).find(line) == kNoSlot) return;
    pr.clwb = true;
  }
  // Injected behind the store: like a clwb (or clflushopt) the core does not wait for, except
  // that other cores' copies lose their exclusivity so their stores reach the directory.
  const std::uint64_t t = cores_[static_cast<std::size_t>(core)].clock;
  bool dirty = false;
  std::uint64_t since = detail::kNever;
  const std::size_t s = llc_.find(line);
  if (s != kNoSlot) {
    since = take_since(s, line);
    dirty = (llc_.state(s) & kDirty) != 0;
    for_each_core(llc_.sharers(s), [&](int c) {
      const Strip how = !pr.clwb    ? Strip::kInvalidate
                        : c == core ? Strip::kClean
                                    : Strip::kDowngrade;
      dirty |= strip_private(c, line, how);
    });
    if (pr.clwb) {
      llc_.drop_state(s, kDirty);
      if (llc_.owner(s) >= 0 && llc_.owner(s) != core) llc_.set_owner(s, -1);
    } else {
      llc_.invalidate(s);
    }
  } else if (!params_.inclusive_llc) {
    for (int c = 0; c < params_.cores; ++c)
      dirty |= strip_private(c, line, pr.clwb ? Strip::kClean : Strip::kInvalidate);
    since = take_since(kNoSlot, line);
  }
  if (dirty) {
    ++pf_writes_;
    image_.note_preflush(LineAddr(line), core);  // before the write: its prior bytes
  }
  const std::uint64_t done = flush_round_trip(line, t, dirty, s != kNoSlot, core, since);
  if (dirty) image_.preflush_done(LineAddr(line), done);
  pf.preflushed(line, pr.key, done);
  if (pf_marks_) return;
  if (const auto v = pf_dir_.record(line, core))
    for_each_core(v->cores, [&](int c) { pf_[static_cast<std::size_t>(c)].nack(v->line, true); });
}

bool Hierarchy::remove_everywhere(std::uint64_t line, std::uint64_t& since) {
  bool dirty = false;
  if (const std::size_t s = llc_.find(line); s != kNoSlot) {
    since = take_since(s, line);
    dirty = (llc_.state(s) & kDirty) != 0;
    for_each_core(llc_.sharers(s),
                  [&](int c) { dirty |= strip_private(c, line, Strip::kInvalidate); });
    llc_.invalidate(s);
  } else if (!params_.inclusive_llc) {
    for (int c = 0; c < params_.cores; ++c) dirty |= strip_private(c, line, Strip::kInvalidate);
    since = take_since(kNoSlot, line);
  }
  return dirty;
}

void Hierarchy::drop_clean_line(std::uint64_t line) {
  std::uint64_t since = detail::kNever;
  const bool dirty = remove_everywhere(line, since);
  // A marked line was written back and not stored to since: dropping a dirty one would lose
  // bytes, so it counts against transparency.
  if (dirty) ++pf_violations_;
}

void Hierarchy::fence(int core) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  ++fences_;
  if (interval_) dispatch(core, 1);
  cs.clock += fence_latency_;
  wc_.drain_all(core, [&](std::uint64_t l) {
    cs.flush_done =
        std::max(cs.flush_done, nvm_write(l, WriteCause::kNonTemporal,
                                          cs.clock + llc_.latency().value(), core, detail::kNever));
  });
  // With a store queue sfence waits for every older entry, store misses included.
  if (sq_)
    cs.flush_done = std::max(cs.flush_done, icore_[static_cast<std::size_t>(core)].sq_last_done);
  if (cs.flush_done > cs.clock) {
    fence_stall_ += cs.flush_done - cs.clock;
    cs.clock = cs.flush_done;
  }
  if (!pf_.empty()) [[unlikely]]
    image_.note_preflush_fence(core, cs.clock);
  if (cs.clock >= cs.deadline) [[unlikely]]
    periodic_tick(core);
}

// Interval model: fork and join are synchronisations (OpenMP's locked operations order like a
// full fence), so they wait until everything the cores issued is complete, flushes included.
void Hierarchy::fork_clocks(int from, int active_cores) {
  share_ = static_cast<std::uint32_t>(std::clamp(active_cores, 1, params_.cores));
  const std::uint64_t t = interval_ ? drained(from) : cores_[static_cast<std::size_t>(from)].clock;
  if (interval_) reset_interval();
  for (auto& c : cores_) c.clock = t;
}

void Hierarchy::join_clocks() {
  share_ = 1;
  std::uint64_t t = 0;
  for (int c = 0; c < params_.cores; ++c)
    t = std::max(t, interval_ ? drained(c) : cores_[static_cast<std::size_t>(c)].clock);
  if (interval_) reset_interval();
  for (auto& c : cores_) c.clock = t;
  if (t >= next_due_) periodic_tick(0);
}

void Hierarchy::write_back_all(WriteCause cause) {
  std::uint64_t t = 0;
  for (const auto& c : cores_) t = std::max(t, c.clock);
  if (epochs_) epochs_->drain(t);  // persistent lines in epoch order first
  for (std::size_t s = 0; s < llc_.slots(); ++s) {
    const std::uint64_t line = llc_.tag(s);
    if (line == kInvalidTag) continue;
    bool dirty = (llc_.state(s) & kDirty) != 0;
    for_each_core(llc_.sharers(s), [&](int c) { dirty |= strip_private(c, line, Strip::kClean); });
    if (!dirty) continue;
    // Only a mutant's dependence cycle can leave a tagged line here; it leaves its epoch now.
    if (epochs_) epochs_->untag(s);
    llc_.drop_state(s, kDirty);
    nvm_write(line, cause, t, 0, take_since(s, line));
  }
  if (params_.inclusive_llc) return;
  // Non-inclusive: private dirty lines the LLC no longer holds (those it holds are clean now).
  for (int c = 0; c < params_.cores; ++c) {
    for (int lv = 0; lv < npriv_; ++lv) {
      const Cache& pc = priv(c, lv);
      for (std::size_t s = 0; s < pc.slots(); ++s) {
        if (pc.tag(s) == kInvalidTag || (pc.state(s) & kDirty) == 0) continue;
        const std::uint64_t line = pc.tag(s);
        strip_private(c, line, Strip::kClean);
        nvm_write(line, cause, t, 0, take_since(kNoSlot, line));
      }
    }
  }
}

void Hierarchy::wbinvd(int core, std::size_t lo, std::size_t hi, bool last) {
  if (epochs_)
    throw Error(ErrorCode::kUnsupported,
                "WBINVD is not modelled under a hardware persist barrier (lb*)");
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  const std::uint64_t per_line = params_.wbinvd_cycles_per_line;
  const auto write = [&](std::uint64_t line, std::uint64_t since) {
    ++dirty_flushes_;
    cs.flush_done = std::max(
        cs.flush_done,
        nvm_write(line, WriteCause::kFlush, cs.clock + llc_.latency().value(), core, since));
  };
  hi = std::min(hi, llc_.slots());
  for (std::size_t s = lo; s < hi; ++s) {
    cs.clock += per_line;  // the walk visits every line of the cache, valid or not
    const std::uint64_t line = llc_.tag(s);
    if (line == kInvalidTag) continue;
    bool dirty = (llc_.state(s) & kDirty) != 0;
    for_each_core(llc_.sharers(s),
                  [&](int c) { dirty |= strip_private(c, line, Strip::kInvalidate); });
    const std::uint64_t since = take_since(s, line);
    llc_.invalidate(s);
    if (dirty) write(line, since);
  }
  if (!last || params_.inclusive_llc) return;
  for (int c = 0; c < params_.cores; ++c) {
    for (int lv = 0; lv < npriv_; ++lv) {
      const Cache& pc = priv(c, lv);
      for (std::size_t s = 0; s < pc.slots(); ++s) {
        const std::uint64_t line = pc.tag(s);
        if (line == kInvalidTag) continue;
        cs.clock += per_line;
        if (strip_private(c, line, Strip::kInvalidate)) write(line, take_since(kNoSlot, line));
      }
    }
  }
}

void Hierarchy::power_fail() {
  if (epochs_) epochs_->power_fail();
  if (dram_) dram_->power_fail();
  for (auto& c : private_) c.clear();
  llc_.clear();
  std::fill(filter_.begin(), filter_.end(), detail::kNoEntry);
  for (auto& c : cores_) c.flush_done = 0;
  reset_interval();
  for (auto& q : wq_) q.reset();
  shared_wq_.reset();
  rb_.power_fail();
  if (timed_) timed_->power_fail();
  wc_.clear();  // bytes still in write-combining buffers are lost
  for (auto& pf : pf_) pf.clear();
  pf_dir_.clear();
  for (auto& spf : spf_) spf.clear();
  std::fill(pf_ready_.begin(), pf_ready_.end(), 0);
  // Dirty stretches cut by the failure end without a write: they count nowhere.
  std::fill(since_.begin(), since_.end(), detail::kNever);
  private_since_.clear();
}

void Hierarchy::reset_stats() {
  if (dram_) dram_->reset_stats();
  for (auto& c : private_) c.counters() = LevelStats{c.name()};
  llc_.counters() = LevelStats{llc_.name()};
  for (auto& c : cores_) {
    c.clock = 0;
    c.filtered = c.filtered_stores = 0;
    c.l1_hits = c.l1_hit_stores = 0;
    c.flush_done = 0;
    c.insts = c.dispatched_insts = 0;
  }
  reset_interval();
  for (auto& q : wq_) q.reset();
  shared_wq_.reset();
  loads_ = stores_ = flushes_ = dirty_flushes_ = fences_ = fence_stall_ = 0;
  rob_stall_ = mshr_stall_ = 0;
  sq_full_stall_ = sq_full_events_ = mshr_full_events_ = 0;
  for (auto& pf : pf_) pf.reset_stats();
  pf_writes_ = pf_violations_ = 0;
  // Clocks restart at 0: prefetches in flight count as complete.
  std::fill(pf_ready_.begin(), pf_ready_.end(), 0);
  for (auto& spf : spf_) spf.reset_stats();
  pfs_ = PrefetchStats{};
  if (epochs_) epochs_->reset_stats();
  nvm_ = NvmStats{};
  rb_.reset_stats();
  if (timed_) timed_->reset_stats();
  coh_ = CoherenceStats{};
  vol_ = VolatilityStats{};
  // Clocks restart at 0: lines dirty now count as dirty since 0, the sweep starts over.
  for (auto& t : since_)
    if (t != detail::kNever) t = 0;
  for (auto& [line, t] : private_since_) t = 0;
  restart_sweep();
}

// ---------------------------------------------------------------------------------------------
// Periodic cleaning (LP §III-E): a sweep pointer walks the LLC sets, cleaning set s when the
// clock passes p·T + (s+1)·T/S, so each dirty line is written back (and kept, clean) once per
// period and the write-backs are spread evenly over it, as DRAM refreshes are.

std::uint64_t Hierarchy::sweep_due() const {
  const U due = U{sweep_period_} * period_ + U{sweep_set_ + 1} * period_ / llc_.sets();
  return due >= U{detail::kNever} ? detail::kNever : static_cast<std::uint64_t>(due);
}

void Hierarchy::restart_sweep() {
  sweep_set_ = sweep_period_ = 0;
  next_due_ = period_ == 0 ? detail::kNever : sweep_due();
  set_deadlines();
}

void Hierarchy::set_deadlines() {
  for (auto& c : cores_) {
    c.deadline = next_due_;
    detail::refresh_deadline_stop(c, issue_);  // the inline path's store stop
  }
}

// The cleaning hardware follows whichever core's clock is furthest ahead: the triggering core
// has reached `now`, and every set due by then is cleaned before its next op.
void Hierarchy::periodic_tick(int core) {
  const std::uint64_t now = cores_[static_cast<std::size_t>(core)].clock;
  if (now < next_due_) return;
  const std::uint64_t sets = llc_.sets();
  if (now - next_due_ >= period_) {
    // A whole period or more is due (a long stall, or T < a few cycles): every set is due at
    // least once and nothing ran in between, so one cleaning of each is exactly the same.
    for (std::uint64_t i = 0; i < sets; ++i) clean_set((sweep_set_ + i) % sets, now, core);
    // Resume at the first set due after `now`: the smallest s with (s+1)·T/S > now − p·T,
    // i.e. s + 1 >= ceil((r + 1)·S / T); r < T keeps it below S.
    sweep_period_ = now / period_;
    const std::uint64_t r = now - sweep_period_ * period_;
    sweep_set_ = static_cast<std::uint64_t>((U{r + 1} * sets + period_ - 1) / period_) - 1;
  } else {
    while (next_due_ <= now) {
      clean_set(sweep_set_, now, core);
      if (++sweep_set_ == sets) {
        sweep_set_ = 0;
        ++sweep_period_;
      }
      next_due_ = sweep_due();
    }
  }
  next_due_ = sweep_due();
  set_deadlines();
}

// Writes back every dirty line of LLC set `set` (copies stay, clean). The writes enter the
// triggering core's write-queue share at `t` like any other write, but never stall the core:
// the cleaning runs in the background, and only competes for the controller.
void Hierarchy::clean_set(std::uint64_t set, std::uint64_t t, int core) {
  const std::size_t base = static_cast<std::size_t>(set) * llc_.ways();
  for (std::size_t s = base; s < base + llc_.ways(); ++s) {
    const std::uint64_t line = llc_.tag(s);
    if (line == kInvalidTag) continue;
    bool dirty = (llc_.state(s) & kDirty) != 0;
    // Only the exclusive owner's private copies can be dirty (a Shared copy never is).
    if (const int owner = llc_.owner(s); owner >= 0)
      dirty |= strip_private(owner, line, Strip::kClean);
    if (!dirty) continue;
    llc_.drop_state(s, kDirty);
    nvm_write(line, WriteCause::kPeriodic, t, core, take_since(s, line));
  }
  if (params_.inclusive_llc) return;
  // Non-inclusive LLC (1 core): private lines the LLC no longer holds are swept with it, the
  // private sets spread over the LLC's the same way, so each is cleaned once per period too.
  for (int c = 0; c < params_.cores; ++c) {
    for (int lv = 0; lv < npriv_; ++lv) {
      const Cache& pc = priv(c, lv);
      const std::uint64_t from = set * pc.sets() / llc_.sets();
      const std::uint64_t to = (set + 1) * pc.sets() / llc_.sets();
      for (std::size_t s = from * pc.ways(); s < to * pc.ways(); ++s) {
        const std::uint64_t line = pc.tag(s);
        if (line == kInvalidTag || (pc.state(s) & kDirty) == 0 || llc_.find(line) != kNoSlot)
          continue;
        strip_private(c, line, Strip::kClean);
        nvm_write(line, WriteCause::kPeriodic, t, core, take_since(kNoSlot, line));
      }
    }
  }
}

void Hierarchy::stop_modelling() {
  period_ = 0;
  next_due_ = detail::kNever;
  set_deadlines();
}

// ---------------------------------------------------------------------------------------------
// Stream prefetcher (SimParams::prefetch, src/sim/stream_prefetcher.hpp). A prefetch is a read
// like a demand load's (fetch_from_llc, fill_private: the directory, inclusion and the LLC's
// replacement as for any fill), sent when the prefetcher sees its trigger and complete one
// read later, but the core does not wait for it: only a demand access to the line before then
// does (late). Until its first use the line is hidden in the L1 (Cache::hide), so that the
// inline path sends that use here. A prefetched line is clean: a prefetch writes nothing and
// changes what the crash image holds only as any access does, by the victims it evicts.

std::uint64_t Hierarchy::prefetch_use(int core, std::size_t s1) {
  priv(core, 0).reveal(s1);
  ++pfs_.used;
  return pf_ready_[static_cast<std::size_t>(core) * priv(core, 0).slots() + s1];
}

void Hierarchy::prefetch_issue(int core, const StreamPrefetcher::Requests& r, std::uint64_t t) {
  for (unsigned i = 0; i < r.count; ++i) prefetch_line(core, r.lines[i], t);
}

void Hierarchy::prefetch_line(int core, std::uint64_t line, std::uint64_t t) {
  Cache& l1 = priv(core, 0);
  if (l1.find(line) != kNoSlot) return;  // gem5's L1 drops a prefetch of a line it holds
  if (interval_) {
    // It needs a free MSHR (fill buffer) to be sent, but holds none after: barriers and the
    // run's end do not wait for prefetches (pmlab's simplification).
    const IntervalCore& ic = icore_[static_cast<std::size_t>(core)];
    bool free = false;
    for (std::size_t i = 0; i < ic.mshrs && !free; ++i) free = ic.mshr[i] <= t;
    if (!free) {
      ++pfs_.dropped;
      return;
    }
  }
  ++pfs_.issued;
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  // The fill runs at the prefetch's time (a timed NVM read arrives then, a victim's write-back
  // is queued then); a full write queue may still stall the core, as for any eviction.
  const std::uint64_t now = cs.clock;
  cs.clock = t;
  std::uint64_t lat = 0;
  std::uint8_t st = 0;
  bool in_l2 = false;
  if (npriv_ == 2) {
    Cache& l2 = priv(core, 1);
    if (const std::size_t s2 = l2.find(line); s2 != kNoSlot) {
      ++l2.counters().hits;
      l2.touch(s2);
      st = static_cast<std::uint8_t>(l2.state(s2) & kExclusive);
      lat = l2.latency().value();
      in_l2 = true;
    }
  }
  const std::size_t s1 = fill_private_levels(core, line, false, in_l2, st, lat);
  cs.clock = std::max(now, cs.clock);
  l1.hide(s1);
  pf_ready_[static_cast<std::size_t>(core) * l1.slots() + s1] = t + lat;
  // The fill made the line its set's MRU way: the set's filter entry no longer is (its
  // re-touch would now change the order). And no way hint may lead to a hidden line: the lines
  // that share a hint share their set (the hint's index holds the set bits), so a slot of the
  // next set holds none of them (not s1 ^ 1, which may hold another hidden line of this hint,
  // as SimPrefetch.InlinePathSeesEveryFirstUse found).
  filter_entry(core, line) = detail::kNoEntry;
  if (cs.l1_lean8)
    cs.l1_hint[line & cs.l1_hint_mask] =
        static_cast<std::uint32_t>((s1 + l1.ways()) & (l1.slots() - 1));
}

// ---------------------------------------------------------------------------------------------
// Interval core model (CoreModel::kInterval, params.hpp). The core clock is the dispatch time
// of the next instruction. Memory latency becomes time only through three structural limits:
// the reorder buffer (a load that has not completed stops retirement, and dispatch once
// rob_entries instructions are behind it), the MSHRs (misses and flushes in flight), and the
// write queue (write_back_victim, nvm_write).

void Hierarchy::rob_stall(int core) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  IntervalCore& ic = icore_[static_cast<std::size_t>(core)];
  const std::size_t mask = ic.ring_mask;
  const std::uint64_t before = cs.clock;
  // Loads rob_entries or more instructions back must have retired before dispatch goes on.
  while (ic.count != 0 && ic.ring[ic.head].inst + rob_entries_ <= cs.insts) {
    cs.clock = std::max(cs.clock, ic.ring[ic.head].retire);
    ic.head = (ic.head + 1) & mask;
    --ic.count;
  }
  // Retirement is in order, so the loads retired by now are a prefix: they block nothing.
  while (ic.count != 0 && ic.ring[ic.head].retire <= cs.clock) {
    ic.head = (ic.head + 1) & mask;
    --ic.count;
  }
  cs.rob_limit = ic.count != 0 ? ic.ring[ic.head].inst + rob_entries_ : detail::kNever;
  rob_stall_ += cs.clock - before;
}

std::uint64_t Hierarchy::after_fill(int core, std::uint64_t line, std::uint64_t t) const {
  const IntervalCore& ic = icore_[static_cast<std::size_t>(core)];
  for (std::size_t i = 0; i < ic.mshrs; ++i)
    if (ic.fill_line[i] == line) t = std::max(t, ic.mshr[i]);
  return t;
}

std::uint64_t Hierarchy::sq_send(int core, std::uint64_t t) {
  detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  IntervalCore& ic = icore_[static_cast<std::size_t>(core)];
  if (ic.sq_count == ic.sq.size()) {  // full: dispatch waits for the oldest entry
    const std::uint64_t oldest = ic.sq[ic.sq_head];
    ++sq_full_events_;
    if (oldest > cs.clock) {
      sq_full_stall_ += oldest - cs.clock;
      cs.clock = oldest;
    }
    ic.sq_head = (ic.sq_head + 1) % ic.sq.size();
    --ic.sq_count;
  }
  t = std::max(t, cs.clock);
  return sq_tso_ ? std::max(t, ic.sq_last_done) : t;
}

void Hierarchy::sq_push(int core, std::uint64_t done) {
  IntervalCore& ic = icore_[static_cast<std::size_t>(core)];
  // Entries that completed by now leave first (in order: the oldest is at the head).
  const std::uint64_t now = cores_[static_cast<std::size_t>(core)].clock;
  while (ic.sq_count > 0 && ic.sq[ic.sq_head] <= now) {
    ic.sq_head = (ic.sq_head + 1) % ic.sq.size();
    --ic.sq_count;
  }
  ic.sq[(ic.sq_head + ic.sq_count) % ic.sq.size()] = done;
  ++ic.sq_count;
  ic.sq_last_done = std::max(ic.sq_last_done, done);
}

std::uint64_t Hierarchy::drained(int core) const {
  const detail::CoreState& cs = cores_[static_cast<std::size_t>(core)];
  const IntervalCore& ic = icore_[static_cast<std::size_t>(core)];
  std::uint64_t t = std::max({cs.clock, cs.flush_done, ic.count != 0 ? ic.last_retire : 0});
  for (std::size_t i = 0; i < ic.mshrs; ++i) t = std::max(t, ic.mshr[i]);
  return t;
}

void Hierarchy::reset_interval() {
  for (std::size_t c = 0; c < icore_.size(); ++c) {
    IntervalCore& ic = icore_[c];
    ic.head = ic.count = 0;
    ic.last_retire = 0;
    std::fill(ic.mshr.begin(), ic.mshr.end(), 0);
    std::fill(ic.fill_line.begin(), ic.fill_line.end(), kNoFill);
    ic.sq_head = ic.sq_count = 0;
    ic.sq_last_done = 0;
    cores_[c].slot = 0;
    cores_[c].rob_limit = detail::kNever;
  }
}

LineState Hierarchy::probe(int core, std::uint64_t line) const {
  LineState r;
  r.in_l1 = priv(core, 0).find(line) != kNoSlot;
  r.in_l2 = npriv_ == 2 && priv(core, 1).find(line) != kNoSlot;
  const std::size_t s = llc_.find(line);
  if (s == kNoSlot) {  // cached nowhere, or (non-inclusive LLC) privately only
    for (int c = 0; c < params_.cores; ++c) {
      bool held = false;
      for (int lv = 0; lv < npriv_; ++lv) {
        const std::size_t ps = priv(c, lv).find(line);
        if (ps == kNoSlot) continue;
        held = true;
        if ((priv(c, lv).state(ps) & kDirty) != 0) r.dirty = true;
      }
      r.private_copies += held ? 1 : 0;
    }
    return r;
  }
  r.in_llc = true;
  if (epochs_ && epochs_->tagged(s)) {
    r.epoch_core = epochs_->tag_core(s);
    r.epoch_seq = epochs_->tag_seq(s);
  }
  r.dirty = (llc_.state(s) & kDirty) != 0;
  r.private_copies = std::popcount(llc_.sharers(s));
  for_each_core(llc_.sharers(s), [&](int c) {
    for (int lv = 0; lv < npriv_; ++lv) {
      const std::size_t ps = priv(c, lv).find(line);
      if (ps != kNoSlot && (priv(c, lv).state(ps) & kDirty) != 0) r.dirty = true;
    }
  });
  return r;
}

SimStats Hierarchy::stats() const {
  SimStats s;
  s.loads = loads_;
  s.stores = stores_;
  s.flushes = flushes_;
  s.dirty_flushes = dirty_flushes_;
  s.fences = fences_;
  s.fence_stall_cycles = fence_stall_;
  s.rob_stall_cycles = rob_stall_;
  s.mshr_stall_cycles = mshr_stall_;
  s.mshr_full_events = mshr_full_events_;
  s.sq_full_stall_cycles = sq_full_stall_;
  s.sq_full_events = sq_full_events_;
  s.nvm = nvm_;
  if (timed_)
    s.nvm.row_buffer = timed_->snapshot();
  else if (params_.nvm.row_buffer.enabled)
    s.nvm.row_buffer = rb_.snapshot();
  if (dram_) s.dram_cache = dram_->stats();
  s.coherence = coh_;
  for (int lv = 0; lv < npriv_; ++lv) {
    LevelStats sum{priv(0, lv).name()};
    for (int c = 0; c < params_.cores; ++c) {
      const LevelStats& x = priv(c, lv).stats();
      sum.hits += x.hits;
      sum.misses += x.misses;
      sum.evictions += x.evictions;
      sum.dirty_evictions += x.dirty_evictions;
    }
    s.levels.push_back(sum);
  }
  s.levels.push_back(llc_.stats());
  std::uint64_t max_clock = 0;
  for (int i = 0; i < params_.cores; ++i) {
    const detail::CoreState& c = cores_[static_cast<std::size_t>(i)];
    // Interval model: a core's time includes the operations it still has in flight.
    const std::uint64_t clock = interval_ ? drained(i) : c.clock;
    s.core_cycles.emplace_back(clock);
    max_clock = std::max(max_clock, clock);
    if (interval_) s.instructions += c.insts;  // the memory model's are L1-hit cycles
    s.filtered_accesses += c.filtered;
    s.stores += c.filtered_stores + c.l1_hit_stores;
    s.loads += (c.filtered - c.filtered_stores) + (c.l1_hits - c.l1_hit_stores);
    s.levels.front().hits += c.l1_hits;
  }
  s.levels.front().hits += s.filtered_accesses;  // the filter serves only L1 hits
  s.cycles = Cycles(max_clock);
  s.volatility = vol_;
  if (epochs_) s.epochs = epochs_->stats();
  if (!pf_.empty()) {
    PreflushStats p;
    for (const Preflusher& pf : pf_) {
      const PreflushStats& x = pf.stats();
      p.issued += x.issued;
      p.correct += x.correct;
      p.mispredicted_store += x.mispredicted_store;
      p.nacked += x.nacked;
      p.tag_evictions += x.tag_evictions;
      p.marks_lost += x.marks_lost;
      p.uncovered_flushes += x.uncovered_flushes;
      p.signatures_inserted += x.signatures_inserted;
      p.dir_back_invalidations += x.dir_back_invalidations;
      p.storage_bytes_per_core = x.storage_bytes_per_core;
    }
    p.nvm_writes = pf_writes_;
    p.dir_evictions = pf_dir_.evictions();
    p.dir_occupancy_max = pf_dir_.occupancy_max();
    p.transparency_violations = pf_violations_;
    s.preflush = p;
  }
  if (prefetch_) {
    PrefetchStats p = pfs_;
    for (const StreamPrefetcher& spf : spf_) p.streams += spf.streams_allocated();
    s.prefetch = p;
  }
  const auto open = [&](std::uint64_t since) {
    ++s.volatility.open_lines;
    s.volatility.open_max_cycles =
        std::max(s.volatility.open_max_cycles, max_clock > since ? max_clock - since : 0);
  };
  for (std::uint64_t t : since_)
    if (t != detail::kNever) open(t);
  for (const auto& [line, t] : private_since_) open(t);
  return s;
}

}  // namespace pmlab::sim
