// Simulating kernel x scheme runs (scratch pool + SimBackend + per-kernel entry points), for `pmlab
// sim`, crash campaigns and eval.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pmlab/mem/mutation.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/native_tail.hpp"
#include "pmlab/sim/machine_params.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "pmlab/sim/stats.hpp"

namespace pmlab::run {

struct UserKernel;  // run/user_kernel.hpp

// What to simulate: a kernel run (kernel, scheme, n, bs, threads = logical threads, checksum,
// seed) on a machine. Both papers implemented clflushopt, hence the default.
struct SimRunSpec {
  pool::RunParams run;
  sim::SimParams machine;
  sim::FlushMode flush = sim::FlushMode::kClflushopt;
  bool drain = false;   // write every dirty line back at the end (counted under "drain")
  bool verify = false;  // simulate(): compare the result with the fault-free reference
  // A kernel outside the catalog (make_user_kernel<K>()); null: run.kernel names a catalog one.
  std::shared_ptr<const UserKernel> user;
};

// Every check SimSession makes (kernel, scheme, sizes, threads, machine), without allocating.
void validate(const SimRunSpec& spec);

// The simulator's entry points for one kernel; KernelDriver (arrays, init, verify) is shared
// with the native side. make_sim_kernel<K>() (driver/sim_kernel.hpp) builds them from the same
// scheme table the native driver runs.
struct SimKernel {
  std::string name;
  // Throws kInvalidArgument for schemes the simulator cannot run (e.g. tmm's pmemobj).
  std::function<void(const pool::RunParams&)> check;
  // Normal execution from outer iteration `first` to the end, on the pool's arrays.
  std::function<void(sim::SimBackend&, pool::Pool&, std::size_t first)> run;
  // The scheme's recovery on whatever the pool holds; returns where execution resumes.
  std::function<std::size_t(sim::SimBackend&, pool::Pool&, RunReport&)> recover;
  // A crash trial's restart after its last crash, natively (run/native_tail.hpp): the scheme's
  // recovery on whatever the pool holds and the rest of the run (or only the run from
  // NativeRestartOptions::first), at native speed, reporting what the simulator would: the
  // resume point, the recovery's ops, the regions committed, and the recovery in `report`.
  // nullopt (nothing run) when the scheme's code does not run on that backend, or with an empty
  // function.
  std::function<std::optional<NativeRestart>(pool::Pool&, const NativeRestartOptions&, RunReport&)>
      restart_native;
  // The bytes of the run's result (ResumableKernel::output): what verify judges.
  std::function<std::span<const std::byte>(pool::Pool&)> output;
  // Loads + stores of the base kernel (progress estimate only).
  std::function<std::uint64_t(const pool::RunParams&)> base_refs;
  // The negative controls a scheme's row declares (Scheme::mutants); throws for an unknown one.
  std::function<mem::MutationSet(std::string_view scheme)> mutants;
};

// Refuses (kInvalidArgument, a usage error) a run whose scratch arrays cannot fit in the free
// space of /dev/shm or whose arrays + durable image cannot fit in MemAvailable, before anything
// is allocated. `concurrent_runs`: simulations alive at once (a crash campaign's forked trials).
void require_scratch_room(const SimRunSpec& spec, std::uint64_t concurrent_runs = 1);

[[nodiscard]] const std::vector<SimKernel>& sim_kernels();
[[nodiscard]] const SimKernel& find_sim_kernel(const std::string& name);  // throws kInvalidArgument

// One kernel's arrays in a scratch pool laid out and initialised by its KernelDriver (on
// /dev/shm, i.e. DRAM, unlinked at once: nothing is left on disk), and a SimBackend for which
// every pool array is a registered persistent range. Crash campaigns drive it directly:
// backend().arm_crash(k); run() throws PowerFailure; backend().apply_crash_image(); recover().
class SimSession {
 public:
  explicit SimSession(const SimRunSpec& spec);  // validates everything; throws pmlab::Error
  ~SimSession();
  SimSession(SimSession&&) noexcept;
  SimSession& operator=(SimSession&&) noexcept;
  SimSession(const SimSession&) = delete;
  SimSession& operator=(const SimSession&) = delete;

  void run(std::size_t first = 0);
  // SimKernel::restart_native on this session's pool, counting ops as this session's backend
  // does (its flush instruction and mutation): with `recover`, the recovery (into `report`) and
  // (unless `run` is false) the rest of the run; else the run from `first`. nullopt (nothing
  // run) when the kernel's scheme cannot.
  [[nodiscard]] std::optional<NativeRestart> restart_native(bool recover, std::size_t first,
                                                            RunReport& report, bool run = true);
  [[nodiscard]] std::size_t recover(RunReport& report);
  [[nodiscard]] VerifyResult verify() const;  // bit-exact against the fault-free reference
  // The result's bytes in the pool (SimKernel::output); empty without that function.
  [[nodiscard]] std::span<const std::byte> output_bytes();

  [[nodiscard]] sim::SimBackend& backend();
  [[nodiscard]] pool::Pool& pool();
  [[nodiscard]] const SimRunSpec& spec() const;
  // Ops (loads + stores) of the base kernel: the denominator of a progress fraction.
  [[nodiscard]] std::uint64_t estimated_ops() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

struct SimRunResult {
  sim::SimStats stats;
  std::uint64_t ops = 0;   // backend ops: loads, stores, flushes, fences
  double seconds = 0;      // host wall time of the simulated execution (setup excluded)
  double cpu_seconds = 0;  // host CPU time of the same (the simulator is single-threaded)
  std::optional<VerifyResult> verify;            // when spec.verify
  [[nodiscard]] double refs_per_second() const;  // simulated line accesses per host second
};

// Called after each outermost parallel loop with an estimated fraction done in [0, 1).
using SimProgress = std::function<void(double fraction)>;

// Builds a session, runs the kernel to completion (and drains if asked), returns the statistics.
[[nodiscard]] SimRunResult simulate(const SimRunSpec& spec, const SimProgress& progress = {});

// Every statistic of `s` divided by the same one of `base`, as JSON with the keys of
// sim::to_json (arrays per core dropped). x/0 is null, 0/0 included ("n/a": neither run did
// any, which is no ratio).
[[nodiscard]] nlohmann::json normalized_to(const sim::SimStats& s, const sim::SimStats& base);

}  // namespace pmlab::run
