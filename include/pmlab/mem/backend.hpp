// The Backend concept: the only way kernels touch persistent data (native or simulated).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace pmlab::mem {

// Identifies an LP/eager region to backends that care (the simulator marks commit points).
struct RegionId {
  std::uint32_t outer = 0;  // e.g. kk index
  std::uint32_t inner = 0;  // e.g. ii index
};

// What a kernel may do with persistent memory. `flush` writes back the line holding an address
// with the instruction the backend was built for (clwb/clflushopt/clflush, or nothing when
// persistence is off); `fence` is sfence; `persist` = flush every line of a range, then fence.
// `parallel_for(begin, end, fn)` calls fn(i) for every i, distributing iterations over the
// backend's threads (OpenMP natively, simulated cores in the simulator), static schedule.
template <class B>
concept Backend = requires(B& b, double* pd, const double* cpd, std::uint64_t* pu,
                           const std::uint64_t* cpu, std::size_t n, RegionId r) {
  { b.load(cpd) } -> std::same_as<double>;
  { b.load(cpu) } -> std::same_as<std::uint64_t>;
  b.store(pd, 1.0);
  b.store(pu, std::uint64_t{1});
  b.flush(static_cast<const void*>(cpd));
  b.fence();
  b.persist(static_cast<const void*>(cpd), n);
  b.region_begin(r);
  b.region_end(r);
  b.parallel_for(n, n, [](std::size_t) {});
  { b.threads() } -> std::convertible_to<int>;
};

// A backend whose order of accesses nothing observes: no cache model, no persistence, nothing
// kept per address (run::TailBackend, a crash trial's native restart, declares
// kAccessOrderUnobserved). A kernel may then compute independent elements interleaved (tmm's
// tile_step takes four columns at once), each element by the same operations in the same order,
// so with the same bits and the same op count.
template <class B>
concept AccessOrderUnobserved = requires {
  requires B::kAccessOrderUnobserved;
};

// A run's outer loop reports each finished outer unit (what `first` and resume points count:
// an iteration, or a block where a kernel's blocks are its units) through this call, once per
// unit and never per access, from any thread. The native backend counts it when `pmlab run`
// draws its bar; the simulator's keeps the run's outer position as a plain counter (no simulated
// access, so no figure moves; crash campaigns read it); a backend without such a member (the
// tests') compiles the call to nothing.
template <class B>
void outer_step_done(B& be) {
  if constexpr (requires { be.outer_step_done(); }) be.outer_step_done();
}

// Seed 002 §3's DRAM cache in front of NVM, which only the simulator models
// (sim::SimBackend::dram_cache_place / dram_cache_flush, --dram-cache on): a no-op on every
// other backend. place: an object the kernel or the row declares write-intensive; flush: the
// row's persistence point writes the object's DRAM-resident dirty lines to NVM.
template <class B>
void dram_cache_place(B& be, const void* p, std::size_t bytes) {
  if constexpr (requires { be.dram_cache_place(p, bytes); }) be.dram_cache_place(p, bytes);
}
template <class B>
void dram_cache_flush(B& be, const void* p, std::size_t bytes) {
  if constexpr (requires { be.dram_cache_flush(p, bytes); }) be.dram_cache_flush(p, bytes);
}

}  // namespace pmlab::mem
