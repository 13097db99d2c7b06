// The high-level LP API: a loop over regions written as a lambda, protected by Lazy Persistency
// on a pool that pmlab opens or creates, recovers and resumes (docs/protect-your-own-loop.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pmlab/lp/checksum_kind.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/persist/choice.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/pool/user_params.hpp"

namespace pmlab::lp {

/// One array of a loop's pool: `count` elements of 8 bytes (doubles, or any 8-byte type).
struct LoopArray {
  std::string name;         ///< at most 23 characters; not one of pmlab's own (lp_..., user_params)
  std::uint64_t count = 0;  ///< elements of 8 bytes
};

/// Where the loop's regions write, and in which order they depend on each other.
///
/// Phase t's region k writes elements [first + k * chunk, min(first + (k + 1) * chunk, last)) of
/// the array `outputs[t % outputs.size()]`, and nothing else. Its checksum is that range as it
/// is in memory after the region's body returns, so the body may store in any order, and a
/// range element the body never writes (a fixed boundary) is simply constant.
///
/// Dependency order: the regions of one phase are independent of each other (any order, any
/// thread); phase t may read what phases < t wrote and its read-only inputs. One phase (the
/// default) is a loop of independent regions. Before phase t starts, pmlab makes phase t - 1's
/// output durable: that one persist per phase is what lets phase t overwrite the input of phase
/// t - 1 (two grids in ping-pong) and still be recomputed after a crash (rule 3 of the guide).
struct LoopLayout {
  std::uint64_t phases = 1;          ///< time steps, or stages; 1: independent regions
  std::vector<std::string> outputs;  ///< arrays written by phase t: outputs[t % size], 1 to 8
  std::uint64_t first = 0;           ///< first element of each output that regions cover
  std::uint64_t last = 0;            ///< one past the last; 0: the output array's end
  std::uint64_t chunk = 0;           ///< elements per region (the last region may be shorter)
};

/// How a loop runs. Nothing here is stored in the pool: a run may resume with other options.
struct LoopOptions {
  /// The name the pool header records as its kernel (pmlab info shows it), <= 15 characters.
  std::string name = "loop";
  /// Threads that run one phase's regions (OpenMP, static schedule); 0: OpenMP's default
  /// (OMP_NUM_THREADS, else the cores). With more than one, the body must be safe to call for
  /// two regions at once.
  unsigned threads = 0;
  /// How data is made durable (persist/choice.hpp); kAuto picks for the mapping. The
  /// environment variable PMLAB_PERSIST (auto, pmem2, cpu, none) overrides it.
  persist::Persistence persistence = persist::Persistence::kAuto;
  /// The checksum kind (stored in the pool: a resume must use the same).
  ChecksumKind checksum = ChecksumKind::kModular;
  /// Print pmlab's warning on stderr when the pool is not on persistent memory.
  bool warn_if_emulated = true;
};

/// What Loop::run did.
struct LoopReport {
  bool created = false;            ///< the pool was created by this Loop (else opened)
  bool resumed = false;            ///< the pool held an interrupted run, which was recovered
  bool already_done = false;       ///< the pool held a completed run: nothing ran
  std::uint64_t resume_phase = 0;  ///< the first phase this run computed in full
  RecoveryStats recovery;          ///< what recovery validated and recomputed
  /// The protocol points this run passed (see PMLAB_LOOP_KILL_AT in the guide).
  std::uint64_t crash_points = 0;
  std::string persistence;  ///< what persists data, e.g. "cpu clwb (not DAX)"
};

/// Recovery's verdict on an interrupted loop pool, computed without changing it.
struct LoopCheck {
  pool::RunState state = pool::RunState::kInitialized;  ///< the pool's state
  std::uint64_t durable_phases = 0;                     ///< phases [0, durable_phases) are durable
  std::uint64_t phases = 0;                             ///< phases of the run
  std::uint64_t regions = 0;                            ///< regions per phase
  RecoveryStats recovery;  ///< what the next run's recovery will find (recomputed: to redo)
};

class Loop;
namespace loop_protocol {
/// A Loop over a pool laid out by loop_protocol::pool_arrays (the loop crash test's simulated
/// pools, experiments/loop_crash_test.hpp): array() finds the user's arrays in it, also while
/// `pool` is being created. The pool must outlive it; run() throws kInvalidArgument on it.
[[nodiscard]] Loop attach(pool::Pool& pool, const std::vector<LoopArray>& arrays,
                          const LoopLayout& layout);
}  // namespace loop_protocol

/// A loop over regions protected by LP on the pool at `path`:
///
///     lp::Loop loop(path, my_params, {{"a", n}, {"z", n}}, {.outputs = {"z"}, .chunk = 4096},
///                   [&](lp::Loop& l) { /* write the inputs into l.array("a") */ });
///     loop.run([&](std::uint64_t phase, std::uint64_t k) { /* compute region k */ });
///
/// The constructor opens the pool, or creates it: arrays zero-filled, `init` writes the inputs,
/// all of it durable before the pool is published. `params` (any trivially copyable struct) is
/// stored in the pool, and a pool created with other parameters, arrays or layout is refused
/// (pmlab::Error, kPoolMismatch). run() then drives the pool's states (pool::run_states):
/// initialized → running → done; on a pool left running by a crash it first recovers — every
/// region of the phase in flight is validated against its checksum, the mismatched and the
/// never-committed ones are recomputed by calling the body again and made durable — then resumes
/// at the next phase and marks the run done once the last phase's output is durable. On a
/// completed pool run() does nothing. The body must be idempotent (rule 4 of the guide):
/// recomputing region k of phase t from the same inputs gives the same bits.
class Loop {
 public:
  /// The body of a region: writes phase `phase`'s region `region`.
  using Body = std::function<void(std::uint64_t phase, std::uint64_t region)>;
  /// Writes the inputs of a pool being created (arrays are zero-filled before).
  using Init = std::function<void(Loop&)>;

  /// Opens or creates the pool (see the class); `params` is stored and checked byte for byte.
  template <pool::UserParamsType P>
  Loop(const std::string& path, const P& params, std::vector<LoopArray> arrays, LoopLayout layout,
       const Init& init = {}, LoopOptions options = {})
      : Loop(path, &params, sizeof(P), std::move(arrays), std::move(layout), init,
             std::move(options)) {}
  /// The same with the parameters as `bytes` raw bytes (the C API's door).
  Loop(const std::string& path, const void* params, std::size_t bytes,
       std::vector<LoopArray> arrays, LoopLayout layout, const Init& init, LoopOptions options);
  /// Takes over another Loop's pool.
  Loop(Loop&&) noexcept;
  /// Closes this Loop's pool, then takes over another's.
  Loop& operator=(Loop&&) noexcept;
  /// Closes the pool (its lock is released; a run not done stays resumable).
  ~Loop();

  /// The array `name` (kInvalidArgument if the loop has none of that name). Valid in `init`.
  template <class T = double>
  [[nodiscard]] T* array(std::string_view name) const {
    static_assert(sizeof(T) == 8 || sizeof(T) == 1, "loop arrays hold 8-byte elements");
    return reinterpret_cast<T*>(array_bytes(name));
  }
  /// Runs the loop (see the class). An exception from the body stops the run after the regions
  /// in flight and is rethrown; the pool stays running, and the next run recovers.
  LoopReport run(const Body& body);
  /// Regions per phase.
  [[nodiscard]] std::uint64_t regions() const;
  /// Phases of the run.
  [[nodiscard]] std::uint64_t phases() const;
  /// Whether the constructor created the pool.
  [[nodiscard]] bool created() const;
  /// The pool (its state, path, arrays).
  [[nodiscard]] const pool::Pool& pool() const;

 private:
  friend Loop loop_protocol::attach(pool::Pool&, const std::vector<LoopArray>&, const LoopLayout&);
  struct Impl;
  explicit Loop(std::unique_ptr<Impl> impl);
  [[nodiscard]] std::byte* array_bytes(std::string_view name) const;
  std::unique_ptr<Impl> impl_;
};

/// What the next run's recovery would find on the loop pool at `path` (LoopReport::recovery of
/// its run), computed from the pool's bytes without writing one: the pool is opened read-only
/// (O_RDONLY, a read-only mapping, a shared lock), so it works on a read-only file or mount.
/// Throws kPoolCorrupt for a pool that no Loop wrote, kPoolBusy while a run holds it.
[[nodiscard]] LoopCheck check_loop_pool(const std::string& path);

/// Whether the pool holds a Loop's layout record (lp::Loop wrote it).
[[nodiscard]] bool is_loop_pool(const pool::Pool& pool);
/// Whether a pool header's parameters name a Loop's run (the scheme name Loop stores).
[[nodiscard]] bool holds_loop_run(const pool::RunParams& p);

}  // namespace pmlab::lp
