// SimBackend: construction, persist ranges, and the crash arm / power failure / image apply cycle.
#include "pmlab/sim/sim_backend.hpp"

#include <utility>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::sim {

namespace {
int checked_threads(int threads, const SimParams& p) {
  if (threads == 0) return p.threads;
  if (threads < 1 || threads > kMaxCores)
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("sim backend threads must be between 1 and {} (got {})", kMaxCores, threads));
  return threads;
}
}  // namespace

SimBackend::SimBackend(SimParams params, FlushMode flush, int threads)
    : machine_(std::move(params)),
      flush_(flush),
      threads_(checked_threads(threads, machine_.params())),
      cores_(machine_.cores()) {}

SimBackend SimBackend::from_preset(std::string_view name, FlushMode flush, int threads) {
  return SimBackend(preset(name), flush, threads);
}

void SimBackend::persist(const void* p, std::size_t len) {
  if (flush_ == FlushMode::kNone || len == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uint64_t first = a / kCacheLineBytes, last = (a + len - 1) / kCacheLineBytes;
  if (mutation_ != mem::Mutation::kNoFlush) {
    for (std::uint64_t l = first; l <= last; ++l) {
      if (!count_op()) continue;
      if (track_unfenced_) [[unlikely]]
        machine_.image().note_flush(LineAddr(l), core_);
      machine_.flush(core_, LineAddr(l), flush_);
    }
  }
  fence();
}

void SimBackend::arm_crash(std::uint64_t k) {
  if (k <= ops_)
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("crash point {} is not in the future ({} ops have already run)", k, ops_));
  if (!modelling_)
    throw Error(ErrorCode::kInvalidArgument,
                "cannot arm a crash after stop_modelling(): the NVM image is no longer kept");
  crash_at_ = k;
  hook_ = nullptr;
}

void SimBackend::arm_hook(std::uint64_t k, OpHook hook) {
  arm_crash(k);
  hook_ = std::move(hook);
}

bool SimBackend::armed_op() {
  const std::uint64_t k = crash_at_;
  crash_at_ = kDisarmed;
  if (hook_) {
    const OpHook h = std::exchange(hook_, nullptr);  // it may arm the next point
    if (!h(k)) {
      ++ops_;
      return true;
    }
  }
  power_failure(k);
}

void SimBackend::power_failure(std::uint64_t op) {
  crashed_ = true;
  crash_at_ = kDisarmed;
  hook_ = nullptr;
  throw PowerFailure(op);
}

void SimBackend::apply_crash_image() {
  machine_.image().restore_to_live();
  machine_.image().forget_unfenced();
  machine_.power_fail();
  disarm_crash();
  crashed_ = false;
}

}  // namespace pmlab::sim
