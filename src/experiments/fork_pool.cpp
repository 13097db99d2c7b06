// ForkPool: fork, one pipe per child, poll() for results, waitpid() for the exit status.
#include "fork_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::experiments {

namespace {
constexpr int kExitParentGone = 130;
}  // namespace

ForkPool::ForkPool(int max_children, OnDone on_done)
    : max_children_(std::max(1, max_children)), on_done_(std::move(on_done)) {}

ForkPool::~ForkPool() {
  for (Child& c : running_) {
    ::kill(c.pid, SIGKILL);
    ::close(c.fd);
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

bool ForkPool::fork_child(std::uint64_t tag) {
  while (running_.size() >= static_cast<std::size_t>(max_children_)) poll(true);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(ErrorCode::kIo,
                fmt::format("pipe() for a child process: {}", std::strerror(errno)));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(ErrorCode::kIo, fmt::format("fork() for a child process: {}", std::strerror(e)));
  }
  if (pid == 0) {
    // A child never outlives its parent (a campaign, an evaluation): when the parent ends
    // (Ctrl-C, SIGTERM, kill -9) the kernel kills the child; a parent gone before this line is
    // caught by getppid.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kExitParentGone);
    ::close(fds[0]);
    for (const Child& c : running_) ::close(c.fd);  // siblings belong to the parent
    running_.clear();
    child_fd_ = fds[1];
    return true;
  }
  ::close(fds[1]);  // so that the read end sees EOF when the child exits
  running_.push_back({pid, fds[0], tag, {}});
  return false;
}

void ForkPool::finish_child(std::string_view payload, int exit_code) const {
  const char* p = payload.data();
  std::size_t left = payload.size();
  while (left > 0) {
    const ssize_t w = ::write(child_fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ::_exit(exit_code == 0 ? 3 : exit_code);
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  ::_exit(exit_code);
}

void ForkPool::poll(bool block) {
  bool done_any = false;
  while (!running_.empty()) {
    std::vector<pollfd> fds;
    fds.reserve(running_.size());
    for (const Child& c : running_) fds.push_back({c.fd, POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), block && !done_any ? -1 : 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    // Back to front, so that reaping (which erases) keeps the remaining indices valid.
    for (std::size_t i = fds.size(); i-- > 0;) {
      if (fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t r = ::read(running_[i].fd, buf, sizeof buf);
      if (r > 0) {
        running_[i].payload.append(buf, static_cast<std::size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        reap(i);
        done_any = true;
      }
    }
    if (!block || done_any) return;
  }
}

void ForkPool::reap(std::size_t i) {
  Child c = std::move(running_[i]);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
  ::close(c.fd);
  int status = 0;
  while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  on_done_(c.tag, std::move(c.payload), status);
}

void ForkPool::wait_all() {
  while (!running_.empty()) poll(true);
}

}  // namespace pmlab::experiments
