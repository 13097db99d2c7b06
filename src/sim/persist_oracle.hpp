// The persist-order oracle (seed 004 §3.5): checks every NVM write against program epoch order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/sim/crash_image.hpp"

namespace pmlab::sim {

// Buffered epoch persistency as the program states it, checked against what reached NVM.
//
// It sees only the op stream (stores and loads of a thread, with their op numbers, and the
// thread's persist barriers) and the sequence of NVM captures of lines. It never reads the
// epoch mechanism's tags, rings or dependence registers, so a mechanism bug cannot hide from
// it: the mechanism and the oracle agree only if the mechanism is right.
//
// Program epoch of a thread = the number of its persist barriers so far (hardware splits are
// not epochs here, decision D7). A store by t in epoch e on line L is *pending* until a capture
// of L (a capture copies the line's live bytes, so it persists every store made to L so far).
// An access (load or store) by t at op k to a line holding another thread i's pending store
// adds an edge: that store of i, and everything i had ordered before it, must reach NVM before
// every store of t made after the access (the rest of t's current epoch and every later one).
// Stores t made earlier in the same epoch are not ordered by it: they happened before the
// source could be seen, so an image holding them without the source is one a crash could
// leave (the spec's §3.5 orders the whole dependent epoch; that is the hardware's conservative
// choice, not a requirement, and rejected correct write-backs of earlier lines of the epoch).
//
// Invariant at every capture of L, for each pending store (t, e) the capture persists:
//  (1) t has no pending store in an epoch < e (on another line), and
//  (2) every edge into t made before a store of (t, e) on this line (an edge of an older epoch,
//      or of epoch e at an op before the line's latest store) has its source persisted: i's
//      store on the edge's line is no longer pending and i has nothing pending in epochs older
//      than it.
// Crash images are exactly the prefixes of the capture sequence, so checking at every capture
// checks every image a crash could leave. Transitivity follows by induction: a source was
// itself checked when it was captured. A failure throws OrderViolation.
class PersistOracle {
 public:
  void on_store(int thread, LineAddr line, std::uint64_t op) { on_access(thread, line, op, true); }
  void on_load(int thread, LineAddr line, std::uint64_t op) { on_access(thread, line, op, false); }
  void on_barrier(int thread) { ++state(thread).epoch; }
  // `line` has just been written to NVM with its live bytes; throws OrderViolation.
  void on_capture(LineAddr line);
  // A power failure: nothing is pending any more (the image is what memory now holds).
  void reset();

  // --- introspection (tests, docs) ---
  [[nodiscard]] std::uint64_t epoch(int thread) const;
  [[nodiscard]] std::size_t pending_lines() const { return lines_.size(); }
  [[nodiscard]] std::uint64_t captures_checked() const { return captures_; }
  [[nodiscard]] std::uint64_t edges_added() const { return edges_added_; }

 private:
  struct Entry {  // the stores of `thread` in `epoch` on one line, not yet persisted
    int thread = 0;
    std::uint64_t epoch = 0;
    std::uint64_t first_op = 0;  // identifies this pending instance (a capture ends it)
    std::uint64_t last_op = 0;   // its latest store
  };
  struct Edge {  // source store instance -> every store of the dependent from dst_epoch on
    int src = 0;
    std::uint64_t line = 0;
    std::uint64_t src_epoch = 0;
    std::uint64_t src_op = 0;  // the source entry's first_op
    std::uint64_t dst_epoch = 0;
    std::uint64_t op = 0;  // the dependent's access that created the edge
    bool by_store = false;
  };
  struct EdgeKey {
    std::uint64_t line, src_op, dst_epoch;
    int src;
    bool operator==(const EdgeKey&) const = default;
  };
  struct EdgeKeyHash {
    std::size_t operator()(const EdgeKey& k) const {
      std::uint64_t h = k.line * 0x9e3779b97f4a7c15ull;
      h ^= k.src_op + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h ^= k.dst_epoch + (h << 6) + (h >> 2);
      h ^= static_cast<std::uint64_t>(k.src) + (h << 6) + (h >> 2);
      return static_cast<std::size_t>(h);
    }
  };
  struct Thread {
    std::uint64_t epoch = 0;
    std::map<std::uint64_t, std::uint32_t> pending;  // epoch -> pending entries (lines)
    std::vector<Edge> in;                            // by dst_epoch, non-decreasing
    std::unordered_set<EdgeKey, EdgeKeyHash> in_keys;
  };

  void on_access(int thread, LineAddr line, std::uint64_t op, bool is_store);
  Thread& state(int thread);
  [[nodiscard]] bool instance_pending(const Edge& e) const;
  [[nodiscard]] bool older_pending(int thread, std::uint64_t epoch) const;
  // Where thread's oldest pending store below `epoch` is (for messages): "line 0x.. (op N,
  // epoch E)".
  [[nodiscard]] std::string describe_oldest(int thread) const;
  [[noreturn]] void violate(const Entry& persisted, std::uint64_t line, const std::string& why);

  std::unordered_map<std::uint64_t, std::vector<Entry>> lines_;
  std::vector<Thread> threads_;
  std::uint64_t captures_ = 0;
  std::uint64_t edges_added_ = 0;
};

}  // namespace pmlab::sim
