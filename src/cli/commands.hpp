// Registration hooks: each CLI verb lives in its own file and adds itself to the app.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace pmlab::cli {

// Documented exit codes (README "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitVerifyFailed = 1;  // --verify found a mismatch / a crash trial failed
inline constexpr int kExitUsage = 2;         // bad flags or impossible parameters
inline constexpr int kExitPool = 3;          // pool corrupt, mismatched, busy, or I/O error
inline constexpr int kExitInternal = 4;      // unexpected internal error
// `crash`: every trial passed but a declared negative control was not detected, so the passes
// cannot rule that bug out (more trials, or other image models, are needed).
inline constexpr int kExitControlMissed = 5;
inline constexpr int kExitInterrupted = 130;  // stopped by Ctrl-C / SIGTERM (128 + SIGINT)

// Each add_* registers a subcommand whose callback does the work and records its exit code.
void add_run_command(CLI::App& app, int& exit_code);
void add_sim_command(CLI::App& app, int& exit_code);    // src/cli/sim_cmd.cpp
void add_bench_command(CLI::App& app, int& exit_code);  // src/cli/bench_cmd.cpp
void add_crash_command(CLI::App& app, int& exit_code);  // src/cli/crash_cmd.cpp
void add_eval_command(CLI::App& app, int& exit_code);   // src/cli/eval_cmd.cpp
void add_info_command(CLI::App& app, int& exit_code);   // src/cli/info_cmd.cpp
void add_pool_command(CLI::App& app, int& exit_code);   // src/cli/pool_cmd.cpp
// `pmlab info --pool POOL [--json]`, also `pmlab pool info` (src/cli/info_cmd.cpp).
int run_info(const std::string& pool, bool json);

}  // namespace pmlab::cli
