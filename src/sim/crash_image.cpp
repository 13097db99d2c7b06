// Crash image: shadow copies of persistent ranges, updated when lines reach NVM.
#include "pmlab/sim/crash_image.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "persist_oracle.hpp"
#include "pmlab/core/error.hpp"

namespace pmlab::sim {

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
  if (ranges_.empty()) return;
  const std::uintptr_t lo = line.value() * kCacheLineBytes, hi = lo + kCacheLineBytes;
  // First range that may overlap: the last one starting at or before lo, else the next.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), lo,
                             [](std::uintptr_t a, const Range& r) { return a < r.base; });
  if (it != ranges_.begin()) --it;
  bool any = false;
  for (; it != ranges_.end() && it->base < hi; ++it) {
    const std::uintptr_t from = std::max(lo, it->base), to = std::min(hi, it->base + it->len);
    if (from >= to) continue;
    any = true;
    std::memcpy(it->shadow.data() + (from - it->base), reinterpret_cast<const void*>(from),
                to - from);
  }
  // After the copy: the image already holds the bytes whose order the oracle judges.
  if (oracle_ != nullptr && any) [[unlikely]]
    oracle_->on_capture(line);
}

bool CrashImage::covers_line(LineAddr line) const {
  const std::uintptr_t lo = line.value() * kCacheLineBytes, hi = lo + kCacheLineBytes;
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), lo,
                             [](std::uintptr_t a, const Range& r) { return a < r.base; });
  if (it != ranges_.begin()) --it;
  for (; it != ranges_.end() && it->base < hi; ++it)
    if (std::max(lo, it->base) < std::min(hi, it->base + it->len)) return true;
  return false;
}

bool CrashImage::line_durable(LineAddr line) const {
  if (ranges_.empty()) return true;
  const std::uintptr_t lo = line.value() * kCacheLineBytes, hi = lo + kCacheLineBytes;
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), lo,
                             [](std::uintptr_t a, const Range& r) { return a < r.base; });
  if (it != ranges_.begin()) --it;
  for (; it != ranges_.end() && it->base < hi; ++it) {
    const std::uintptr_t from = std::max(lo, it->base), to = std::min(hi, it->base + it->len);
    if (from < to && std::memcmp(it->shadow.data() + (from - it->base),
                                 reinterpret_cast<const void*>(from), to - from) != 0)
      return false;
  }
  return true;
}

template <bool ToShadow>
bool CrashImage::line_bytes(LineAddr line, std::byte* buf) {
  bool any = false;
  const std::uintptr_t lo = line.value() * kCacheLineBytes, hi = lo + kCacheLineBytes;
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), lo,
                             [](std::uintptr_t a, const Range& r) { return a < r.base; });
  if (it != ranges_.begin()) --it;
  for (; it != ranges_.end() && it->base < hi; ++it) {
    const std::uintptr_t from = std::max(lo, it->base), to = std::min(hi, it->base + it->len);
    if (from >= to) continue;
    any = true;
    std::byte* shadow = it->shadow.data() + (from - it->base);
    if constexpr (ToShadow)
      std::memcpy(shadow, buf + (from - lo), to - from);
    else
      std::memcpy(buf + (from - lo), shadow, to - from);
  }
  return any;
}

void CrashImage::note_flush(LineAddr line, int core) {
  auto it = unfenced_.find(line.value());
  if (it == unfenced_.end()) {
    Unfenced u{};
    // Only the first flush since the last fence counts: undoing back to it is legal.
    if (!line_bytes<false>(line, u.prior)) return;  // not persistent memory
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
    if (!line_bytes<false>(line, p.prior)) return;  // not persistent memory
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

void CrashImage::perturb(std::mt19937_64& rng) {
  // Sorted, so that the draws do not depend on the hash map's iteration order.
  std::vector<std::uint64_t> lines;
  lines.reserve(unfenced_.size());
  for (const auto& e : unfenced_) lines.push_back(e.first);
  std::sort(lines.begin(), lines.end());
  for (const std::uint64_t l : lines)
    if (rng() & 1) line_bytes<true>(LineAddr(l), unfenced_[l].prior);
  unfenced_.clear();
  // PreFlushes still in flight: each lost or not (every outcome is a state the line had).
  lines.clear();
  for (const auto& e : preflushes_) lines.push_back(e.first);
  std::sort(lines.begin(), lines.end());
  for (const std::uint64_t l : lines)
    if (rng() & 1) line_bytes<true>(LineAddr(l), preflushes_[l].prior);
  preflushes_.clear();
  for (Range& r : ranges_) {
    const auto* live = reinterpret_cast<const std::byte*>(r.base);
    // Line by line (absolute alignment): a line reaches NVM whole or not at all.
    std::uintptr_t a = r.base;
    while (a < r.base + r.len) {
      const std::uintptr_t end =
          std::min(r.base + r.len, (a / kCacheLineBytes + 1) * kCacheLineBytes);
      const std::size_t off = a - r.base, len = end - a;
      if (std::memcmp(live + off, r.shadow.data() + off, len) != 0 && (rng() & 1))
        std::memcpy(r.shadow.data() + off, live + off, len);
      a = end;
    }
  }
}

bool CrashImage::perturbed_into(std::span<std::byte> dst, const void* live_base,
                                std::mt19937_64& rng) const {
  if (!restore_into(dst, live_base)) return false;
  const auto base = reinterpret_cast<std::uintptr_t>(live_base);
  // Puts a line's bytes (those inside registered ranges) into dst, as line_bytes<true> into
  // the shadows.
  const auto put_line = [&](std::uint64_t line, const std::byte* bytes) {
    const std::uintptr_t lo = line * kCacheLineBytes, hi = lo + kCacheLineBytes;
    for (const Range& r : ranges_) {
      const std::uintptr_t from = std::max(lo, r.base), to = std::min(hi, r.base + r.len);
      if (from < to) std::memcpy(dst.data() + (from - base), bytes + (from - lo), to - from);
    }
  };
  // perturb's steps, in its order (sorted lines: draws independent of hash order).
  const auto undo_some = [&](const auto& pending) {
    std::vector<std::uint64_t> lines;
    lines.reserve(pending.size());
    for (const auto& e : pending) lines.push_back(e.first);
    std::sort(lines.begin(), lines.end());
    for (const std::uint64_t l : lines)
      if (rng() & 1) put_line(l, pending.at(l).prior);
  };
  undo_some(unfenced_);
  undo_some(preflushes_);
  for (const Range& r : ranges_) {
    const auto* live = reinterpret_cast<const std::byte*>(r.base);
    std::byte* image = dst.data() + (r.base - base);
    std::uintptr_t a = r.base;
    while (a < r.base + r.len) {
      const std::uintptr_t end =
          std::min(r.base + r.len, (a / kCacheLineBytes + 1) * kCacheLineBytes);
      const std::size_t off = a - r.base, len = end - a;
      if (std::memcmp(live + off, image + off, len) != 0 && (rng() & 1))
        std::memcpy(image + off, live + off, len);
      a = end;
    }
  }
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
