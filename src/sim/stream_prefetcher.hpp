// One core's L1D stream prefetcher (gem5 RubyPrefetcher): training filters and streams only.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "pmlab/sim/params.hpp"

namespace pmlab::sim {

// What gem5's RubyPrefetcher (src/mem/ruby/structures/RubyPrefetcher.cc) decides, without the
// cache: which lines to prefetch after a demand L1 miss or a demand use of a prefetched line.
// The hierarchy (hierarchy.cpp, "Stream prefetcher") sends and fills them.
//  - A demand miss trains three filters: +1 and -1 stride (unit_filter entries each, the next
//    expected line and a hit count) and a per-page stride filter (nonunit_filter entries). A
//    unit entry that has counted train_misses hits allocates a stream at the missing line: with
//    train_misses 4 a run of misses 0, 1, 2, 3, 4 allocates at line 4. The per-page filter
//    allocates when a repeated stride has counted more than train_misses (gem5's `>`).
//  - A new stream issues `startup` prefetches along its stride; each demand use of the line it
//    prefetched last issues one more (gem5's observePfHit / observePfMiss).
//  - Nothing crosses a page (unless cross_page, a negative control): a stream whose next line
//    leaves its page is freed, and a filter entry whose next line would leave the page is
//    dropped, so training is per page too (gem5 trains across pages; pmlab's choice, as the
//    brief asks "per 4 KiB page").
//  - At most `streams` streams; a new one replaces an invalid one, else the least recently used.
// Two choices where pmlab does not follow gem5's code line for line: the per-page filter keeps
// the page's last line and the stride between its misses (gem5 keys the entry by the page and
// updates it with line addresses); and a demand miss on a stream's pending line (its prefetch
// was dropped or evicted) advances the stream instead of leaving it stuck.
class StreamPrefetcher {
 public:
  // The lines one event asks for (at most PrefetchParams::startup, which is at most 16).
  struct Requests {
    std::array<std::uint64_t, 16> lines{};
    unsigned count = 0;
  };

  explicit StreamPrefetcher(const PrefetchParams& p);
  // A demand L1 miss on `line` that no prefetch covered.
  Requests on_miss(std::uint64_t line);
  // A demand access to a prefetched line, its first (in flight or complete).
  Requests on_use(std::uint64_t line);
  // Power failure: every filter and stream forgotten.
  void clear();
  [[nodiscard]] std::uint64_t streams_allocated() const { return allocated_; }
  void reset_stats() { allocated_ = 0; }

 private:
  struct Unit {
    std::uint64_t next = kNone;  // the line a continuing run misses next
    std::uint32_t hits = 0;
  };
  struct NonUnit {
    std::uint64_t page = kNone;
    std::uint64_t last = 0;
    std::int64_t stride = 0;
    std::uint32_t hits = 0;
  };
  struct Stream {
    bool valid = false;
    std::uint64_t last = 0;  // the line it prefetched last
    std::int64_t stride = 0;
    std::uint64_t used = 0;  // LRU stamp
  };
  static constexpr std::uint64_t kNone = ~std::uint64_t{0};

  [[nodiscard]] std::uint64_t page_of(std::uint64_t line) const { return line >> page_shift_; }
  // The unit filter of `stride` (+1 or -1): true when the miss continued a run.
  bool train_unit(std::vector<Unit>& f, std::size_t& next_slot, std::uint64_t line,
                  std::int64_t stride, Requests& out);
  bool train_nonunit(std::uint64_t line, Requests& out);
  Stream* pending(std::uint64_t line);
  void allocate(std::uint64_t line, std::int64_t stride, Requests& out);
  void advance(Stream& s, Requests& out);

  PrefetchParams p_;
  unsigned page_shift_;
  std::vector<Unit> up_, down_;
  std::vector<NonUnit> nonunit_;
  std::size_t up_slot_ = 0, down_slot_ = 0, nonunit_slot_ = 0;
  std::vector<Stream> streams_;
  std::uint64_t tick_ = 0;
  std::uint64_t allocated_ = 0;
};

}  // namespace pmlab::sim
