// Usage comforts: suggestions for mistyped verbs, options and kernel names (by edit distance,
// pmlab/core/suggest.hpp), and the warning for more native threads than cores.
#include "usage_comforts.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/core/suggest.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::cli {
namespace {

// The visible long option names of `app` ("--scheme"), its option groups' included (CLI11
// keeps a group's options in a nameless sub-app). Hidden options (group "") are old spellings:
// never suggested.
void collect_option_names(const CLI::App& app, std::vector<std::string>& out) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_positional() || opt->get_group().empty()) continue;
    for (const auto& l : opt->get_lnames()) out.push_back("--" + l);
    for (const auto& s : opt->get_snames()) out.push_back("-" + s);
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name().empty()) collect_option_names(*sub, out);
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  collect_option_names(app, out);
  return out;
}

// An option as typed, without an attached value ("--n=5" -> "--n").
std::string option_word(const std::string& arg) {
  return arg.substr(0, arg.find('='));
}

// Looks like an option, not a negative number given as a stray value.
bool is_option_like(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9') && arg[1] != '.';
}

// The option among `names` that `word` probably meant, compared without their leading dashes
// (which every name shares and would only dilute the distance).
std::string closest_option(const std::string& word, const std::vector<std::string>& names) {
  const auto bare = [](const std::string& s) { return s.substr(s.find_first_not_of('-')); };
  std::vector<std::string> bare_names;
  for (const auto& n : names) bare_names.push_back(bare(n));
  const std::string near = closest_name(bare(word), bare_names);
  if (near.empty()) return {};
  const auto at = std::find(bare_names.begin(), bare_names.end(), near) - bare_names.begin();
  return names[static_cast<std::size_t>(at)];
}

std::string message_for(const CLI::App& app, const CLI::App* verb, const std::string& word) {
  const std::vector<std::string> names = option_names(verb != nullptr ? *verb : app);
  const std::string where = verb != nullptr ? " for " + verb->get_name() : "";
  if (word.find_first_not_of('-') == std::string::npos) return "unknown option " + word;
  if (const std::string near = closest_option(word, names); !near.empty())
    return fmt::format("unknown option {}; did you mean {}?", word, near);
  // Not a typo of this verb's options: perhaps another verb's.
  std::vector<std::string> takers;
  for (const CLI::App* other : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (other == verb || other->get_name().empty()) continue;
    const auto theirs = option_names(*other);
    if (std::find(theirs.begin(), theirs.end(), word) != theirs.end())
      takers.push_back(other->get_name());
  }
  if (!takers.empty())
    return fmt::format("unknown option {}{} (an option of {})", word, where,
                       fmt::join(takers, ", "));
  return fmt::format("unknown option {}{}", word, where);
}

}  // namespace

std::string unknown_verb_message(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return {};
  const std::string arg = argv[1];
  if (is_option_like(arg)) {
    const std::string word = option_word(arg);
    const auto names = option_names(app);
    if (std::find(names.begin(), names.end(), word) != names.end()) return {};
    return message_for(app, nullptr, word);
  }
  std::vector<std::string> verbs;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_name().empty()) verbs.push_back(sub->get_name());
  if (std::find(verbs.begin(), verbs.end(), arg) != verbs.end()) return {};
  return fmt::format("unknown command '{}'{} (commands: {})", arg, did_you_mean(arg, verbs),
                     fmt::join(verbs, ", "));
}

// The message for the first unknown option left over by `verb`, or "".
std::string unknown_option_of(const CLI::App& app, const CLI::App& verb) {
  for (const std::string& arg : verb.remaining())
    if (is_option_like(arg)) return message_for(app, &verb, option_word(arg));
  return {};
}

std::string unknown_option_message(const CLI::App& app) {
  for (const CLI::App* verb : app.get_subcommands())
    if (std::string m = unknown_option_of(app, *verb); !m.empty()) return m;
  for (const std::string& arg : app.remaining())
    if (is_option_like(arg)) return message_for(app, nullptr, option_word(arg));
  return {};
}

void check_kernel_name(CLI::App& verb) {
  // Thrown rather than returned: a validator's message would reach the user as CLI11's
  // "kernel: ...", while every other unknown name says "pmlab: error: unknown ...".
  verb.get_option("kernel")->check(CLI::Validator(
      [&verb](std::string& name) -> std::string {
        if (run::kernel_driver_named(name) != nullptr) return {};
        // CLI11 validates before it reports leftovers: in `sim --shceme lp tmm` the kernel
        // slot took "lp", and the mistyped option is what to report.
        if (std::string m = unknown_option_of(*verb.get_parent(), verb); !m.empty())
          throw Error(ErrorCode::kInvalidArgument, m);
        std::vector<std::string> known;
        for (const auto& k : run::kernel_drivers()) known.push_back(k.name);
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("unknown kernel '{}'{} (known: {})", name,
                                did_you_mean(name, known), fmt::join(known, ", ")));
      },
      ""));
}

unsigned host_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void warn_if_threads_exceed_cores(std::uint64_t threads, const std::string& what) {
  const unsigned cores = host_cores();
  if (threads <= cores) return;
  fmt::print(stderr, "pmlab: warning: {} on a {}-core host: threads will time-share\n", what,
             cores);
}

}  // namespace pmlab::cli
