// The process-wide checkpoint interval of the cp-* rows.
#include "pmlab/scheme/copy_mode.hpp"

#include <atomic>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::scheme {
namespace {
std::atomic<std::size_t> g_interval{1};

}  // namespace

std::size_t checkpoint_interval() {
  return g_interval.load(std::memory_order_relaxed);
}

void set_checkpoint_interval(std::size_t every) {
  if (every == 0)
    throw Error(ErrorCode::kInvalidArgument, "--cp-every must be >= 1 (outer iterations)");
  g_interval.store(every, std::memory_order_relaxed);
}

}  // namespace pmlab::scheme
