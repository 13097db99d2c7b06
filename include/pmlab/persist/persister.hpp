// Persisters: the flush/fence policy a backend is built with, chosen once per run (never per
// store).
#pragma once

#include <libpmem2.h>

#include <cstddef>

#include "pmlab/persist/flush.hpp"

namespace pmlab::persist {

enum class PersistMode {
  kAuto,  // libpmem2's choice for the mapping (msync on plain files, flushes on DAX, none on eADR)
  kCpu,   // forced cache-line flush instructions + sfence (measurements on machines without PM)
  kNone,  // no flushing at all (baselines)
};

template <class P>
concept Persister = requires(P& p, const void* addr, std::size_t len) {
  p.flush(addr);
  p.fence();
  p.persist(addr, len);
};

struct NoPersist {
  void flush(const void*) const {}
  void fence() const {}
  void persist(const void*, std::size_t) const {}
};

template <FlushKind K>
struct CpuPersist {
  static constexpr FlushKind kKind = K;
  void flush(const void* p) const { flush_line<K>(p); }
  void fence() const { sfence(); }
  void persist(const void* p, std::size_t len) const { persist_range<K>(p, len); }
};

// The run's CPU persister: the flush instruction chosen at run time (--flush), so that every
// scheme is compiled once for the CPU path instead of once per instruction (a third of the
// kernels' compile time). The choice is a predictable branch per call, next to a flush that
// costs tens of nanoseconds; persist() branches once per range, outside its loop. `refuse`, when
// set, is called instead of any flush (an instruction this CPU lacks; run/native_dispatch.hpp).
struct RunCpuPersist {
  FlushKind kind = FlushKind::kClwb;
  void (*refuse)(FlushKind) = nullptr;

  void flush(const void* p) const {
    if (refuse != nullptr) [[unlikely]]
      refuse(kind);
    switch (kind) {
      case FlushKind::kClflush:
        return flush_line<FlushKind::kClflush>(p);
      case FlushKind::kClflushopt:
        return flush_line<FlushKind::kClflushopt>(p);
      case FlushKind::kClwb:
        return flush_line<FlushKind::kClwb>(p);
    }
  }
  void fence() const { sfence(); }
  void persist(const void* p, std::size_t len) const {
    if (refuse != nullptr && len != 0) [[unlikely]]
      refuse(kind);
    switch (kind) {
      case FlushKind::kClflush:
        return persist_range<FlushKind::kClflush>(p, len);
      case FlushKind::kClflushopt:
        return persist_range<FlushKind::kClflushopt>(p, len);
      case FlushKind::kClwb:
        return persist_range<FlushKind::kClwb>(p, len);
    }
  }
};

// Delegates to the functions libpmem2 selected for the mapping (pmem2_get_flush_fn & co).
class Pmem2Persist {
 public:
  explicit Pmem2Persist(pmem2_map* map)
      : flush_(pmem2_get_flush_fn(map)),
        drain_(pmem2_get_drain_fn(map)),
        persist_(pmem2_get_persist_fn(map)) {}
  void flush(const void* p) const { flush_(const_cast<void*>(p), kCacheLineBytes); }
  void fence() const { drain_(); }
  void persist(const void* p, std::size_t len) const { persist_(const_cast<void*>(p), len); }

 private:
  pmem2_flush_fn flush_;
  pmem2_drain_fn drain_;
  pmem2_persist_fn persist_;
};

static_assert(Persister<NoPersist> && Persister<CpuPersist<FlushKind::kClwb>> &&
              Persister<RunCpuPersist> && Persister<Pmem2Persist>);

}  // namespace pmlab::persist
