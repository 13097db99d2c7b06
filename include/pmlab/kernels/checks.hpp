// Parameter range checks and the bit-for-bit result comparison shared by the kernel descriptions.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/pool/params.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::run {

// Throws kInvalidArgument "KERNEL: WHAT must be in [lo, hi], got v".
inline void require_in_range(std::string_view kernel, std::string_view what, std::uint64_t v,
                             std::uint64_t lo, std::uint64_t hi) {
  if (v < lo || v > hi)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: {} must be in [{}, {}], got {}", kernel, what, lo, hi, v));
}

// --n and --bs in [1, max_n], --threads in [1, 1024].
inline void require_sizes(std::string_view kernel, const pool::RunParams& p, std::uint64_t max_n) {
  require_in_range(kernel, "--n", p.n, 1, max_n);
  require_in_range(kernel, "--bs", p.bs, 1, max_n);
  require_in_range(kernel, "--threads", p.threads, 1, 1024);
}

// Compares got[0, want.size()) with want bit for bit; where(i) names element i for the report.
template <class Where>
[[nodiscard]] VerifyResult compare_bits(const double* got, const std::vector<double>& want,
                                        Where&& where) {
  VerifyResult v;
  v.elements = want.size();
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(want[i]) &&
        v.mismatches++ == 0)
      v.first_mismatch = fmt::format("{} = {:a}, expected {:a}", where(i), got[i], want[i]);
  return v;
}

}  // namespace pmlab::run
