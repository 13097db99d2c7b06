// Simulated-machine options shared by `pmlab sim` and `pmlab crash`: a preset (--config) plus
// overrides, including the periodic-flush hardware.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/params.hpp"

namespace pmlab::cli {

// The options as typed, so sizes may carry K/M suffixes and replay commands can repeat them.
struct MachineArgs {
  std::string config = "lp-isca18";
  std::optional<int> cores;
  std::optional<std::string> l1_size, l2_size, llc_size, d1, ll;
  std::optional<std::uint32_t> l1_ways, l2_ways, llc_ways, wq_entries, write_units;
  std::optional<std::string> replacement, llc_inclusion;
  std::optional<double> nvm_read_ns, nvm_write_ns, freq_ghz;
  std::optional<std::string> periodic_flush;  // CYCLES, or P% of the run
  // NVM row-buffer model (sim/row_buffer.hpp); unset = the preset's.
  std::optional<std::string> row_buffer, row_bytes;
  std::optional<std::uint32_t> ranks, banks, rq_entries, min_writes_per_drain;
  std::optional<double> wq_high, wq_low;
  std::optional<std::uint32_t> wc_buffers;  // set: non-temporal stores modelled (0 = off)
  // Seed 002's helper core: WBINVD rule and price (SimParams::whole_cache_flush, ...).
  std::optional<std::string> whole_cache_flush;
  std::optional<std::uint64_t> wbinvd_cycles;
  // Core timing (SimParams::core) and thread interleaving (SimParams::interleave_quantum).
  std::optional<std::string> core_model;
  std::optional<std::string> write_queue;  // per-core or shared (SimParams::nvm.write_queue)
  std::optional<std::uint32_t> issue_width, rob_entries, mshrs, insts_per_access;
  std::optional<std::string> flush_after_fill;  // on or off (SimParams::core.flush_after_fill)
  std::optional<std::uint64_t> interleave_quantum;
  // Thesis Ch. 5: the flush round trip (SimParams::flush_mc_hop) and PreFlush.
  std::optional<std::uint64_t> flush_mc_hop;
  std::optional<std::string> preflush, preflush_mutant, preflush_loop, preflush_design,
      preflush_marks;
  std::optional<std::uint32_t> preflush_signatures, preflush_flushed_tags, preflush_sample,
      preflush_dir_entries;
  // Seed 004: what a persist barrier does (SimParams::persistency).
  std::optional<std::string> barrier;
  bool check_order = false;  // the persist-order oracle (SimParams::persistency.check_order)
  bool dump_config = false;  // print the effective machine as a machine file and stop
  // BSP bulk mode (persistency.bsp_epoch_stores, bsp_log, bsp_write_through).
  std::optional<std::uint64_t> bsp_epoch;
  std::optional<std::string> bsp_log;
  bool bsp_write_through = false;
  bool timed_locks = false;  // --timed-locks
};

// --config: a preset name, or a machine file (a path holding '/' or ending in .json).
[[nodiscard]] bool is_machine_file(const std::string& config);

// Adds --config and the "machine overrides" group to `cmd`. Values already set in `a` are the
// command's defaults (shown in --help).
void add_machine_options(CLI::App& cmd, MachineArgs& a);

// The preset with every set override applied, validated; throws pmlab::Error
// (kInvalidArgument) naming the flag. A --periodic-flush percentage is not applied here (it
// needs the run: apply_periodic_flush).
[[nodiscard]] sim::SimParams build_machine(const MachineArgs& a);

// --dump-config: prints `p` as a machine file (sim/machine_file.hpp) on stdout; the caller then
// exits 0 without running anything.
void dump_machine(const sim::SimParams& p);

// The flags that rebuild `a`'s machine, without --periodic-flush (for replay commands).
[[nodiscard]] std::string machine_flags(const MachineArgs& a);

// --periodic-flush: "0" (off), a cycle count, or "P%" of the run's simulated cycles.
struct PeriodicFlushArg {
  std::uint64_t cycles = 0;
  std::optional<double> percent;
};
[[nodiscard]] PeriodicFlushArg parse_periodic_flush(const std::string& text);

// Sets spec.machine.periodic_flush_cycles from a.periodic_flush. A percentage becomes cycles by
// simulating the run once without cleaning (deterministic, so repeatable); the result is at
// least 1. Returns the parsed argument (cycles resolved).
PeriodicFlushArg apply_periodic_flush(const MachineArgs& a, run::SimRunSpec& spec);

// "65536", "64K", "64KiB", "8M", "1G": every suffix is a power of 1024.
[[nodiscard]] std::uint64_t parse_size(const std::string& flag, const std::string& text);

}  // namespace pmlab::cli
