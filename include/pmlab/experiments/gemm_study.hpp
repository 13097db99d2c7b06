// Thesis Ch. 4 (Fig. 4.3) in `pmlab eval`: row writes and speedup of the GEMM variants relative
// to naive, for base / Recompute eager / Recompute lazy, packed and unpacked, on thesis-ch4.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pmlab::experiments {

struct GemmStudyOptions {
  std::uint64_t n = 256;
  std::uint64_t bs = 32;        // mc = kc = nc
  int threads = 4;              // the thesis' four workers
  std::uint64_t llc_bytes = 0;  // 0: the preset's 8 MiB
  bool row_order = true;        // --order rows (docs/gemm.md "Why the micro-tile order")
  std::uint64_t seed = 1;
};

// The Fig. 4.3 columns: (label, scheme, packed), in the figure's order.
struct GemmConfig {
  std::string label, scheme;
  bool pack;
};
[[nodiscard]] const std::vector<GemmConfig>& gemm_configs();

// One variant under every config of gemm_configs() (naive: unpacked ones only). Deterministic:
// one simulation per cell. JSON: {variant, n, bs, threads, llc_bytes, order, cells: [{config,
// scheme, pack, cycles, line_writes, row_writes, fences, bound_words, bound_ok}]}, where the §4.7
// I/O bound is line_writes x 8 >= n^2 - M (M = LLC words).
[[nodiscard]] nlohmann::json gemm_study_variant(const std::string& variant,
                                                const GemmStudyOptions& o);

// The report's "Thesis Ch. 4" section from results["gemm"] (one entry per variant): each cell
// row writes / naive base and speedup = naive base cycles / cycles, the thesis' numbers beside.
[[nodiscard]] std::string gemm_section(const nlohmann::json& variants);

// The failed checks of the section (the §4.7 bound on every run), for failed_checks().
[[nodiscard]] std::vector<std::string> gemm_failed_checks(const nlohmann::json& variants);

}  // namespace pmlab::experiments
