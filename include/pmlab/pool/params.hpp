// The run parameters stored in a pool header: what was asked for, so a resume can't mix runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pmlab::pool {

// One parameter a kernel declares for itself (e.g. conv2d's width), stored in the pool so that a
// resume cannot mix runs; its CLI option is `--<name>`.
struct KernelParam {
  std::string name;  // <= 15 chars
  std::uint64_t value = 0;
  friend bool operator==(const KernelParam&, const KernelParam&) = default;
};
inline constexpr std::size_t kMaxKernelParams = 8;  // per pool header

struct RunParams {
  std::string kernel = "tmm";  // kernel name (<= 15 chars)
  std::string scheme = "lp";   // scheme name (<= 23 chars)
  // LP's checksum kind, by name: the pool stores it as given and only LP reads it
  // (lp::checksum_of, lp/checksum_param.hpp). "modular" is LP's default kind.
  std::string checksum = "modular";
  std::uint32_t threads = 1;
  std::uint64_t n = 256;
  std::uint64_t bs = 16;
  std::uint64_t seed = 1;  // input generator seed
  // The kernel's own parameters, in the order it declares them (empty: every one at its default).
  std::vector<KernelParam> kernel_params;
  // What this build's kernel and scheme lay the pool's arrays out as (run::layout_tag): a pool
  // written under another layout is refused instead of misread. 0: none declared (pools made
  // by tests and scratch runs), never checked.
  std::uint32_t layout_tag = 0;

  // The value of the kernel's parameter `name`, or `fallback` when it was not given.
  [[nodiscard]] std::uint64_t kernel_param(std::string_view name, std::uint64_t fallback) const {
    for (const auto& kp : kernel_params)
      if (kp.name == name) return kp.value;
    return fallback;
  }
  void set_kernel_param(std::string_view name, std::uint64_t value) {
    for (auto& kp : kernel_params)
      if (kp.name == name) {
        kp.value = value;
        return;
      }
    kernel_params.push_back({std::string(name), value});
  }

  friend bool operator==(const RunParams&, const RunParams&) = default;
};

// Human-readable list of the fields that differ ("n: pool has 64, asked for 128; ..."); empty if
// equal.
[[nodiscard]] std::vector<std::string> describe_differences(const RunParams& stored,
                                                            const RunParams& requested);

}  // namespace pmlab::pool
