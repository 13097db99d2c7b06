// Seed 002's evaluation (Huang, Wu, Li): Table 1, Figs. 6, 12, 13 and 14, simulated first
// (deterministic), natively where cheap, beside the paper's numbers.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pmlab::experiments {

struct Seed002Options {
  bool full = false;  // larger sizes and more native rounds
  std::uint64_t seed = 1;
  std::uint64_t n = 0;  // 0: the mode's sizes (quick 256, full 512, or the next the kernel takes)
  // Checked between native runs (seed002_native): when set, the benchmark stops (kInterrupted).
  const std::atomic<bool>* stop = nullptr;
  // seed002_native's seconds per timed repetition (0: the mode's, quick 0.05, full 0.2).
  double native_rep_seconds = 0;
};

// Table 1: cycles per flushed line by line state (modified, exclusive, shared, invalid) for
// clflush, clflushopt and clwb in the simulator (lp-isca18; deterministic), and natively on this
// machine (ns per line, paired rounds over the states, median and range of each state's ratio
// to modified; a ratio whose range straddles 1 is marked unresolved). JSON: {sim: [{flush,
// state, cycles}], native: {rounds, rows: [...], skipped?}}.
[[nodiscard]] nlohmann::json seed002_flush_states(const Seed002Options& o);

// Fig. 5: clflush of a dirty buffer split over 1, 2, 4, ... threads, time per line. Simulated on
// lp-isca18 (1-16 cores; deterministic) and natively on this machine (the paper's 20 MB, 1 to
// nproc threads, paired rounds: median and range of each count's speedup over 1 thread, a range
// straddling 1 marked unresolved). JSON: {sim: {machine, lines, rows: [{threads,
// cycles_per_line, speedup}]}, native: {flush, mib, rounds, cores, rows: [{threads,
// ns_per_line_median, speedup_median, speedup_min, speedup_max, resolved}]} | {skipped}}.
[[nodiscard]] nlohmann::json seed002_flush_scaling(const Seed002Options& o);

// Figs. 6, 12 and 13 natively on this machine: `pmlab bench` of the cp-* and ipv* rows against
// base (1 main thread: the ipv helper takes the second core), paired and interleaved, each
// ratio with its 95% interval; the figures' gains derived from two ratios with the interval
// both allow (resolved when both rest on the bench's minimum of healthy pairs on a quiet
// machine and the gain's interval excludes 0), and ipv's helper hidden fraction. JSON: {kernel, n,
// threads, bench: <pmlab bench --json>, fig6: {nt_gain_over_clflush, par_gain_over_clflush},
// fig12: {ipv_no_flush_gain_over_cp_nt, async_copy_gain_over_cp_nt}, fig13?: {hidden_fraction,
// busy_ns, exposed_ns, placement} (ipv's helper), fig13_copy?: the same for cp-nt-async's};
// each gain {gain, ci95?, resolved}.
[[nodiscard]] nlohmann::json seed002_native(const std::string& kernel, const Seed002Options& o);

// Table 2 (pmlab): the rule profiler (KernelDriver::profile_ipv) on the first iteration of tmm,
// cg, jacobi, jacobi --mg-like, gauss, lu and cholesky (n = 40): each object's rule (basic,
// post-update, non-uniform), its counts, the rule its ipv rows declare and whether they agree.
// JSON: {table: "ipv-rules", n, rows: [{kernel, object, rule, elements, written,
// read_after_write, writing_loops, declared, matches_declaration}]}.
[[nodiscard]] nlohmann::json seed002_rules(const Seed002Options& o);

// The catalog kernels that have the rows Figs. 6, 12-14 need (an `ipv` row and the cp-*
// variants), in catalog order: tmm, cg and jacobi today, and any kernel that gains such rows.
[[nodiscard]] std::vector<std::string> seed002_kernels();

// Figs. 6, 12, 13 and 14 on one kernel, simulated on lp-isca18 (8 threads, the helper on the
// ninth core, non-temporal stores modelled): one simulation per configuration. JSON: {kernel,
// n, bs, threads, rows: [{config, scheme, flush, whole_cache, cycles, overhead, llc_miss_rate,
// nvm_writes, helper?}], fig6: {...}, fig12: {...}, fig13: {...}, fig14: {...}}.
[[nodiscard]] nlohmann::json seed002_kernel(const std::string& kernel, const Seed002Options& o);

// The report's "Seed 002" section from results["seed002"] (the Table 1 entry and one entry per
// kernel), with the paper's numbers beside each measured one.
[[nodiscard]] std::string seed002_section(const nlohmann::json& entries);

}  // namespace pmlab::experiments
