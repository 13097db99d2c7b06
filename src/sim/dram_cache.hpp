// Seed 002 §3's software-managed DRAM cache in front of NVM: placed objects, their dirty lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"

namespace pmlab::sim {

// Whole objects are placed (X-Mem, seed 002's [14]) while they fit the capacity; nothing is ever
// evicted, so a line is resident exactly when it lies in a placed object. A write-back of a
// resident line (an LLC eviction, a flush, a drain) lands here: the line's bytes at that moment
// are kept as the DRAM copy and it is dirty, not durable. flush() hands each dirty line's DRAM
// copy to NVM and keeps the line resident and clean (the paper does not invalidate). A power
// failure loses every dirty copy. Data otherwise lives in real memory, as everywhere in the
// model: only the DRAM copies of dirty lines are held, so that NVM receives what DRAM held at
// the flush, not bytes stored since.
class DramCache {
 public:
  explicit DramCache(const DramCacheParams& p) : p_(p) {}

  // Places lines [first, last) if the object fits whole in what is left; an object already
  // placed (the same first line) is left as it is. Returns whether it is resident.
  bool place(std::uint64_t first, std::uint64_t last);
  // A range check over the placed objects (a handful): the cost an LLC miss pays when on.
  [[nodiscard]] bool resident(std::uint64_t line) const { return find(line) != nullptr; }
  // An LLC miss served from DRAM (counted; the caller charges the latency).
  void note_hit() { ++stats_.hits; }
  // A write-back of resident `line`: the line is dirty and, with `copy` (the line holds bytes of
  // the crash image, so it is real memory), its live bytes become the DRAM copy.
  void absorb(std::uint64_t line, bool copy);
  // Every dirty line of [first, last) in address order: fn(line, its 64 DRAM bytes), then clean.
  // Returns how many there were.
  template <class Fn>
  std::uint64_t flush(std::uint64_t first, std::uint64_t last, Fn&& fn) {
    std::uint64_t n = 0;
    for (Object& o : objects_) {
      const std::uint64_t lo = first > o.first ? first : o.first;
      const std::uint64_t hi = last < o.last ? last : o.last;
      for (std::uint64_t l = lo; l < hi; ++l) {
        const std::size_t i = static_cast<std::size_t>(l - o.first);
        if (o.dirty[i] == 0) continue;
        o.dirty[i] = 0;
        --o.dirty_lines;
        fn(l, o.copy.data() + i * kCacheLineBytes);
        ++n;
      }
    }
    stats_.flushed_lines += n;
    ++stats_.flushes;
    return n;
  }
  void power_fail();  // the dirty copies are gone; placement stays (software re-places alike)
  void reset_stats() { stats_ = {}; }
  [[nodiscard]] DramCacheStats stats() const;
  [[nodiscard]] const DramCacheParams& params() const { return p_; }

 private:
  struct Object {
    std::uint64_t first = 0, last = 0;  // lines [first, last)
    std::vector<std::byte> copy;        // DRAM bytes of its lines (meaningful where dirty)
    std::vector<std::uint8_t> dirty;    // per line
    std::uint64_t dirty_lines = 0;
  };
  [[nodiscard]] Object* find(std::uint64_t line);
  [[nodiscard]] const Object* find(std::uint64_t line) const;

  DramCacheParams p_;
  std::vector<Object> objects_;
  std::uint64_t placed_lines_ = 0;
  std::uint64_t refused_ = 0;
  DramCacheStats stats_;
};

}  // namespace pmlab::sim
