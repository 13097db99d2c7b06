// Checkpoint copier: durable bulk copy of doubles, with SIMD non-temporal stores on the native
// backend.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include "pmlab/mem/backend.hpp"
#include "pmlab/persist/flush.hpp"
#include "pmlab/scheme/lines.hpp"
#include "pmlab/scheme/native_path.hpp"

namespace pmlab::scheme {

// Non-temporal copy of `count` doubles (AVX-512, AVX or SSE2 streaming stores, chosen once by
// CPUID); no fence. Defined in src/scheme/nt_copy.cpp. dst and src must not overlap.
void nt_copy(double* dst, const double* src, std::size_t count);
// Which instruction set nt_copy uses on this CPU ("avx512", "avx", "sse2").
[[nodiscard]] std::string_view nt_copy_isa();

// Copies src[0, count) to dst without the final fence (see copy_durable). Natively: SIMD
// non-temporal stores (the thesis' SIMD checkpoint stores, which bypass the caches, so they
// neither pollute them nor need a flush per line). Every other backend gets element
// loads/stores + a flush per line, so that the simulator sees and counts every write; NT
// stores issued behind its back would be invisible to its NVM model and crash image.
template <mem::Backend B>
void copy_unfenced(B& b, double* dst, const double* src, std::size_t count) {
  if (count == 0) return;
  if constexpr (kIsNativeBackend<B>) {
    nt_copy(dst, src, count);
    using P = std::remove_cvref_t<decltype(b.persister())>;
    if constexpr (kNtNeedsPersistCall<P>) {
      persist::sfence();
      b.persist(dst, count * sizeof(double));  // e.g. msync under libpmem2 on a plain file
    }
  } else {
    if constexpr (requires { b.store_nt(dst, 0.0); }) {
      if (b.nt_stores()) {  // the simulator's NT model (off by default): no per-line flush
        for (std::size_t i = 0; i < count; ++i) b.store_nt(dst + i, b.load(src + i));
        return;
      }
    }
    for (std::size_t i = 0; i < count; ++i) b.store(dst + i, b.load(src + i));
    flush_lines(b, dst, count * sizeof(double));
  }
}

// The fence that makes this thread's preceding copy_unfenced calls durable (for NT stores it
// must be a real sfence even when the backend's own fence is a no-op: it orders them).
template <mem::Backend B>
void finish_copies(B& b) {
  if constexpr (kIsNativeBackend<B>)
    persist::sfence();
  else
    b.fence();
}

// copy_durable's native path with only a persister (no backend): what the flush helper thread
// runs for a copy request (scheme/async_flush.hpp). The sfence is the helper's own: it orders
// the helper's non-temporal stores before the ticket it publishes.
template <class P>
void native_copy_durable(const P& persister, double* dst, const double* src, std::size_t count) {
  if (count == 0) return;
  nt_copy(dst, src, count);
  persist::sfence();
  if constexpr (kNtNeedsPersistCall<P>) persister.persist(dst, count * sizeof(double));
}

// Copies src[0, count) to dst durably: on return the copy has reached the persistence domain.
// The order of the copy does not matter: nothing reads dst until the caller publishes it.
template <mem::Backend B>
void copy_durable(B& b, double* dst, const double* src, std::size_t count) {
  copy_unfenced(b, dst, src, count);
  finish_copies(b);
}

struct CopyJob {
  double* dst;
  const double* src;
  std::size_t count;
};

// Below this many doubles a copy runs on the calling thread: an extra parallel region and
// barrier costs more than it saves (and a lot more on a loaded machine).
inline constexpr std::size_t kParallelCopyMin = std::size_t{1} << 18;  // 2 MiB

// Several durable copies at once, each split into contiguous chunks over the backend's
// threads inside one parallel region; each thread fences once after its chunks. Durable once
// it returns.
template <mem::Backend B>
void copy_durable_parallel(B& b, std::initializer_list<CopyJob> jobs) {
  std::size_t total = 0;
  for (const auto& j : jobs) total += j.count;
  const auto chunks = static_cast<std::size_t>(b.threads() < 1 ? 1 : b.threads());
  if (chunks == 1 || total < kParallelCopyMin) {
    for (const auto& j : jobs) copy_unfenced(b, j.dst, j.src, j.count);
    finish_copies(b);
    return;
  }
  b.parallel_for(0, chunks, [&](std::size_t t) {
    for (const auto& j : jobs) {
      // Chunk bounds rounded to 8 doubles (a line) so threads never store into the same line.
      const std::size_t lo = (j.count * t / chunks) & ~std::size_t{7};
      const std::size_t hi =
          t + 1 == chunks ? j.count : (j.count * (t + 1) / chunks) & ~std::size_t{7};
      copy_unfenced(b, j.dst + lo, j.src + lo, hi - lo);
    }
    finish_copies(b);
  });
}

}  // namespace pmlab::scheme
