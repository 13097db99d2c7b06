// The native flush helper thread of seed 002 §4.2: FIFO of flush and copy requests, pinned to an
// idle CPU.
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

// One request: a range to write back, or (copy.dst set) a range to copy durably.
struct HelperJob {
  std::uint64_t ticket = 0;
  FlushRange flush;
  CopyRange copy;
};

struct FlushHelper::Impl {
  PersistFn persist;
  CopyFn copy;
  std::mutex m;
  std::condition_variable cv;
  std::deque<HelperJob> queue;
  std::uint64_t submitted = 0;
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> busy{0};
  std::uint64_t exposed = 0;
  bool stop = false;
  std::string placement = "unpinned (no idle cpu)";
  std::thread thread;

  void loop() {
    for (;;) {
      HelperJob job;
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
      // mutex) are written back; the fence completes them before `done` is published. A copy
      // reads what the main thread stored before the enqueue, and its own sfence orders its
      // non-temporal stores before `done`.
      if (job.copy.dst != nullptr)
        copy(job.copy.dst, job.copy.src, job.copy.count);
      else
        persist(job.flush.p, job.flush.bytes);
      busy.fetch_add(now_ns() - t0, std::memory_order_relaxed);
      done.store(job.ticket, std::memory_order_release);
      done.notify_all();
    }
  }
};

FlushHelper::FlushHelper(PersistFn persist, CopyFn copy, int main_threads)
    : impl_(std::make_unique<Impl>()) {
  impl_->persist = std::move(persist);
  impl_->copy = std::move(copy);
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

namespace {
std::uint64_t enqueue(std::mutex& m, std::condition_variable& cv, std::deque<HelperJob>& queue,
                      std::uint64_t& submitted, HelperJob job) {
  {
    const std::lock_guard lock(m);
    job.ticket = ++submitted;
    queue.push_back(job);
  }
  cv.notify_one();
  return job.ticket;
}
}  // namespace

std::uint64_t FlushHelper::submit(FlushRange r) {
  HelperJob job;
  job.flush = r;
  return enqueue(impl_->m, impl_->cv, impl_->queue, impl_->submitted, job);
}

std::uint64_t FlushHelper::submit(CopyRange c) {
  if (c.count == 0) return impl_->submitted;  // nothing to wait for
  HelperJob job;
  job.copy = c;
  return enqueue(impl_->m, impl_->cv, impl_->queue, impl_->submitted, job);
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
