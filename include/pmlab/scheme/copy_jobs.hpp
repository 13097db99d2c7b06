// Durable copy of a list of (dst, src, count) segments, split over the backend's threads.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"

namespace pmlab::scheme {

// One named pool array a scheme needs, and its size: what the `*_bytes_for` helpers of the
// kernels' rival schemes return, so that a driver can allocate them generically.
struct PoolArray {
  std::string_view name;
  std::size_t bytes = 0;
};

// Copies every job durably (durable once this returns). Jobs are handed out whole, a contiguous
// run of jobs per thread (each thread fences once after its own stores); small totals run on
// the calling thread, as in copy_durable_parallel. Jobs must not overlap each other's targets.
template <mem::Backend B>
void copy_jobs_durable(B& b, std::span<const CopyJob> jobs) {
  std::size_t total = 0;
  for (const auto& j : jobs) total += j.count;
  if (total == 0) return;
  const auto chunks = static_cast<std::size_t>(b.threads() < 1 ? 1 : b.threads());
  if (chunks == 1 || total < kParallelCopyMin || jobs.size() < 2) {
    for (const auto& j : jobs) copy_unfenced(b, j.dst, j.src, j.count);
    finish_copies(b);
    return;
  }
  // Chunk t takes the jobs that start in its share of the elements: balanced by volume, not
  // by job count (segments of a trailing matrix shrink row by row).
  b.parallel_for(0, chunks, [&](std::size_t t) {
    const std::size_t lo = total * t / chunks, hi = total * (t + 1) / chunks;
    std::size_t start = 0;
    for (const auto& j : jobs) {
      if (start >= lo && start < hi) copy_unfenced(b, j.dst, j.src, j.count);
      start += j.count;
    }
    finish_copies(b);
  });
}

}  // namespace pmlab::scheme
