// The backend of a crash trial's native restart: memory as is, no persistence, serial loops, the
// simulator's op count and a record of the regions committed (what SimBackend::region_end does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"

namespace pmlab::run {

// What the simulator's backend would count as ops, so that a recovery run here reports the
// same length (SimBackend::flush, fence, persist): flushes and fences count when the run has a
// flush instruction (not --flush none) and the mutation does not drop them.
struct TailCounting {
  bool flush_instruction = true;
  mem::Mutation mutation = mem::Mutation::kNone;
};

// A crash trial's restart after its last crash matters only by its result, the length of its
// recovery in ops, and the regions it commits (the campaign counts regions redone). The
// simulator runs it op by op even with its model stopped; this backend runs the same scheme code
// at native speed and counts the same ops. It is not NativeBackend: that one picks native-only
// fast paths (non-temporal copies, a helper thread) and OpenMP threads, which a forked child
// must not start; here every block takes the generic path the simulator takes, and
// parallel_for runs its indices in order, as SimBackend does without an interleaving quantum.
// threads() reports the run's logical threads, as SimBackend does.
class TailBackend {
 public:
  using Counting = TailCounting;
  // Nothing here sees the order of accesses (mem::AccessOrderUnobserved): only the result, the
  // op count and the regions committed, in order, leave a trial's native restart.
  static constexpr bool kAccessOrderUnobserved = true;
  explicit TailBackend(int threads, Counting c = {})
      : threads_(threads < 1 ? 1 : threads), counting_(c) {}

  // Typed accesses through a packed wrapper of T: like SimBackend's memcpy they allow a
  // misaligned address, but unlike memcpy (which may touch any object) a double's load or store
  // cannot alias ops_, so the compiler keeps the op count in a register through a kernel's loop
  // instead of storing it to memory at every access (a quarter of a crash trial's instructions
  // went to tmm's loop here, docs/crash-campaigns.md, "The native restart's op count in a register").
  template <class T>
  [[nodiscard]] T load(const T* p) {
    ++ops_;
    return reinterpret_cast<const Unaligned<T>*>(p)->value;
  }
  template <class T>
  void store(T* p, T v) {
    ++ops_;
    reinterpret_cast<Unaligned<T>*>(p)->value = v;
  }
  void flush(const void*) {
    if (counting_.flush_instruction && counting_.mutation != mem::Mutation::kNoFlush) ++ops_;
  }
  void fence() {
    if (counting_.flush_instruction && counting_.mutation != mem::Mutation::kNoFence) ++ops_;
  }
  void persist(const void* p, std::size_t len) {
    if (!counting_.flush_instruction || len == 0) return;
    if (counting_.mutation != mem::Mutation::kNoFlush) {
      const auto a = reinterpret_cast<std::uintptr_t>(p);
      ops_ += (a + len - 1) / kLine - a / kLine + 1;  // one op per line, as SimBackend
    }
    fence();
  }
  // Seed 002's helper core (scheme/async_flush.hpp): the flush is done in place, as on a test
  // backend, and noted: the simulator paces the helper's ops by its clocks, so a recovery that
  // asks for one may count differently there (measuring runs then fall back to the simulator).
  void helper_flush_async(const void* p, std::size_t len) {
    async_requested_ = true;
    persist(p, len);
  }
  // Its copy (cp-nt-async) likewise: the generic durable copy, in place.
  void helper_copy_async(double* dst, const double* src, std::size_t count) {
    async_requested_ = true;
    scheme::copy_durable(*this, dst, src, count);
  }
  void helper_barrier() const {}
  [[nodiscard]] bool async_requested() const { return async_requested_; }
  void region_begin(mem::RegionId) const {}
  void region_end(mem::RegionId r) { regions_.push_back(r); }
  template <class Fn>
  void parallel_for(std::size_t begin, std::size_t end, Fn&& fn) const {
    for (std::size_t i = begin; i < end; ++i) fn(i);
  }
  [[nodiscard]] int threads() const { return threads_; }
  // The negative control the run carries (mem::mutated): a recovery run here must break as it
  // does in the simulator.
  [[nodiscard]] mem::Mutation mutation() const { return counting_.mutation; }
  [[nodiscard]] std::uint64_t ops() const { return ops_; }
  [[nodiscard]] std::vector<mem::RegionId> take_regions() { return std::move(regions_); }

 private:
  // T at alignment 1, in a packed struct: GCC drops aligned(1) on an alias template and clang
  // on any dependent typedef.
  template <class T>
  struct [[gnu::packed]] Unaligned {
    T value;
  };
  static constexpr std::uintptr_t kLine = 64;
  int threads_;
  Counting counting_;
  std::uint64_t ops_ = 0;
  bool async_requested_ = false;
  std::vector<mem::RegionId> regions_;
};

static_assert(mem::Backend<TailBackend>);

// What SimKernel::restart_native does: the scheme's recovery first (else only the run from
// `first`), then the run unless `run` is false, counting ops as `counting` says.
struct NativeRestartOptions {
  bool recover = true;
  bool run = true;  // false: the recovery alone (a measuring run)
  std::size_t first = 0;
  TailBackend::Counting counting;
};
// What it reports: where the run resumed, the recovery's ops (0 without one), and every region
// committed by the recovery and the run, in order.
struct NativeRestart {
  std::size_t resume = 0;
  std::uint64_t recovery_ops = 0;
  bool async_requested = false;  // the recovery asked seed 002's helper core for a flush
  std::vector<mem::RegionId> regions;
};

}  // namespace pmlab::run
