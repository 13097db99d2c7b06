// Usage comforts: "did you mean" for mistyped verbs, options and kernels, and a warning when a
// native run asks for more threads than the host has cores.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace pmlab::cli {

// For argv[1] that is neither a verb nor one of the app's own options: "unknown command 'smi';
// did you mean sim?" (or "unknown option ..."). "" when argv[1] is fine or absent; CLI11 then
// parses as usual.
[[nodiscard]] std::string unknown_verb_message(const CLI::App& app, int argc, char** argv);

// After CLI11 refused leftover arguments (CLI::ExtrasError): "unknown option --shceme; did you
// mean --scheme?" for the first unknown option of the verb parsed, naming the verbs that take it
// when another verb does. "" when only stray positionals were left (CLI11's message lists them).
[[nodiscard]] std::string unknown_option_message(const CLI::App& app);

// Refuses an unknown kernel name as soon as `verb`'s "kernel" positional is parsed, naming the
// kernel probably meant (pmlab::Error kInvalidArgument, exit 2).
void check_kernel_name(CLI::App& verb);

// The CPUs this process may run on (its affinity mask, which a container's cpuset narrows).
[[nodiscard]] unsigned host_cores();

// One warning line on stderr when `threads` native threads outnumber host_cores(): they will
// time-share, which slows a run and skews a measurement. `what` says where the count came from
// ("--threads 1000").
void warn_if_threads_exceed_cores(std::uint64_t threads, const std::string& what);

}  // namespace pmlab::cli
