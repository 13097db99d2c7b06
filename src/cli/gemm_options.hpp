// gemm's own options (--variant, --pack, --mr, --nr) in one place: registered on run, sim, crash
// and bench, encoded into RunParams.extra (kernels::gemm::Config), refused for other kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/kernels/gemm.hpp"

namespace pmlab::cli {

struct GemmArgs {
  std::optional<std::string> variant;
  bool pack = false;
  std::optional<std::uint32_t> mr, nr;

  [[nodiscard]] bool any() const { return variant || pack || mr || nr; }
};

inline void add_gemm_options(CLI::App& cmd, GemmArgs& g) {
  std::string names;
  for (auto v : kernels::gemm::kVariantNames) names += (names.empty() ? "" : "|") + std::string(v);
  cmd.add_option("--variant", g.variant,
                 "gemm only: loop nest, " + names + " (default gepp1; thesis Ch. 4, docs/gemm.md)")
      ->check(CLI::IsMember(std::vector<std::string>(kernels::gemm::kVariantNames.begin(),
                                                     kernels::gemm::kVariantNames.end())));
  cmd.add_flag("--pack", g.pack, "gemm only: pack the A and B blocks (GotoBLAS) before each call");
  cmd.add_option("--mr", g.mr, "gemm only: micro-tile rows (default 4)")
      ->check(CLI::Range(1u, kernels::gemm::Config::kMaxMicro));
  cmd.add_option("--nr", g.nr, "gemm only: micro-tile columns (default 8)")
      ->check(CLI::Range(1u, kernels::gemm::Config::kMaxMicro));
}

// RunParams.extra for `kernel`, or nullopt when no gemm option was given; throws
// kInvalidArgument (exit 2) if one was given to another kernel.
[[nodiscard]] inline std::optional<std::uint64_t> gemm_extra(const GemmArgs& g,
                                                             const std::string& kernel) {
  if (!g.any()) return std::nullopt;
  if (kernel != "gemm")
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--variant, --pack, --mr and --nr apply to gemm only; {} has no such "
                            "parameters",
                            kernel));
  kernels::gemm::Config c;
  if (g.variant) c.variant = *kernels::gemm::variant_from_string(*g.variant);
  c.pack = g.pack;
  if (g.mr) c.mr = *g.mr;
  if (g.nr) c.nr = *g.nr;
  return c.encode();
}

// The flags that reproduce `extra` (for replay commands); empty for 0.
[[nodiscard]] inline std::string gemm_flags(std::uint64_t extra) {
  const auto c = kernels::gemm::Config::decode(extra);
  std::string s = fmt::format(" --variant {}", kernels::gemm::to_string(c.variant));
  if (c.pack) s += " --pack";
  if (c.mr != 4) s += fmt::format(" --mr {}", c.mr);
  if (c.nr != 8) s += fmt::format(" --nr {}", c.nr);
  return s;
}

}  // namespace pmlab::cli
