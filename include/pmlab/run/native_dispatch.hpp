// Chooses the native backend's persister once per run from (mode, flush kind) and calls
// fn(backend).
#pragma once

#include "pmlab/core/error.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::run {

template <class Fn>
decltype(auto) with_native_backend(const pool::Pool& pool, const ExecOptions& opt, int threads,
                                   Fn&& fn) {
  using namespace persist;
  switch (opt.mode) {
    case PersistMode::kNone: {
      mem::NativeBackend<NoPersist> be(NoPersist{}, threads);
      return fn(be);
    }
    case PersistMode::kAuto: {
      mem::NativeBackend<Pmem2Persist> be(Pmem2Persist(pool.map()), threads);
      return fn(be);
    }
    case PersistMode::kCpu:
      break;
  }
  if (!cpu_supports(opt.flush))
    throw Error(ErrorCode::kUnsupported,
                std::string("this CPU does not support ") + std::string(to_string(opt.flush)));
  switch (opt.flush) {
    case FlushKind::kClflush: {
      mem::NativeBackend<CpuPersist<FlushKind::kClflush>> be({}, threads);
      return fn(be);
    }
    case FlushKind::kClflushopt: {
      mem::NativeBackend<CpuPersist<FlushKind::kClflushopt>> be({}, threads);
      return fn(be);
    }
    case FlushKind::kClwb:
      break;
  }
  mem::NativeBackend<CpuPersist<FlushKind::kClwb>> be({}, threads);
  return fn(be);
}

}  // namespace pmlab::run
