// PreFlush (thesis Ch. 5): one core's flush predictor — LastStore, Signatures, FlushedTags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"

namespace pmlab::sim {

// The predictor's tables and rules (Fig. 5.5, optimised design; or the baseline trace design of
// §5.3.3 with PreflushParams::trace), free of timing and caches:
// the Hierarchy asks it on every store and flush, carries out the PreFlushes it predicts, and
// reports other cores' stores to PreFlushed lines (the directory's NACK, §5.3.7). L1 slots are
// numbered set * ways + way, as Cache numbers them.
class Preflusher {
 public:
  static constexpr std::size_t kNoSlot = ~std::size_t{0};

  Preflusher(const PreflushParams& p, std::uint64_t l1_sets, std::uint64_t l1_ways);

  struct Prediction {
    bool preflush = false;   // start a PreFlush of the line now
    bool clwb = true;        // of this kind (the signature's type bit); else clflushopt
    std::uint64_t line = 0;  // the line to PreFlush (another one with line_change)
    std::uint32_t key = 0;   // the signature that predicted it (a PC, or a trace)
  };
  // A store by `pc` to `line`, now in L1 slot `slot`. (1) An own store to a PreFlushed line is a
  // misprediction: the entry goes, its signature loses confidence. (2) Otherwise a signature at
  // confidence >= 2 predicts this was the line's last store. (3) Sampled sets remember the PC.
  Prediction on_store(std::uint64_t line, std::size_t slot, std::uint32_t pc);
  // (2) continued: the PreFlush predicted by signature `key` was carried out and completes at
  // `done`.
  void preflushed(std::uint64_t line, std::uint32_t key, std::uint64_t done);
  // A real flush of `line` (L1 slot `slot` or kNoSlot). (4) PreFlushed: returns the PreFlush's
  // completion time (ACK early), the signature gains confidence. Else trains: the sampled
  // line's last store PC gains confidence (5) or becomes a new signature at weak-high (6), and
  // its LastStore entry goes (7).
  std::optional<std::uint64_t> on_flush(std::uint64_t line, std::size_t slot, bool clwb);
  // Another core's store reached the directory for `line`: drop its entry (NACK). With
  // `evicted`, the directory lost its record of the PreFlush instead (its table was full), so
  // it can no longer NACK it later and must now.
  void nack(std::uint64_t line, bool evicted = false);
  // PreflushParams::l1_marks: `line` left this core's L1, and its mark with it: evicted, or
  // `invalidated` (by another core's store, which is the NACK, or its flush).
  void line_left(std::uint64_t line, bool invalidated);
  void clear();  // power failure: no predictor state survives

  [[nodiscard]] const PreflushStats& stats() const { return stats_; }
  void reset_stats() { stats_ = PreflushStats{}; }

 private:
  struct Signature {
    std::uint32_t pc = 0;
    std::uint8_t conf = 0;  // 0 low, 1 weak-low, 2 weak-high, 3 high
    bool clwb = true;
    bool valid = false;
    std::uint64_t used = 0;       // LRU stamp
    std::uint64_t prev_line = 0;  // line_change: the last line this PC stored to
    bool has_prev = false;
  };
  struct Tag {
    std::uint64_t line = 0;
    std::uint32_t pc = 0;  // the signature that predicted it
    std::uint64_t done = 0;
    bool valid = false;
  };
  // The hardware entry belongs to an L1 slot and is invalidated when the slot's line leaves;
  // keeping the line here has the same effect without an eviction hook.
  struct Last {
    std::uint64_t line = 0;
    std::uint32_t pc = 0;  // LastStore's PC, or the trace design's XOR of the line's store PCs
    bool valid = false;
  };
  [[nodiscard]] bool sampled(std::size_t slot) const {
    // The baseline design keeps a trace on every line; sampling is the optimised design's.
    return slot != kNoSlot && (p_.trace || (slot / ways_) % p_.sample_every == 0);
  }
  Signature* find_sig(std::uint32_t pc);
  Tag* find_tag(std::uint64_t line);
  void drop(Tag* t);  // the entry (or L1 mark) is used up or wrong
  void confirm(std::uint32_t pc, bool up);

  PreflushParams p_;
  std::uint64_t ways_;
  std::vector<Signature> sigs_;
  std::vector<Tag> tags_;
  std::size_t tag_head_ = 0;  // FIFO replacement
  std::vector<Last> last_;    // per L1 slot (only sampled sets used, or every one for traces)
  // l1_marks: the marked lines, by line. A line sits in at most one L1 slot, so this holds
  // exactly what per-slot mark bits would; line_left removes what the slot loses.
  std::unordered_map<std::uint64_t, Tag> marks_;
  std::uint64_t now_ = 0;
  PreflushStats stats_;
};

// The directory's PreFlushers table (§5.3.7): which cores hold a PreFlush of a line, so another
// core's store can NACK them. The thesis gives no size; pmlab's is `capacity` entries, FIFO. An
// entry pushed out must NACK its cores at once: a PreFlush the directory forgot could never be
// NACKed, and an early ACK could then hide another core's store (the mutant no-nack's bug).
class PreflushDirectory {
 public:
  explicit PreflushDirectory(std::size_t capacity) : capacity_(capacity) {}

  struct Victim {
    std::uint64_t line = 0;
    std::uint64_t cores = 0;  // bitmap of the cores to NACK
  };
  // `core` PreFlushed `line`. Returns the entry pushed out to make room, if any.
  std::optional<Victim> record(std::uint64_t line, int core);
  // A store by `core` reached the directory: the other cores holding a PreFlush of `line`
  // (bitmap), now forgotten.
  std::uint64_t store(std::uint64_t line, int core);
  // `core`'s real flush was ACKed by its PreFlush: the directory forgets it (§5.3.7's race fix).
  void flushed(std::uint64_t line, int core);
  void clear();  // power failure

  [[nodiscard]] std::uint64_t evictions() const { return evictions_; }
  [[nodiscard]] std::size_t occupancy_max() const { return occupancy_max_; }

 private:
  struct Entry {
    std::uint64_t cores = 0;
    std::uint64_t stamp = 0;  // matches its FIFO slot while live
  };
  void forget(std::unordered_map<std::uint64_t, Entry>::iterator it);

  std::size_t capacity_;
  std::unordered_map<std::uint64_t, Entry> map_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> fifo_;  // (line, stamp), oldest first
  std::uint64_t stamp_ = 0, evictions_ = 0;
  std::size_t occupancy_max_ = 0;
};

}  // namespace pmlab::sim
