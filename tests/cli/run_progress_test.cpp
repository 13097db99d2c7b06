// `pmlab run` draws its progress bar on a terminal (here a pseudo-terminal), reaches 100%, and
// stays silent with --quiet or when stderr is not a terminal.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../support/process.hpp"

namespace pmlab::testing {
namespace {

namespace fs = std::filesystem;

// Runs args with stdout and stderr on a fresh pseudo-terminal; returns what it printed there.
std::string run_on_terminal(const std::vector<std::string>& args, int* exit_code) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t got = read(master, buf, sizeof buf);
    if (got <= 0) break;  // EIO once the child has exited and closed the terminal
    out.append(buf, static_cast<std::size_t>(got));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("pmlab-runbar-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
};

TEST(RunProgress, ATerminalSeesTheBarReachItsEnd) {
  Scratch s;
  int code = -1;
  const auto out = run_on_terminal(
      {PMLAB_BINARY, "run", "tmm", "--n", "96", "--bs", "8", "--pool", (s.dir / "a").string()},
      &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("tmm lp ["), std::string::npos) << out;
  EXPECT_NE(out.find("100.0%"), std::string::npos) << out;
}

TEST(RunProgress, QuietOrNoTerminalDrawsNoBar) {
  Scratch s;
  int code = -1;
  const auto out = run_on_terminal({PMLAB_BINARY, "run", "tmm", "--n", "96", "--bs", "8", "--quiet",
                                    "--pool", (s.dir / "b").string()},
                                   &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find('%'), std::string::npos) << out;
  const auto piped = run_process(
      {PMLAB_BINARY, "run", "tmm", "--n", "96", "--bs", "8", "--pool", (s.dir / "c").string()},
      s.dir.string());
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find('%'), std::string::npos) << piped.err;
}

}  // namespace
}  // namespace pmlab::testing
