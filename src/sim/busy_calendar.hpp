// A resource's busy intervals (a bank, a data bus), booked by time in any order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

namespace pmlab::sim {

// Why by time and not a "free from" time: the simulator runs the cores in turns, so a core
// may book a resource at times before those another core has booked already (its clock is
// behind). A single "busy until" would make it wait for the other core's future; here it takes
// the first gap at or after its own time that is long enough, as a controller seeing both
// requests in time order would have given it.
// The calendar keeps at most kKeep intervals (touching ones merge); the oldest are forgotten,
// so a request further in the past than that is served as if the resource had been free.
class BusyCalendar {
 public:
  // Books [s, s + d) at the earliest s >= t with the resource free throughout; returns s.
  std::uint64_t book(std::uint64_t t, std::uint64_t d) {
    if (d == 0) return t;
    std::uint64_t s = t;
    auto it = busy_.upper_bound(s);
    if (it != busy_.begin()) {
      const auto before = std::prev(it);
      if (before->second > s) s = before->second;  // t falls inside a busy interval
    }
    while (it != busy_.end() && it->first < s + d) {  // the gap before `it` is too short
      s = std::max(s, it->second);
      ++it;
    }
    insert(s, s + d, it);
    return s;
  }

  void clear() { busy_.clear(); }
  [[nodiscard]] std::size_t intervals() const { return busy_.size(); }

 private:
  static constexpr std::size_t kKeep = std::size_t{1} << 16;

  // Inserts [s, e) before `next` (the first interval starting at or after e), merging with the
  // neighbours it touches.
  void insert(std::uint64_t s, std::uint64_t e,
              std::map<std::uint64_t, std::uint64_t>::iterator next) {
    if (next != busy_.end() && next->first == e) {
      e = next->second;
      next = busy_.erase(next);
    }
    if (next != busy_.begin()) {
      const auto before = std::prev(next);
      if (before->second == s) {
        before->second = e;
        return;
      }
    }
    busy_.emplace_hint(next, s, e);
    if (busy_.size() > kKeep) busy_.erase(busy_.begin());
  }

  std::map<std::uint64_t, std::uint64_t> busy_;  // start -> end, disjoint, sorted
};

}  // namespace pmlab::sim
