// Non-temporal (streaming) copy of doubles: AVX-512, AVX or SSE2, chosen once from CPUID.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "pmlab/scheme/checkpoint_copy.hpp"

namespace pmlab::scheme {
namespace {

// movnti for the unaligned head and the tail: keeps every store of the copy non-temporal.
inline void stream_one(double* d, const double* s) {
  long long v;
  std::memcpy(&v, s, sizeof v);
  _mm_stream_si64(reinterpret_cast<long long*>(d), v);
}

template <std::uintptr_t Align>
std::size_t stream_head(double* d, const double* s, std::size_t n) {
  std::size_t i = 0;
  while (i < n && (reinterpret_cast<std::uintptr_t>(d + i) & (Align - 1)) != 0)
    stream_one(d + i, s + i), ++i;
  return i;
}

__attribute__((target("avx512f"))) void copy_avx512(double* d, const double* s, std::size_t n) {
  std::size_t i = stream_head<64>(d, s, n);
  for (; i + 8 <= n; i += 8) _mm512_stream_pd(d + i, _mm512_loadu_pd(s + i));
  for (; i < n; ++i) stream_one(d + i, s + i);
}

__attribute__((target("avx"))) void copy_avx(double* d, const double* s, std::size_t n) {
  std::size_t i = stream_head<32>(d, s, n);
  for (; i + 4 <= n; i += 4) _mm256_stream_pd(d + i, _mm256_loadu_pd(s + i));
  for (; i < n; ++i) stream_one(d + i, s + i);
}

void copy_sse2(double* d, const double* s, std::size_t n) {
  std::size_t i = stream_head<16>(d, s, n);
  for (; i + 2 <= n; i += 2) _mm_stream_pd(d + i, _mm_loadu_pd(s + i));
  for (; i < n; ++i) stream_one(d + i, s + i);
}

using CopyFn = void (*)(double*, const double*, std::size_t);

struct Choice {
  CopyFn fn;
  std::string_view isa;
};

Choice choose() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {copy_avx512, "avx512"};
  if (__builtin_cpu_supports("avx")) return {copy_avx, "avx"};
  return {copy_sse2, "sse2"};
}

const Choice& choice() {
  static const Choice c = choose();
  return c;
}

}  // namespace

void nt_copy(double* dst, const double* src, std::size_t count) {
  choice().fn(dst, src, count);
}

std::string_view nt_copy_isa() {
  return choice().isa;
}

}  // namespace pmlab::scheme
