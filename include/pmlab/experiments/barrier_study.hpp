// Seed 004's evaluation: the BEP micro-benchmarks under LB, LB+IDT, LB+PF and LB++ (Fig. 11,
// Fig. 12, §7 flush kind), simulated on the paper's machine (preset micro15).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pmlab::experiments {

struct BarrierStudyOptions {
  int threads = 16;              // threads = cores of micro15 (the paper: 32, one per core)
  std::uint64_t ops = 100;       // transactions per thread
  std::uint64_t entries = 1024;  // --n of every benchmark (512 B entries)
  std::uint64_t seed = 1;
  // Critical sections take time (--timed-locks, docs/bep.md "Locks that take time"): on for
  // the study, so that threads under one lock serialise under every mode alike. The simulator's
  // own default stays off.
  bool timed_locks = true;
};

// The benchmarks of seed 004 Table 2 and the barrier modes of Fig. 11, in report order.
[[nodiscard]] const std::vector<std::string>& bep_benchmarks();
[[nodiscard]] const std::vector<std::string>& hardware_barriers();

// One benchmark under every mode of hardware_barriers(), plus LB++ with invalidating epoch
// flushes (§7), software epoch persistency (sw: clwb + sfence per barrier) and no persistency
// (scheme base) for context. Deterministic: one simulation per cell, no repetitions needed.
// JSON: {bench, threads, ops, entries, transactions, rows: [{config, barrier, scheme,
// invalidating, cycles, tx_per_kcycle, vs_lb, nvm_writes, epochs?: {...EpochStats}}]}.
[[nodiscard]] nlohmann::json barrier_study_bench(const std::string& bench,
                                                 const BarrierStudyOptions& o);

// Buffered strict persistency in bulk mode (seed 004 §7.2, Figs. 13-14) on one benchmark's
// base scheme (no program barriers: the hardware cuts each core's stores into epochs of N):
// no persistency, LB with 300 / 1K / 10K-store epochs, LB+IDT / LB++ / LB++ without the log at
// 10K, and naive write-through. Deterministic.
// JSON: {bench, kind: "bsp", threads, ops, entries, bsp_rows: [{config, cycles, vs_np, stores,
// nvm_writes, epochs?: {...}}]}.
[[nodiscard]] nlohmann::json bsp_study_bench(const std::string& bench,
                                             const BarrierStudyOptions& o);
// Geometric means of vs_np per BSP config over the benchmarks: [{config, geomean_vs_np,
// benches}].
[[nodiscard]] nlohmann::json bsp_study_summary(const nlohmann::json& benches);

// Geometric means over the benchmarks of a study's rows (vs_lb and conflict %), per config.
[[nodiscard]] nlohmann::json barrier_study_summary(const nlohmann::json& benches);

}  // namespace pmlab::experiments

namespace pmlab::experiments {

// The report's "Persist barriers" section from results["barriers"] (one entry per benchmark),
// the paper's averages and the acceptance bands of issue 18 beside each measured geomean.
[[nodiscard]] std::string barrier_section(const nlohmann::json& benches);

}  // namespace pmlab::experiments
