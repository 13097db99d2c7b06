// Seed 004's hardware epoch persistency: per-line (core, epoch) tags, per-core epoch rings,
// LB/IDT/PF/split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"

namespace pmlab::sim {

class Hierarchy;

// The epoch engine of docs/simulator.md "Persist barriers (seed 004)". It lives beside the
// Hierarchy (a friend: it cleans, invalidates and writes lines through it) and exists only under
// a hardware barrier, so the other modes pay nothing for it.
//
// Tags sit per LLC slot (the inclusive LLC holds every dirty line). An epoch (core, seq) is
// *persisted* once every line tagged with it has been written, its core's older epochs are
// persisted, and every epoch it depends on (IDT) is persisted; it then leaves its core's ring.
// A line's image is captured when the model decides to write it, in op order, so the order of
// the crash image is the order of these decisions; time only says when requesters may go on.
class EpochEngine {
 public:
  EpochEngine(Hierarchy& h, const PersistencyParams& p, int cores, std::size_t llc_slots);

  // Before an access of `core` reaches the caches: the conflict rules (intra, inter RAW/WAW).
  void before_access(int core, std::uint64_t line, bool is_store);
  // After a store dirtied `line` (in LLC slot `slot`): tag it with the core's ongoing epoch.
  void after_store(int core, std::uint64_t line, std::size_t slot);
  // The LLC is about to write back tagged victim `slot` for `core`'s miss: older epochs first.
  void before_victim(std::size_t slot, int core);
  void after_victim(int core);  // the victim's write is accepted (the core's clock)
  // The line in `slot` left the hierarchy some other way (a flush instruction): untag it.
  void untag(std::size_t slot);
  void barrier(int core, bool bsp = false);
  // Naive write-through BSP: `core` stored to `line` (its bytes have landed).
  void write_through(int core, std::uint64_t line);  // bsp: a hardware-inserted end (bulk mode)
  void drain(std::uint64_t t);  // write_back_all: every epoch, in happens-before order
  void power_fail();
  void reset_stats();
  [[nodiscard]] EpochStats stats() const { return stats_; }
  [[nodiscard]] bool tagged(std::size_t slot) const { return tag_core_[slot] >= 0; }
  [[nodiscard]] int tag_core(std::size_t slot) const { return tag_core_[slot]; }
  [[nodiscard]] std::uint64_t tag_seq(std::size_t slot) const { return tag_seq_[slot]; }
  [[nodiscard]] std::uint64_t current(int core) const { return ring(core).back().seq; }

 private:
  struct Ref {
    int core;
    std::uint64_t seq;
  };
  struct Epoch {
    std::uint64_t seq = 0;
    bool completed = false;
    std::uint64_t completed_at = 0;  // the core's clock at its barrier (PF may start then)
    bool flushing = false;           // a flush of it is in progress (guards the mutants' cycles)
    bool has_cause = false;
    EpochCause cause = EpochCause::kNatural;
    std::uint32_t pending = 0;         // lines tagged with it now
    std::vector<std::uint64_t> lines;  // lines ever tagged with it (checked against the tag)
    std::uint64_t done = 0;            // when its last write + the handshake land
    std::uint64_t dep_done = 0;        // latest done of its persisted sources
    std::uint64_t log_done = 0;        // BSP log: its log writes' latest acceptance
    std::vector<Ref> deps;             // IDT dependence registers: sources it waits for
    std::vector<Ref> informs;          // IDT inform registers: dependents to tell
  };
  struct Core {
    std::deque<Epoch> ring;        // unpersisted epochs, oldest first; back() is the ongoing one
    std::uint64_t last_done = 0;   // done of the latest persisted epoch
    std::deque<std::uint64_t> pf;  // PF: completed epochs waiting for a proactive flush
  };

  [[nodiscard]] std::deque<Epoch>& ring(int c) { return cores_[static_cast<std::size_t>(c)].ring; }
  [[nodiscard]] const std::deque<Epoch>& ring(int c) const {
    return cores_[static_cast<std::size_t>(c)].ring;
  }
  [[nodiscard]] Epoch* find(int c, std::uint64_t seq);
  [[nodiscard]] bool persisted(Ref r) const { return r.seq < ring(r.core).front().seq; }
  [[nodiscard]] std::uint64_t& clock(int c);
  void stall(int c, std::uint64_t until, EpochCause cause);

  // Ends `c`'s ongoing epoch (a barrier or a split) and opens the next one.
  void next_epoch(int c);
  void enforce_capacity(int c, bool online);
  // Persists `s`'s epochs up to `seq` (each after its dependences); returns when (s, seq) is done.
  std::uint64_t persist_upto(int s, std::uint64_t seq, EpochCause cause, std::uint64_t t);
  std::uint64_t persist_deps(const Epoch& ep, EpochCause cause, std::uint64_t t);
  // Writes the lines still tagged with `ep` (of bank `bank`, or all for -1) from `start` on.
  void write_lines(int s, Epoch& ep, WriteCause wc, std::uint64_t start, int bank);
  void retire_front(int c);
  void try_retire(int c);
  bool add_dep(int s, std::uint64_t seq, int c);
  void split(int s, std::uint64_t t);
  // PF: flushes c's queued completed epochs whose flush would have started by time `now`.
  void pump_pf(int c, std::uint64_t now);
  void pump_pf(int c) { pump_pf(c, clock(c)); }
  void settle();  // deferred work of the informs (retire, PF) once the outermost call is done
  void set_tag(std::size_t slot, int c, std::uint64_t seq);

  Hierarchy& h_;
  PersistencyParams p_;
  std::vector<Core> cores_;
  std::vector<std::int8_t> tag_core_;  // per LLC slot, -1 = untagged
  std::vector<std::uint64_t> tag_seq_;
  std::vector<int> wake_;  // cores whose epochs a persisted source informed
  int depth_ = 0;
  Ref victim_{-1, 0};  // the epoch of the victim being written (before/after_victim)
  EpochStats stats_;
};

}  // namespace pmlab::sim
