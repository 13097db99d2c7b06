// Thesis Ch. 5's evaluation: PreFlush on vs off for every flushing scheme, in the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pmlab::experiments {

struct PreflushStudyOptions {
  std::uint64_t n = 128;  // --n of every kernel
  std::uint64_t bs = 32;
  int threads = 8;            // = pact17's cores
  std::uint64_t mc_hop = 20;  // --flush-mc-hop: the thesis' flush round trip (pmlab's 20)
  std::uint64_t seed = 1;
};

// The catalog kernels with at least one flushing scheme (the BEP benchmarks' tx is not one:
// their persist barriers are seed 004's study).
[[nodiscard]] std::vector<std::string> preflush_kernels();

// One kernel: every flushing scheme (wal*, ep*, hr*, cp*) simulated on pact17 with PreFlush off,
// on as the thesis describes it, and on with pmlab's line-change loop extension. Deterministic:
// one run per cell. JSON: {kernel, n, bs, threads, mc_hop, rows: [{scheme, variant, cycles_off,
// cycles_on, speedup, fence_stall_off, fence_stall_on, nvm_writes_off, nvm_writes_on,
// preflush_nvm_writes, flushes, issued, correct, mispredicted_store, nacked, coverage, accuracy,
// transparency_violations, storage_bytes_per_core}]}.
[[nodiscard]] nlohmann::json preflush_study_kernel(const std::string& kernel,
                                                   const PreflushStudyOptions& o);

// Sensitivity on tmm (wal-ii, wal-jj): the round trip (--flush-mc-hop), the table sizes
// (Signatures, FlushedTags, directory entries), the design (trace vs optimised).
// JSON: {kernel: "tmm", n, bs, threads, rows: [{scheme, knob, value, variant, ...as above}]}.
[[nodiscard]] nlohmann::json preflush_study_sensitivity(const PreflushStudyOptions& o, bool full);

// The report's "PreFlush" section from results["preflush"] (kernel steps and the sensitivity).
[[nodiscard]] std::string preflush_section(const nlohmann::json& steps);

}  // namespace pmlab::experiments
