// SimBackend: construction, persist ranges, and the crash arm / power failure / image apply cycle.
#include "pmlab/sim/sim_backend.hpp"

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::sim {

namespace {
int checked_threads(int threads, const SimParams& p) {
  if (threads == 0) return p.threads;
  if (threads < 1 || threads > kMaxCores)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("sim backend threads must be between 1 and {} (got {})", kMaxCores, threads));
  return threads;
}
}  // namespace

SimBackend::SimBackend(SimParams params, FlushMode flush, int threads)
    : machine_(std::move(params)), flush_(flush), threads_(checked_threads(threads, machine_.params())),
      cores_(machine_.cores()) {}

SimBackend SimBackend::from_preset(std::string_view name, FlushMode flush, int threads) {
  return SimBackend(preset(name), flush, threads);
}

void SimBackend::persist(const void* p, std::size_t len) {
  if (flush_ == FlushMode::kNone || len == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uint64_t first = a / kCacheLineBytes, last = (a + len - 1) / kCacheLineBytes;
  for (std::uint64_t l = first; l <= last; ++l) {
    count_op();
    machine_.flush(core_, LineAddr(l), flush_);
  }
  fence();
}

void SimBackend::arm_crash(std::uint64_t k) {
  if (k <= ops_)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("crash point {} is not in the future ({} ops have already run)", k, ops_));
  crash_at_ = k;
}

void SimBackend::power_failure() {
  crashed_ = true;
  const std::uint64_t op = crash_at_;
  crash_at_ = kDisarmed;
  throw PowerFailure(op);
}

void SimBackend::apply_crash_image() {
  machine_.image().restore_to_live();
  machine_.power_fail();
  crash_at_ = kDisarmed;
  crashed_ = false;
}

}  // namespace pmlab::sim
