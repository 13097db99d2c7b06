// One GEBP call of gemm's micro-kernel in a loop: bits against the fma-order reference, and
// GFLOP/s per implementation (docs/gemm-fast.md). Built by hand, outside CMake:
//   g++ -std=c++20 -O3 -Iinclude tools/gemm_micro_probe.cpp src/kernels/gemm_micro.cpp -o probe
//   ./probe M N KC REPS      (C is M x N with leading dimension N, held in cache across reps)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "pmlab/kernels/gemm_micro.hpp"

using namespace pmlab::kernels::gemm::micro;

int main(int argc, char** argv) {
  const std::size_t m = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 37;
  const std::size_t n = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 53;
  const std::size_t kc = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 29;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 1;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::vector<double> a(m * kc), b(kc * n), c0(m * n);
  for (auto& v : a) v = u(rng);
  for (auto& v : b) v = u(rng);
  for (auto& v : c0) v = u(rng);
  std::vector<double> ap((m + kMr) * kc), bp((n + kNr) * kc);
  pack_rows_panels(a.data(), kc, m, kc, kMr, ap.data());
  pack_cols_panels(b.data(), n, kc, n, kNr, bp.data());
  std::vector<double> ref = c0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = ref[i * n + j];
      for (std::size_t k = 0; k < kc; ++k) acc = std::fma(a[i * kc + k], b[k * n + j], acc);
      ref[i * n + j] = acc;
    }
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    std::vector<double> c = c0;
    (void)gebp(isa, Fold::kNone, m, n, kc, ap.data(), bp.data(), c.data(), n);
    const bool same = std::memcmp(c.data(), ref.data(), c.size() * sizeof(double)) == 0;
    double best = 1e300;  // the fastest of 5 batches: the least disturbed on a shared machine
    for (int t = 0; t < 5 && reps > 1; ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r)
        (void)gebp(isa, Fold::kNone, m, n, kc, ap.data(), bp.data(), c.data(), n);
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("%-8s bits %s", std::string(to_string(isa)).c_str(), same ? "same" : "DIFFER");
    if (reps > 1) std::printf("  %.1f GFLOP/s", 2.0 * double(m * n * kc) * reps / best / 1e9);
    std::printf("\n");
  }
}
