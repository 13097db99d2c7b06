// run_steps: timed steps alone in this process, the others in a ForkPool; outcomes in plan order.
#include "step_runner.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "fork_pool.hpp"
#include "pmlab/core/error.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Runs one step here. nullopt: it was interrupted (a partial measurement is not a result).
std::optional<StepOutcome> run_here(const EvalStep& step) {
  const auto start = Clock::now();
  json r;
  try {
    r = step.run();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInterrupted) return std::nullopt;
    r = {{"error", e.what()}};
  } catch (const std::exception& e) {
    r = {{"error", e.what()}};
  } catch (...) {  // in a child, anything escaping would unwind into the parent's code
    r = {{"error", "an exception that is not a std::exception"}};
  }
  return StepOutcome{std::move(r), seconds_since(start)};
}

// What a child sends back: {"result": ..., "seconds": ...} or {"interrupted": true}.
std::string to_payload(const std::optional<StepOutcome>& o) {
  if (!o) return json{{"interrupted", true}}.dump();
  // Replace, not throw, on invalid UTF-8 (an error message quoting a file's bytes).
  return json{{"result", o->result}, {"seconds", o->seconds}}.dump(-1, ' ', false,
                                                                   json::error_handler_t::replace);
}

std::optional<StepOutcome> from_payload(const std::string& payload, int wait_status,
                                        bool& interrupted) {
  const json j = json::parse(payload, nullptr, false);
  if (j.is_object() && j.value("interrupted", false)) {
    interrupted = true;
    return std::nullopt;
  }
  if (j.is_object() && j.contains("result"))
    return StepOutcome{j["result"], j.value("seconds", 0.0)};
  // No result: the child died (a crash of the simulator, a signal, out of memory).
  const std::string why = WIFSIGNALED(wait_status)
                              ? fmt::format("killed by signal {}", WTERMSIG(wait_status))
                              : fmt::format("exited {} without a result", WEXITSTATUS(wait_status));
  return StepOutcome{json{{"error", "the step's process " + why}}, 0.0};
}

class Progress {
 public:
  Progress(const std::vector<EvalStep>& steps, const StepRunOptions& opt)
      : steps_(steps), opt_(opt), start_(Clock::now()) {
    for (const auto& s : steps) total_ += s.weight;
  }
  // Progress is shown under the step started last: a log then gets one line per step, as when
  // the steps run one by one, and a finishing sibling only moves the bar.
  void started(std::size_t i) {
    current_ = steps_[i].label;
    show();
  }
  void finished(std::size_t i) {
    done_ += steps_[i].weight;
    show();
  }

 private:
  const std::vector<EvalStep>& steps_;
  const StepRunOptions& opt_;
  void show() const {
    if (!opt_.progress) return;
    const double elapsed = seconds_since(start_);
    const double left = done_ > 0 ? elapsed / done_ * (total_ - done_) : 0;
    opt_.progress(total_ > 0 ? done_ / total_ : 1.0, left, current_);
  }

  Clock::time_point start_;
  double total_ = 0, done_ = 0;
  std::string current_;
};

bool stopped(const StepRunOptions& opt) {
  return opt.stop && opt.stop->load();
}

// The untimed steps `todo`, `jobs` children at once. Returns false when stopped.
bool run_forked(const std::vector<EvalStep>& steps, const std::vector<std::size_t>& todo,
                const StepRunOptions& opt, Progress& progress, StepRun& out) {
  ForkPool pool(opt.jobs, [&](std::uint64_t i, std::string payload, int status) {
    bool interrupted = false;
    out.outcomes[i] = from_payload(payload, status, interrupted);
    if (interrupted) out.interrupted = true;
    progress.finished(i);
  });
  std::size_t next = 0;
  while (next < todo.size() || pool.running() > 0) {
    // Stopping leaves the loop; the pool's destructor kills and reaps the children.
    if (stopped(opt) || out.interrupted) return false;
    if (next < todo.size() && pool.running() < static_cast<std::size_t>(opt.jobs)) {
      const std::size_t i = todo[next++];
      progress.started(i);
      if (pool.fork_child(i)) {
        // Nothing may escape a child into the parent's loop: no payload reads as a failure.
        std::string payload;
        try {
          payload = to_payload(run_here(steps[i]));
        } catch (...) {
        }
        pool.finish_child(payload, 0);
      }
      continue;
    }
    // Here every slot is busy or nothing is left to start. A child that ended frees its slot
    // at once; else look again in 50 ms (a blocking poll would not see Ctrl-C's flag).
    const std::size_t before = pool.running();
    pool.poll(false);
    if (pool.running() == before) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace

StepRun run_steps(const std::vector<EvalStep>& steps, const StepRunOptions& opt) {
  StepRun out;
  out.outcomes.resize(steps.size());
  Progress progress(steps, opt);
  std::vector<std::size_t> here, forked;
  for (std::size_t i = 0; i < steps.size(); ++i)
    (opt.jobs > 1 && !steps[i].timed ? forked : here).push_back(i);
  // Timed steps first, while nothing of the evaluation has run yet: after the forked phase the
  // load average (a one-minute mean the benchmarks record and warn on) would still count it.
  for (const std::size_t i : here) {
    if (stopped(opt)) {
      out.interrupted = true;
      return out;
    }
    progress.started(i);
    out.outcomes[i] = run_here(steps[i]);
    if (!out.outcomes[i]) {
      out.interrupted = true;
      return out;
    }
    progress.finished(i);
  }
  // Children are forked only now, so none ever runs beside a timed step. (Nothing forked runs
  // native OpenMP code, which is not fork-safe once the parent has used it: the forked steps
  // simulate, or exec a tool.)
  if (!forked.empty() && !run_forked(steps, forked, opt, progress, out)) out.interrupted = true;
  return out;
}

}  // namespace pmlab::experiments
