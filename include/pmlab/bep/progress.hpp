// Per-thread progress of the BEP benchmarks: durable done counters and the resumable op loop.
//
// A benchmark run is `threads × ops` transactions; op j of thread t is parallel_for iteration
// t·ops + j, so OpenMP's static schedule and the simulator's both give thread t its own ops in
// order (one iteration = one transaction, spec D9). After a crash each thread resumes at its own
// durable count: the schemes' recover returns 0 and run skips the ops a thread had finished. An
// op interrupted half-way is replayed, so every op is written to be idempotent on a state where
// it may already have (partly) happened: see each benchmark's header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/bep/epoch_tracked.hpp"

namespace pmlab::bep {

// One thread's count of finished ops, on its own line (written by that thread only).
struct alignas(64) DoneCounter {
  std::uint64_t done;
  std::uint64_t reserved[7];
};
static_assert(sizeof(DoneCounter) == 64);

// Runs op(t, j) for every thread t < threads and op j in [done_of(t), ops). done_of is read
// once, before the loop (the durable progress at the resume point).
template <EpochBackend B, class DoneOf, class Op>
void run_thread_ops(B& b, std::size_t threads, std::size_t ops, DoneOf&& done_of, Op&& op) {
  std::vector<std::uint64_t> start(threads);
  for (std::size_t t = 0; t < threads; ++t) start[t] = done_of(t);
  b.parallel_for(0, threads * ops, [&](std::size_t i) {
    const std::size_t t = i / ops, j = i % ops;
    if (j >= start[t]) op(t, j);
  });
}

// Records that thread t finished op j, in an epoch of its own: the op's last barrier has made
// its effects durable, so the count never runs ahead of them.
template <EpochBackend B>
void mark_done(B& b, DoneCounter& c, std::uint64_t j) {
  b.store(&c.done, j + 1);
  b.barrier();
}

}  // namespace pmlab::bep
