// One SIGINT/SIGTERM handler for every verb: immediate exit 130, or a stop flag polled between
// steps; both remove a pool temporary being created before the process ends.
#include "interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include "commands.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::cli {
namespace {

std::atomic<bool> g_stop{false};
struct sigaction g_old_int {};
struct sigaction g_old_term {};

// Only async-signal-safe calls: unlink (inside the pool hook), write, _exit.
[[noreturn]] void exit_interrupted() {
  pool::remove_temporaries_for_exit();
  constexpr char kMsg[] = "pmlab: interrupted (exit 130)\n";
  [[maybe_unused]] const ssize_t w = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  ::_exit(kExitInterrupted);
}

extern "C" void on_signal_exit_now(int) {
  exit_interrupted();
}

extern "C" void on_signal_stop_after_step(int) {
  if (g_stop.exchange(true)) exit_interrupted();  // the second one
}

void install(void (*handler)(int), struct sigaction* old_int, struct sigaction* old_term) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  // Restarted system calls: a stop request must not turn a write or a wait into an error.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, old_int);
  sigaction(SIGTERM, &sa, old_term);
}

}  // namespace

InterruptScope::InterruptScope(OnInterrupt mode) {
  g_stop.store(false);
  install(mode == OnInterrupt::kExitNow ? on_signal_exit_now : on_signal_stop_after_step,
          &g_old_int, &g_old_term);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<bool>* InterruptScope::stop_flag() {
  return &g_stop;
}

bool InterruptScope::stop_requested() {
  return g_stop.load();
}

}  // namespace pmlab::cli
