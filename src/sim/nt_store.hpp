// Non-temporal stores in the simulator: per-core write-combining buffers (bytes of a line
// gathered until the line is complete, the buffers are full, or an sfence drains them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pmlab::sim {

// One core's WC buffers: lines in allocation order, each with the mask of bytes written.
// Only the bookkeeping lives here; Hierarchy::store_nt decides what a drained line costs and
// captures it into the crash image. Data still in a buffer at a power failure is lost.
class WcBuffers {
 public:
  WcBuffers(int cores, std::uint32_t buffers)
      : per_core_(static_cast<std::size_t>(cores)), buffers_(buffers < 1 ? 1 : buffers) {}

  // Records bytes [off, off + size) of `line` (within the line). Calls drain(line) for each line
  // that must go to the controller now: this one when complete, else the oldest when a new
  // buffer is needed and all are taken.
  template <class Drain>
  void add(int core, std::uint64_t line, unsigned off, unsigned size, Drain&& drain) {
    auto& q = per_core_[static_cast<std::size_t>(core)];
    const std::uint64_t bits =
        size >= 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << size) - 1) << off;
    Entry* e = nullptr;
    for (auto& x : q)
      if (x.line == line) e = &x;
    if (e == nullptr) {
      if (q.size() >= buffers_) {
        const std::uint64_t oldest = q.front().line;
        q.erase(q.begin());
        drain(oldest);
      }
      q.push_back({line, 0});
      e = &q.back();
    }
    e->mask |= bits;
    if (e->mask == ~std::uint64_t{0}) {
      q.erase(q.begin() + (e - q.data()));
      drain(line);
    }
  }
  // sfence: every buffer of `core`, oldest first.
  template <class Drain>
  void drain_all(int core, Drain&& drain) {
    auto& q = per_core_[static_cast<std::size_t>(core)];
    for (const auto& x : q) drain(x.line);
    q.clear();
  }
  [[nodiscard]] bool holds(int core, std::uint64_t line) const {
    for (const auto& x : per_core_[static_cast<std::size_t>(core)])
      if (x.line == line) return true;
    return false;
  }
  // Power failure: the buffers' contents never reach NVM.
  void clear() {
    for (auto& q : per_core_) q.clear();
  }

 private:
  struct Entry {
    std::uint64_t line;
    std::uint64_t mask;  // bit b: byte b of the line written
  };
  std::vector<std::vector<Entry>> per_core_;
  std::size_t buffers_;
};

}  // namespace pmlab::sim
