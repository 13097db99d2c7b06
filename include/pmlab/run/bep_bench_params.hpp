// The parameters every BEP benchmark kernel shares: --n entries, --ops per thread, the barrier.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/kernels/checks.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/pool/params.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::bep {

// The negative controls of the tx scheme (scheme/scheme.hpp Scheme::mutants): its software
// barrier is write-backs + a fence, so dropping either must break its crash campaigns under
// --barrier sw (under lb* nothing flushes: crash_campaign drops them there).
inline constexpr mem::MutationSet kTxSoftwareMutants{mem::Mutation::kNoFlush,
                                                     mem::Mutation::kNoFence};
// Under --barrier lb*, the epoch engine's mutants that a workload's campaign exposes on some
// machine of the controls' ladder (experiments::exposing_ladder): each tx row declares those
// its own campaign catches (docs/crash-campaigns.md, "Each control on the machine that exposes
// it", gives the measurements). lb-no-split is declared by none: a split needs a thread to read
// a line of another thread's ongoing epoch, and every transaction ends its last epoch before it
// releases its lock, so no workload's run ever splits (0 splits in every fault-free run, 0 of
// 40 trials failed on every machine of the ladder); the persist-order oracle catches it in
// random traces (SimOracleProperty.EveryMechanismMutantIsCaught) and in the test kernel
// handoff's campaign (MutantEvidence).
inline constexpr mem::MutationSet kTxMutants =
    kTxSoftwareMutants |
    mem::MutationSet{mem::Mutation::kLbNoIntraFlush, mem::Mutation::kLbNoReplacementOrder,
                     mem::Mutation::kLbPerBankNoArbiter, mem::Mutation::kIdtIgnoreDeps,
                     mem::Mutation::kIdtDepOnlyWaw};

// Transactions per thread when --ops is absent: small, so that the catalog-wide crash and kill
// suites stay cheap; benchmarks pass --ops (docs/bep.md).
inline constexpr std::uint64_t kDefaultOps = 16;
inline constexpr std::uint64_t kMaxOps = 1u << 24;
inline constexpr std::uint64_t kMaxEntries = 1u << 22;  // 2 GiB of 512 B entries

[[nodiscard]] inline std::uint64_t ops_of(const pool::RunParams& p) {
  return p.kernel_param("ops", kDefaultOps);
}

[[nodiscard]] inline std::vector<run::KernelParamSpec> bench_params() {
  return {{.name = "ops",
           .help = fmt::format("transactions per thread (default {})", kDefaultOps),
           .min = 1,
           .max = kMaxOps}};
}

// --n entries and --threads; --bs is unused by the benchmarks and only range-checked.
inline void require_bench_sizes(std::string_view kernel, const pool::RunParams& p) {
  run::require_sizes(kernel, p, kMaxEntries);
}

// Runs fn(tracked) with the backend wrapped for epoch persistency under `mode`.
template <mem::Backend B, class Fn>
void with_epochs(B& b, persist::Barrier mode, Fn&& fn) {
  EpochTracked<B> et(b, mode);
  fn(et);
}

}  // namespace pmlab::bep
