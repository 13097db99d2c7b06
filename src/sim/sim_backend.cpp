// SimBackend: construction, persist ranges, and the crash arm / power failure / image apply cycle.
#include "pmlab/sim/sim_backend.hpp"

#include <boost/context/detail/fcontext.hpp>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "helper_core.hpp"
#include "persist_oracle.hpp"
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
      cores_(machine_.cores()),
      quantum_(machine_.params().interleave_quantum) {
  core_ref_ = machine_.core_ref(0);
  hardware_barrier_ = machine_.params().persistency.hardware();
  bsp_epoch_ = machine_.params().persistency.bsp_epoch_stores;
  write_through_ = machine_.params().persistency.bsp_write_through;
  if (bsp_epoch_ != 0) bsp_stores_.assign(static_cast<std::size_t>(cores_), 0);
  if (machine_.params().persistency.check_order) check_order(true);
  update_always_special();
}

SimBackend::~SimBackend() = default;
// The oracle is on the heap, so the image's pointer to it survives a move.
SimBackend::SimBackend(SimBackend&&) noexcept = default;
SimBackend& SimBackend::operator=(SimBackend&&) noexcept = default;

void SimBackend::check_order(bool on) {
  if (on && !oracle_) oracle_ = std::make_unique<PersistOracle>();
  if (!on) oracle_.reset();
  machine_.image().set_oracle(oracle_.get());
  update_always_special();
}

void SimBackend::update_always_special() {
  always_special_ = hardware_barrier_ || oracle_ != nullptr || machine_.params().preflush.enabled;
  update_special_at();
}

// Seed 004 §7.2 bulk mode: each core's dynamic store stream is cut into epochs of N stores.
// The hardware boundary is no op of the program (no crash point of its own); the oracle sees it
// as a program epoch boundary (D7: in bulk mode the hardware epochs are the program epochs).
void SimBackend::bsp_store() {
  std::uint64_t& n = bsp_stores_[static_cast<std::size_t>(core())];
  if (++n < bsp_epoch_) return;
  n = 0;
  if (oracle_) note_barrier();
  machine_.epoch_barrier(core(), true);
}

void SimBackend::write_through(const void* p, std::size_t size) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (std::uint64_t l = a / kCacheLineBytes; l <= (a + size - 1) / kCacheLineBytes; ++l)
    machine_.write_through(core(), LineAddr(l));
}

void SimBackend::note_access(const void* p, std::size_t size, bool is_store) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uint64_t first = a / kCacheLineBytes, last = (a + size - 1) / kCacheLineBytes;
  const CrashImage& img = machine_.image();
  for (std::uint64_t l = first; l <= last; ++l) {
    if (!img.covers_line(LineAddr(l))) continue;  // volatile memory has no persist order (D1)
    if (is_store)
      oracle_->on_store(thread_, LineAddr(l), ops_);
    else
      oracle_->on_load(thread_, LineAddr(l), ops_);
  }
}

void SimBackend::note_barrier() {
  oracle_->on_barrier(thread_);
}

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
        machine_.image().note_flush(LineAddr(l), core());
      machine_.flush(core(), LineAddr(l), flush_);
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
  set_crash_at(k);
  hook_ = nullptr;
}

void SimBackend::pause_modelling() {
  if (!modelling_ || crash_at_ != kDisarmed)
    throw Error(ErrorCode::kInvalidArgument,
                "pause_modelling() needs a modelled run with no crash armed");
  modelling_ = false;
  paused_ = true;
  update_special_at();
}

void SimBackend::resume_modelling() {
  if (!paused_) return;
  paused_ = false;
  modelling_ = true;
  update_special_at();
}

void SimBackend::arm_hook(std::uint64_t k, OpHook hook) {
  arm_crash(k);
  hook_ = std::move(hook);
}

bool SimBackend::armed_op() {
  const std::uint64_t k = crash_at_;
  set_crash_at(kDisarmed);
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
  set_crash_at(kDisarmed);
  hook_ = nullptr;
  throw PowerFailure(op);
}

// ---------------------------------------------------------------------------------------------
// Fine-grained interleaving: each logical thread of a parallel loop runs its static-schedule
// chunk on its own fiber; the scheduler (on the caller's stack) resumes them
// round-robin for `quantum_` ops each. An exception in a fiber (a PowerFailure, an error) is
// caught at the fiber's base; the scheduler then resumes every other started fiber once with
// the loop cancelled, so its next op throws Cancelled and its stack unwinds too (no frame is
// abandoned), and finally rethrows the first exception on the caller's stack.

namespace {
// The fibers switch with Boost.Context's fcontext. Not ucontext: glibc's swapcontext saves and
// restores the signal mask with a system call at every switch (a turn, two switches, cost about
// 1 us here), which made `--interleave-quantum 100` 2.4x slower than whole-iteration turns on
// tmm n = 256; a jump is a few instructions. Its low-level functions, not boost::context::fiber:
// every switch must be announced to AddressSanitizer, and fiber's constructor switches stacks
// before our code runs.
namespace bctx = boost::context::detail;

// AddressSanitizer must be told about stack switches, or it reports false positives.
#if defined(__SANITIZE_ADDRESS__)
void asan_start(void** save, const void* bottom, std::size_t size) {
  __sanitizer_start_switch_fiber(save, bottom, size);
}
void asan_finish(void* save, const void** bottom, std::size_t* size) {
  __sanitizer_finish_switch_fiber(save, bottom, size);
}
#else
void asan_start(void**, const void*, std::size_t) {}
void asan_finish(void*, const void**, std::size_t*) {}
#endif

struct Cancelled {};  // unwinds a fiber of a failed loop; never leaves the fiber
constexpr std::size_t kFiberStackBytes = 512 * 1024;
}  // namespace

struct SimBackend::Fibers {
  struct Fiber {
    bctx::fcontext_t ctx = nullptr;  // where the fiber resumes
    std::unique_ptr<char[]> stack;
    std::size_t lo = 0, hi = 0;  // the thread's iterations
    bool started = false, done = false;
    void* asan_fake = nullptr;
  };
  bctx::fcontext_t scheduler = nullptr;  // where the running fiber's next switch goes
  const void* sched_bottom = nullptr;    // the scheduler's stack, for AddressSanitizer
  std::size_t sched_size = 0;
  void* sched_fake = nullptr;
  std::vector<Fiber> fibers;
  SimBackend* be = nullptr;
  void* fn = nullptr;
  Body body = nullptr;
  int current = 0;
  bool cancelled = false;
  std::exception_ptr error;

  [[noreturn]] static void entry(bctx::transfer_t from_scheduler);  // data: the Fibers
};

void SimBackend::Fibers::entry(bctx::transfer_t from_scheduler) {
  auto* self = static_cast<Fibers*>(from_scheduler.data);
  self->scheduler = from_scheduler.fctx;
  asan_finish(nullptr, &self->sched_bottom, &self->sched_size);
  Fiber& f = self->fibers[static_cast<std::size_t>(self->current)];
  try {
    for (std::size_t i = f.lo; i < f.hi; ++i) self->body(self->fn, i);
  } catch (const Cancelled&) {
  } catch (...) {
    if (!self->error) self->error = std::current_exception();
  }
  f.done = true;
  asan_start(nullptr, self->sched_bottom, self->sched_size);  // this stack is finished
  bctx::jump_fcontext(self->scheduler, nullptr);              // a finished fiber is never resumed
  std::abort();  // returning from a context's function would end the process
}

void SimBackend::yield_turn() {
  Fibers& fs = *fibers_;
  Fibers::Fiber& f = fs.fibers[static_cast<std::size_t>(fs.current)];
  asan_start(&f.asan_fake, fs.sched_bottom, fs.sched_size);
  fs.scheduler = bctx::jump_fcontext(fs.scheduler, nullptr).fctx;
  asan_finish(f.asan_fake, &fs.sched_bottom, &fs.sched_size);
  if (fs.cancelled) throw Cancelled{};
}

void SimBackend::run_interleaved(std::size_t begin, std::size_t end, void* fn, Body body) {
  if (!fibers_) fibers_ = std::make_shared<Fibers>();
  Fibers& fs = *fibers_;
  const std::size_t n = end - begin, t_count = static_cast<std::size_t>(threads_);
  const std::size_t q = n / t_count, r = n % t_count;
  fs.fibers.resize(t_count);
  fs.be = this;
  fs.fn = fn;
  fs.body = body;
  fs.cancelled = false;
  fs.error = nullptr;
  for (std::size_t t = 0; t < t_count; ++t) {
    Fibers::Fiber& f = fs.fibers[t];
    f.lo = begin + t * q + std::min(t, r);
    f.hi = f.lo + q + (t < r ? 1 : 0);
    f.started = false;
    f.done = f.lo == f.hi;
    if (f.done) continue;
    // Not value-initialised: zeroing 512 KiB per fiber touched every page of every stack, and
    // a test that builds thousands of short-lived interleaved backends spent most of its time
    // in the kernel's page faults (docs/simulator.md, "Speed").
    if (!f.stack) f.stack = std::make_unique_for_overwrite<char[]>(kFiberStackBytes);
    // The stack grows down from its end; the first jump passes the Fibers to entry().
    f.ctx = bctx::make_fcontext(f.stack.get() + kFiberStackBytes, kFiberStackBytes, &Fibers::entry);
  }
  // Restores sequential state however the loop ends.
  struct Restore {
    SimBackend& b;
    ~Restore() {
      b.in_parallel_ = false;
      b.turn_end_ = kDisarmed;
      b.rearm_switch();
      b.set_thread(0);
    }
  } restore{*this};
  in_parallel_ = true;
  machine_.fork_clocks(core(), std::min(threads_, cores_));
  // Round-robin turns of quantum_ ops; after a failure, one last turn each to unwind.
  for (bool any = true; any;) {
    any = false;
    for (std::size_t t = 0; t < t_count; ++t) {
      Fibers::Fiber& f = fs.fibers[t];
      if (f.done || (fs.cancelled && !f.started)) continue;
      any = true;
      fs.current = static_cast<int>(t);
      set_thread(static_cast<int>(t));
      // A cancelled fiber unwinds in one turn: no switch while its destructors run.
      turn_end_ = fs.cancelled ? kDisarmed : ops_ + quantum_;
      rearm_switch();
      f.started = true;
      asan_start(&fs.sched_fake, f.stack.get(), kFiberStackBytes);
      f.ctx = bctx::jump_fcontext(f.ctx, &fs).fctx;
      asan_finish(fs.sched_fake, nullptr, nullptr);
      if (fs.error) fs.cancelled = true;
    }
  }
  if (fs.error) std::rethrow_exception(fs.error);
  machine_.join_clocks();  // the implicit barrier at the end of an OpenMP loop
  if (on_loop_end_) on_loop_end_();
}

void SimBackend::apply_crash_image() {
  if (oracle_) oracle_->reset();  // the image is all memory holds now: nothing is pending
  machine_.image().restore_to_live();
  machine_.image().forget_unfenced();
  machine_.power_fail();
  disarm_crash();
  crashed_ = false;
  if (helper_) helper_abandon(false);  // memory is the image now: queued copies are lost
}

}  // namespace pmlab::sim
