// pmlab's command-line entry point: parses the verb, maps errors to documented exit codes.
#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "commands.hpp"
#include "help_format.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/scheme/copy_mode.hpp"
#include "pmlab/sim/crash_image.hpp"
#include "strict_numbers.hpp"
#include "usage_comforts.hpp"

int main(int argc, char** argv) {
  using namespace pmlab::cli;
  CLI::App app{
      "pmlab: failure-safe loop kernels on persistent memory (Lazy Persistency and its rivals), "
      "natively and in a persistence simulator.\n\n"
      "Exit codes: 0 ok, 1 verification failed, 2 bad usage or parameters, 3 pool "
      "corrupt/mismatched/busy or I/O error, 4 internal error, 5 (crash) a negative control was "
      "not detected, 130 interrupted (Ctrl-C or SIGTERM; temporary files removed)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", PMLAB_VERSION);
  // Before the verbs are added: each copies its parent's formatter (and footer) when added.
  app.formatter(make_help_formatter());
  int exit_code = kExitOk;
  add_run_command(app, exit_code);
  add_sim_command(app, exit_code);
  add_bench_command(app, exit_code);
  add_crash_command(app, exit_code);
  add_eval_command(app, exit_code);
  add_info_command(app, exit_code);
  add_pool_command(app, exit_code);
  // After them, so that it stays pmlab's own.
  app.footer("`pmlab VERB --help` describes a verb's options; `man pmlab` every verb's.");
  // Seed 002's checkpoint rows (cp-clflush, cp-par-clflush, cp-nt): a per-process interval.
  for (const char* verb : {"run", "sim", "bench", "crash"})
    app.get_subcommand(verb)
        ->add_option_function<std::size_t>(
            "--cp-every", [](std::size_t n) { pmlab::scheme::set_checkpoint_interval(n); },
            "Outer iterations between checkpoints of cp-clflush, cp-par-clflush and cp-nt "
            "(default 1, the paper's cadence; cp keeps the kernel's own interval)")
        ->check(CLI::PositiveNumber);
  // The verbs that take a kernel: a mistyped name is refused at once with the one probably
  // meant, and their help ends with every kernel's schemes (what --scheme accepts).
  for (const char* verb : {"run", "sim", "bench", "crash"}) {
    CLI::App* sub = app.get_subcommand(verb);
    check_kernel_name(*sub);
    sub->footer(schemes_by_kernel(std::string_view(verb) == "crash"));
  }
  harden_unsigned_options(app);
  if (const std::string m = unknown_verb_message(app, argc, argv); !m.empty()) {
    fmt::print(stderr, "pmlab: error: {}\nRun with --help for more information.\n", m);
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // "The following arguments were not expected: lp --shceme": name the option meant.
    const std::string m = unknown_option_message(app);
    if (m.empty()) return app.exit(e) == 0 ? kExitOk : kExitUsage;
    fmt::print(stderr, "pmlab: error: {}\nRun with --help for more information.\n", m);
    return kExitUsage;
  } catch (const CLI::ConversionError& e) {
    // CLI11's "Could not convert: --threads = 99999999999" names no reason: say which.
    fmt::print(stderr, "pmlab: error: {}\nRun with --help for more information.\n",
               explain_parse_error(e));
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  } catch (const pmlab::sim::OrderViolation& e) {
    // --check-order: the simulated machine broke epoch order, a verification failure.
    fmt::print(stderr, "pmlab: error: {}\n", e.what());
    return kExitVerifyFailed;
  } catch (const pmlab::Error& e) {
    fmt::print(stderr, "pmlab: error: {}\n", e.what());
    switch (e.code()) {
      case pmlab::ErrorCode::kInvalidArgument:
      case pmlab::ErrorCode::kUnsupported:
        return kExitUsage;
      case pmlab::ErrorCode::kInterrupted:
        return kExitInterrupted;
      default:
        return kExitPool;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "pmlab: internal error: {}\n", e.what());
    return kExitInternal;
  }
  return exit_code;
}
