// A user's own kernel outside the catalog: run natively on a pool under any of its schemes and
// crash-tested in the simulator by the same campaign engine as the built-in kernels.
#pragma once

#include <memory>
#include <string>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/run/sim_session.hpp"

namespace pmlab::run {

/// A kernel given to the engines directly instead of by catalog name: its native driver (arrays,
/// inputs, resumable execution, verification) and its simulator entry points. Put it in
/// SimRunSpec::user to simulate it (simulate(), SimSession) or crash-test it (run_campaign(),
/// replay_trial()); SimRunSpec::run.kernel then only names it in reports.
struct UserKernel {
  KernelDriver driver;  ///< arrays, inputs, native execution, verification
  SimKernel sim;        ///< run and recover on sim::SimBackend
};

/// Both entry points of a kernel described the way the built-in kernels are (a struct satisfying
/// ResumableKernel, with its own scheme table; see examples/ and docs/protect-your-own-loop.md).
template <ResumableKernel K>
[[nodiscard]] std::shared_ptr<const UserKernel> make_user_kernel() {
  return std::make_shared<const UserKernel>(
      UserKernel{make_kernel_driver<K>(), make_sim_kernel<K>()});
}

/// Runs kernel K natively on the pool at `path` under scheme `params.scheme`: creates the pool
/// (writing K's inputs) if there is none, else opens it — refusing one created with other
/// parameters (kPoolMismatch) — recovers an interrupted run, finishes it and marks it done.
/// With `verify`, the result is compared bit for bit with K's fault-free reference.
template <ResumableKernel K>
RunReport run_on_pool(const std::string& path, const pool::RunParams& params,
                      const ExecOptions& opt = {}, VerifyResult* verify = nullptr) {
  if (params.kernel != K::kName)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("params.kernel is '{}' but the kernel is '{}'", params.kernel,
                            std::string(K::kName)));
  validate_run<K>(params);
  pool::RunParams stamped = params;
  stamped.layout_tag = layout_tag<K>(params);
  pool::Pool pool = pool::Pool::open_or_create(path, stamped, run_arrays<K>(params), K::init);
  RunReport report = execute_resumable<K>(pool, opt);
  if (verify != nullptr) *verify = K::verify(pool);
  return report;
}

}  // namespace pmlab::run
