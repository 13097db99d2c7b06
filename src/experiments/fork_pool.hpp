// Child processes that each report one result through a pipe, at most N at once (crash
// campaigns fork one per trial at its crash point, `pmlab eval` one per untimed step).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pmlab::experiments {

class ForkPool {
 public:
  // Called in the parent for each child that ended: its tag, everything it wrote, and the
  // waitpid() status.
  using OnDone = std::function<void(std::uint64_t tag, std::string payload, int wait_status)>;

  ForkPool(int max_children, OnDone on_done);
  ~ForkPool();  // children still running (the parent is unwinding) are killed and reaped
  ForkPool(const ForkPool&) = delete;
  ForkPool& operator=(const ForkPool&) = delete;

  // Forks a child for `tag` once fewer than max_children run. Returns true in the child, which
  // must end with finish_child() and never return into the parent's code. Throws
  // pmlab::Error(kIo) if pipe() or fork() fails.
  [[nodiscard]] bool fork_child(std::uint64_t tag);
  // In the child: writes `payload` to the parent and _exit()s (no destructors, no atexit, no
  // stdio flush: everything else belongs to the parent).
  [[noreturn]] void finish_child(std::string_view payload, int exit_code) const;

  void poll(bool block);  // handles every finished child; block: until at least one finished
  void wait_all();
  [[nodiscard]] std::size_t running() const { return running_.size(); }

 private:
  struct Child {
    pid_t pid = -1;
    int fd = -1;
    std::uint64_t tag = 0;
    std::string payload;
  };
  void reap(std::size_t i);

  int max_children_;
  OnDone on_done_;
  std::vector<Child> running_;
  int child_fd_ = -1;  // in a child: the write end of its pipe
};

}  // namespace pmlab::experiments
