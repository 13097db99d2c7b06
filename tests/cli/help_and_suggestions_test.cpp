// The CLI's comforts: "did you mean" for mistyped verbs, options, kernels and schemes (exit 2),
// the warning for more native threads than cores, bench's line before long work, and help text
// wrapped to 80 columns with each kernel's schemes listed.
#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "../support/cli_fixture.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

class CliSuggestions : public PmlabCliTest {
 protected:
  CliSuggestions() : PmlabCliTest("pmlab-suggest") {}
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

unsigned cores_of_this_process() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  return static_cast<unsigned>(CPU_COUNT(&set));
}

TEST_F(CliSuggestions, MistypedOptionNamesTheOneMeant) {
  const std::vector<std::vector<std::string>> cases{
      {"sim", "tmm", "--shceme", "lp"},
      {"sim", "--shceme", "lp", "tmm"},  // "lp" lands in the kernel slot: still the option
      {"crash", "tmm", "--shceme", "lp"},
      {"bench", "tmm", "--shceme=lp"},
      {"run", "tmm", "--shceme", "lp", "--pool", pool()}};
  for (const auto& args : cases) {
    const auto r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "unknown option --shceme; did you mean --scheme?"))
        << args[0] << ": " << r.err;
  }
  // Option groups (sim's machine overrides) and abbreviations are searched too.
  auto r = pmlab({"sim", "tmm", "--llc-szie", "1M"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "did you mean --llc-size?")) << r.err;
  r = pmlab({"run", "tmm", "--check", "parity", "--pool", pool()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "did you mean --checksum?")) << r.err;
  EXPECT_FALSE(fs::exists(pool()));
}

TEST_F(CliSuggestions, AnotherVerbsOptionIsNamedAsSuch) {
  const auto r = pmlab({"sim", "tmm", "--pool", pool()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown option --pool for sim (an option of run, info)")) << r.err;
  // Nothing close: no guess.
  const auto far = pmlab({"sim", "tmm", "--frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_TRUE(contains(far.err, "unknown option --frobnicate for sim")) << far.err;
  EXPECT_FALSE(contains(far.err, "did you mean")) << far.err;
}

TEST_F(CliSuggestions, MistypedVerbKernelAndScheme) {
  auto r = pmlab({"smi", "tmm"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown command 'smi'; did you mean sim?")) << r.err;
  r = pmlab({"--verison"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "did you mean --version?")) << r.err;
  for (const char* verb : {"run", "sim", "bench", "crash"}) {
    std::vector<std::string> args{verb, "tmn"};
    if (std::string(verb) == "run") args.insert(args.end(), {"--pool", pool()});
    r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << verb;
    EXPECT_TRUE(contains(r.err, "unknown kernel 'tmn'; did you mean tmm? (known: tmm,")) << r.err;
  }
  for (const char* verb : {"run", "sim", "bench"}) {
    std::vector<std::string> args{verb, "tmm", "--scheme", "lq", "--n", "16", "--bs", "4"};
    if (std::string(verb) == "run") args.insert(args.end(), {"--pool", pool()});
    r = pmlab(args);
    EXPECT_EQ(r.exit_code, 2) << verb;
    EXPECT_TRUE(contains(r.err, "unknown scheme 'lq' for tmm; did you mean lp? (known: base, lp"))
        << verb << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(pool()));
}

TEST_F(CliSuggestions, MoreNativeThreadsThanCoresIsWarnedNotRefused) {
  const unsigned threads = cores_of_this_process() + 1;
  const std::string warning = "pmlab: warning: --threads " + std::to_string(threads) + " on a " +
                              std::to_string(threads - 1) + "-core host: threads will time-share";
  auto r = pmlab({"run", "tmm", "--n", "16", "--bs", "4", "--threads", std::to_string(threads),
                  "--pool", pool()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, warning)) << r.err;
  r = pmlab({"bench", "tmm", "--scheme", "lp", "--n", "16", "--bs", "4", "--single-pass",
             "--threads", std::to_string(threads), "--dir", dir_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, warning)) << r.err;
  // Within the cores: nothing said.
  r = pmlab({"bench", "tmm", "--scheme", "lp", "--n", "16", "--bs", "4", "--single-pass",
             "--threads", "1", "--dir", dir_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "warning: --threads")) << r.err;
  // Simulated threads are not host threads.
  if (threads <= 64) {
    r = pmlab({"sim", "tmm", "--n", "16", "--bs", "4", "--threads", std::to_string(threads)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(contains(r.err, "warning: --threads")) << r.err;
  }
}

TEST_F(CliSuggestions, BenchSaysWhatWillRunAndForHowLong) {
  // One pair per scheme (fewer than an interval needs): quick, whatever the budget says.
  const std::vector<std::string> quick{"--n",           "8", "--bs",  "4",          "--reps", "1",
                                       "--rep-seconds", "0", "--dir", dir_.string()};
  std::vector<std::string> args{"bench", "tmm", "--scheme", "lp", "--budget", "90"};
  args.insert(args.end(), quick.begin(), quick.end());
  auto r = pmlab(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "bench tmm: 1 scheme × 90 s budget ≈ 90 s at most")) << r.err;
  EXPECT_FALSE(contains(r.err, "--scheme S for one")) << r.err;
  // Every scheme of the kernel (base is the reference, not counted): the hint to pick one.
  args = {"bench", "gemm", "--budget", "120"};
  args.insert(args.end(), quick.begin(), quick.end());
  r = pmlab(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "bench gemm: 4 schemes × 120 s budget ≈ 8 min at most; --scheme S "
                       "for one"))
      << r.err;
  // Short work is not announced.
  args = {"bench", "tmm", "--scheme", "lp", "--budget", "5"};
  args.insert(args.end(), quick.begin(), quick.end());
  r = pmlab(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "budget ≈")) << r.err;
}

TEST_F(CliSuggestions, HelpIsWrappedAndListsEachKernelsSchemes) {
  for (const char* verb : {"", "run", "sim", "bench", "crash", "eval", "info"}) {
    std::vector<std::string> args;
    if (*verb != '\0') args.emplace_back(verb);
    args.emplace_back("--help");
    const auto r = pmlab(args);
    ASSERT_EQ(r.exit_code, 0) << verb;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      // An option's name and type (a long list of choices) cannot be broken; its words can.
      if (line.find_first_not_of(' ') != std::string::npos &&
          line[line.find_first_not_of(' ')] == '-' && line.find("  ", 4) == std::string::npos)
        continue;
      // "×" and "±" are two bytes each; the usage line holds the binary's path.
      if (line.rfind("Usage:", 0) == 0) continue;
      EXPECT_LE(line.size(), 84u) << verb << ": " << line;
    }
  }
  const auto run = pmlab({"run", "--help"});
  const auto sim = pmlab({"sim", "--help"});
  const auto crash = pmlab({"crash", "--help"});
  for (const auto* r : {&run, &sim, &crash}) {
    EXPECT_TRUE(contains(r->out, "Schemes per kernel (--scheme")) << r->out;
    EXPECT_TRUE(contains(r->out, "cp-nt-async")) << r->out;  // cg's and jacobi's, not only tmm's
    EXPECT_TRUE(contains(r->out, "Kernel parameters:")) << r->out;
  }
  EXPECT_TRUE(contains(run.out, "stored in the pool"));  // only `run` keeps a pool
  EXPECT_FALSE(contains(sim.out, "stored in the pool")) << sim.out;
  EXPECT_FALSE(contains(crash.out, "stored in the pool")) << crash.out;
  EXPECT_TRUE(contains(sim.out, "ipv-nf"));  // a measurement row: simulated, never crash-tested
  EXPECT_FALSE(contains(crash.out, "ipv-nf")) << crash.out;
}

}  // namespace
}  // namespace pmlab::testing
