// Ctrl-C and SIGTERM for every pmlab verb: exit 130 (README "Exit codes"), nothing left behind.
#pragma once

#include <atomic>

namespace pmlab::cli {

// How a verb reacts to SIGINT / SIGTERM.
enum class OnInterrupt {
  // For verbs whose files are consistent at every instant or that keep everything in memory
  // (run, sim, crash): the process ends at once with exit 130 after removing the temporary of a
  // pool being created. A persistent run's pool is then exactly as after kill -9 or a power
  // cut: `pmlab run --pool PATH` resumes it. (A handler cannot unwind the stack; nothing needs
  // it: the pool's flock and the mappings go with the process.)
  kExitNow,
  // For verbs with temporary files to remove or a partial report to write (bench, eval): the
  // stop flag is raised, the verb stops after its current step, cleans up and returns 130. A
  // second signal ends the process at once, like kExitNow.
  kStopAfterStep,
};

// Installs the handlers for its lifetime (one verb); the previous ones come back after.
class InterruptScope {
 public:
  explicit InterruptScope(OnInterrupt mode);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Raised by the first signal in kStopAfterStep mode; what bench/eval poll between steps.
  [[nodiscard]] static const std::atomic<bool>* stop_flag();
  [[nodiscard]] static bool stop_requested();
};

}  // namespace pmlab::cli
