// Seed 002 §4.2's flush_init / flush_async / flush_barrier: natively a helper thread (pinned to
// an idle CPU when there is one) that writes back ranges, or copies them durably, while the main
// thread computes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/native_path.hpp"

namespace pmlab::scheme {

struct FlushRange {
  const void* p = nullptr;
  std::size_t bytes = 0;
};

// A durable copy the helper makes: src[0, count) into dst (cp-nt-async, the paper's MG case).
struct CopyRange {
  double* dst = nullptr;
  const double* src = nullptr;
  std::size_t count = 0;
};

// The native helper thread: a FIFO of requests, each a range written back with `persist`
// (flushes of every line + sfence, executed on the helper) or a range copied with `copy`
// (non-temporal stores + sfence on the helper), and a completed-ticket counter the main thread
// waits on. Defined in src/scheme/async_flush.cpp.
class FlushHelper {
 public:
  using PersistFn = std::function<void(const void*, std::size_t)>;
  using CopyFn = std::function<void(double*, const double*, std::size_t)>;
  // main_threads: the threads the run computes with; the helper is pinned to the last allowed
  // CPU when more CPUs than that are allowed, else it is left to the scheduler.
  FlushHelper(PersistFn persist, CopyFn copy, int main_threads);
  ~FlushHelper();
  FlushHelper(const FlushHelper&) = delete;
  FlushHelper& operator=(const FlushHelper&) = delete;

  // Enqueue a request; each returns its ticket (1, 2, ...).
  std::uint64_t submit(FlushRange r);
  std::uint64_t submit(CopyRange c);
  // Returns once every submitted request has been completed and fenced by the helper.
  void wait_all();
  // Where the helper runs: "cpu N" or "unpinned (no idle cpu)".
  [[nodiscard]] const std::string& placement() const;
  // Nanoseconds the helper spent on its requests, and the main thread spent waiting in wait_all.
  [[nodiscard]] std::uint64_t busy_ns() const;
  [[nodiscard]] std::uint64_t exposed_ns() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A backend with seed 002's simulated helper core (sim::SimBackend).
template <class B>
concept HelperCoreBackend = requires(B& b, const void* p, std::size_t n) {
  b.helper_flush_async(p, n);
  b.helper_barrier();
};
// ... whose helper core also copies (SimBackend::helper_copy_async).
template <class B>
concept HelperCopyBackend = HelperCoreBackend<B> &&
    requires(B& b, double* d, const double* s, std::size_t n) {
  b.helper_copy_async(d, s, n);
};

// WBINVD is privileged: natively it needs a kernel module (the paper's), which pmlab does not
// load. Throws pmlab::Error(kUnsupported) saying so; the simulator models it
// (`--whole-cache-flush`, docs/seed002.md).
[[noreturn]] void refuse_native_wbinvd();

// flush_async(range) / copy_async(range) / flush_barrier() over any backend. Natively: the
// helper thread above (flush_init is the constructor). In the simulator: its helper core
// (SimBackend::helper_flush_async, helper_copy_async), whose ops interleave with the main thread
// by simulated time and are crash points. On every other backend (test backends) the work is
// synchronous: flush_async persists the range in place, copy_async copies durably, and
// flush_barrier does nothing; their crash models already cover any order in which the
// asynchronous work could land.
template <mem::Backend B>
class AsyncFlusher {
 public:
  explicit AsyncFlusher(B& b) : b_(b) {
    if constexpr (kIsNativeBackend<B>)
      helper_ = std::make_unique<FlushHelper>(
          [p = b.persister()](const void* a, std::size_t n) { p.persist(a, n); },
          [p = b.persister()](double* d, const double* s, std::size_t n) {
            native_copy_durable(p, d, s, n);
          },
          b.threads());
  }
  void flush_async(FlushRange r) {
    if constexpr (kIsNativeBackend<B>)
      (void)helper_->submit(r);
    else if constexpr (HelperCoreBackend<B>)
      b_.helper_flush_async(r.p, r.bytes);
    else
      b_.persist(r.p, r.bytes);
  }
  // The caller must not store into c.src nor read c.dst before the next flush_barrier.
  void copy_async(CopyRange c) {
    if constexpr (kIsNativeBackend<B>)
      (void)helper_->submit(c);
    else if constexpr (HelperCopyBackend<B>)
      b_.helper_copy_async(c.dst, c.src, c.count);
    else
      copy_durable(b_, c.dst, c.src, c.count);
  }
  void flush_barrier() {
    if constexpr (kIsNativeBackend<B>)
      helper_->wait_all();
    else if constexpr (HelperCoreBackend<B>)
      b_.helper_barrier();
  }
  [[nodiscard]] const FlushHelper* helper() const { return helper_.get(); }
  // flush_finalize: the helper stops; natively its times go to the backend, for the run report.
  ~AsyncFlusher() {
    if constexpr (kIsNativeBackend<B>)
      if (helper_)
        b_.add_helper_times(helper_->busy_ns(), helper_->exposed_ns(), helper_->placement());
  }
  AsyncFlusher(const AsyncFlusher&) = delete;
  AsyncFlusher& operator=(const AsyncFlusher&) = delete;

 private:
  B& b_;
  std::unique_ptr<FlushHelper> helper_;
};

}  // namespace pmlab::scheme
