// How a checkpoint copy reaches NVM (seed 002 §3): non-temporal stores, or stores + clflush of
// every block on one thread, or stores + clflush split over threads; and the run's interval.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/persist/flush.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/lines.hpp"
#include "pmlab/scheme/native_path.hpp"

namespace pmlab::scheme {

enum class CopyMode {
  kNt,                // design 2b "cache bypassing": SIMD streaming stores, sfence (today's cp)
  kStoresClflush,     // design 1 "checkpoint_clflush": memcpy, clflush every block, sfence
  kStoresParClflush,  // design 2a "checkpoint_par_clflush": memcpy, flush loop over threads
};

// Negative controls of the copy (`pmlab crash --mutate cp-no-flush|cp-no-sfence`, see
// mem::Mutation): carried by the simulator's backend, constant false natively.
template <mem::Backend B>
[[nodiscard]] constexpr bool copy_mutated(const B& b) {
  return mem::mutated(b, mem::Mutation::kCpNoFlush) || mem::mutated(b, mem::Mutation::kCpNoSfence);
}

// The checkpoint interval (outer iterations between checkpoints) of the cp-clflush,
// cp-par-clflush and cp-nt rows: 1 by default, as in the paper ("at every iteration"). It is a
// per-process setting (`--cp-every N`), not a pool parameter: it changes neither the pool's
// layout nor recovery (which reads the newest published checkpoint, whatever the interval).
[[nodiscard]] std::size_t checkpoint_interval();
void set_checkpoint_interval(std::size_t every);  // 0 is refused (kInvalidArgument)

namespace detail {

// Plain stores of the copy: memcpy natively (the paper's design 1), element stores elsewhere
// so that the simulator sees every write.
template <mem::Backend B>
void copy_stores(B& b, double* dst, const double* src, std::size_t count) {
  if constexpr (kIsNativeBackend<B>)
    std::memcpy(dst, src, count * sizeof(double));
  else
    for (std::size_t i = 0; i < count; ++i) b.store(dst + i, b.load(src + i));
}

// Writes back lines [first, end) (addresses): natively the instruction in the scheme's name,
// clflush, under the forced-CPU persisters (the paper's design; --flush does not change it),
// libpmem2's persist (msync on a plain file) under --persist auto, nothing under --persist none;
// the backend's own flush elsewhere (the simulator's --flush).
template <mem::Backend B>
void write_back(B& b, std::uintptr_t first, std::uintptr_t end) {
  if (first >= end) return;
  if constexpr (kIsNativeBackend<B>) {
    using P = std::remove_cvref_t<decltype(b.persister())>;
    if constexpr (std::is_same_v<P, persist::NoPersist>) {
      return;
    } else if constexpr (kNtNeedsPersistCall<P>) {
      b.persist(reinterpret_cast<const void*>(first), end - first);
    } else {
      for (auto a = first; a < end; a += kCacheLineBytes)
        persist::flush_line<persist::FlushKind::kClflush>(reinterpret_cast<const void*>(a));
    }
  } else {
    for (auto a = first; a < end; a += kCacheLineBytes) b.flush(reinterpret_cast<const void*>(a));
  }
}

template <mem::Backend B>
void fence_copy(B& b) {
  if (mem::mutated(b, mem::Mutation::kCpNoSfence)) return;
  finish_copies(b);
}

}  // namespace detail

// Copies every job durably with `mode` (durable once this returns; the caller publishes after).
// kNt is exactly copy_jobs_durable's path. Jobs must not overlap each other's targets.
template <mem::Backend B>
void copy_jobs_durable_mode(B& b, std::span<const CopyJob> jobs, CopyMode mode) {
  const bool no_flush = mem::mutated(b, mem::Mutation::kCpNoFlush);
  if (mode == CopyMode::kNt) {
    if (!copy_mutated(b)) return copy_jobs_durable(b, jobs);
    // Mutants of the NT copy: every store still issued, but unflushed (simulator) or unfenced.
    for (const auto& j : jobs) {
      if (no_flush && !kIsNativeBackend<B>)
        detail::copy_stores(b, j.dst, j.src, j.count);
      else
        copy_unfenced(b, j.dst, j.src, j.count);
    }
    detail::fence_copy(b);
    return;
  }
  // The paper's checkpoint is taken by the main thread: the copy is sequential in both designs;
  // only design 2a spreads the flush loop (one block per OpenMP iteration, here contiguous
  // line ranges per thread, which is the same set of flushes with less scheduling).
  for (const auto& j : jobs) detail::copy_stores(b, j.dst, j.src, j.count);
  if (no_flush) return detail::fence_copy(b);
  const auto line = [](const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{kCacheLineBytes} - 1);
  };
  const auto flush_job_lines = [&](const CopyJob& j, std::size_t lo, std::size_t hi) {
    const std::uintptr_t first = line(j.dst),
                         end = reinterpret_cast<std::uintptr_t>(j.dst + j.count);
    detail::write_back(b, first + lo * kCacheLineBytes,
                       std::min(end, first + hi * kCacheLineBytes));
  };
  const auto lines_of = [&](const CopyJob& j) -> std::size_t {
    if (j.count == 0) return 0;
    const auto end = reinterpret_cast<std::uintptr_t>(j.dst + j.count);
    return (end - line(j.dst) + kCacheLineBytes - 1) / kCacheLineBytes;
  };
  const auto threads = static_cast<std::size_t>(b.threads() < 1 ? 1 : b.threads());
  if (mode == CopyMode::kStoresClflush || threads == 1) {
    for (const auto& j : jobs) flush_job_lines(j, 0, lines_of(j));
    return detail::fence_copy(b);
  }
  // Design 2a: the lines of all jobs, numbered consecutively, split into `threads` contiguous
  // shares; every thread fences its own flushes (clflush has no cross-thread ordering).
  std::size_t total = 0;
  for (const auto& j : jobs) total += lines_of(j);
  b.parallel_for(0, threads, [&](std::size_t t) {
    const std::size_t lo = total * t / threads, hi = total * (t + 1) / threads;
    std::size_t start = 0;
    for (const auto& j : jobs) {
      const std::size_t n = lines_of(j);
      const std::size_t a = std::max(lo, start), e = std::min(hi, start + n);
      if (a < e) flush_job_lines(j, a - start, e - start);
      start += n;
    }
    detail::fence_copy(b);
  });
}

[[nodiscard]] constexpr std::string_view to_string(CopyMode m) {
  switch (m) {
    case CopyMode::kNt:
      return "nt";
    case CopyMode::kStoresClflush:
      return "clflush";
    case CopyMode::kStoresParClflush:
      return "par-clflush";
  }
  return "?";
}

}  // namespace pmlab::scheme
