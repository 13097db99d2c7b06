// Simulated-machine options shared by `pmlab sim` and `pmlab crash`: a preset (--config) plus
// overrides, including the periodic-flush hardware.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/machine_params.hpp"
#include "pmlab/sim/params.hpp"

namespace pmlab::cli {

// The options as typed: the preset or file, and every machine flag given, by name, as text
// (sim::MachineSettings), so sizes keep their K/M suffixes and replay commands repeat them.
struct MachineArgs {
  std::string config = "lp-isca18";
  sim::MachineSettings settings;      // a command's defaults, then what the command line gave
  std::optional<std::string> d1, ll;  // --config cachegrind: cachegrind's --D1/--LL geometry
  bool dump_config = false;           // print the effective machine as a machine file and stop
};

// Adds --config and the "machine overrides" group to `cmd`: a flag per declared machine parameter
// (sim/machine_params.hpp), parsed and range-checked by its declaration. Values already in
// `a.settings` are the command's defaults (shown in --help).
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
