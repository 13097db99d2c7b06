// The test-only mutants of the in-place versioning protocol (PMLAB_IPV_MUTANT).
#include "pmlab/scheme/versions.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::scheme {
namespace {

IpvMutant mutant_from_env() {
  const char* v = std::getenv("PMLAB_IPV_MUTANT");
  if (v == nullptr || *v == '\0') return IpvMutant::kNone;
  const std::string s(v);
  if (s == "commit-before-flush") return IpvMutant::kCommitBeforeFlush;
  if (s == "barrier-after-write") return IpvMutant::kBarrierAfterFirstWrite;
  if (s == "skip-flush") return IpvMutant::kSkipFlush;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("PMLAB_IPV_MUTANT='{}' (known: commit-before-flush, "
                          "barrier-after-write, skip-flush)",
                          s));
}

std::atomic<IpvMutant>& slot() {
  static std::atomic<IpvMutant> m{mutant_from_env()};
  return m;
}

}  // namespace

IpvMutant ipv_mutant() {
  return slot().load(std::memory_order_relaxed);
}
void set_ipv_mutant(IpvMutant m) {
  slot().store(m, std::memory_order_relaxed);
}

}  // namespace pmlab::scheme
