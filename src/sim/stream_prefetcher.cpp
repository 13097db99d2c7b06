// The stream prefetcher's decisions: filter training, stream allocation and advance per page.
#include "stream_prefetcher.hpp"

#include <algorithm>
#include <bit>

namespace pmlab::sim {

StreamPrefetcher::StreamPrefetcher(const PrefetchParams& p)
    : p_(p),
      page_shift_(static_cast<unsigned>(std::countr_zero(p.page_bytes / kCacheLineBytes))),
      up_(p.unit_filter),
      down_(p.unit_filter),
      nonunit_(p.nonunit_filter),
      streams_(p.streams) {}

void StreamPrefetcher::clear() {
  std::fill(up_.begin(), up_.end(), Unit{});
  std::fill(down_.begin(), down_.end(), Unit{});
  std::fill(nonunit_.begin(), nonunit_.end(), NonUnit{});
  std::fill(streams_.begin(), streams_.end(), Stream{});
  up_slot_ = down_slot_ = nonunit_slot_ = 0;
}

StreamPrefetcher::Stream* StreamPrefetcher::pending(std::uint64_t line) {
  // gem5's getPrefetchEntry: the last `startup` lines a stream asked for.
  for (Stream& s : streams_) {
    if (!s.valid) continue;
    std::uint64_t l = s.last;
    for (std::uint32_t j = 0; j < p_.startup; ++j, l -= static_cast<std::uint64_t>(s.stride))
      if (l == line) return &s;
  }
  return nullptr;
}

void StreamPrefetcher::advance(Stream& s, Requests& out) {
  const std::uint64_t next = s.last + static_cast<std::uint64_t>(s.stride);
  if (!p_.cross_page && page_of(next) != page_of(s.last)) {
    s.valid = false;  // gem5 frees a stream that would leave its page
    return;
  }
  s.last = next;
  s.used = ++tick_;
  out.lines[out.count++] = next;
}

void StreamPrefetcher::allocate(std::uint64_t line, std::int64_t stride, Requests& out) {
  // An invalid stream if any, else the least recently used (gem5's getLRUindex).
  Stream* victim = &streams_.front();
  for (Stream& s : streams_) {
    if (!s.valid) {
      victim = &s;
      break;
    }
    if (s.used < victim->used) victim = &s;
  }
  ++allocated_;
  *victim = Stream{true, line, stride, ++tick_};
  for (std::uint32_t k = 0; k < p_.startup && victim->valid; ++k) advance(*victim, out);
}

bool StreamPrefetcher::train_unit(std::vector<Unit>& f, std::size_t& next_slot, std::uint64_t line,
                                  std::int64_t stride, Requests& out) {
  const std::uint64_t next = line + static_cast<std::uint64_t>(stride);
  const bool same_page = p_.cross_page || page_of(next) == page_of(line);
  for (Unit& u : f) {
    if (u.next != line) continue;
    ++u.hits;
    const bool alloc = u.hits >= p_.train_misses;
    u.next = same_page ? next : kNone;  // training stays within the page
    if (alloc) allocate(line, stride, out);
    return true;
  }
  if (same_page) {
    f[next_slot] = Unit{next, 0};
    next_slot = (next_slot + 1) % f.size();
  }
  return false;
}

bool StreamPrefetcher::train_nonunit(std::uint64_t line, Requests& out) {
  const std::uint64_t page = page_of(line);
  for (NonUnit& e : nonunit_) {
    if (e.page != page) continue;
    const auto delta = static_cast<std::int64_t>(line - e.last);
    if (delta == 0) return false;
    if (delta == e.stride) {
      if (++e.hits > p_.train_misses) {
        e = NonUnit{};  // gem5 clears the entry once it allocates
        allocate(line, delta, out);
        return true;
      }
    } else {
      e.hits = 0;
    }
    e.stride = delta;
    e.last = line;
    return true;
  }
  nonunit_[nonunit_slot_] = NonUnit{page, line, 0, 0};
  nonunit_slot_ = (nonunit_slot_ + 1) % nonunit_.size();
  return false;
}

StreamPrefetcher::Requests StreamPrefetcher::on_miss(std::uint64_t line) {
  Requests out;
  if (Stream* s = pending(line)) {  // its prefetch was dropped or evicted: move on
    advance(*s, out);
    return out;
  }
  if (train_unit(up_, up_slot_, line, 1, out)) return out;
  if (train_unit(down_, down_slot_, line, -1, out)) return out;
  train_nonunit(line, out);
  return out;
}

StreamPrefetcher::Requests StreamPrefetcher::on_use(std::uint64_t line) {
  Requests out;
  if (Stream* s = pending(line)) advance(*s, out);
  return out;
}

}  // namespace pmlab::sim
