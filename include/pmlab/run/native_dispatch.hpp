// Chooses the native backend's persister once per run from (mode, flush kind) and calls
// fn(backend).
#pragma once

#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::run {

// Stands in for a flush instruction this CPU lacks. Its first flush or persist refuses the run:
// by an exception (kUnsupported, exit 2) outside parallel loops; inside one, where an exception
// can't cross OpenMP, by the same message and exit status 2. An interrupted run is resumable
// (with another --flush or --persist auto) like any crash.
struct UnsupportedFlush {
  persist::FlushKind kind;
  [[noreturn]] void refuse() const {
    const std::string why = fmt::format(
        "this CPU does not support {}, which this scheme uses (try --flush clflushopt or "
        "clflush, or --persist auto; the pool can be resumed)",
        persist::to_string(kind));
    if (omp_in_parallel() != 0) {
      fmt::print(stderr, "pmlab: error: {}\n", why);
      std::fflush(stderr);
      std::_Exit(2);
    }
    throw Error(ErrorCode::kUnsupported, why);
  }
  void flush(const void*) const { refuse(); }
  void fence() const { persist::sfence(); }  // every x86-64 CPU has sfence
  void persist(const void*, std::size_t len) const {
    if (len != 0) refuse();
  }
};

template <class Fn>
decltype(auto) with_native_backend(const pool::Pool& pool, const ExecOptions& opt, int threads,
                                   Fn&& fn) {
  using namespace persist;
  // Every backend publishes its outer steps where the caller asked (pmlab run's bar).
  const auto run = [&](auto& be) -> decltype(auto) {
    be.publish_steps_to(opt.steps_done);
    return fn(be);
  };
  switch (opt.mode) {
    case PersistMode::kNone: {
      mem::NativeBackend<NoPersist> be(NoPersist{}, threads);
      return run(be);
    }
    case PersistMode::kAuto: {
      mem::NativeBackend<Pmem2Persist> be(Pmem2Persist(pool.map()), threads);
      return run(be);
    }
    case PersistMode::kCpu:
      break;
  }
  if (!cpu_supports(opt.flush)) {
    // Refused at the first flush, not up front: a scheme that flushes nothing (base, LP's
    // normal execution) runs on a CPU without the instruction.
    mem::NativeBackend<UnsupportedFlush> be(UnsupportedFlush{opt.flush}, threads);
    return run(be);
  }
  switch (opt.flush) {
    case FlushKind::kClflush: {
      mem::NativeBackend<CpuPersist<FlushKind::kClflush>> be({}, threads);
      return run(be);
    }
    case FlushKind::kClflushopt: {
      mem::NativeBackend<CpuPersist<FlushKind::kClflushopt>> be({}, threads);
      return run(be);
    }
    case FlushKind::kClwb:
      break;
  }
  mem::NativeBackend<CpuPersist<FlushKind::kClwb>> be({}, threads);
  return run(be);
}

}  // namespace pmlab::run
