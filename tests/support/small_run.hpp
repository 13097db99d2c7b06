// The small run every catalog-walking test uses for a kernel × scheme (the golden table's too).
#pragma once

#include <string>

#include "pmlab/pool/params.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::test {

// n = 40 (256 where n must be a power of two), bs 8, 2 threads, seed 11: small enough for every
// row of every kernel to run in milliseconds, large enough to span several outer iterations.
inline pool::RunParams small_run(const run::KernelDriver& k, const std::string& scheme) {
  pool::RunParams p;
  p.kernel = k.name;
  p.scheme = scheme;
  p.n = k.n_power_of_two ? 256 : 40;
  p.bs = 8;
  p.threads = 2;
  p.seed = 11;
  return p;
}

}  // namespace pmlab::test
