// In-place versioning (seed 002 §4.1) as a building block: two versions of one target array,
// roles by iteration parity, a persisted commit word, O(1) recovery (tmm, cg, jacobi use it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/async_flush.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/versions.hpp"

namespace pmlab::scheme {

// The name of in-place versioning's header array (the commit word); each kernel names the
// second version of its own target array.
inline constexpr std::string_view kIpvHeaderArray = "ipv_header";

enum class IpvFlush {
  kSync,   // ipv-sync: the working version is flushed in place at the end of the iteration
  kAsync,  // ipv: flush_async to the helper thread, flush_barrier before the next commit
  // ipv-nf: no flush, no fence, no helper (the commit word is stored, not persisted): the cost
  // of versioning alone (seed 002 Fig. 12's "IPV without flush and helper", Fig. 14's miss
  // rates). Not crash-safe: a measurement row (Scheme::crash_safe = false).
  kNone,
};

// How the kernel updates the target in one iteration (seed 002 Table 2).
enum class IpvUpdates {
  // Basic or post-update rule: every element is written once per iteration, reading the
  // consistent version before its write and (post-update) the working version after it. The
  // working version needs no copy: the iteration overwrites all of it.
  kUniform,
  // Some elements are written by some loops and not others (NAS MG's interior-then-whole): the
  // working version would keep stale elements, so it is first filled from the consistent one by
  // a non-temporal copy (the paper's fallback) and the iteration then runs in place on it.
  kNonUniform,
};

// The target: `elements` doubles, version 0 being the kernel's own array (where the result must
// end), version 1 a scheme array of the same size.
struct InPlaceVersions {
  std::array<double*, 2> v{};
  std::size_t elements = 0;
  IpvHeader* header = nullptr;
  std::size_t iterations = 0;
  IpvUpdates updates = IpvUpdates::kUniform;

  [[nodiscard]] static constexpr std::size_t header_bytes() { return sizeof(IpvHeader); }
};

namespace detail {
template <mem::Backend B>
void ipv_commit(B& be, const InPlaceVersions& st, std::size_t done, IpvFlush how) {
  be.store(&st.header->done, static_cast<std::uint64_t>(done));
  if (how != IpvFlush::kNone) be.persist(&st.header->done, sizeof(std::uint64_t));
}

// Version 1 into version 0 at the end of an odd iteration count: durable (NT copy) unless the
// row flushes nothing, where plain loads and stores keep the measurement free of flushes.
template <mem::Backend B>
void ipv_final_copy(B& be, const InPlaceVersions& st, IpvFlush how) {
  if (how != IpvFlush::kNone) {
    copy_durable(be, st.v[0], st.v[1], st.elements);
    return;
  }
  for (std::size_t i = 0; i < st.elements; ++i) be.store(st.v[0] + i, be.load(st.v[1] + i));
}
}  // namespace detail

// Iteration t reads version t % 2 (the target after t iterations) and writes version
// (t + 1) % 2, which held the target after t - 1: so before its first write, the flush of
// version t % 2 must be complete (barrier) and `done = t` durable (commit, after the barrier).
//
//   step(t, in, out, before_first_write)
//
// runs iteration t; it must call before_first_write() once, before it first stores into `out`.
// Work before that call (cg's SpMV, jacobi's residual) overlaps the helper's flush of the last
// iteration: the paper's overlap. At the end the result is copied into version 0 if it sits in
// version 1, then `complete` is set.
template <mem::Backend B, class Step>
void run_in_place_versions(B& be, const InPlaceVersions& st, IpvFlush how, std::size_t first,
                           Step&& step) {
  const std::size_t n_it = st.iterations, m = st.elements;
  // Negative controls (`pmlab crash --mutate ipv-...`); constant false natively.
  const bool skip_flush = mem::mutated(be, mem::Mutation::kIpvSkipFlush);
  const bool barrier_late = mem::mutated(be, mem::Mutation::kIpvBarrierAfterWrite);
  const bool commit_early = mem::mutated(be, mem::Mutation::kIpvCommitBeforeFlush);
  // flush_init: starts the helper natively, only for the asynchronous variant (ipv-sync flushes
  // in place and must not have a thread competing for the other core).
  std::optional<AsyncFlusher<B>> flusher;
  if (how == IpvFlush::kAsync) flusher.emplace(be);
  const auto flush_working = [&](double* out) {
    // skip-flush: version 1, the scheme's own array, is never flushed. (Leaving out a part of
    // every version instead, e.g. tmm's last panel, is masked by the caches: with two threads
    // and an odd tile count the last panel is not the last one written, and a small LLC writes
    // it back before any commit a crash could follow.)
    if (skip_flush && out == st.v[1]) return;
    if (how == IpvFlush::kNone) return;
    if (flusher)
      flusher->flush_async({out, m * sizeof(double)});
    else
      be.persist(out, m * sizeof(double));
  };
  // Seed 002 §3's DRAM cache (simulator, --dram-cache on; a no-op elsewhere): both versions are
  // placed, the kernel's output first (the run's session places it too) and the second version,
  // the row's own write-intensive object. A commit names version t % 2, so its lines still in
  // DRAM go to NVM first (on the main thread, after the helper's barrier).
  const std::size_t bytes = m * sizeof(double);
  for (double* v : st.v) mem::dram_cache_place(be, v, bytes);
  const auto barrier_and_commit = [&](std::size_t t) {
    if (flusher) flusher->flush_barrier();
    if (how != IpvFlush::kNone) mem::dram_cache_flush(be, st.v[t % 2], bytes);
    if (!commit_early) detail::ipv_commit(be, st, t, how);
  };
  for (std::size_t t = first; t < n_it; ++t) {
    const double* in = st.v[t % 2];
    double* out = st.v[(t + 1) % 2];
    if (st.updates == IpvUpdates::kNonUniform) {
      if (!barrier_late) barrier_and_commit(t);
      if (how == IpvFlush::kNone) {  // the fallback's copy without its flushes
        for (std::size_t i = 0; i < m; ++i) be.store(out + i, be.load(in + i));
      } else {
        const CopyJob job{out, in, m};
        copy_jobs_durable(be, std::span<const CopyJob>(&job, 1));  // the NT-copy fallback
      }
      if (barrier_late) barrier_and_commit(t);
      step(t, static_cast<const double*>(out), out, [] {});
    } else {
      // barrier_late: the barrier and commit only once the step has written into `out`, i.e.
      // into the version the last commit still names.
      step(t, in, out, [&] {
        if (!barrier_late) barrier_and_commit(t);
      });
      if (barrier_late) barrier_and_commit(t);
    }
    if (commit_early) detail::ipv_commit(be, st, t + 1, how);
    flush_working(out);  // flush_async: version (t + 1) % 2 is no longer updated in t
    mem::outer_step_done(be);
  }
  if (flusher) flusher->flush_barrier();
  if (how != IpvFlush::kNone) mem::dram_cache_flush(be, st.v[n_it % 2], bytes);
  detail::ipv_commit(be, st, n_it, how);
  if (n_it % 2 == 1) {
    detail::ipv_final_copy(be, st, how);
    if (how != IpvFlush::kNone) mem::dram_cache_flush(be, st.v[0], bytes);
  }
  be.store(&st.header->complete, std::uint64_t{1});
  if (how != IpvFlush::kNone) be.persist(&st.header->complete, sizeof(std::uint64_t));
}

// O(1): version done % 2 holds the target after `done` iterations; the run resumes there,
// recomputing at most the one iteration that was in flight. Nothing is written, so a crash
// inside recovery is harmless.
template <mem::Backend B>
[[nodiscard]] std::size_t recover_in_place_versions(B& be, const InPlaceVersions& st) {
  if (be.load(&st.header->complete) != 0) return st.iterations;
  return static_cast<std::size_t>(be.load(&st.header->done));
}

}  // namespace pmlab::scheme
