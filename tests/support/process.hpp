// Spawning the pmlab binary from tests: run to completion, or send it a signal (SIGKILL unless
// told otherwise) after a delay or once a condition holds.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace pmlab::testing {

struct ProcessResult {
  bool killed = false;  // we sent SIGKILL and it died of it
  int exit_code = -1;   // valid when !killed
  std::string out;      // captured stdout
  std::string err;      // captured stderr
};

// Runs `args` (argv[0] = binary); if kill_after is set and the process is still running then,
// sends it `sig` (SIGKILL unless told otherwise) and waits for it to end. stdout/stderr go to files
// under `scratch` and are read back.
inline ProcessResult run_process(const std::vector<std::string>& args, const std::string& scratch,
                                 std::optional<std::chrono::microseconds> kill_after = std::nullopt,
                                 int sig = SIGKILL);

// Runs `args` and sends it `sig` as soon as `ready()` holds (polled every 200 us), or after
// `timeout` if it never does; `signalled` tells whether the signal went to a running process.
inline ProcessResult run_process_signal_when(const std::vector<std::string>& args,
                                             const std::string& scratch,
                                             const std::function<bool()>& ready,
                                             std::chrono::milliseconds timeout, int sig,
                                             bool* signalled = nullptr);

namespace detail {

inline ProcessResult spawn_and_signal(const std::vector<std::string>& args,
                                      const std::string& scratch,
                                      const std::function<bool()>& ready,
                                      std::optional<std::chrono::microseconds> deadline_after,
                                      int sig, bool* signalled) {
  const std::string out_path = scratch + ".out", err_path = scratch + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  ProcessResult r;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    r.err = "posix_spawn failed";
    return r;
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  if (signalled != nullptr) *signalled = false;
  if (deadline_after) {
    auto deadline = std::chrono::steady_clock::now() + *deadline_after;
    while (std::chrono::steady_clock::now() < deadline && !(ready && ready())) {
      if (waitpid(pid, &status, WNOHANG) == pid) goto finished;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (waitpid(pid, &status, WNOHANG) == pid) goto finished;
    kill(pid, sig);
    if (signalled != nullptr) *signalled = true;
  }
  waitpid(pid, &status, 0);
finished:
  r.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

}  // namespace detail

inline ProcessResult run_process(const std::vector<std::string>& args, const std::string& scratch,
                                 std::optional<std::chrono::microseconds> kill_after, int sig) {
  return detail::spawn_and_signal(args, scratch, nullptr, kill_after, sig, nullptr);
}

inline ProcessResult run_process_signal_when(const std::vector<std::string>& args,
                                             const std::string& scratch,
                                             const std::function<bool()>& ready,
                                             std::chrono::milliseconds timeout, int sig,
                                             bool* signalled) {
  return detail::spawn_and_signal(args, scratch, ready, timeout, sig, signalled);
}

}  // namespace pmlab::testing
