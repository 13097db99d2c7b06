// Epoch persistency over any memory backend: per-thread write sets, the persist barrier, locks.
//
// The BEP micro-benchmarks (docs/bep.md) are written once against EpochBackend. EpochTracked
// gives it to every mem::Backend:
//   - barrier(): ends the calling thread's epoch. Software EP (persist::Barrier::kSoftware, the
//   only
//     mode natively) writes back the lines this thread stored since its last barrier with the
//     backend's own flush, then fences; kNone does nothing (the no-persistency negative control);
//     the hardware modes (lb, lb-idt, lb-pf, lb++) hand the barrier to the simulator's epoch
//     engine (SimBackend::persist_barrier) and keep no write set.
//   - exclusive(stripe, fn): natively a striped std::mutex; in the simulator fn() alone, since
//     one parallel_for iteration is atomic in simulation order (spec D9).
//   - thread(): the executing thread (simulated thread, or the OpenMP thread number).
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/core/strong_types.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/persist/barrier.hpp"

namespace pmlab::bep {

// A backend the benchmarks can run on: a mem::Backend plus epochs and critical sections.
template <class B>
concept EpochBackend = mem::Backend<B> && requires(B& b) {
  b.barrier();
  b.exclusive(std::size_t{0}, [] {});
  { b.thread() } -> std::convertible_to<int>;
  { b.mode() } -> std::same_as<persist::Barrier>;
};

// True for the simulator's backend (it knows the running simulated thread).
template <class B>
concept SimulatedBackend = requires(const B& b) {
  { b.current_thread() } -> std::convertible_to<int>;
};

// The barrier a backend was configured with: the simulator's --barrier, software EP natively.
template <mem::Backend B>
[[nodiscard]] persist::Barrier configured_barrier(const B& b) {
  if constexpr (requires {
                  { b.barrier() } -> std::same_as<persist::Barrier>;
                })
    return b.barrier();
  else
    return persist::Barrier::kSoftware;
}

// Refuses a hardware barrier with more threads than cores: the epoch engine tags lines by core,
// so thread t must be core t (spec D8).
template <mem::Backend B>
void require_thread_per_core(const B& b, persist::Barrier mode) {
  if (mode == persist::Barrier::kNone || mode == persist::Barrier::kSoftware) return;
  if constexpr (requires { b.machine().params().cores; }) {
    const int cores = b.machine().params().cores;
    if (b.threads() > cores)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--barrier {} needs one thread per core: --threads {} > --cores {} "
                              "(the epoch engine tags lines by core)",
                              persist::to_string(mode), b.threads(), cores));
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--barrier {} exists only in the simulator (natively the barrier is "
                            "software: write back the epoch's lines, then sfence)",
                            persist::to_string(mode)));
  }
}

template <mem::Backend B>
class EpochTracked {
 public:
  static constexpr std::size_t kStripes = 256;

  // mode: normally configured_barrier(inner); a scheme without persistency passes kNone.
  EpochTracked(B& inner, persist::Barrier mode)
      : b_(inner),
        mode_(mode),
        sets_(static_cast<std::size_t>(std::max(inner.threads(), 1))),
        locks_(std::make_unique<std::array<std::mutex, kStripes>>()) {
    require_thread_per_core(inner, mode);
  }

  template <class T>
  [[nodiscard]] T load(const T* p) {
    return b_.load(p);
  }
  // Records the line in the thread's write set (software EP only: the other modes need none).
  template <class T>
  void store(T* p, T v) {
    b_.store(p, v);
    if (mode_ != persist::Barrier::kSoftware) return;
    const auto line = reinterpret_cast<std::uintptr_t>(p) / 64;
    auto& ws = sets_[slot()].lines;
    if (ws.empty() || ws.back() != line) ws.push_back(line);
    const auto last = (reinterpret_cast<std::uintptr_t>(p) + sizeof(T) - 1) / 64;
    if (last != line) ws.push_back(last);
  }
  void flush(const void* p) { b_.flush(p); }
  void fence() { b_.fence(); }
  void persist(const void* p, std::size_t len) { b_.persist(p, len); }
  void region_begin(mem::RegionId r) { b_.region_begin(r); }
  void region_end(mem::RegionId r) { b_.region_end(r); }
  template <class Fn>
  void parallel_for(std::size_t begin, std::size_t end, Fn&& fn) {
    b_.parallel_for(begin, end, std::forward<Fn>(fn));
  }
  [[nodiscard]] int threads() const { return b_.threads(); }

  // Ends the calling thread's epoch: every store before it persists before any store after it.
  void barrier() {
    switch (mode_) {
      case persist::Barrier::kNone:
        return;
      case persist::Barrier::kSoftware: {
        auto& ws = sets_[slot()].lines;
        if (ws.empty()) return;
        std::sort(ws.begin(), ws.end());
        ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
        for (const auto line : ws) b_.flush(reinterpret_cast<const void*>(line * 64));
        b_.fence();
        ws.clear();
        return;
      }
      default:
        if constexpr (requires { b_.persist_barrier(); }) b_.persist_barrier();
        return;
    }
  }

  // In the simulator, orders every critical section after the previous holder's commit:
  // `first_marker` is thread 0's commit word (written in its transaction's last epoch, inside the
  // critical section) and thread t's lies `stride_bytes` further per thread. The simulated lock
  // is no memory access (spec D1: volatile memory has no persist order), so without this a
  // transaction that read the previous holder's in-place updates could persist while that
  // holder's commit did not, and the holder's rollback after a crash would undo lines the later,
  // durable transaction had changed (rbtree at a 4 KiB LLC: 77/80 trials, docs/bep.md). Entering
  // the section loads the previous holder's commit word, a dependence the epoch engine enforces:
  // the lock acquire's read of the line its last holder released. The load is part of the
  // program under every barrier mode (sw and none too), so the modes still run the same program.
  void order_critical_sections_after(const std::uint64_t* first_marker, std::size_t stride_bytes) {
    markers_ = reinterpret_cast<const std::byte*>(first_marker);
    marker_stride_ = stride_bytes;
  }

  template <class Fn>
  void exclusive(std::size_t stripe, Fn&& fn) {
    if constexpr (SimulatedBackend<B>) {
      const auto section = [&] {
        const std::size_t k = stripe % kStripes;
        const int me = thread();
        const int prev = last_holder_[k];
        if (markers_ != nullptr && !lock_order_disabled()) {
          if (prev >= 0 && prev != me)
            (void)b_.load(reinterpret_cast<const std::uint64_t*>(
                markers_ + static_cast<std::size_t>(prev) * marker_stride_));
        }
        // --timed-locks: the acquire waits for the release, plus the lock line's trip from the
        // previous holder's core through the shared LLC.
        const bool timed = locks_take_time();
        if (timed && prev >= 0)
          b_.wait_until(released_at_[k] + (prev != me ? lock_handoff() : Cycles{0}));
        fn();
        if (timed) released_at_[k] = b_.clock_now();
        last_holder_[k] = me;
      };
      // Atomic in simulation order (D9), under --interleave-quantum too.
      if constexpr (requires { b_.atomically(section); })
        b_.atomically(section);
      else
        section();
    } else {
      std::lock_guard lock((*locks_)[stripe % kStripes]);
      fn();
    }
  }

  [[nodiscard]] int thread() const {
    if constexpr (SimulatedBackend<B>)
      return b_.current_thread();
    else
      return omp_in_parallel() ? omp_get_thread_num() : 0;
  }
  [[nodiscard]] persist::Barrier mode() const { return mode_; }
  [[nodiscard]] B& inner() { return b_; }

 private:
  // Padded so that two threads' write sets never share a cache line.
  struct alignas(64) WriteSet {
    std::vector<std::uintptr_t> lines;
  };
  [[nodiscard]] std::size_t slot() const {
    return static_cast<std::size_t>(thread()) % sets_.size();
  }

  // SimParams' persistency.timed_locks (simulator only).
  [[nodiscard]] bool locks_take_time() const {
    if constexpr (requires { b_.machine().params().persistency.timed_locks; })
      return b_.machine().params().persistency.timed_locks;
    else
      return false;
  }
  [[nodiscard]] Cycles lock_handoff() const {
    if constexpr (requires { b_.machine().params().llc.hit_latency; })
      return b_.machine().params().llc.hit_latency;
    else
      return Cycles{0};
  }

  // The negative control of the lock order (tests: the small-LLC rbtree campaign must fail).
  [[nodiscard]] bool lock_order_disabled() const {
    if constexpr (requires { b_.machine().params().persistency.debug.no_lock_order; })
      return b_.machine().params().persistency.debug.no_lock_order;
    else
      return false;
  }

  B& b_;
  persist::Barrier mode_;
  std::vector<WriteSet> sets_;
  std::unique_ptr<std::array<std::mutex, kStripes>> locks_;
  // The simulator's lock order (order_critical_sections_after): each stripe's last holder.
  const std::byte* markers_ = nullptr;
  std::size_t marker_stride_ = 0;
  std::array<int, kStripes> last_holder_ = filled(-1);
  // --timed-locks: each stripe's release time (its last holder's core clock at the release).
  std::array<Cycles, kStripes> released_at_{};

  static std::array<int, kStripes> filled(int v) {
    std::array<int, kStripes> a{};
    a.fill(v);
    return a;
  }
};

}  // namespace pmlab::bep
