// Seed 002 §3's DRAM cache: placement of whole objects, write-backs absorbed, power failure.
#include "dram_cache.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hierarchy.hpp"

namespace pmlab::sim {

bool DramCache::place(std::uint64_t first, std::uint64_t last) {
  if (last <= first) return false;
  for (const Object& o : objects_)
    if (o.first == first) return true;
  for (const Object& o : objects_)
    if (first < o.last && o.first < last) return false;  // overlaps a placed object
  const std::uint64_t lines = last - first;
  if ((placed_lines_ + lines) * kCacheLineBytes > p_.size_bytes) {
    ++refused_;
    return false;
  }
  Object o;
  o.first = first;
  o.last = last;
  o.copy.resize(static_cast<std::size_t>(lines * kCacheLineBytes));
  o.dirty.assign(static_cast<std::size_t>(lines), 0);
  objects_.push_back(std::move(o));
  placed_lines_ += lines;
  return true;
}

DramCache::Object* DramCache::find(std::uint64_t line) {
  for (Object& o : objects_)
    if (line >= o.first && line < o.last) return &o;
  return nullptr;
}

const DramCache::Object* DramCache::find(std::uint64_t line) const {
  for (const Object& o : objects_)
    if (line >= o.first && line < o.last) return &o;
  return nullptr;
}

void DramCache::absorb(std::uint64_t line, bool copy) {
  Object* o = find(line);
  if (o == nullptr) return;
  const std::size_t i = static_cast<std::size_t>(line - o->first);
  // A whole line of live memory: a 64-byte aligned line never crosses a page, so it is mapped
  // wherever one byte of the crash image is.
  if (copy)
    std::memcpy(o->copy.data() + i * kCacheLineBytes,
                reinterpret_cast<const void*>(line * kCacheLineBytes), kCacheLineBytes);
  if (o->dirty[i] == 0) {
    o->dirty[i] = 1;
    ++o->dirty_lines;
  }
  ++stats_.absorbed_writes;
}

void DramCache::power_fail() {
  for (Object& o : objects_) {
    if (o.dirty_lines == 0) continue;
    stats_.lost_lines += o.dirty_lines;
    std::fill(o.dirty.begin(), o.dirty.end(), std::uint8_t{0});
    o.dirty_lines = 0;
  }
}

DramCacheStats DramCache::stats() const {
  DramCacheStats s = stats_;
  s.objects = objects_.size();
  s.refused_objects = refused_;
  s.placed_bytes = placed_lines_ * kCacheLineBytes;
  for (const Object& o : objects_) s.dirty_lines += o.dirty_lines;
  return s;
}

// The hierarchy's two DRAM-cache operations (declared in hierarchy.hpp).

void Hierarchy::dram_cache_place(std::uint64_t first, std::uint64_t last) {
  if (dram_) (void)dram_->place(first, last);
}

// The dirty resident lines go to NVM at NVM bandwidth: counted as NVM writes by a flush, their
// DRAM copies into the crash image, and the core waits ceil(lines x flush_cycles_per_line).
// They stay resident and clean (seed 002 §3 does not invalidate).
void Hierarchy::dram_cache_flush(int core, std::uint64_t first, std::uint64_t last) {
  if (!dram_) return;
  const std::uint64_t lines = dram_->flush(first, last, [&](std::uint64_t l, const std::byte* b) {
    ++nvm_.writes;
    ++nvm_.writes_by_cause[static_cast<std::size_t>(WriteCause::kFlush)];
    image_.capture_line_from(LineAddr(l), b);
  });
  const double cost =
      std::ceil(static_cast<double>(lines) * params_.dram_cache.flush_cycles_per_line);
  cores_[static_cast<std::size_t>(core)].clock += static_cast<std::uint64_t>(cost);
}

}  // namespace pmlab::sim
