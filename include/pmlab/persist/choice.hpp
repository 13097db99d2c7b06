// The persister chosen for a user's mapping: libpmem2's persist on DAX, the CPU's own flush
// instruction on a file that is not DAX, or what the user asked for (lp::Loop, the C API).
#pragma once

#include <libpmem2.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "pmlab/persist/flush.hpp"
#include "pmlab/persist/persister.hpp"

namespace pmlab::persist {

/// What a user may ask for: kAuto lets pmlab choose (see choose_persistence).
enum class Persistence {
  kAuto,   ///< DAX: libpmem2's persist; not DAX: the best flush instruction the CPU has
  kPmem2,  ///< libpmem2's persist whatever the mapping (msync on a file that is not DAX)
  kCpu,    ///< the best flush instruction the CPU has (clwb, else clflushopt, else clflush)
  kNone,   ///< no flush at all: a baseline, not crash-safe
};
/// auto, pmem2, cpu, none.
[[nodiscard]] std::string_view to_string(Persistence p);
/// The persistence named `s` (auto, pmem2, cpu, none); throws pmlab::Error (kInvalidArgument).
[[nodiscard]] Persistence persistence_from_string(std::string_view s);

/// How stores to a mapping become durable, as libpmem2 reports it
/// (pmem2_map_get_store_granularity): "byte" (eADR: the caches are persistent), "cache-line"
/// (DAX persistent memory: flush + fence), "page" (not persistent memory: the page cache; a
/// process kill is survived, a power failure may not be), "unknown" for no mapping.
[[nodiscard]] std::string store_granularity(pmem2_map* map);
/// The warning pmlab prints for a pool that is not on persistent memory; empty on DAX.
[[nodiscard]] std::string emulation_warning(pmem2_map* map, std::string_view path);

/// A persister chosen at run time, once per mapping (a predictable branch per call; the calls
/// are a range persist each, never per store).
class ChosenPersist {
 public:
  /// kAuto resolves by the mapping's store granularity: libpmem2's functions on DAX (they know
  /// eADR and the right instruction); elsewhere the CPU's instruction, because libpmem2 then
  /// msyncs every range (1.26 s against 0.03 s unprotected for a 256 x 256 stencil, measured
  /// when this choice was made). On such a file persistence is only emulated either way: a
  /// process kill is survived, and only kPmem2's msync would carry data to the disk before a
  /// power failure (ask for it explicitly).
  ChosenPersist(pmem2_map* map, Persistence asked);
  /// Writes back the cache line holding p (no fence).
  void flush(const void* p) const;
  /// Waits for the flushes issued before it (sfence, or libpmem2's drain).
  void fence() const;
  /// Makes [p, p + len) durable: every line flushed, then a fence.
  void persist(const void* p, std::size_t len) const;
  /// What was chosen: "pmem2 (DAX)", "cpu clwb (not DAX)", "none", ...
  [[nodiscard]] const std::string& description() const { return description_; }
  /// The resolved choice (never kAuto).
  [[nodiscard]] Persistence chosen() const { return chosen_; }

 private:
  Persistence chosen_ = Persistence::kNone;
  FlushKind kind_ = FlushKind::kClflush;
  pmem2_flush_fn flush_ = nullptr;
  pmem2_drain_fn drain_ = nullptr;
  pmem2_persist_fn persist_ = nullptr;
  std::string description_;
};
static_assert(Persister<ChosenPersist>);

}  // namespace pmlab::persist
