// The eval "blas" section: gemm's micro-kernel and its LP beside OpenBLAS and BLIS, and the peak.
#include "pmlab/experiments/blas_study.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "pmlab/experiments/bench.hpp"
#include "pmlab/experiments/blas_rivals.hpp"
#include "pmlab/kernels/gemm.hpp"
#include "pmlab/kernels/gemm_micro.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

std::string cpuinfo_field(const std::string& text, const std::string& key) {
  const std::regex re("^" + key + "\\s*:\\s*(.*)$", std::regex::multiline);
  std::smatch m;
  return std::regex_search(text, m, re) ? m[1].str() : std::string();
}

// Cycles of a dependent chain: each `add` waits for the one before, and x86-64 cores retire a
// dependent 64-bit add per cycle, so adds per nanosecond is the clock in GHz. Inline assembly:
// a compiler would fold a C++ chain of adds into one multiply.
double measured_ghz() {
  constexpr long kIters = 2'000'000;  // x 100 adds: ~0.05 s at 4 GHz
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::uint64_t x = 1;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < kIters; ++i)
      __asm__ volatile(".rept 100\n\tadd %0, %0\n\t.endr" : "+r"(x));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 100.0 * static_cast<double>(kIters) / s / 1e9);
  }
  return best;
}

std::string percent_of(double part, double whole) {
  return whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : "–";
}

}  // namespace

CpuPeak measure_cpu_peak() {
  std::ifstream in("/proc/cpuinfo");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  CpuPeak p;
  p.model = cpuinfo_field(text, "model name");
  p.vendor = cpuinfo_field(text, "vendor_id");
  p.family = std::atoi(cpuinfo_field(text, "cpu family").c_str());
  p.model_number = std::atoi(cpuinfo_field(text, "model").c_str());
  const std::string flags = " " + cpuinfo_field(text, "flags") + " ";
  p.pipes = 2;
  if (p.vendor == "AuthenticAMD" && p.family == 0x19) {
    p.lanes = 4;
    p.source = "AMD family 19h (Zen 3/4): 2 FMA pipes of 256 bits; a 512-bit FMA takes both";
  } else if (p.vendor == "AuthenticAMD" && p.family == 0x1A) {
    p.lanes = 8;
    p.source = "AMD family 1Ah (Zen 5): 2 FMA pipes of 512 bits";
  } else if (flags.find(" avx512f ") != std::string::npos) {
    p.lanes = 8;
    p.source = "Intel with AVX-512: 2 FMA units of 512 bits (server parts)";
  } else {
    p.lanes = 4;
    p.source = "2 FMA units of 256 bits (AVX2)";
  }
  p.ghz = measured_ghz();
  return p;
}

json to_json(const CpuPeak& p) {
  return {{"model", p.model},
          {"vendor", p.vendor},
          {"family", p.family},
          {"model_number", p.model_number},
          {"ghz", p.ghz},
          {"fma_pipes", p.pipes},
          {"doubles_per_pipe", p.lanes},
          {"source", p.source},
          {"gflops_per_core", p.gflops_per_core()}};
}

std::vector<BlasCell> blas_cells(bool full) {
  if (!full) return {{1024, 1}};
  std::vector<BlasCell> cells;
  for (std::uint64_t n : {1024, 2048, 4096})
    for (std::uint32_t t : {1u, 2u}) cells.push_back({n, t});
  return cells;
}

json blas_study_cell(const BlasCell& cell, double budget, std::uint64_t seed, const CpuPeak& peak,
                     const std::atomic<bool>* stop) {
  namespace gm = kernels::gemm;
  BenchOptions b;
  b.kernel = "gemm";
  b.n = cell.n;
  b.threads = cell.threads;
  const auto micro_auto = std::find(gm::kMicroNames.begin(), gm::kMicroNames.end(), "auto");
  b.kernel_params = {
      {"micro", static_cast<std::uint64_t>(std::distance(gm::kMicroNames.begin(), micro_auto))}};
  b.schemes = {"lp", "ep-lazy"};
  b.rivals = blas_rival_names();
  b.budget_seconds = budget;
  b.min_rep_seconds = 0.2;
  b.target = 0.01;
  b.seed = seed;
  b.stop = stop;
  json j = to_json(run_bench(b));
  j["isa"] = std::string(gm::micro::to_string(gm::micro::best_isa()));
  j["peak"] = to_json(peak);
  return j;
}

std::string blas_section(const json& cells) {
  std::string md =
      "## DGEMM beside OpenBLAS and BLIS (native)\n\n"
      "`pmlab bench gemm --micro auto --schemes lp,ep-lazy --rivals openblas,blis`: gemm's GEPP1 "
      "on its 8x24 register-blocked micro-kernel (docs/gemm-fast.md), its LP and "
      "EagerRecompute-lazy, and each library's `cblas_dgemm` on the same matrices. GFLOP/s = "
      "2n³ over the median repetition; the share of peak is of the threads' peak. LP and "
      "ep-lazy: time over base, paired and interleaved, with the 95% interval.\n\n";
  bool any = false;
  std::string peak_line, against;
  for (const auto& c : cells) {
    if (c.contains("error")) {
      md += fmt::format("- {}: {}\n", c.value("label", "?"), c["error"].get<std::string>());
      continue;
    }
    if (!c.contains("schemes")) continue;
    if (!any) {
      md +=
          "| n | threads | row | GFLOP/s | of peak | time vs base |\n"
          "|---:|---:|---|---:|---:|---|\n";
      any = true;
    }
    const double peak = c["peak"].value("gflops_per_core", 0.0) * c.value("threads", 1);
    for (const auto& s : c["schemes"]) {
      const std::string scheme = s.value("scheme", "?");
      std::string row = scheme;
      if (s.contains("rival_kernel"))
        row = fmt::format("{} ({})", scheme, s["rival_kernel"].get<std::string>());
      else
        row = fmt::format("pmlab {} ({})", scheme, c.value("isa", "?"));
      const double gflops = s.value("gflops", 0.0);
      const std::string vs_base =
          s.contains("rival_kernel") ? "–" : s.value("text", std::string("(reference)"));
      md += fmt::format("| {} | {} | {} | {:.1f} | {} | {} |\n", c.value("n", 0),
                        c.value("threads", 0), row, gflops, percent_of(gflops, peak), vs_base);
    }
    // Base against the faster library, measured in the same run.
    double base = 0, best = 0;
    std::string best_name;
    for (const auto& s : c["schemes"]) {
      if (s.value("scheme", "") == "base") base = s.value("gflops", 0.0);
      if (s.contains("rival_kernel") && s.value("gflops", 0.0) > best) {
        best = s.value("gflops", 0.0);
        best_name = s.value("scheme", "?");
      }
    }
    against += fmt::format(
        "- n = {}, {} thread(s): pmlab base runs at {} of peak{}.\n", c.value("n", 0),
        c.value("threads", 0), percent_of(base, peak),
        best > 0 ? fmt::format(" and {:.2f}x the faster library ({})", base / best, best_name)
                 : std::string(", no library to compare with"));
    const json& p = c["peak"];
    peak_line = fmt::format(
        "\nPeak: {} (family {:#x}, model {:#x}): {:.2f} GHz measured x {} doubles x 2 x {} "
        "pipes = {:.1f} GFLOP/s per core ({}).\n",
        p.value("model", "?"), p.value("family", 0), p.value("model_number", 0),
        p.value("ghz", 0.0), p.value("doubles_per_pipe", 0), p.value("fma_pipes", 0),
        p.value("gflops_per_core", 0.0), p.value("source", "?"));
  }
  md += peak_line;
  if (!against.empty()) md += "\n" + against;
  md +=
      "\nThe goals: base at least the faster library and at least 85% of peak; LP within +1% "
      "of base, resolved; ep-lazy within +5%. OpenBLAS runs the kernel it chooses for this CPU "
      "(in parentheses); `scripts/gemm-fast-bench` also times it with OPENBLAS_CORETYPE=SkylakeX "
      "where the CPU has AVX-512.\n\n";
  return md;
}

}  // namespace pmlab::experiments
