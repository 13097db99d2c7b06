// gemm's native micro-kernels (AVX-512, AVX2, portable) give naive's bits, equal to the simulated
// run of the same description; their register-folded checksums equal the stored values'.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "pmlab/kernels/gemm.hpp"
#include "pmlab/kernels/gemm_micro.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::kernels::gemm {
namespace {

constexpr micro::Isa kIsas[] = {micro::Isa::kPortable, micro::Isa::kAvx2, micro::Isa::kAvx512};

// C (m x n, ldc) += A (m x k) B (k x n) per element in ascending k with one fma per term.
std::vector<double> fma_reference(const std::vector<double>& a, const std::vector<double>& b,
                                  std::vector<double> c, std::size_t m, std::size_t n,
                                  std::size_t k, std::size_t ldc) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = c[i * ldc + j];
      for (std::size_t q = 0; q < k; ++q) acc = std::fma(a[i * k + q], b[q * n + j], acc);
      c[i * ldc + j] = acc;
    }
  return c;
}

// One GEBP call per ISA on shapes with and without edge tiles, C with a wider leading
// dimension (values outside the block must stay untouched), checksum words folded.
TEST(GemmMicro, EveryIsaGivesFmaOrderBitsAndFoldsWhatItStores) {
  struct Shape {
    std::size_t m, n, k;
  };
  for (Shape s :
       {Shape{8, 24, 1}, Shape{16, 48, 17}, Shape{13, 29, 9}, Shape{1, 1, 3}, Shape{37, 70, 40}}) {
    const std::size_t ldc = s.n + 5;
    std::vector<double> a(s.m * s.k), b(s.k * s.n), c(s.m * ldc);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = input_value(3, 0, i);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = input_value(3, 1, i);
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = input_value(3, 2, i);
    const auto want = fma_reference(a, b, c, s.m, s.n, s.k, ldc);
    std::vector<double> ap(round_up(s.m, micro::kMr) * s.k), bp(round_up(s.n, micro::kNr) * s.k);
    micro::pack_rows_panels(a.data(), s.k, s.m, s.k, micro::kMr, ap.data());
    micro::pack_cols_panels(b.data(), s.n, s.k, s.n, micro::kNr, bp.data());
    std::uint64_t sum = 0, x = 0;
    for (std::size_t i = 0; i < s.m; ++i)
      for (std::size_t j = 0; j < s.n; ++j) {
        const auto bits = std::bit_cast<std::uint64_t>(want[i * ldc + j]);
        sum += bits;
        x ^= bits;
      }
    for (micro::Isa isa : kIsas) {
      if (!micro::isa_supported(isa)) continue;
      std::vector<double> got = c;
      const micro::Folded f = micro::gebp(isa, micro::Fold::kSumXor, s.m, s.n, s.k, ap.data(),
                                          bp.data(), got.data(), ldc);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)), 0)
          << micro::to_string(isa) << " m " << s.m << " n " << s.n << " k " << s.k;
      EXPECT_EQ(f.sum, sum) << micro::to_string(isa);
      EXPECT_EQ(f.x, x) << micro::to_string(isa);
    }
  }
}

// The whole kernel: GEPP1 under --micro on the native backend (each ISA this CPU runs, 2
// threads, base, ep-lazy and LP) and the same description in the simulator give naive's bits.
TEST(GemmMicro, NativeIsasAndTheSimulatorGiveNaivesBits) {
  const std::size_t n = 61;
  std::vector<double> a(n * n), b(n * n), want(n * n, 0.0);
  for (std::size_t i = 0; i < n * n; ++i) {
    a[i] = input_value(5, 0, i);
    b[i] = input_value(5, 1, i);
  }
  want = fma_reference(a, b, want, n, n, n, n);
  const auto config = [](Micro m) {
    Config cfg;
    cfg.pack = cfg.pack_panels = true;
    cfg.mr = static_cast<std::uint32_t>(micro::kMr);
    cfg.nr = static_cast<std::uint32_t>(micro::kNr);
    cfg.micro = m;
    cfg.mc = 20;  // edge panels in both m and k
    cfg.kc = 13;
    return cfg;
  };
  const auto check = [&](const std::vector<double>& c, const char* what) {
    EXPECT_EQ(std::memcmp(c.data(), want.data(), c.size() * sizeof(double)), 0) << what;
  };
  for (Micro m : {Micro::kPortable, Micro::kAvx2, Micro::kAvx512, Micro::kAuto}) {
    if (!micro::isa_supported(isa_of(m))) continue;
    std::vector<double> c(n * n, 0.0);
    const Operands op{{a.data(), n, n}, {b.data(), n, n}, {c.data(), n, n}, n, 16, config(m)};
    mem::PlainBackend be({}, 2);
    run_base(be, op);
    check(c, kMicroNames[static_cast<std::size_t>(m)].data());
    std::fill(c.begin(), c.end(), 0.0);
    std::vector<scheme::IndexRecordLayout<1>> recs(op.panels());
    std::memset(static_cast<void*>(recs.data()), 0, recs.size() * sizeof(recs[0]));
    run_ep<Grain::kLazy>(be, op, scheme::IndexRecordTable<1>(recs.data(), recs.size()));
    check(c, "ep-lazy");
    // LP's checksums (folded from registers for modular-parity, from C in store order for
    // CRC32C) are the ones recovery recomputes from C: a finished run recomputes nothing.
    const auto lp_run = [&](auto kind) {
      constexpr lp::ChecksumKind K = decltype(kind)::value;
      std::fill(c.begin(), c.end(), 0.0);
      std::vector<std::byte> slots(lp::ChecksumTable::bytes_for(op.table_slots()));
      const lp::ChecksumTable table(reinterpret_cast<lp::ChecksumSlot*>(slots.data()),
                                    op.table_slots());
      run_lp<K>(be, op, table);
      check(c, "lp");
      lp::RecoveryStats st;
      (void)recover_lp<K>(be, op, table, st);
      EXPECT_EQ(st.regions_recomputed, 0u);
      EXPECT_EQ(st.regions_inconsistent, 0u);
    };
    lp_run(std::integral_constant<lp::ChecksumKind, lp::ChecksumKind::kModularParity>{});
    lp_run(std::integral_constant<lp::ChecksumKind, lp::ChecksumKind::kCrc32c>{});
  }
  std::vector<double> c(n * n, 0.0);
  sim::SimParams p = sim::preset("lp-isca18");
  p.threads = 2;
  sim::SimBackend be(p);
  run_base(
      be,
      Operands{{a.data(), n, n}, {b.data(), n, n}, {c.data(), n, n}, n, 16, config(Micro::kAuto)});
  check(c, "simulated");
}

}  // namespace
}  // namespace pmlab::kernels::gemm
