// Every catalog kernel x crash-safe scheme as a parameter of the crash tests, and its test name.
#pragma once

#include <cctype>
#include <ostream>
#include <string>
#include <vector>

#include "pmlab/run/catalog.hpp"

namespace pmlab::test {

struct CrashSafeCase {
  std::string kernel, scheme;
  friend void PrintTo(const CrashSafeCase& c, std::ostream* os) {
    *os << c.kernel << " " << c.scheme;
  }
};

// Evaluated during static initialization, so only the (function-local static) kernel list is
// used here; whether the simulator can run a case is asked inside the test.
inline std::vector<CrashSafeCase> crash_safe_cases() {
  std::vector<CrashSafeCase> out;
  for (const auto& k : run::kernel_drivers())
    for (const auto& s : k.schemes)
      if (k.crash_safe(s)) out.push_back({k.name, s});  // not ipv-nf (measurement only)
  return out;
}

// "kernel_scheme" with every character a test name cannot hold as '_'
// (INSTANTIATE_TEST_SUITE_P's name generator).
struct CrashSafeCaseName {
  template <class ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    std::string s = info.param.kernel + "_" + info.param.scheme;
    for (char& ch : s)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return s;
  }
};

}  // namespace pmlab::test
