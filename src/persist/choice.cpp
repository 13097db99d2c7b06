// The persister chosen for a user's mapping (persist/choice.hpp).
#include "pmlab/persist/choice.hpp"

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::persist {

std::string_view to_string(Persistence p) {
  switch (p) {
    case Persistence::kAuto:
      return "auto";
    case Persistence::kPmem2:
      return "pmem2";
    case Persistence::kCpu:
      return "cpu";
    case Persistence::kNone:
      return "none";
  }
  return "?";
}

Persistence persistence_from_string(std::string_view s) {
  for (auto p : {Persistence::kAuto, Persistence::kPmem2, Persistence::kCpu, Persistence::kNone})
    if (s == to_string(p)) return p;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown persistence '{}' (expected auto, pmem2, cpu or none)", s));
}

std::string store_granularity(pmem2_map* map) {
  if (map == nullptr) return "unknown";
  switch (pmem2_map_get_store_granularity(map)) {
    case PMEM2_GRANULARITY_BYTE:
      return "byte";
    case PMEM2_GRANULARITY_CACHE_LINE:
      return "cache-line";
    case PMEM2_GRANULARITY_PAGE:
      return "page";
  }
  return "unknown";
}

std::string emulation_warning(pmem2_map* map, std::string_view path) {
  if (store_granularity(map) != "page") return {};
  return fmt::format(
      "'{}' is not on persistent memory (no DAX: libpmem2 reports page granularity), so "
      "persistence is only emulated: flushes reach the page cache, a process kill is survived "
      "but a power failure may not be",
      path);
}

ChosenPersist::ChosenPersist(pmem2_map* map, Persistence asked) {
  const bool dax = store_granularity(map) != "page" && map != nullptr;
  chosen_ = asked;
  if (asked == Persistence::kAuto) chosen_ = dax ? Persistence::kPmem2 : Persistence::kCpu;
  if (chosen_ == Persistence::kPmem2 && map == nullptr)
    throw Error(ErrorCode::kInvalidArgument, "persistence pmem2 needs a libpmem2 mapping");
  const char* where = dax ? "DAX" : "not DAX";
  switch (chosen_) {
    case Persistence::kPmem2:
      flush_ = pmem2_get_flush_fn(map);
      drain_ = pmem2_get_drain_fn(map);
      persist_ = pmem2_get_persist_fn(map);
      description_ = fmt::format("pmem2 ({})", where);
      break;
    case Persistence::kCpu:
      kind_ = best_flush_kind();
      description_ = fmt::format("cpu {} ({})", to_string(kind_), where);
      break;
    default:
      description_ = "none (not crash-safe)";
      break;
  }
}

void ChosenPersist::flush(const void* p) const {
  switch (chosen_) {
    case Persistence::kPmem2:
      return flush_(const_cast<void*>(p), kCacheLineBytes);
    case Persistence::kCpu:
      if (kind_ == FlushKind::kClwb) return flush_line<FlushKind::kClwb>(p);
      if (kind_ == FlushKind::kClflushopt) return flush_line<FlushKind::kClflushopt>(p);
      return flush_line<FlushKind::kClflush>(p);
    default:
      return;
  }
}

void ChosenPersist::fence() const {
  if (chosen_ == Persistence::kPmem2) return drain_();
  if (chosen_ == Persistence::kCpu) sfence();
}

void ChosenPersist::persist(const void* p, std::size_t len) const {
  switch (chosen_) {
    case Persistence::kPmem2:
      return persist_(const_cast<void*>(p), len);
    case Persistence::kCpu:
      if (kind_ == FlushKind::kClwb) return persist_range<FlushKind::kClwb>(p, len);
      if (kind_ == FlushKind::kClflushopt) return persist_range<FlushKind::kClflushopt>(p, len);
      return persist_range<FlushKind::kClflush>(p, len);
    default:
      return;
  }
}

}  // namespace pmlab::persist
