// A test-only kernel whose threads share lines, for the campaigns that catch the PreFlush NACK and
// epoch-split mutants, which pmlab's own kernels and lock-based benchmarks never exercise.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/entry.hpp"
#include "pmlab/bep/progress.hpp"
#include "pmlab/kernels/checks.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/bep_bench_params.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/scheme/scheme.hpp"

namespace pmlab::handoff {

// n = rounds, threads <= 8. Round r owns, per thread t, a line X_t and a line Z_t, one line L
// shared by all threads (word t is thread t's) and a line P that thread 0 alone writes.
inline constexpr std::size_t kWords = 8;
struct alignas(64) Line {
  std::uint64_t w[kWords];
};

struct Operands {
  Line* data = nullptr;              // rounds × (2·threads + 2) lines: the output
  bep::DoneCounter* done = nullptr;  // "split": thread t's finished rounds
  std::uint64_t* commit = nullptr;   // "master": rounds [0, *commit) are durable
  std::size_t rounds = 0, threads = 1;

  [[nodiscard]] std::size_t stride() const { return 2 * threads + 2; }
  [[nodiscard]] Line& x(std::size_t r, std::size_t t) const { return data[r * stride() + t]; }
  [[nodiscard]] Line& z(std::size_t r, std::size_t t) const {
    return data[r * stride() + threads + t];
  }
  [[nodiscard]] Line& shared(std::size_t r) const { return data[r * stride() + 2 * threads]; }
  [[nodiscard]] Line& own(std::size_t r) const { return data[r * stride() + 2 * threads + 1]; }
  [[nodiscard]] std::size_t lines() const { return rounds * stride(); }
};

[[nodiscard]] constexpr std::uint64_t value(std::size_t r, std::size_t t, std::uint64_t salt) {
  return bep::mix((r << 16) ^ (t << 4) ^ salt) | 1;  // never 0: a lost store is visible
}

// Every store of the master row goes through this one call site, so they share one store PC
// (a PreFlush signature): thread 0's flushes of its own line P train it, and its store to the
// shared line is then PreFlushed.
template <mem::Backend B>
void put(B& be, std::uint64_t* p, std::uint64_t v) {
  be.store(p, v);
}

// "master" (flush-based, for PreFlush): in round r every thread stores its word of L (thread 0
// also its line P), then thread 0 alone flushes L and P, fences, and commits r + 1. Thread 1's
// store lands after thread 0's (PreFlushed) one and before thread 0's flush, so only the
// directory's NACK keeps that flush from being ACKed early with thread 1's word not durable.
// (Thread 0 stores P once: a second store would be an own-store misprediction every round,
// and the confidence it costs stops the PreFlush of L, so this workload does not test the
// own-store check; tmm's campaigns do.)
template <mem::Backend B>
void run_master(B& be, const Operands& op, std::size_t first) {
  for (std::size_t r = first; r < op.rounds; ++r) {
    be.parallel_for(0, op.threads, [&](std::size_t t) {
      if (t == 0) put(be, &op.own(r).w[0], value(r, 0, 7));
      put(be, &op.shared(r).w[t], value(r, t, 5));
    });
    be.persist(&op.shared(r), sizeof(Line));
    be.persist(&op.own(r), sizeof(Line));
    be.store(op.commit, std::uint64_t{r + 1});
    be.persist(op.commit, sizeof(std::uint64_t));
  }
}

// "split" (epoch persistency, for the split rule): op 3r of thread t stores X_t; op 3r + 1 loads
// X of the next thread — still in that thread's ongoing epoch, so each thread depends on the
// other's ongoing epoch (Fig. 5's cycle, which splitting breaks) — and stores Z_t; op 3r + 2 ends
// the epoch and records the round. The loaded value is not used: the order is what is tested.
template <bep::EpochBackend B>
void run_split(B& b, const Operands& op) {
  bep::run_thread_ops(
      b, op.threads, 3 * op.rounds, [&](std::size_t t) { return 3 * b.load(&op.done[t].done); },
      [&](std::size_t t, std::size_t j) {
        const std::size_t r = j / 3;
        switch (j % 3) {
          case 0:
            b.store(&op.x(r, t).w[0], value(r, t, 1));
            return;
          case 1:
            (void)b.load(&op.x(r, (t + 1) % op.threads).w[0]);
            b.store(&op.z(r, t).w[0], value(r, t, 2));
            return;
          default:
            b.barrier();
            b.store(&op.done[t].done, std::uint64_t{r + 1});
            b.barrier();
        }
      });
}

using Ctx = scheme::SchemeContext<Operands>;

inline constexpr auto kSchemes = std::tuple{
    scheme::Scheme{
        .name = "master",
        .run = [](mem::Backend auto& be, const Ctx& c,
                  std::size_t first) { run_master(be, c.op, first); },
        .recover = [](mem::Backend auto& be, const Ctx& c, run::RunReport& r) -> std::size_t {
          r.recovery_action = "resume at the committed round";
          return static_cast<std::size_t>(be.load(c.op.commit));
        },
        .mutants = {mem::Mutation::kNoFlush, mem::Mutation::kNoFence}},
    scheme::Scheme{.name = "split",
                   .run =
                       [](mem::Backend auto& be, const Ctx& c, std::size_t) {
                         bep::with_epochs(be, bep::configured_barrier(be),
                                          [&](auto& et) { run_split(et, c.op); });
                       },
                   .recover = [](mem::Backend auto&, const Ctx&, run::RunReport& r) -> std::size_t {
                     r.recovery_action = "per-thread resume";  // each thread at its done count
                     return 0;
                   },
                   .mutants = {mem::Mutation::kLbNoSplit}},
};

struct Handoff {
  using Operands = handoff::Operands;
  static constexpr std::string_view kName = "handoff";
  static constexpr std::uint64_t kCrashTestMaxN = 64;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static void validate(const pool::RunParams& p) {
    run::require_in_range(kName, "n", p.n, 1, 1024);
    run::require_in_range(kName, "threads", p.threads, 2, kWords);
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    return {{"data", p.n * (2 * p.threads + 2) * sizeof(Line)},
            {"done", p.threads * sizeof(bep::DoneCounter)},
            {"commit", sizeof(Line)}};
  }
  static void init(pool::Pool&) {}  // every array starts zeroed
  static Operands operands(const pool::Pool& pool) {
    const auto& p = pool.params();
    return {pool.array<Line>("data"), pool.array<bep::DoneCounter>("done"),
            pool.array<std::uint64_t>("commit"), p.n, p.threads};
  }
  static run::OutputBytes output(const Operands& op) {
    return {op.data, op.lines() * sizeof(Line)};
  }
  static run::VerifyResult verify(const pool::Pool& pool) {
    const Operands op = operands(pool);
    const bool master = pool.params().scheme == "master";
    run::VerifyResult v;
    const auto check = [&](std::uint64_t got, std::uint64_t want, std::string where) {
      ++v.elements;
      if (got == want) return;
      if (v.mismatches++ == 0) v.first_mismatch = std::move(where);
    };
    for (std::size_t r = 0; r < op.rounds; ++r)
      for (std::size_t t = 0; t < op.threads; ++t) {
        check(op.x(r, t).w[0], master ? 0 : value(r, t, 1), fmt::format("X[{}][{}]", r, t));
        check(op.z(r, t).w[0], master ? 0 : value(r, t, 2), fmt::format("Z[{}][{}]", r, t));
        check(op.shared(r).w[t], master ? value(r, t, 5) : 0, fmt::format("L[{}][{}]", r, t));
        if (t == 0) check(op.own(r).w[0], master ? value(r, 0, 7) : 0, fmt::format("P[{}]", r));
      }
    return v;
  }
  static std::uint64_t base_refs(const pool::RunParams& p) { return 4 * p.n * p.threads; }
};
static_assert(run::ResumableKernel<Handoff>);

}  // namespace pmlab::handoff
