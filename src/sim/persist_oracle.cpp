// The persist-order oracle: pending stores, inter-thread edges, and the check at every capture.
#include "persist_oracle.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace pmlab::sim {

PersistOracle::Thread& PersistOracle::state(int thread) {
  const auto t = static_cast<std::size_t>(thread);
  if (t >= threads_.size()) threads_.resize(t + 1);
  return threads_[t];
}

std::uint64_t PersistOracle::epoch(int thread) const {
  const auto t = static_cast<std::size_t>(thread);
  return t < threads_.size() ? threads_[t].epoch : 0;
}

void PersistOracle::on_access(int thread, LineAddr line, std::uint64_t op, bool is_store) {
  Thread& me = state(thread);
  auto it = lines_.find(line.value());
  if (it != lines_.end()) {
    Entry* mine = nullptr;
    for (Entry& e : it->second) {
      if (e.thread == thread) {
        if (e.epoch == me.epoch) mine = &e;
        continue;  // program order already orders a thread's own stores
      }
      // Another thread's store not yet durable: t now depends on it (RAW or WAW).
      const EdgeKey key{line.value(), e.first_op, me.epoch, e.thread};
      if (!me.in_keys.insert(key).second) continue;
      me.in.push_back({e.thread, line.value(), e.epoch, e.first_op, me.epoch, op, is_store});
      ++edges_added_;
    }
    if (!is_store) return;
    if (mine != nullptr) {
      mine->last_op = op;
      return;
    }
    it->second.push_back({thread, me.epoch, op, op});
  } else {
    if (!is_store) return;
    lines_.emplace(line.value(), std::vector<Entry>{{thread, me.epoch, op, op}});
  }
  ++me.pending[me.epoch];
}

bool PersistOracle::instance_pending(const Edge& e) const {
  const auto it = lines_.find(e.line);
  if (it == lines_.end()) return false;
  return std::ranges::any_of(
      it->second, [&](const Entry& x) { return x.thread == e.src && x.first_op == e.src_op; });
}

bool PersistOracle::older_pending(int thread, std::uint64_t epoch) const {
  const Thread& t = threads_[static_cast<std::size_t>(thread)];
  return !t.pending.empty() && t.pending.begin()->first < epoch;
}

std::string PersistOracle::describe_oldest(int thread) const {
  const Thread& t = threads_[static_cast<std::size_t>(thread)];
  if (t.pending.empty()) return "nothing";
  const std::uint64_t oldest = t.pending.begin()->first;
  // Only on a violation: a scan of the pending lines is fine.
  const Entry* best = nullptr;
  std::uint64_t best_line = 0;
  for (const auto& [l, entries] : lines_)
    for (const Entry& e : entries)
      if (e.thread == thread && e.epoch == oldest &&
          (best == nullptr || e.first_op < best->first_op)) {
        best = &e;
        best_line = l;
      }
  if (best == nullptr) return fmt::format("epoch {}", oldest);
  return fmt::format("its store to line {:#x} (op {}, epoch {})", best_line, best->first_op,
                     best->epoch);
}

void PersistOracle::violate(const Entry& persisted, std::uint64_t line, const std::string& why) {
  throw OrderViolation(
      fmt::format("persist order violated: line {:#x} reached NVM carrying thread {}'s store (op "
                  "{}, epoch {}) while {}",
                  line, persisted.thread, persisted.first_op, persisted.epoch, why));
}

void PersistOracle::on_capture(LineAddr line) {
  ++captures_;
  const auto it = lines_.find(line.value());
  if (it == lines_.end()) return;  // nothing new on the line: the write changes no order
  // The capture persists every pending store on the line at once: drop them first, so that
  // stores on this very line (older epochs of the same thread, a WAW source) count as durable.
  const std::vector<Entry> persisted = std::move(it->second);
  lines_.erase(it);
  for (const Entry& e : persisted) {
    Thread& t = threads_[static_cast<std::size_t>(e.thread)];
    const auto p = t.pending.find(e.epoch);
    if (--p->second == 0) t.pending.erase(p);
  }
  for (const Entry& e : persisted) {
    // (1) Epoch order within the thread (E1).
    if (older_pending(e.thread, e.epoch))
      violate(e, line.value(),
              fmt::format("thread {} still has an older epoch pending: {}", e.thread,
                          describe_oldest(e.thread)));
    // (2) Inter-thread edges made before one of these stores. Satisfied edges stay satisfied
    // (a persisted instance never comes back, new stores of the source are in epochs >= the
    // source's), so they are dropped; an unsatisfied one that does not apply yet (made later
    // in epoch e than this line's stores) stays.
    Thread& t = threads_[static_cast<std::size_t>(e.thread)];
    std::size_t kept = 0, i = 0;
    for (; i < t.in.size() && t.in[i].dst_epoch <= e.epoch; ++i) {
      const Edge& d = t.in[i];
      const bool unmet_source = instance_pending(d), unmet_past = older_pending(d.src, d.src_epoch);
      if (!unmet_source && !unmet_past) {
        t.in_keys.erase(EdgeKey{d.line, d.src_op, d.dst_epoch, d.src});
        continue;
      }
      if (d.dst_epoch == e.epoch && d.op > e.last_op) {
        t.in[kept++] = d;  // the access came after every store of e on this line
        continue;
      }
      if (unmet_source)
        violate(e, line.value(),
                fmt::format("its predecessor, thread {}'s store to line {:#x} (op {}, epoch {}), "
                            "is not persisted; thread {} {} that line at op {} in epoch {}",
                            d.src, d.line, d.src_op, d.src_epoch, e.thread,
                            d.by_store ? "overwrote" : "read", d.op, d.dst_epoch));
      violate(e, line.value(),
              fmt::format("its predecessor thread {} (epoch {}, whose store to line {:#x} op {} "
                          "thread {} {} at op {}) still has an older epoch pending: {}",
                          d.src, d.src_epoch, d.line, d.src_op, e.thread,
                          d.by_store ? "overwrote" : "read", d.op, describe_oldest(d.src)));
    }
    t.in.erase(t.in.begin() + static_cast<std::ptrdiff_t>(kept),
               t.in.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void PersistOracle::reset() {
  lines_.clear();
  for (Thread& t : threads_) t = Thread{};
}

}  // namespace pmlab::sim
