// The native flush helper thread of seed 002 §4.2: FIFO of ranges, pinned to an idle CPU.
#include "pmlab/scheme/async_flush.hpp"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::scheme {
namespace {

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// The last CPU this process may run on, if more are allowed than the run computes with.
int idle_cpu(int main_threads) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  if (CPU_COUNT(&set) <= main_threads) return -1;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

}  // namespace

struct FlushHelper::Impl {
  PersistFn persist;
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::pair<std::uint64_t, FlushRange>> queue;
  std::uint64_t submitted = 0;
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> busy{0};
  std::uint64_t exposed = 0;
  bool stop = false;
  std::string placement = "unpinned (no idle cpu)";
  std::thread thread;

  void loop() {
    for (;;) {
      std::pair<std::uint64_t, FlushRange> job;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;  // stop requested and nothing left
        job = queue.front();
        queue.pop_front();
      }
      const std::uint64_t t0 = now_ns();
      // Flushes of every line, then sfence, on this thread: clflush/clflushopt/clwb act on the
      // whole coherence domain, so the main thread's stores (ordered before the enqueue by the
      // mutex) are written back; the fence completes them before `done` is published.
      persist(job.second.p, job.second.bytes);
      busy.fetch_add(now_ns() - t0, std::memory_order_relaxed);
      done.store(job.first, std::memory_order_release);
      done.notify_all();
    }
  }
};

FlushHelper::FlushHelper(PersistFn persist, int main_threads) : impl_(std::make_unique<Impl>()) {
  impl_->persist = std::move(persist);
  impl_->thread = std::thread([this] { impl_->loop(); });
  if (const int cpu = idle_cpu(main_threads); cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(impl_->thread.native_handle(), sizeof set, &set) == 0)
      impl_->placement = fmt::format("cpu {}", cpu);
  }
}

FlushHelper::~FlushHelper() {
  {
    const std::lock_guard lock(impl_->m);
    impl_->stop = true;
  }
  impl_->cv.notify_one();
  impl_->thread.join();
}

std::uint64_t FlushHelper::submit(FlushRange r) {
  std::uint64_t ticket = 0;
  {
    const std::lock_guard lock(impl_->m);
    ticket = ++impl_->submitted;
    impl_->queue.emplace_back(ticket, r);
  }
  impl_->cv.notify_one();
  return ticket;
}

void FlushHelper::wait_all() {
  const std::uint64_t target = impl_->submitted;  // only the main thread submits
  std::uint64_t seen = impl_->done.load(std::memory_order_acquire);
  if (seen >= target) return;
  const std::uint64_t t0 = now_ns();
  while (seen < target) {
    impl_->done.wait(seen, std::memory_order_acquire);
    seen = impl_->done.load(std::memory_order_acquire);
  }
  impl_->exposed += now_ns() - t0;
}

void refuse_native_wbinvd() {
  throw Error(ErrorCode::kUnsupported,
              "WBINVD (whole-cache write-back) is a privileged instruction: natively it needs a "
              "kernel module, which pmlab does not load; it is modelled in the simulator only "
              "(pmlab sim|crash --whole-cache-flush always|auto)");
}

const std::string& FlushHelper::placement() const {
  return impl_->placement;
}
std::uint64_t FlushHelper::busy_ns() const {
  return impl_->busy.load(std::memory_order_relaxed);
}
std::uint64_t FlushHelper::exposed_ns() const {
  return impl_->exposed;
}

}  // namespace pmlab::scheme
