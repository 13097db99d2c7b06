// The epoch engine (seed 004): LB conflict rules, IDT registers, PF, splitting, ordered epoch
// flushes.
#include "epochs.hpp"

#include <algorithm>

#include "hierarchy.hpp"

namespace pmlab::sim {

namespace {
WriteCause write_cause(EpochCause c) {
  switch (c) {
    case EpochCause::kProactive:
      return WriteCause::kEpochProactive;
    case EpochCause::kDrain:
      return WriteCause::kDrain;
    default:
      return WriteCause::kEpochOnline;
  }
}
std::size_t idx(EpochCause c) {
  return static_cast<std::size_t>(c);
}
}  // namespace

EpochEngine::EpochEngine(Hierarchy& h, const PersistencyParams& p, int cores, std::size_t llc_slots)
    : h_(h),
      p_(p),
      cores_(static_cast<std::size_t>(cores)),
      tag_core_(llc_slots, -1),
      tag_seq_(llc_slots, 0) {
  for (Core& k : cores_) k.ring.emplace_back();  // epoch 0 is ongoing
}

EpochEngine::Epoch* EpochEngine::find(int c, std::uint64_t seq) {
  std::deque<Epoch>& r = ring(c);
  if (seq < r.front().seq || seq > r.back().seq) return nullptr;
  return &r[static_cast<std::size_t>(seq - r.front().seq)];
}

std::uint64_t& EpochEngine::clock(int c) {
  return h_.cores_[static_cast<std::size_t>(c)].clock;
}

// An online persist: the requester waits until what it needs is durable (clock skew between
// cores is clamped at 0, as elsewhere).
void EpochEngine::stall(int c, std::uint64_t until, EpochCause cause) {
  std::uint64_t& t = clock(c);
  if (until <= t) return;
  stats_.stall_cycles[idx(cause)] += until - t;
  t = until;
}

void EpochEngine::set_tag(std::size_t slot, int c, std::uint64_t seq) {
  tag_core_[slot] = static_cast<std::int8_t>(c);
  tag_seq_[slot] = seq;
  Epoch& ep = ring(c).back();
  ++ep.pending;
  ep.lines.push_back(h_.llc_.tag(slot));
  if (p_.bsp_log) {
    // BSP's hardware log (bulk mode): the line's first store in this epoch writes a log entry
    // to NVM, off the core's critical path but through its write-queue share, and the line's
    // own write must not start before it (write_lines, before_victim, the IDT WAW path).
    ++stats_.log_writes;
    ep.log_done = std::max(ep.log_done, h_.queue_write(c, clock(c) + h_.llc_.latency().value()));
  }
}

void EpochEngine::untag(std::size_t slot) {
  const int s = tag_core_[slot];
  if (s < 0) return;
  tag_core_[slot] = -1;
  if (Epoch* ep = find(s, tag_seq_[slot]); ep != nullptr && ep->pending > 0) --ep->pending;
}

void EpochEngine::next_epoch(int c) {
  std::deque<Epoch>& r = ring(c);
  r.back().completed = true;
  r.back().completed_at = clock(c);
  const std::uint64_t ended = r.back().seq;
  r.emplace_back().seq = ended + 1;
  // The filter lets a store to a line dirty in L1 skip every check; that line may now belong
  // to an older epoch (an intra conflict), so the core's next store to it must look.
  h_.clear_filter_dirty(c);
  if (p_.pf()) cores_[static_cast<std::size_t>(c)].pf.push_back(ended);
}

void EpochEngine::enforce_capacity(int c, bool online) {
  std::deque<Epoch>& r = ring(c);
  while (r.size() > p_.max_inflight) {
    const std::uint64_t front = r.front().seq;
    const std::uint64_t done = persist_upto(c, front, EpochCause::kCapacity, clock(c));
    if (online) stall(c, done, EpochCause::kCapacity);
    if (r.front().seq == front) break;  // blocked by a mutant's dependence cycle
  }
}

std::uint64_t EpochEngine::persist_deps(const Epoch& ep, EpochCause cause, std::uint64_t t) {
  std::uint64_t ready = ep.dep_done;
  if (p_.debug.ignore_deps) return 0;
  // By index: persisting a source never touches this epoch's own registers.
  for (std::size_t i = 0; i < ep.deps.size(); ++i) {
    const Ref r = ep.deps[i];
    if (!persisted(r)) ready = std::max(ready, persist_upto(r.core, r.seq, cause, t));
  }
  return ready;
}

void EpochEngine::write_lines(int s, Epoch& ep, WriteCause wc, std::uint64_t start, int bank) {
  const std::uint64_t hl = h_.llc_.latency().value();
  start = std::max(start, ep.log_done);
  std::uint64_t i = 0, last = 0;
  for (const std::uint64_t line : ep.lines) {
    if (bank >= 0 && static_cast<int>(line & 1) != bank) continue;
    const std::size_t slot = h_.llc_.find(line);
    // Lazily validated: the line may have left (or been written) since it was tagged.
    if (slot == kNoSlot || tag_core_[slot] != s || tag_seq_[slot] != ep.seq) continue;
    untag(slot);
    last = std::max(last, h_.epoch_write_line(slot, start + i + hl, s, wc));
    ++i;
  }
  if (bank < 0) ep.lines.clear();
  ep.done = std::max(ep.done, i != 0 ? last + p_.epoch_ack.value() : start);
}

std::uint64_t EpochEngine::persist_upto(int s, std::uint64_t seq, EpochCause cause,
                                        std::uint64_t t) {
  ++depth_;
  Core& k = cores_[static_cast<std::size_t>(s)];
  const WriteCause wc = write_cause(cause);
  if (p_.debug.per_bank_no_arbiter) {
    // Fig. 7a: without the L1 arbiter each of 2 banks flushes its own lines of every epoch
    // in order, bank 1 first, so bank 1's line of a younger epoch can beat bank 0's older one.
    for (int bank : {1, 0})
      for (Epoch& ep : k.ring) {
        if (ep.seq > seq || ep.flushing) break;
        write_lines(s, ep, wc, std::max(t, k.last_done), bank);
      }
  }
  while (k.ring.front().seq <= seq) {
    Epoch& ep = k.ring.front();
    if (ep.flushing) break;  // a dependence cycle: only the no_split mutant builds one
    ep.flushing = true;
    std::uint64_t start = std::max(t, k.last_done);
    start = std::max(start, persist_deps(ep, cause, t));
    write_lines(s, ep, wc, start, -1);
    if (!ep.has_cause) {
      ep.has_cause = true;
      ep.cause = cause;
    }
    ep.flushing = false;
    // An ongoing epoch is asked for only by the no_split mutant: its lines so far are
    // written, but it stays open (and unpersisted), which is the bug splitting prevents.
    if (!ep.completed) break;
    retire_front(s);
  }
  --depth_;
  const Epoch* e = find(s, seq);
  const std::uint64_t done = e != nullptr ? e->done : k.last_done;
  settle();
  return done;
}

void EpochEngine::retire_front(int c) {
  Core& k = cores_[static_cast<std::size_t>(c)];
  Epoch& ep = k.ring.front();
  k.last_done = std::max(k.last_done, ep.done);
  ++stats_.epochs;
  ++stats_.flushed_by[idx(ep.has_cause ? ep.cause : EpochCause::kNatural)];
  // Inform registers: each dependent learns its source is durable (and when).
  for (const Ref d : ep.informs) {
    if (Epoch* x = find(d.core, d.seq)) x->dep_done = std::max(x->dep_done, ep.done);
    wake_.push_back(d.core);
  }
  k.ring.pop_front();
}

void EpochEngine::try_retire(int c) {
  std::deque<Epoch>& r = ring(c);
  while (r.front().completed && !r.front().flushing && r.front().pending == 0) {
    const Epoch& ep = r.front();
    if (!p_.debug.ignore_deps &&
        !std::all_of(ep.deps.begin(), ep.deps.end(), [&](Ref d) { return persisted(d); }))
      return;
    retire_front(c);
  }
}

void EpochEngine::settle() {
  if (depth_ != 0) return;
  ++depth_;
  while (!wake_.empty()) {
    const int c = wake_.back();
    wake_.pop_back();
    try_retire(c);
    if (p_.pf()) pump_pf(c);
  }
  --depth_;
}

// PF (seed §3.2): the arbiter flushes completed epochs in order, each once its predecessors and
// the sources in its dependence registers are durable. It waits for sources (their inform
// registers wake it), it never forces them, and nobody stalls for it.
void EpochEngine::pump_pf(int c, std::uint64_t now) {
  Core& k = cores_[static_cast<std::size_t>(c)];
  while (!k.pf.empty()) {
    const std::uint64_t seq = k.pf.front();
    if (seq < k.ring.front().seq) {
      k.pf.pop_front();
      continue;
    }
    bool ready = true;
    if (!p_.debug.ignore_deps)
      for (const Epoch& ep : k.ring) {
        if (ep.seq > seq) break;
        for (const Ref d : ep.deps) ready = ready && persisted(d);
      }
    if (!ready) return;
    // The arbiter flushes one epoch at a time (seed §4.1): a completed epoch's proactive flush
    // starts when both it has completed and the previous epoch's PersistCMP has arrived. The
    // engine has no event queue, so it settles this lazily: whoever observes the core's
    // epochs at time `now` (its barrier, an access to one of its tagged lines) first lets the
    // flushes that would have started by then happen, at their own start times. A store to a
    // line of an epoch still queued is then an intra conflict, as on the paper's machine, where
    // PF lowers conflicts (90% -> 77%) rather than removing them. pf_instant: start at once.
    std::uint64_t start = now;
    if (!p_.pf_instant) {
      const Epoch* ep = find(c, seq);
      start = std::max(k.last_done, ep != nullptr ? ep->completed_at : 0);
      if (start > now) return;
    }
    persist_upto(c, seq, EpochCause::kProactive, start);
    if (k.ring.front().seq <= seq) return;  // blocked (a mutant's cycle)
    if (!k.pf.empty() && k.pf.front() == seq) k.pf.pop_front();
  }
}

bool EpochEngine::add_dep(int s, std::uint64_t seq, int c) {
  Epoch* src = find(s, seq);
  if (src == nullptr) return true;  // already persisted: nothing to wait for
  Epoch& dst = ring(c).back();
  const std::uint32_t regs = p_.idt_regs;
  // One register per source core: a younger source epoch implies the older ones.
  for (Ref& r : dst.deps) {
    if (r.core != s) continue;
    if (r.seq >= seq) return true;
    if (src->informs.size() >= regs) return false;
    r.seq = seq;
    src->informs.push_back({c, dst.seq});
    ++stats_.idt_deps;
    return true;
  }
  if (dst.deps.size() >= regs || src->informs.size() >= regs) return false;
  dst.deps.push_back({s, seq});
  src->informs.push_back({c, dst.seq});
  ++stats_.idt_deps;
  return true;
}

// D5: a dependence on an ongoing epoch ends it here (a hardware barrier on the source core),
// so every dependence has a completed source and the dependence graph stays acyclic.
void EpochEngine::split(int s, std::uint64_t t) {
  (void)t;
  ++stats_.splits;
  next_epoch(s);
  enforce_capacity(s, false);
}

void EpochEngine::before_access(int c, std::uint64_t line, bool is_store) {
  const std::size_t slot = h_.llc_.find(line);
  if (slot == kNoSlot || tag_core_[slot] < 0) return;
  if (p_.pf() && !cores_[static_cast<std::size_t>(tag_core_[slot])].pf.empty()) {
    // Before a conflict is declared, the proactive flushes the owner's arbiter has started by
    // now (pump_pf) come first: the line may already be on its way to NVM. Only where a
    // conflict is possible, so that the same-line filter (which skips repeated accesses, never
    // a conflicting one) cannot change when PF runs.
    const int owner = tag_core_[slot];
    const bool may_conflict = owner == c ? is_store && tag_seq_[slot] != current(c)
                                         : is_store || ((h_.llc_.sharers(slot) >> c) & 1) == 0;
    if (may_conflict) {
      ++depth_;  // informs wake other cores' PF only after this pump (settle)
      pump_pf(owner, clock(c));
      --depth_;
      settle();
      if (tag_core_[slot] < 0) return;
    }
  }
  const int s = tag_core_[slot];
  const std::uint64_t e = tag_seq_[slot];
  const std::uint64_t t = clock(c);
  ++depth_;
  if (s == c) {
    // A load of one's own line never conflicts; a store to a line of an older own epoch does.
    if (is_store && e != current(c)) {
      if (p_.debug.no_intra_flush)
        untag(slot);
      else
        stall(c, persist_upto(c, e, EpochCause::kIntra, t), EpochCause::kIntra);
    }
  } else if (!is_store) {
    // Inter RAW. A held copy was read at its miss, when the rule already ran.
    if (((h_.llc_.sharers(slot) >> c) & 1) == 0) {
      if (e == current(s) && !p_.debug.no_split) split(s, t);
      const bool tracked = p_.idt() && add_dep(s, e, c);
      if (!tracked) {
        if (p_.idt()) ++stats_.idt_overflows;
        stall(c, persist_upto(s, e, EpochCause::kInterRaw, t), EpochCause::kInterRaw);
      }
    }
  } else if (p_.idt() && p_.debug.dep_only_waw) {
    // The literal reading of IDT for writes (unsound, D4): only a dependence, the line changes
    // hands.
    if (e == current(s) && !p_.debug.no_split) split(s, t);
    if (!add_dep(s, e, c)) {
      ++stats_.idt_overflows;
      stall(c, persist_upto(s, e, EpochCause::kInterWaw, t), EpochCause::kInterWaw);
    }
    untag(slot);
  } else if (p_.idt()) {
    // Inter WAW under IDT (D4): L's bytes of (s, e) are written back once everything (s, e)
    // must follow is durable; then c's store owns L and no dependence is needed.
    std::uint64_t ready = t;
    if (e > 0) ready = std::max(ready, persist_upto(s, e - 1, EpochCause::kInterWaw, t));
    Epoch* ep = find(s, e);
    if (ep != nullptr) {
      ep->flushing = true;
      ready = std::max(ready, persist_deps(*ep, EpochCause::kInterWaw, t));
      ready = std::max(ready, ep->log_done);
      ep->flushing = false;
    }
    untag(slot);
    const std::uint64_t acc =
        h_.epoch_write_line(slot, ready + h_.llc_.latency().value(), s, WriteCause::kEpochOnline);
    if (ep != nullptr) ep->done = std::max(ep->done, acc + p_.epoch_ack.value());
    stall(c, acc, EpochCause::kInterWaw);
    try_retire(s);
  } else {
    if (e == current(s) && !p_.debug.no_split) split(s, t);
    stall(c, persist_upto(s, e, EpochCause::kInterWaw, t), EpochCause::kInterWaw);
  }
  --depth_;
  settle();
}

void EpochEngine::after_store(int c, std::uint64_t line, std::size_t slot) {
  if (slot == kNoSlot || tag_core_[slot] >= 0) return;
  // D1: only registered persistent lines have a persist order.
  const auto* p = reinterpret_cast<const std::byte*>(line * kCacheLineBytes);
  if (!h_.image_.covers(p) && !h_.image_.covers(p + kCacheLineBytes - 1)) return;
  if (p_.bsp_write_through) return;  // written through right after the store (write_through)
  set_tag(slot, c, current(c));
}

void EpochEngine::before_victim(std::size_t slot, int core) {
  const int s = tag_core_[slot];
  const std::uint64_t e = tag_seq_[slot];
  ++depth_;
  if (!p_.debug.no_replacement_order) {
    // The victim counts towards (s, e): everything it must follow becomes durable first.
    const std::uint64_t t = clock(core);
    std::uint64_t ready = t;
    if (e > 0) ready = std::max(ready, persist_upto(s, e - 1, EpochCause::kReplacement, t));
    if (Epoch* ep = find(s, e)) {
      ep->flushing = true;
      ready = std::max(ready, persist_deps(*ep, EpochCause::kReplacement, t));
      ready = std::max(ready, ep->log_done);
      ep->flushing = false;
    }
    stall(core, ready, EpochCause::kReplacement);
  }
  untag(slot);
  victim_ = {s, e};
  --depth_;
}

void EpochEngine::after_victim(int core) {
  if (victim_.core >= 0) {
    if (Epoch* ep = find(victim_.core, victim_.seq)) ep->done = std::max(ep->done, clock(core));
    ++depth_;
    try_retire(victim_.core);
    --depth_;
    victim_ = {-1, 0};
  }
  settle();
}

void EpochEngine::barrier(int c, bool bsp) {
  ++depth_;
  ++(bsp ? stats_.bsp_barriers : stats_.barriers);
  next_epoch(c);
  try_retire(c);
  if (p_.pf()) pump_pf(c);
  enforce_capacity(c, true);
  --depth_;
  settle();
}

// Naive write-through BSP: the store goes on to NVM now and the core waits for the controller to
// accept it before its next access (strict order, nothing buffered). The line is left clean,
// so the same-line filter lets no later store to it skip this.
void EpochEngine::write_through(int c, std::uint64_t line) {
  const std::size_t slot = h_.llc_.find(line);
  if (slot == kNoSlot) return;
  const auto* p = reinterpret_cast<const std::byte*>(line * kCacheLineBytes);
  if (!h_.image_.covers(p) && !h_.image_.covers(p + kCacheLineBytes - 1)) return;
  ++stats_.write_through;
  const std::uint64_t acc =
      h_.epoch_write_line(slot, clock(c) + h_.llc_.latency().value(), c, WriteCause::kEpochOnline);
  std::uint64_t& t = clock(c);
  t = std::max(t, acc);
}

void EpochEngine::drain(std::uint64_t t) {
  ++depth_;
  const int n = static_cast<int>(cores_.size());
  for (int c = 0; c < n; ++c)
    if (ring(c).back().pending != 0) next_epoch(c);
  // persist_upto follows dependences across cores, so this is a happens-before order.
  for (int c = 0; c < n; ++c) {
    const std::uint64_t last = current(c);
    if (last > 0) persist_upto(c, last - 1, EpochCause::kDrain, t);
  }
  for (Core& k : cores_) k.pf.clear();
  --depth_;
  settle();
}

void EpochEngine::power_fail() {
  std::fill(tag_core_.begin(), tag_core_.end(), std::int8_t{-1});
  for (Core& k : cores_) {
    const std::uint64_t next = k.ring.back().seq + 1;
    k.ring.clear();
    k.ring.emplace_back().seq = next;
    k.pf.clear();
    k.last_done = 0;
  }
  wake_.clear();
  victim_ = {-1, 0};
}

void EpochEngine::reset_stats() {
  stats_ = EpochStats{};
  // Clocks restart at 0: completion times from before mean "already done".
  for (Core& k : cores_) {
    k.last_done = 0;
    for (Epoch& ep : k.ring) ep.done = ep.dep_done = ep.log_done = 0;
  }
}

}  // namespace pmlab::sim
