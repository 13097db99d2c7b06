// gemm's native GEBP: 8x24 micro-kernels for AVX-512, AVX2+FMA and portable C++, chosen at run
// time; each is compiled for its ISA by a target attribute, so the build needs no -march.
#include "pmlab/kernels/gemm_micro.hpp"

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

namespace pmlab::kernels::gemm::micro {
namespace {

constexpr bool folds_sum(Fold f) {
  return f == Fold::kSum || f == Fold::kSumXor;
}
constexpr bool folds_xor(Fold f) {
  return f == Fold::kXor || f == Fold::kSumXor;
}

// ---- AVX-512: 24 zmm accumulators (8 rows x 3 vectors of 8), B̃'s row in 3 zmm, A broadcast
// from memory into each fma. The ISA's 32 registers hold all of it with no spill.
#define PMLAB_AVX512 __attribute__((target("avx512f,avx512dq,fma")))

template <Fold F>
PMLAB_AVX512 inline void tile_avx512(std::size_t kc, const double* a, const double* b, double* c,
                                     std::size_t ldc, const double* c_next, __m512i& sum,
                                     __m512i& x) {
  // The next tile's C rows are fetched while this tile computes: a C tile is read once per kc
  // step, so it usually comes from L3 or memory, and its 8 rows are 8 separate streams.
#pragma GCC unroll 8
  for (std::size_t i = 0; i < kMr; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c_next + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c_next + i * ldc + 8), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c_next + i * ldc + 16), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c_next + i * ldc + 23), _MM_HINT_T0);
  }
  __m512d acc[kMr][3];
#pragma GCC unroll 8
  for (std::size_t i = 0; i < kMr; ++i)
#pragma GCC unroll 3
    for (std::size_t j = 0; j < 3; ++j) acc[i][j] = _mm512_loadu_pd(c + i * ldc + 8 * j);
  for (std::size_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    const __m512d b0 = _mm512_loadu_pd(b), b1 = _mm512_loadu_pd(b + 8),
                  b2 = _mm512_loadu_pd(b + 16);
#pragma GCC unroll 8
    for (std::size_t i = 0; i < kMr; ++i) {
      const __m512d ai = _mm512_set1_pd(a[i]);
      acc[i][0] = _mm512_fmadd_pd(ai, b0, acc[i][0]);  // a_ik * b_kj + acc, one rounding
      acc[i][1] = _mm512_fmadd_pd(ai, b1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_pd(ai, b2, acc[i][2]);
    }
  }
  // The checksum is folded from the registers about to be stored: no re-read of C.
#pragma GCC unroll 8
  for (std::size_t i = 0; i < kMr; ++i)
#pragma GCC unroll 3
    for (std::size_t j = 0; j < 3; ++j) {
      if constexpr (folds_sum(F)) sum = _mm512_add_epi64(sum, _mm512_castpd_si512(acc[i][j]));
      if constexpr (folds_xor(F)) x = _mm512_xor_si512(x, _mm512_castpd_si512(acc[i][j]));
      _mm512_storeu_pd(c + i * ldc + 8 * j, acc[i][j]);
    }
}

template <Fold F>
PMLAB_AVX512 inline Folded reduce_avx512(__m512i sum, __m512i x) {
  alignas(64) std::uint64_t s[8], w[8];
  _mm512_store_si512(s, sum);
  _mm512_store_si512(w, x);
  Folded f;
  for (int l = 0; l < 8; ++l) {
    if constexpr (folds_sum(F)) f.sum += s[l];
    if constexpr (folds_xor(F)) f.x ^= w[l];
  }
  return f;
}

// ---- AVX2+FMA: 16 ymm registers hold a 4x12 sub-tile (12 accumulators, 3 of B̃, 1 broadcast),
// so the 8x24 tile is four sub-tiles, each over all of kc.
#define PMLAB_AVX2 __attribute__((target("avx2,fma")))

template <Fold F>
PMLAB_AVX2 inline void subtile_avx2(std::size_t kc, const double* a, const double* b, double* c,
                                    std::size_t ldc, __m256i& sum, __m256i& x) {
  __m256d acc[4][3];
#pragma GCC unroll 4
  for (std::size_t i = 0; i < 4; ++i)
#pragma GCC unroll 3
    for (std::size_t j = 0; j < 3; ++j) acc[i][j] = _mm256_loadu_pd(c + i * ldc + 4 * j);
  for (std::size_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    const __m256d b0 = _mm256_loadu_pd(b), b1 = _mm256_loadu_pd(b + 4), b2 = _mm256_loadu_pd(b + 8);
#pragma GCC unroll 4
    for (std::size_t i = 0; i < 4; ++i) {
      const __m256d ai = _mm256_broadcast_sd(a + i);
      acc[i][0] = _mm256_fmadd_pd(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_pd(ai, b1, acc[i][1]);
      acc[i][2] = _mm256_fmadd_pd(ai, b2, acc[i][2]);
    }
  }
#pragma GCC unroll 4
  for (std::size_t i = 0; i < 4; ++i)
#pragma GCC unroll 3
    for (std::size_t j = 0; j < 3; ++j) {
      if constexpr (folds_sum(F)) sum = _mm256_add_epi64(sum, _mm256_castpd_si256(acc[i][j]));
      if constexpr (folds_xor(F)) x = _mm256_xor_si256(x, _mm256_castpd_si256(acc[i][j]));
      _mm256_storeu_pd(c + i * ldc + 4 * j, acc[i][j]);
    }
}

template <Fold F>
PMLAB_AVX2 inline void tile_avx2(std::size_t kc, const double* a, const double* b, double* c,
                                 std::size_t ldc, const double* c_next, __m256i& sum, __m256i& x) {
  for (std::size_t i = 0; i < kMr; ++i)  // as tile_avx512
    for (std::size_t q : {0, 8, 16, 23})
      _mm_prefetch(reinterpret_cast<const char*>(c_next + i * ldc + q), _MM_HINT_T0);
  for (std::size_t rh = 0; rh < kMr; rh += 4)
    for (std::size_t ch = 0; ch < kNr; ch += 12)
      subtile_avx2<F>(kc, a + rh, b + ch, c + rh * ldc + ch, ldc, sum, x);
}

template <Fold F>
PMLAB_AVX2 inline Folded reduce_avx2(__m256i sum, __m256i x) {
  alignas(32) std::uint64_t s[4], w[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(s), sum);
  _mm256_store_si256(reinterpret_cast<__m256i*>(w), x);
  Folded f;
  for (int l = 0; l < 4; ++l) {
    if constexpr (folds_sum(F)) f.sum += s[l];
    if constexpr (folds_xor(F)) f.x ^= w[l];
  }
  return f;
}

// ---- Portable: the same tile in scalars, std::fma per term (a libm call where the build's
// target has no fma instruction: slow, exact).
template <Fold F>
void tile_portable(std::size_t kc, const double* a, const double* b, double* c, std::size_t ldc,
                   const double* /*c_next*/, Folded& f) {
  double acc[kMr][kNr];
  for (std::size_t i = 0; i < kMr; ++i)
    for (std::size_t j = 0; j < kNr; ++j) acc[i][j] = c[i * ldc + j];
  for (std::size_t k = 0; k < kc; ++k, a += kMr, b += kNr)
    for (std::size_t i = 0; i < kMr; ++i)
      for (std::size_t j = 0; j < kNr; ++j) acc[i][j] = std::fma(a[i], b[j], acc[i][j]);
  for (std::size_t i = 0; i < kMr; ++i)
    for (std::size_t j = 0; j < kNr; ++j) {
      const auto bits = std::bit_cast<std::uint64_t>(acc[i][j]);
      if constexpr (folds_sum(F)) f.sum += bits;
      if constexpr (folds_xor(F)) f.x ^= bits;
      c[i * ldc + j] = acc[i][j];
    }
}

// The GEBP loops around a full-tile kernel `tile(kc, a, b, c, ldc, c_next)` (c_next: the C
// tile that follows, for prefetching). An edge tile (fewer than kMr rows or kNr columns of C)
// runs the same ISA's kernel without its fold, `edge_tile`, on a zero-padded copy of its C
// values and copies the valid part back, folding those values: every element keeps its fma
// order, and no padding value enters the checksum.
template <class Tile, class EdgeTile>
inline void gebp_loops(std::size_t m, std::size_t n, std::size_t kc, const double* a,
                       const double* b, double* c, std::size_t ldc, Fold fold, Folded& f,
                       Tile&& tile, EdgeTile&& edge_tile) {
  for (std::size_t j = 0; j < n; j += kNr) {
    const std::size_t w = std::min(kNr, n - j);
    const double* bp = b + (j / kNr) * kc * kNr;
    for (std::size_t i = 0; i < m; i += kMr) {
      const std::size_t h = std::min(kMr, m - i);
      const double* ap = a + (i / kMr) * kc * kMr;
      double* cp = c + i * ldc + j;
      if (h == kMr && w == kNr) {
        // The next tile down the sliver, or the top of the next sliver.
        const double* next = i + 2 * kMr <= m ? cp + kMr * ldc : c + j + kNr;
        tile(kc, ap, bp, cp, ldc, next);
        continue;
      }
      alignas(64) double edge[kMr * kNr] = {};
      for (std::size_t r = 0; r < h; ++r) std::memcpy(edge + r * kNr, cp + r * ldc, w * 8);
      edge_tile(kc, ap, bp, edge, kNr, edge);
      for (std::size_t r = 0; r < h; ++r)
        for (std::size_t q = 0; q < w; ++q) {
          const double v = edge[r * kNr + q];
          const auto bits = std::bit_cast<std::uint64_t>(v);
          if (folds_sum(fold)) f.sum += bits;
          if (folds_xor(fold)) f.x ^= bits;
          cp[r * ldc + q] = v;
        }
    }
  }
}

template <Fold F>
PMLAB_AVX512 Folded gebp_avx512(std::size_t m, std::size_t n, std::size_t kc, const double* a,
                                const double* b, double* c, std::size_t ldc) {
  __m512i sum = _mm512_setzero_si512(), x = _mm512_setzero_si512();
  Folded edges;
  gebp_loops(
      m, n, kc, a, b, c, ldc, F, edges,
      [&](std::size_t k, const double* ap, const double* bp, double* cp, std::size_t ld,
          const double* next) PMLAB_AVX512 { tile_avx512<F>(k, ap, bp, cp, ld, next, sum, x); },
      [&](std::size_t k, const double* ap, const double* bp, double* cp, std::size_t ld,
          const double* next) PMLAB_AVX512 {
        __m512i s0 = _mm512_setzero_si512(), x0 = s0;
        tile_avx512<Fold::kNone>(k, ap, bp, cp, ld, next, s0, x0);
      });
  Folded f = reduce_avx512<F>(sum, x);
  f.sum += edges.sum;
  f.x ^= edges.x;
  return f;
}

template <Fold F>
PMLAB_AVX2 Folded gebp_avx2(std::size_t m, std::size_t n, std::size_t kc, const double* a,
                            const double* b, double* c, std::size_t ldc) {
  __m256i sum = _mm256_setzero_si256(), x = _mm256_setzero_si256();
  Folded edges;
  gebp_loops(
      m, n, kc, a, b, c, ldc, F, edges,
      [&](std::size_t k, const double* ap, const double* bp, double* cp, std::size_t ld,
          const double* next) PMLAB_AVX2 { tile_avx2<F>(k, ap, bp, cp, ld, next, sum, x); },
      [&](std::size_t k, const double* ap, const double* bp, double* cp, std::size_t ld,
          const double* next) PMLAB_AVX2 {
        __m256i s0 = _mm256_setzero_si256(), x0 = s0;
        tile_avx2<Fold::kNone>(k, ap, bp, cp, ld, next, s0, x0);
      });
  Folded f = reduce_avx2<F>(sum, x);
  f.sum += edges.sum;
  f.x ^= edges.x;
  return f;
}

template <Fold F>
Folded gebp_portable(std::size_t m, std::size_t n, std::size_t kc, const double* a, const double* b,
                     double* c, std::size_t ldc) {
  Folded f;
  gebp_loops(
      m, n, kc, a, b, c, ldc, F, f,
      [&](std::size_t k, const double* ap, const double* bp, double* cp, std::size_t ld,
          const double* next) { tile_portable<F>(k, ap, bp, cp, ld, next, f); },
      [&](std::size_t k, const double* ap, const double* bp, double* cp, std::size_t ld,
          const double* next) {
        Folded none;
        tile_portable<Fold::kNone>(k, ap, bp, cp, ld, next, none);
      });
  return f;
}

template <Fold F>
Folded gebp_for(Isa isa, std::size_t m, std::size_t n, std::size_t kc, const double* a,
                const double* b, double* c, std::size_t ldc) {
  switch (isa) {
    case Isa::kAvx512:
      return gebp_avx512<F>(m, n, kc, a, b, c, ldc);
    case Isa::kAvx2:
      return gebp_avx2<F>(m, n, kc, a, b, c, ldc);
    case Isa::kPortable:
      break;
  }
  return gebp_portable<F>(m, n, kc, a, b, c, ldc);
}

// One cache's size from sysfs (/sys/devices/system/cpu/cpu0/cache/index*/): the kernel's view,
// which a VM's sysconf may misreport (glibc on this host's KVM guest gives L3 ten times too big).
std::size_t sysfs_cache(int level, bool data) {
  for (int idx = 0; idx < 8; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::ifstream lv(dir + "level"), ty(dir + "type"), sz(dir + "size");
    int l = 0;
    std::string type, size;
    if (!(lv >> l) || !(ty >> type) || !(sz >> size)) continue;
    if (l != level || (data ? type == "Instruction" : false)) continue;
    std::size_t v = std::stoull(size);
    if (size.back() == 'K') v <<= 10;
    if (size.back() == 'M') v <<= 20;
    return v;
  }
  return 0;
}

std::size_t sysconf_size(int name) {
  const long v = ::sysconf(name);
  return v > 0 ? static_cast<std::size_t>(v) : 0;
}

}  // namespace

std::string_view to_string(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kPortable:
      break;
  }
  return "portable";
}

bool isa_supported(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kPortable:
      break;
  }
  return true;
}

Isa best_isa() {
  static const Isa best = isa_supported(Isa::kAvx512) ? Isa::kAvx512
                          : isa_supported(Isa::kAvx2) ? Isa::kAvx2
                                                      : Isa::kPortable;
  return best;
}

CacheSizes host_caches() {
  CacheSizes c{sysfs_cache(1, true), sysfs_cache(2, true), sysfs_cache(3, true)};
  if (c.l1d == 0) c.l1d = sysconf_size(_SC_LEVEL1_DCACHE_SIZE);
  if (c.l2 == 0) c.l2 = sysconf_size(_SC_LEVEL2_CACHE_SIZE);
  if (c.l3 == 0) c.l3 = sysconf_size(_SC_LEVEL3_CACHE_SIZE);
  return c;
}

Blocking blocking_for(const CacheSizes& caches) {
  // Unknown sizes fall back to a common x86 core's: 32 KiB L1d, 1 MiB L2, 32 MiB L3.
  const std::size_t l1 = caches.l1d != 0 ? caches.l1d : 32u << 10;
  const std::size_t l2 = caches.l2 != 0 ? caches.l2 : 1u << 20;
  const std::size_t l3 = caches.l3 != 0 ? caches.l3 : 32u << 20;
  Blocking b;
  // The micro-kernel's two micro-panels (kMr x kc of Ã, kc x kNr of B̃) fill L1: kc = 128 on
  // a 32 KiB L1 (measured in docs/gemm-fast.md: 80, the half-L1 rule, is slower).
  b.kc = std::clamp<std::size_t>(l1 / ((kMr + kNr) * sizeof(double)) / 8 * 8, 32, 1024);
  // Ã fills a quarter of L2, leaving the rest to the B̃ slivers and C tiles streaming through:
  // a GEBP of n = 1024 at kc = 128 ran at 52, 50, 48 and 48 GFLOP/s with mc = 192, 256, 384
  // and 512 (docs/gemm-fast.md "Blocking").
  b.mc = std::clamp<std::size_t>(l2 / 4 / (b.kc * sizeof(double)) / kMr * kMr, kMr, 4096);
  b.nc = std::clamp<std::size_t>(l3 / 2 / (b.kc * sizeof(double)) / kNr * kNr, kNr, 1u << 16);
  return b;
}

Folded gebp(Isa isa, Fold fold, std::size_t m, std::size_t n, std::size_t kc, const double* a,
            const double* b, double* c, std::size_t ldc) {
  switch (fold) {
    case Fold::kSum:
      return gebp_for<Fold::kSum>(isa, m, n, kc, a, b, c, ldc);
    case Fold::kXor:
      return gebp_for<Fold::kXor>(isa, m, n, kc, a, b, c, ldc);
    case Fold::kSumXor:
      return gebp_for<Fold::kSumXor>(isa, m, n, kc, a, b, c, ldc);
    case Fold::kNone:
      break;
  }
  return gebp_for<Fold::kNone>(isa, m, n, kc, a, b, c, ldc);
}

void pack_rows_panels(const double* src, std::size_t ld, std::size_t h, std::size_t w,
                      std::size_t width, double* dst) {
  for (std::size_t r0 = 0; r0 < h; r0 += width) {
    const std::size_t rows = std::min(width, h - r0);
    for (std::size_t c = 0; c < w; ++c, dst += width) {
      for (std::size_t r = 0; r < rows; ++r) dst[r] = src[(r0 + r) * ld + c];
      for (std::size_t r = rows; r < width; ++r) dst[r] = 0.0;
    }
  }
}

void pack_cols_panels(const double* src, std::size_t ld, std::size_t h, std::size_t w,
                      std::size_t width, double* dst) {
  for (std::size_t c0 = 0; c0 < w; c0 += width) {
    const std::size_t cols = std::min(width, w - c0);
    for (std::size_t r = 0; r < h; ++r, dst += width) {
      std::memcpy(dst, src + r * ld + c0, cols * sizeof(double));
      for (std::size_t c = cols; c < width; ++c) dst[c] = 0.0;
    }
  }
}

}  // namespace pmlab::kernels::gemm::micro
