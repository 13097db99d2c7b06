// The table of kernels the CLI knows, and persistence-mode names.
#include <string>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::run {

KernelDriver make_tmm_driver();
KernelDriver make_cholesky_driver();
KernelDriver make_lu_driver();
KernelDriver make_gauss_driver();
KernelDriver make_conv2d_driver();
KernelDriver make_fft_driver();

const std::vector<KernelDriver>& kernel_drivers() {
  static const std::vector<KernelDriver> drivers{make_tmm_driver(),    make_cholesky_driver(),
                                                 make_lu_driver(),     make_gauss_driver(),
                                                 make_conv2d_driver(), make_fft_driver()};
  return drivers;
}

const KernelDriver& find_kernel(const std::string& name) {
  for (const auto& d : kernel_drivers())
    if (d.name == name) return d;
  std::string known;
  for (const auto& d : kernel_drivers()) known += (known.empty() ? "" : ", ") + d.name;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown kernel '{}' (known: {})", name, known));
}

persist::PersistMode persist_mode_from_string(const std::string& s) {
  if (s == "auto") return persist::PersistMode::kAuto;
  if (s == "cpu") return persist::PersistMode::kCpu;
  if (s == "none") return persist::PersistMode::kNone;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown persistence mode '{}' (expected auto, cpu or none)", s));
}

const char* to_string(persist::PersistMode m) {
  switch (m) {
    case persist::PersistMode::kAuto:
      return "auto";
    case persist::PersistMode::kCpu:
      return "cpu";
    case persist::PersistMode::kNone:
      return "none";
  }
  return "?";
}

}  // namespace pmlab::run
