// Names of flush kinds and CPUID checks for clflushopt/clwb.
#include "pmlab/persist/flush.hpp"

#include <cpuid.h>

#include <string>

#include "pmlab/core/error.hpp"

namespace pmlab::persist {

std::string_view to_string(FlushKind k) {
  switch (k) {
    case FlushKind::kClflush:
      return "clflush";
    case FlushKind::kClflushopt:
      return "clflushopt";
    case FlushKind::kClwb:
      return "clwb";
  }
  return "?";
}

FlushKind flush_kind_from_string(std::string_view s) {
  if (s == "clflush") return FlushKind::kClflush;
  if (s == "clflushopt") return FlushKind::kClflushopt;
  if (s == "clwb") return FlushKind::kClwb;
  throw Error(ErrorCode::kInvalidArgument, "unknown flush instruction '" + std::string(s) +
                                               "' (expected clflush, clflushopt or clwb)");
}

bool cpu_supports(FlushKind k) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (k == FlushKind::kClflush) {
    __get_cpuid(1, &eax, &ebx, &ecx, &edx);
    return (edx >> 19) & 1u;
  }
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return k == FlushKind::kClflushopt ? ((ebx >> 23) & 1u) : ((ebx >> 24) & 1u);
}

FlushKind best_flush_kind() {
  if (cpu_supports(FlushKind::kClwb)) return FlushKind::kClwb;
  if (cpu_supports(FlushKind::kClflushopt)) return FlushKind::kClflushopt;
  return FlushKind::kClflush;
}

}  // namespace pmlab::persist
