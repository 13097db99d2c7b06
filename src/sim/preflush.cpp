// PreFlush predictor tables and rules (thesis Ch. 5, Fig. 5.5); the Hierarchy supplies timing.
#include "preflush.hpp"

#include <algorithm>

namespace pmlab::sim {

Preflusher::Preflusher(const PreflushParams& p, std::uint64_t l1_sets, std::uint64_t l1_ways)
    : p_(p),
      ways_(l1_ways),
      sigs_(p.signatures),
      tags_(p.flushed_tags),
      last_(static_cast<std::size_t>(l1_sets * l1_ways)) {
  stats_.storage_bytes_per_core = p.storage_bytes(l1_sets, l1_ways);
}

Preflusher::Signature* Preflusher::find_sig(std::uint32_t pc) {
  for (Signature& s : sigs_)
    if (s.valid && s.pc == pc) return &s;
  return nullptr;
}

Preflusher::Tag* Preflusher::find_tag(std::uint64_t line) {
  if (p_.l1_marks) {
    const auto it = marks_.find(line);
    return it == marks_.end() ? nullptr : &it->second;
  }
  for (Tag& t : tags_)
    if (t.valid && t.line == line) return &t;
  return nullptr;
}

void Preflusher::drop(Tag* t) {
  if (p_.l1_marks)
    marks_.erase(t->line);
  else
    t->valid = false;
}

// A signature that has meanwhile been replaced is simply not updated (thesis: "if still present").
void Preflusher::confirm(std::uint32_t pc, bool up) {
  Signature* s = find_sig(pc);
  if (s == nullptr) return;
  if (up && s->conf < 3) ++s->conf;
  if (!up && s->conf > 0) --s->conf;
}

Preflusher::Prediction Preflusher::on_store(std::uint64_t line, std::size_t slot,
                                            std::uint32_t pc) {
  // The baseline design (§5.3.3) keys signatures on the line's trace, the XOR of its store PCs
  // since the last flush (VT = 0 starts a new one; the XOR of one PC an even number of times
  // is 0, the thesis' own aliasing); the optimised design keys them on the storing PC alone.
  std::uint32_t key = pc;
  if (p_.trace && slot != kNoSlot) {
    Last& e = last_[slot];
    e.pc = e.valid && e.line == line ? e.pc ^ pc : pc;
    e.line = line;
    e.valid = true;
    key = e.pc;
  }
  Prediction r;
  if (Tag* t = find_tag(line); t != nullptr) {
    if (p_.own_store_check) {  // (1)
      ++stats_.mispredicted_store;
      confirm(t->pc, false);
      drop(t);
    }
  } else if (Signature* s = find_sig(key); s != nullptr && p_.line_change) {
    // pmlab's loop extension: the PC has moved on, so its previous line saw its last store.
    if (s->conf >= 2 && s->has_prev && s->prev_line != line && find_tag(s->prev_line) == nullptr) {
      s->used = ++now_;
      r = {true, s->clwb, s->prev_line};
    }
  } else if (s != nullptr && s->conf >= 2) {  // (2)
    s->used = ++now_;
    r = {true, s->clwb, line};
  }
  if (r.preflush) r.key = key;
  if (p_.line_change)
    if (Signature* s = find_sig(pc); s != nullptr) {
      s->prev_line = line;
      s->has_prev = true;
    }
  if (!p_.trace && sampled(slot)) last_[slot] = {line, pc, true};  // (3)
  return r;
}

void Preflusher::preflushed(std::uint64_t line, std::uint32_t pc, std::uint64_t done) {
  ++stats_.issued;
  if (p_.l1_marks) {
    marks_[line] = {line, pc, done, true};
    return;
  }
  Tag& t = tags_[tag_head_];
  if (t.valid) ++stats_.tag_evictions;
  t = {line, pc, done, true};
  tag_head_ = (tag_head_ + 1) % tags_.size();
}

std::optional<std::uint64_t> Preflusher::on_flush(std::uint64_t line, std::size_t slot, bool clwb) {
  if (sampled(slot) && !(last_[slot].valid && last_[slot].line == line)) slot = kNoSlot;
  if (Tag* t = find_tag(line); t != nullptr) {  // (4)
    ++stats_.correct;
    confirm(t->pc, true);
    const std::uint64_t done = t->done;  // drop() may free the entry (an L1 mark)
    drop(t);
    if (sampled(slot)) last_[slot].valid = false;
    return done;
  }
  ++stats_.uncovered_flushes;
  if (!sampled(slot)) return std::nullopt;
  const std::uint32_t pc = last_[slot].pc;
  if (Signature* s = find_sig(pc); s != nullptr) {  // (5)
    if (s->conf < 3) ++s->conf;
    s->clwb = clwb;
    s->used = ++now_;
  } else {  // (6): replace an invalid entry, else the least recently used
    Signature* v = &*std::min_element(sigs_.begin(), sigs_.end(), [](const auto& a, const auto& b) {
      return a.valid != b.valid ? !a.valid : a.used < b.used;
    });
    *v = {pc, 2, clwb, true, ++now_, 0, false};
    ++stats_.signatures_inserted;
  }
  last_[slot].valid = false;  // (7)
  return std::nullopt;
}

void Preflusher::nack(std::uint64_t line, bool evicted) {
  Tag* t = find_tag(line);
  if (t == nullptr || !p_.nack) return;
  ++(evicted ? stats_.dir_back_invalidations : stats_.nacked);
  confirm(t->pc, false);
  t->valid = false;
}

void Preflusher::line_left(std::uint64_t line, bool invalidated) {
  // The no-nack mutant keeps the mark, so a line another core stored to could be ACKed early.
  if (!p_.l1_marks || (invalidated && !p_.nack)) return;
  const auto it = marks_.find(line);
  if (it == marks_.end()) return;
  if (invalidated) {
    ++stats_.nacked;
    confirm(it->second.pc, false);  // as the directory's NACK does
  } else {
    ++stats_.marks_lost;
  }
  marks_.erase(it);
}

void Preflusher::clear() {
  marks_.clear();
  std::fill(sigs_.begin(), sigs_.end(), Signature{});
  std::fill(tags_.begin(), tags_.end(), Tag{});
  std::fill(last_.begin(), last_.end(), Last{});
  tag_head_ = 0;
}

std::optional<PreflushDirectory::Victim> PreflushDirectory::record(std::uint64_t line, int core) {
  const std::uint64_t bit = std::uint64_t{1} << core;
  if (auto it = map_.find(line); it != map_.end()) {
    it->second.cores |= bit;
    return std::nullopt;
  }
  std::optional<Victim> out;
  if (map_.size() >= capacity_) {
    // Oldest live entry; FIFO slots of entries already forgotten are skipped.
    while (!fifo_.empty()) {
      const auto [l, st] = fifo_.front();
      fifo_.pop_front();
      if (auto it = map_.find(l); it != map_.end() && it->second.stamp == st) {
        out = Victim{l, it->second.cores};
        map_.erase(it);
        ++evictions_;
        break;
      }
    }
  }
  map_[line] = {bit, ++stamp_};
  fifo_.emplace_back(line, stamp_);
  occupancy_max_ = std::max(occupancy_max_, map_.size());
  // Keep the FIFO from growing with forgotten slots: it never holds more than twice the table.
  if (fifo_.size() > 2 * capacity_ + 16)
    std::erase_if(fifo_, [&](const auto& e) {
      const auto it = map_.find(e.first);
      return it == map_.end() || it->second.stamp != e.second;
    });
  return out;
}

void PreflushDirectory::forget(std::unordered_map<std::uint64_t, Entry>::iterator it) {
  map_.erase(it);  // its FIFO slot goes stale and is skipped
}

std::uint64_t PreflushDirectory::store(std::uint64_t line, int core) {
  const auto it = map_.find(line);
  if (it == map_.end()) return 0;
  const std::uint64_t others = it->second.cores & ~(std::uint64_t{1} << core);
  it->second.cores &= ~others;
  if (it->second.cores == 0) forget(it);
  return others;
}

void PreflushDirectory::flushed(std::uint64_t line, int core) {
  const auto it = map_.find(line);
  if (it == map_.end()) return;
  it->second.cores &= ~(std::uint64_t{1} << core);
  if (it->second.cores == 0) forget(it);
}

void PreflushDirectory::clear() {
  map_.clear();
  fifo_.clear();
}

}  // namespace pmlab::sim
