// The run parameters stored in a pool header: what was asked for, so a resume can't mix runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pmlab/lp/checksum.hpp"

namespace pmlab::pool {

struct RunParams {
  std::string kernel = "tmm";  // kernel name (<= 15 chars)
  std::string scheme = "lp";   // scheme name (<= 23 chars)
  lp::ChecksumKind checksum = lp::ChecksumKind::kModular;
  std::uint32_t threads = 1;
  std::uint64_t n = 256;
  std::uint64_t bs = 16;
  std::uint64_t seed = 1;   // input generator seed
  std::uint64_t extra = 0;  // kernel-specific (e.g. convolution width); 0 when unused

  friend bool operator==(const RunParams&, const RunParams&) = default;
};

// Human-readable list of the fields that differ ("n: pool has 64, asked for 128; ..."); empty if
// equal.
[[nodiscard]] std::vector<std::string> describe_differences(const RunParams& stored,
                                                            const RunParams& requested);

}  // namespace pmlab::pool
