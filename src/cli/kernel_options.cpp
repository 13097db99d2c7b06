// Kernel-declared parameters as CLI options: registration from the catalog, and the check that
// an option given applies to the kernel chosen.
#include "kernel_options.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>
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

// Parameter `name` as kernel `kernel` declares it (nullptr: not declared).
const run::KernelParamSpec* spec_of(const std::string& kernel, const std::string& name) {
  for (const auto& k : run::kernel_drivers())
    if (k.name == kernel)
      for (const auto& spec : k.params)
        if (spec.name == name) return &spec;
  return nullptr;
}

// The stored value of a valued option: the index of a choice, or a decimal number.
std::uint64_t parse_value(const run::KernelParamSpec& spec, const std::string& text) {
  if (!spec.choices.empty()) {
    for (std::size_t i = 0; i < spec.choices.size(); ++i)
      if (spec.choices[i] == text) return i;
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--{}: '{}' is none of {}", spec.name,
                                                         text, fmt::join(spec.choices, ", ")));
  }
  std::uint64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || ptr != end)
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("--{}: '{}' is not a non-negative integer below 2^64", spec.name, text));
  return v;
}

// How a stored value is typed on the command line.
std::string flag_text(const run::KernelParamSpec& spec, std::uint64_t value) {
  if (spec.flag) return value != 0 ? fmt::format(" --{}", spec.name) : "";
  if (!spec.choices.empty() && value < spec.choices.size())
    return fmt::format(" --{} {}", spec.name, spec.choices[value]);
  return fmt::format(" --{} {}", spec.name, value);
}

}  // namespace

void KernelOptions::add_to(CLI::App& cmd) {
  // Only `run` keeps a pool; the other verbs' runs live in memory or temporary pools.
  const bool stored = cmd.get_name() == "run";
  for (const auto& k : run::kernel_drivers())
    for (const auto& spec : k.params) {
      if (values_.contains(spec.name) || flags_.contains(spec.name))
        continue;  // declared by several kernels: one option
      const std::string help = fmt::format(
          "{} only: {}{}", fmt::join(kernels_taking(spec.name), ", "), spec.help,
          stored ? "; stored in the pool (resuming with another value is refused)" : "");
      CLI::Option* opt = nullptr;
      if (spec.flag) {
        opt = cmd.add_flag("--" + spec.name, flags_[spec.name], help);
      } else {
        opt = cmd.add_option("--" + spec.name, values_[spec.name], help);
        if (!spec.choices.empty()) opt->check(CLI::IsMember(spec.choices));
      }
      // Listed apart from the verb's own options: each applies to the kernels it names.
      opt->group("Kernel parameters");
    }
}

bool KernelOptions::any_given() const {
  return std::any_of(values_.begin(), values_.end(), [](const auto& kv) { return kv.second; }) ||
         std::any_of(flags_.begin(), flags_.end(), [](const auto& kv) { return kv.second; });
}

void KernelOptions::apply(pool::RunParams& p) const {
  auto take = [&](const std::string& name) -> const run::KernelParamSpec& {
    const auto* spec = spec_of(p.kernel, name);
    if (spec == nullptr)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--{} applies to {} only; {} has no {} parameter", name,
                              fmt::join(kernels_taking(name), ", "), p.kernel, name));
    return *spec;
  };
  for (const auto& [name, text] : values_)
    if (text) p.set_kernel_param(name, parse_value(take(name), *text));
  for (const auto& [name, given] : flags_)
    if (given) {
      take(name);
      p.set_kernel_param(name, 1);
    }
}

std::string KernelOptions::as_flags() const {
  std::string out;
  for (const auto& [name, text] : values_)
    if (text) out += fmt::format(" --{} {}", name, *text);
  for (const auto& [name, given] : flags_)
    if (given) out += fmt::format(" --{}", name);
  return out;
}

std::string kernel_param_flags(const pool::RunParams& p) {
  std::string out;
  for (const auto& kp : p.kernel_params) {
    const auto* spec = spec_of(p.kernel, kp.name);
    out +=
        spec != nullptr ? flag_text(*spec, kp.value) : fmt::format(" --{} {}", kp.name, kp.value);
  }
  return out;
}

}  // namespace pmlab::cli
