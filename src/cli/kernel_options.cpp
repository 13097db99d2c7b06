// Kernel-declared parameters as CLI options: registration from the catalog, and the check that
// an option given applies to the kernel chosen.
#include "kernel_options.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::cli {
namespace {

// The kernels declaring parameter `name`, in catalog order.
std::vector<std::string> kernels_taking(const std::string& name) {
  std::vector<std::string> out;
  for (const auto& k : run::kernel_drivers())
    for (const auto& spec : k.params)
      if (spec.name == name) out.push_back(k.name);
  return out;
}

}  // namespace

void KernelOptions::add_to(CLI::App& cmd) {
  for (const auto& k : run::kernel_drivers())
    for (const auto& spec : k.params) {
      if (values_.contains(spec.name)) continue;  // declared by several kernels: one option
      auto& value = values_[spec.name];
      cmd.add_option("--" + spec.name, value,
                     fmt::format("{} only: {}; stored in the pool (resuming with another value is "
                                 "refused)",
                                 fmt::join(kernels_taking(spec.name), ", "), spec.help))
          ->check(CLI::Range(spec.min, spec.max));
    }
}

bool KernelOptions::any_given() const {
  return std::any_of(values_.begin(), values_.end(), [](const auto& kv) { return kv.second; });
}

void KernelOptions::apply(pool::RunParams& p) const {
  for (const auto& [name, value] : values_) {
    if (!value) continue;
    const auto takers = kernels_taking(name);
    if (std::find(takers.begin(), takers.end(), p.kernel) == takers.end())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--{} applies to {} only; {} has no {} parameter", name,
                              fmt::join(takers, ", "), p.kernel, name));
    p.set_kernel_param(name, *value);
  }
}

std::string KernelOptions::as_flags() const {
  std::string out;
  for (const auto& [name, value] : values_)
    if (value) out += fmt::format(" --{} {}", name, *value);
  return out;
}

std::string kernel_param_flags(const pool::RunParams& p) {
  std::string out;
  for (const auto& kp : p.kernel_params) out += fmt::format(" --{} {}", kp.name, kp.value);
  return out;
}

}  // namespace pmlab::cli
