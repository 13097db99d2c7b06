// The process-wide checkpoint interval of the cp-* rows and the test-only copy mutants.
#include "pmlab/scheme/copy_mode.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::scheme {
namespace {
std::atomic<std::size_t> g_interval{1};

CopyMutant mutant_from_env() {
  const char* v = std::getenv("PMLAB_CP_MUTANT");
  if (v == nullptr || *v == '\0') return CopyMutant::kNone;
  const std::string s(v);
  if (s == "no-sfence") return CopyMutant::kNoFence;
  if (s == "no-flush") return CopyMutant::kNoFlush;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("PMLAB_CP_MUTANT='{}' (known: no-sfence, no-flush)", s));
}

std::atomic<CopyMutant>& mutant_slot() {
  static std::atomic<CopyMutant> m{mutant_from_env()};
  return m;
}
}  // namespace

CopyMutant copy_mutant() {
  return mutant_slot().load(std::memory_order_relaxed);
}

void set_copy_mutant(CopyMutant m) {
  mutant_slot().store(m, std::memory_order_relaxed);
}

std::size_t checkpoint_interval() {
  return g_interval.load(std::memory_order_relaxed);
}

void set_checkpoint_interval(std::size_t every) {
  if (every == 0)
    throw Error(ErrorCode::kInvalidArgument, "--cp-every must be >= 1 (outer iterations)");
  g_interval.store(every, std::memory_order_relaxed);
}

}  // namespace pmlab::scheme
