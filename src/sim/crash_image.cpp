// Crash image: shadow copies of persistent ranges, updated when lines reach NVM.
#include "pmlab/sim/crash_image.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "persist_oracle.hpp"
#include "pmlab/core/error.hpp"

namespace pmlab::sim {

namespace {

// The first of the sorted, disjoint `ranges` that may overlap [lo, ...): the last one starting at
// or before lo, else the next.
template <class Ranges>
auto first_overlap(Ranges& ranges, std::uintptr_t lo) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), lo,
                             [](std::uintptr_t a, const auto& r) { return a < r.base; });
  if (it != ranges.begin()) --it;
  return it;
}

}  // namespace

void CrashImage::add_range(const void* base, std::size_t len) {
  const auto b = reinterpret_cast<std::uintptr_t>(base);
  if (base == nullptr || len == 0)
    throw Error(ErrorCode::kInvalidArgument, "persistent range must be non-null and non-empty");
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), b,
                             [](const Range& r, std::uintptr_t a) { return r.base < a; });
  const bool overlaps_next = it != ranges_.end() && it->base < b + len;
  const bool overlaps_prev = it != ranges_.begin() && std::prev(it)->base + std::prev(it)->len > b;
  if (overlaps_next || overlaps_prev)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("persistent range [{:#x}, +{}) overlaps a registered range", b, len));
  Range r{b, len, std::vector<std::byte>(len)};
  std::memcpy(r.shadow.data(), base, len);
  ranges_.insert(it, std::move(r));
}

void CrashImage::capture_line(LineAddr line) {
  // The line's bytes as they are in memory now.
  capture_line_from(line, reinterpret_cast<const std::byte*>(line.value() * kCacheLineBytes));
}

void CrashImage::capture_line_from(LineAddr line, const std::byte* bytes) {
  if (ranges_.empty()) return;
  const std::uintptr_t lo = line.value() * kCacheLineBytes, hi = lo + kCacheLineBytes;
  auto it = first_overlap(ranges_, lo);
  bool any = false;
  for (; it != ranges_.end() && it->base < hi; ++it) {
    const std::uintptr_t from = std::max(lo, it->base), to = std::min(hi, it->base + it->len);
    if (from >= to) continue;
    any = true;
    std::memcpy(it->shadow.data() + (from - it->base), bytes + (from - lo), to - from);
  }
  // After the copy: the image already holds the bytes whose order the oracle judges.
  if (oracle_ != nullptr && any) [[unlikely]]
    oracle_->on_capture(line);
}

bool CrashImage::covers_line(LineAddr line) const {
  const std::uintptr_t lo = line.value() * kCacheLineBytes, hi = lo + kCacheLineBytes;
  auto it = first_overlap(ranges_, lo);
  for (; it != ranges_.end() && it->base < hi; ++it)
    if (std::max(lo, it->base) < std::min(hi, it->base + it->len)) return true;
  return false;
}

bool CrashImage::line_durable(LineAddr line) const {
  if (ranges_.empty()) return true;
  const std::uintptr_t lo = line.value() * kCacheLineBytes, hi = lo + kCacheLineBytes;
  auto it = first_overlap(ranges_, lo);
  for (; it != ranges_.end() && it->base < hi; ++it) {
    const std::uintptr_t from = std::max(lo, it->base), to = std::min(hi, it->base + it->len);
    if (from < to && std::memcmp(it->shadow.data() + (from - it->base),
                                 reinterpret_cast<const void*>(from), to - from) != 0)
      return false;
  }
  return true;
}

bool CrashImage::durable_line(LineAddr line, std::byte* buf) const {
  bool any = false;
  const std::uintptr_t lo = line.value() * kCacheLineBytes, hi = lo + kCacheLineBytes;
  auto it = first_overlap(ranges_, lo);
  for (; it != ranges_.end() && it->base < hi; ++it) {
    const std::uintptr_t from = std::max(lo, it->base), to = std::min(hi, it->base + it->len);
    if (from >= to) continue;
    any = true;
    std::memcpy(buf + (from - lo), it->shadow.data() + (from - it->base), to - from);
  }
  return any;
}

void CrashImage::note_flush(LineAddr line, int core) {
  auto it = unfenced_.find(line.value());
  if (it == unfenced_.end()) {
    Unfenced u{};
    // Only the first flush since the last fence counts: undoing back to it is legal.
    if (!durable_line(line, u.prior)) return;  // not persistent memory
    it = unfenced_.emplace(line.value(), u).first;
  }
  it->second.cores |= std::uint64_t{1} << (core % 64);
}

void CrashImage::note_fence(int core) {
  if (unfenced_.empty()) return;
  const std::uint64_t bit = std::uint64_t{1} << (core % 64);
  std::erase_if(unfenced_, [&](const auto& e) {
    if ((e.second.cores & bit) == 0) return false;
    preflushes_.erase(e.first);  // the fenced flush completed the line's earlier writes too
    return true;
  });
}

void CrashImage::note_preflush(LineAddr line, int core) {
  if (!track_preflushes_) return;
  auto it = preflushes_.find(line.value());
  if (it == preflushes_.end()) {
    PendingPreflush p{};
    if (!durable_line(line, p.prior)) return;  // not persistent memory
    it = preflushes_.emplace(line.value(), p).first;
  }
  it->second.core = core;
}

void CrashImage::preflush_done(LineAddr line, std::uint64_t done) {
  if (const auto it = preflushes_.find(line.value()); it != preflushes_.end())
    it->second.done = done;
}

void CrashImage::note_preflush_fence(int core, std::uint64_t t) {
  if (preflushes_.empty()) return;
  std::erase_if(preflushes_,
                [&](const auto& e) { return e.second.core == core && e.second.done <= t; });
}

namespace {

// The draws of CrashImage::perturb, in its order, onto image bytes wherever they are:
// `image_of(i)` is where range i's image bytes start (its shadow, or a copy of memory). Each
// pending flush (then PreFlush) is undone with probability 1 - p, lines sorted so that the draws
// do not depend on the hash maps' order; then each line whose live bytes differ from the image
// reaches it with probability p (CrashImage::ReachOdds). Generic over the ranges and pending
// maps, whose types are CrashImage's own.
template <class Ranges, class Unfenced, class Preflushes, class ImageOf>
void perturb_draws(const Ranges& ranges, const Unfenced& unfenced, const Preflushes& preflushes,
                   std::mt19937_64& rng, CrashImage::ReachOdds odds, ImageOf image_of) {
  // p = 1/2 is one bit of a draw, as before the skewed odds existed, so any-dirty's images
  // (and every figure measured with them) did not move; a skewed image first draws its p as a
  // 64-bit threshold, then a line reaches NVM when its draw falls below it.
  const bool skewed = odds == CrashImage::ReachOdds::kSkewed;
  const std::uint64_t threshold = skewed ? rng() : 0;
  const auto undone = [&] { return skewed ? rng() >= threshold : (rng() & 1) != 0; };
  const auto reaches = [&] { return skewed ? rng() < threshold : (rng() & 1) != 0; };
  // A line's bytes inside the ranges := `bytes` (a whole line reaches NVM or not at all).
  const auto put_line = [&](std::uint64_t line, const std::byte* bytes) {
    const std::uintptr_t lo = line * kCacheLineBytes, hi = lo + kCacheLineBytes;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const std::uintptr_t from = std::max(lo, ranges[i].base),
                           to = std::min(hi, ranges[i].base + ranges[i].len);
      if (from < to)
        std::memcpy(image_of(i) + (from - ranges[i].base), bytes + (from - lo), to - from);
    }
  };
  const auto undo_some = [&](const auto& pending) {
    std::vector<std::uint64_t> lines;
    lines.reserve(pending.size());
    for (const auto& e : pending) lines.push_back(e.first);
    std::sort(lines.begin(), lines.end());
    for (const std::uint64_t l : lines)
      if (undone()) put_line(l, pending.at(l).prior);
  };
  undo_some(unfenced);
  undo_some(preflushes);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto* live = reinterpret_cast<const std::byte*>(ranges[i].base);
    std::byte* image = image_of(i);
    // Line by line (absolute alignment): a line reaches NVM whole or not at all.
    std::uintptr_t a = ranges[i].base;
    const std::uintptr_t end_of_range = ranges[i].base + ranges[i].len;
    while (a < end_of_range) {
      const std::uintptr_t end =
          std::min(end_of_range, (a / kCacheLineBytes + 1) * kCacheLineBytes);
      const std::size_t off = a - ranges[i].base, len = end - a;
      if (std::memcmp(live + off, image + off, len) != 0 && reaches())
        std::memcpy(image + off, live + off, len);
      a = end;
    }
  }
}

}  // namespace

void CrashImage::perturb(std::mt19937_64& rng, ReachOdds odds) {
  perturb_draws(ranges_, unfenced_, preflushes_, rng, odds,
                [&](std::size_t i) { return ranges_[i].shadow.data(); });
  unfenced_.clear();
  preflushes_.clear();
}

bool CrashImage::perturbed_into(std::span<std::byte> dst, const void* live_base,
                                std::mt19937_64& rng, ReachOdds odds) const {
  if (!restore_into(dst, live_base)) return false;
  const auto base = reinterpret_cast<std::uintptr_t>(live_base);
  perturb_draws(ranges_, unfenced_, preflushes_, rng, odds,
                [&](std::size_t i) { return dst.data() + (ranges_[i].base - base); });
  return true;
}

std::vector<std::vector<std::byte>> CrashImage::save() const {
  std::vector<std::vector<std::byte>> out;
  out.reserve(ranges_.size());
  for (const Range& r : ranges_) out.push_back(r.shadow);
  return out;
}

void CrashImage::load(const std::vector<std::vector<std::byte>>& saved) {
  if (saved.size() != ranges_.size())
    throw Error(ErrorCode::kInvalidArgument, "crash image: saved ranges do not match");
  for (std::size_t i = 0; i < saved.size(); ++i) {
    if (saved[i].size() != ranges_[i].len)
      throw Error(ErrorCode::kInvalidArgument, "crash image: saved range sizes do not match");
    ranges_[i].shadow = saved[i];
  }
  unfenced_.clear();
  preflushes_.clear();
}

void CrashImage::restore_to_live() const {
  for (const Range& r : ranges_)
    std::memcpy(reinterpret_cast<void*>(r.base), r.shadow.data(), r.len);
}

bool CrashImage::restore_into(std::span<std::byte> dst, const void* live_base) const {
  const auto base = reinterpret_cast<std::uintptr_t>(live_base);
  for (const Range& r : ranges_)
    if (r.base < base || r.base - base + r.len > dst.size()) return false;
  for (const Range& r : ranges_) std::memcpy(dst.data() + (r.base - base), r.shadow.data(), r.len);
  return true;
}

bool CrashImage::load_from(std::span<const std::byte> image, const void* live_base) {
  const auto base = reinterpret_cast<std::uintptr_t>(live_base);
  for (const Range& r : ranges_)
    if (r.base < base || r.base - base + r.len > image.size()) return false;
  for (Range& r : ranges_) std::memcpy(r.shadow.data(), image.data() + (r.base - base), r.len);
  return true;
}

const CrashImage::Range* CrashImage::find(std::uintptr_t addr) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](std::uintptr_t a, const Range& r) { return a < r.base; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return addr < it->base + it->len ? &*it : nullptr;
}

std::span<const std::byte> CrashImage::shadow_of(const void* base) const {
  const Range* r = find(reinterpret_cast<std::uintptr_t>(base));
  if (r == nullptr || r->base != reinterpret_cast<std::uintptr_t>(base)) return {};
  return r->shadow;
}

const std::byte* CrashImage::durable_bytes(const void* p, std::size_t n) const {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const Range* r = find(a);
  if (r == nullptr || a + n > r->base + r->len)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("address {:#x} is not inside a persistent range", a));
  return r->shadow.data() + (a - r->base);
}

}  // namespace pmlab::sim
