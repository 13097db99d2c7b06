// Every kernel's own parameters (conv2d's --width, ...) as options of one verb: declared once by
// the kernel (run::KernelParamSpec), offered alike by `run`, `sim`, `crash` and `bench`.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "pmlab/pool/params.hpp"

namespace pmlab::cli {

class KernelOptions {
 public:
  // One --<name> option per parameter name any kernel of the catalog declares, in the help
  // group "Kernel parameters"; its help names the kernels that take it (and, for `run`, that the
  // pool stores it).
  void add_to(CLI::App& cmd);

  [[nodiscard]] bool any_given() const;

  // Writes the options given on the command line into p (p.kernel names the kernel). Throws
  // kInvalidArgument, naming the kernels that take it, for an option p.kernel does not declare.
  void apply(pool::RunParams& p) const;

  // The given options as command-line flags (" --width 5"), for replay commands.
  [[nodiscard]] std::string as_flags() const;

 private:
  // What was typed, per option (node-based maps: CLI11 keeps pointers into them): the text of a
  // valued option (a number, or one of its choices), and whether a flag was given.
  std::map<std::string, std::optional<std::string>> values_;
  std::map<std::string, bool> flags_;
};

// The kernel parameters of p as command-line flags (" --width 5").
[[nodiscard]] std::string kernel_param_flags(const pool::RunParams& p);

}  // namespace pmlab::cli
