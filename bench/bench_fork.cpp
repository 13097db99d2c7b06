// What one forked crash trial pays the operating system before it does any work: fork(), the
// child's copy-on-write faults, _exit() and waitpid(), with no pmlab code in the loop.
// docs/crash-campaigns.md ("Light trials in batches") compares it with a campaign's CPU per trial.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr std::size_t kPage = 4096;

double cpu_seconds(const rusage& r) {
  const auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return s(r.ru_utime) + s(r.ru_stime);
}

// range(0): MiB of private memory the parent has written (pmlab's campaign parent: ~2 MiB
// anonymous); range(1): pages the child writes (a tmm trial's child: ~160 faults, about a third of
// them on code and library pages rather than copies). The parent writes 32 pages between forks,
// as the campaign's fault-free run does (33 faults per fork).
void BM_ForkTouchExit(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const auto child_pages = static_cast<std::size_t>(state.range(1));
  std::vector<char> memory(bytes, 1);
  const std::size_t pages = bytes / kPage;
  rusage before{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  for (auto _ : state) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      state.SkipWithError("fork failed");
      break;
    }
    if (pid == 0) {
      for (std::size_t p = 0; p < child_pages && p < pages; ++p) memory[p * kPage] = 2;
      ::_exit(0);
    }
    for (std::size_t p = 0; p < 32 && p < pages; ++p) memory[p * kPage] = 3;
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  rusage after{};
  ::getrusage(RUSAGE_CHILDREN, &after);
  state.counters["child_cpu_us"] = benchmark::Counter(
      (cpu_seconds(after) - cpu_seconds(before)) * 1e6 / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_ForkTouchExit)
    ->Args({2, 0})
    ->Args({2, 160})
    ->Args({20, 160})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
