// The native backend: plain loads and stores, real flush instructions, OpenMP parallel loops.
#pragma once

#include <omp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/helper_times.hpp"
#include "pmlab/persist/persister.hpp"

namespace pmlab::mem {

template <persist::Persister P>
class NativeBackend {
 public:
  explicit NativeBackend(P persister = P{}, int threads = 1)
      : persister_(std::move(persister)), threads_(threads < 1 ? 1 : threads) {}

  template <class T>
  [[nodiscard]] T load(const T* p) const {
    return *p;
  }
  template <class T>
  void store(T* p, T v) const {
    *p = v;
  }
  void flush(const void* p) const { persister_.flush(p); }
  void fence() const { persister_.fence(); }
  void persist(const void* p, std::size_t len) const { persister_.persist(p, len); }
  void region_begin(RegionId) const {}
  void region_end(RegionId) const {}

  template <class Fn>
  void parallel_for(std::size_t begin, std::size_t end, Fn&& fn) const {
    if (threads_ == 1) {
      for (std::size_t i = begin; i < end; ++i) fn(i);
      return;
    }
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (std::size_t i = begin; i < end; ++i) fn(i);
  }
  [[nodiscard]] int threads() const {
    return threads_;
  }
  [[nodiscard]] const P& persister() const {
    return persister_;
  }
  // Where outer_step_done counts finished outer units (pmlab run's bar reads the count from
  // another thread); null: nowhere. One relaxed increment per outer iteration (or per block,
  // where a kernel's blocks are its outer units and run in parallel): nothing a loop can measure.
  void publish_steps_to(std::atomic<std::uint64_t>* steps_done) {
    steps_done_ = steps_done;
  }
  void outer_step_done() const {
    if (steps_done_ != nullptr) steps_done_->fetch_add(1, std::memory_order_relaxed);
  }
  // The flush helper's times over this backend's life (a run).
  [[nodiscard]] const HelperTimes& helper_times() const {
    return helper_times_;
  }
  void add_helper_times(std::uint64_t busy_ns, std::uint64_t exposed_ns,
                        const std::string& placement) {
    helper_times_ += HelperTimes{busy_ns, exposed_ns, placement};
  }

 private:
  P persister_;
  int threads_;
  HelperTimes helper_times_;
  std::atomic<std::uint64_t>* steps_done_ = nullptr;
};

// True for the native backend only: kernels may give its instantiations of a hot loop
// CPU-specific clones (gnu::target_clones). Only there: with GCC 12 an exception leaving a
// target_clones function ends in std::terminate (a five-line program shows it), and the test
// backends cut the power by throwing from a store.
template <class B>
inline constexpr bool kIsNativeBackend = false;
template <persist::Persister P>
inline constexpr bool kIsNativeBackend<NativeBackend<P>> = true;

static_assert(Backend<NativeBackend<persist::NoPersist>>);

// A backend over ordinary heap memory with no persistence: references and baselines.
using PlainBackend = NativeBackend<persist::NoPersist>;

}  // namespace pmlab::mem
