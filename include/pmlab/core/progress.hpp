// The one progress bar of every verb: a line on stderr with time left; silent unless stderr is a
// terminal and the user did not ask for --quiet.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pmlab {

// Whether a verb draws its bar: never with --quiet, and only on a terminal (a log file or a pipe
// would fill with carriage returns).
[[nodiscard]] inline bool progress_wanted(bool quiet) {
  return !quiet && isatty(STDERR_FILENO) != 0;
}

class ProgressBar {
 public:
  ProgressBar(std::string label, std::uint64_t total, bool enabled = progress_wanted(false))
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
  // For work measured as a fraction in [0, 1] (total is then taken as 1000 units).
  void update_fraction(double f) {
    total_ = 1000;
    update(static_cast<std::uint64_t>((f < 0 ? 0 : f) * 1000));
  }
  // Work whose size is learnt on the way (bench's measurement count), and what it is doing now.
  void set_total(std::uint64_t total) { total_ = total == 0 ? 1 : total; }
  void set_detail(std::string detail) { detail_ = std::move(detail); }

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
    // \033[K clears what a longer previous line left on the right.
    std::fprintf(stderr, "\r%s [%s] %5.1f%%  %.1fs elapsed, ~%.1fs left%s%s\033[K", label_.c_str(),
                 bar.c_str(), 100 * frac, elapsed, eta, detail_.empty() ? "" : "  ",
                 detail_.c_str());
    std::fflush(stderr);
  }

  std::string label_;
  std::string detail_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_{};
};

}  // namespace pmlab
