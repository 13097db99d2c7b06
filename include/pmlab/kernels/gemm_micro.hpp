// gemm's native fast path: GEBP over micro-panels with an 8x24 register-blocked micro-kernel
// (AVX-512, AVX2+FMA or portable, chosen from CPUID), its packers and cache-derived blocking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pmlab::kernels::gemm::micro {

/// The micro-tile every implementation computes: 8 rows of C by 24 columns. AVX-512 holds it
/// in 24 zmm accumulators (8 rows x 3 vectors); AVX2 walks it as four 4x12 sub-tiles (12 ymm
/// accumulators each); the portable kernel in scalars. One shape for all three keeps the packed
/// layout, the store order and the LP regions the same on every host.
inline constexpr std::size_t kMr = 8;
inline constexpr std::size_t kNr = 24;

/// The micro-kernel implementations, most capable last.
enum class Isa : std::uint8_t { kPortable, kAvx2, kAvx512 };
[[nodiscard]] std::string_view to_string(Isa isa);
/// Whether this CPU runs `isa` (CPUID: avx512f for kAvx512; avx2 and fma for kAvx2).
[[nodiscard]] bool isa_supported(Isa isa);
/// The most capable implementation this CPU runs.
[[nodiscard]] Isa best_isa();

/// Data cache sizes in bytes, read at run time (sysfs, else sysconf; 0 where unknown).
struct CacheSizes {
  std::size_t l1d = 0, l2 = 0, l3 = 0;
};
[[nodiscard]] CacheSizes host_caches();

/// mc, kc and nc from cache sizes (docs/gemm-fast.md "Blocking"): a micro-panel of Ã and one
/// of B̃ (kMr x kc and kc x kNr) fill L1, an mc x kc block of Ã a quarter of L2, a kc x nc
/// block of B̃ at most half of L3. mc is a multiple of kMr, kc of 8, nc of kNr.
struct Blocking {
  std::size_t mc = 0, kc = 0, nc = 0;
};
[[nodiscard]] Blocking blocking_for(const CacheSizes& caches);

/// Which commutative checksum words a GEBP call folds from its accumulators before it stores
/// them (LP's modular sum, parity, or both).
enum class Fold : std::uint8_t { kNone, kSum, kXor, kSumXor };
/// The wrapping sum and the XOR of the bit patterns of every value a GEBP call stored.
struct Folded {
  std::uint64_t sum = 0, x = 0;
};

/// C[0:m, 0:n] (row-major, ldc) += Ã · B̃ with Ã an m x kc block packed in kMr-row panels and
/// B̃ a kc x n block packed in kNr-column panels (pack_rows_panels / pack_cols_panels, padded
/// with zeros). Per C element: acc = C; acc = fma(a_ik, b_kj, acc) for k ascending; C = acc.
/// Micro-tiles in Goto's order (kNr-column slivers outer, kMr-row tiles inner).
Folded gebp(Isa isa, Fold fold, std::size_t m, std::size_t n, std::size_t kc, const double* a,
            const double* b, double* c, std::size_t ldc);

/// Packs rows [0, h) x columns [0, w) of a row-major matrix (ld) into panels of `width` rows,
/// each stored column by column (width values per column); rows past h are zeros.
void pack_rows_panels(const double* src, std::size_t ld, std::size_t h, std::size_t w,
                      std::size_t width, double* dst);
/// Packs rows [0, h) x columns [0, w) of a row-major matrix (ld) into panels of `width`
/// columns, each stored row by row (width values per row); columns past w are zeros.
void pack_cols_panels(const double* src, std::size_t ld, std::size_t h, std::size_t w,
                      std::size_t width, double* dst);

}  // namespace pmlab::kernels::gemm::micro
