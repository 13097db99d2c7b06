// A terminal progress bar with an ETA on stderr; silent when stderr is not a terminal.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pmlab {

class ProgressBar {
 public:
  ProgressBar(std::string label, std::uint64_t total, bool enabled = isatty(STDERR_FILENO) != 0)
      : label_(std::move(label)),
        total_(total == 0 ? 1 : total),
        enabled_(enabled),
        start_(std::chrono::steady_clock::now()) {}
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() { finish(); }

  // Sets the number of completed units; redraws at most ~10 times a second.
  void update(std::uint64_t done) {
    done_ = done > total_ ? total_ : done;
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (done_ != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(now);
  }
  void finish() {
    if (!enabled_ || finished_) return;
    finished_ = true;
    draw(std::chrono::steady_clock::now());
    std::fputc('\n', stderr);
  }

 private:
  void draw(std::chrono::steady_clock::time_point now) const {
    constexpr int kWidth = 30;
    const double frac = static_cast<double>(done_) / static_cast<double>(total_);
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
    std::string bar(static_cast<std::size_t>(frac * kWidth), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %5.1f%%  %.1fs elapsed, ~%.1fs left ", label_.c_str(),
                 bar.c_str(), 100 * frac, elapsed, eta);
    std::fflush(stderr);
  }

  std::string label_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_{};
};

}  // namespace pmlab
