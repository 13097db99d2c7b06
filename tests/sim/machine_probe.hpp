// Shorthands the simulator tests share: a line address from a number, a core's clock as a number.
#pragma once

#include <cstdint>

#include "pmlab/sim/machine.hpp"

namespace pmlab::sim::testing {

inline LineAddr L(std::uint64_t n) {
  return LineAddr(n);
}

inline std::uint64_t clk(const Machine& m, int core = 0) {
  return m.clock(core).value();
}

}  // namespace pmlab::sim::testing
