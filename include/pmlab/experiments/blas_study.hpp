// `pmlab eval`'s "blas" section: gemm's native micro-kernel (base, LP, EagerRecompute-lazy)
// beside OpenBLAS and BLIS in GFLOP/s, against the CPU's peak computed from its measured clock.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pmlab::experiments {

/// The CPU's double-precision peak: clock x doubles per FMA pipe x 2 (an FMA is two operations)
/// x FMA pipes. The clock is measured (a chain of dependent adds retires one per cycle), the
/// pipes' count and width come from the CPU's vendor and family (AMD's and Intel's optimization
/// guides), never assumed from the build.
struct CpuPeak {
  std::string model;  ///< /proc/cpuinfo's "model name"
  std::string vendor;
  int family = 0, model_number = 0;
  double ghz = 0;  ///< measured: the best of five 100-add chains
  int pipes = 0;   ///< FMA pipes per core
  int lanes = 0;   ///< doubles per pipe
  std::string source;
  [[nodiscard]] double gflops_per_core() const { return ghz * lanes * 2.0 * pipes; }
};
/// Reads /proc/cpuinfo and measures the clock (about 0.5 s).
[[nodiscard]] CpuPeak measure_cpu_peak();
[[nodiscard]] nlohmann::json to_json(const CpuPeak& p);

/// One cell of the section: n x n DGEMM on `threads` threads.
struct BlasCell {
  std::uint64_t n = 1024;
  std::uint32_t threads = 1;
};
/// The cells of the quick (n = 1024, one thread) or the full (n = 1024, 2048, 4096 at one and
/// two threads) evaluation.
[[nodiscard]] std::vector<BlasCell> blas_cells(bool full);

/// pmlab bench gemm --micro auto with lp and ep-lazy against base, and every BLAS rival this
/// build found, paired and interleaved (`budget` seconds per row). JSON: bench's, plus "isa"
/// (the micro-kernel this CPU ran) and "peak" (to_json(CpuPeak)).
[[nodiscard]] nlohmann::json blas_study_cell(const BlasCell& cell, double budget,
                                             std::uint64_t seed, const CpuPeak& peak,
                                             const std::atomic<bool>* stop);

/// The report's section from results["blas"]: GFLOP/s per row and cell with the share of peak,
/// LP's and ep-lazy's time over base with their intervals, the kernel each library chose.
[[nodiscard]] std::string blas_section(const nlohmann::json& cells);

}  // namespace pmlab::experiments
