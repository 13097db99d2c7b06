// The one state machine of a resumable run on a pool (initialized → running → done), shared by
// run::execute_resumable (the kernel/scheme engines) and lp::Loop (the high-level loop API).
#pragma once

#include "pmlab/pool/pool.hpp"

namespace pmlab::pool {

/// Drives a pool through its states around `work(resumed)`, which recovers when `resumed`,
/// computes, and leaves the result durable. Returns false, calling nothing, when the pool holds
/// a completed run. The order is the protocol: the start is counted and `running` recorded
/// (durably) before the first store of the run, and `done` only after `work` has made the result
/// durable, so a crash anywhere leaves `running` and the next start recovers.
template <class Work>
bool run_states(Pool& pool, Work&& work) {
  if (pool.state() == RunState::kDone) return false;
  const bool resumed = pool.state() == RunState::kRunning;
  pool.count_start();
  pool.set_state(RunState::kRunning);
  work(resumed);
  pool.set_state(RunState::kDone);
  return true;
}

}  // namespace pmlab::pool
