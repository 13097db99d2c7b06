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

// A flush instruction this CPU lacks (RunCpuPersist::refuse). Its first flush or persist
// refuses the run: by an exception (kUnsupported, exit 2) outside parallel loops; inside one,
// where an exception can't cross OpenMP, by the same message and exit status 2. An interrupted
// run is resumable (with another --flush or --persist auto) like any crash.
[[noreturn]] inline void refuse_unsupported_flush(persist::FlushKind kind) {
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
  // One backend type for every flush instruction (RunCpuPersist). A missing instruction is
  // refused at the first flush, not up front: a scheme that flushes nothing (base, LP's normal
  // execution) runs on a CPU without it.
  mem::NativeBackend<RunCpuPersist> be(
      RunCpuPersist{opt.flush, cpu_supports(opt.flush) ? nullptr : &refuse_unsupported_flush},
      threads);
  return run(be);
}

}  // namespace pmlab::run
