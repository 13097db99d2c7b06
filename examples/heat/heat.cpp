// Example: a 2-D heat stencil protected with lp::Loop. The unprotected loop and the protected
// one are both here, between markers: scripts/check-examples counts the lines protection adds
// (docs/protect-your-own-loop.md) and compares the two results bit for bit.
//
//   heat POOL [--n N] [--steps T] [--bs ROWS]      (threads: OMP_NUM_THREADS)
//
// Run it again on the same pool after a kill -9 (or PMLAB_LOOP_KILL_AT=K, which kills the
// process at protocol point K): it recovers, resumes and gives the same bits.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include <pmlab/core/error.hpp>
#include <pmlab/lp/loop.hpp>

namespace {

constexpr double kAlpha = 0.1;  // diffusion coefficient times dt / dx^2 (stable below 0.25)

// Initial temperatures: a fixed pattern, boundary included (the boundary never changes).
void init_grid(double* g, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n * n; ++i) g[i] = static_cast<double>((i * 2654435761u) % 1000);
}

// [unprotected]
std::vector<double> heat(std::uint64_t n, std::uint64_t steps) {
  std::vector<double> g[2] = {std::vector<double>(n * n), {}};
  init_grid(g[0].data(), n);
  g[1] = g[0];
  for (std::uint64_t t = 0; t < steps; ++t)
    for (std::uint64_t i = 1; i + 1 < n; ++i)
      for (std::uint64_t j = 1; j + 1 < n; ++j) {
        const double* u = g[t % 2].data();
        g[(t + 1) % 2][i * n + j] =
            u[i * n + j] + kAlpha * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] +
                                     u[i * n + j + 1] - 4 * u[i * n + j]);
      }
  return g[steps % 2];
}
// [end]

// [protected]
std::vector<double> heat(const char* path, std::uint64_t n, std::uint64_t steps, std::uint64_t bs,
                         pmlab::lp::LoopReport* report) {
  pmlab::lp::Loop loop(
      path, std::array{n, steps, bs}, {{"a", n * n}, {"b", n * n}},
      {.phases = steps, .outputs = {"b", "a"}, .first = n, .last = n * n - n, .chunk = bs * n},
      [&](pmlab::lp::Loop& l) { init_grid(l.array("a"), n), init_grid(l.array("b"), n); });
  std::span<double> g[2] = {{loop.array("a"), n * n}, {loop.array("b"), n * n}};
  *report = loop.run([&](std::uint64_t t, std::uint64_t k) {
    for (std::uint64_t i = 1 + k * bs; i < std::min(n - 1, 1 + (k + 1) * bs); ++i)
      for (std::uint64_t j = 1; j + 1 < n; ++j) {
        const double* u = g[t % 2].data();
        g[(t + 1) % 2][i * n + j] =
            u[i * n + j] + kAlpha * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] +
                                     u[i * n + j + 1] - 4 * u[i * n + j]);
      }
  });
  return {g[steps % 2].begin(), g[steps % 2].end()};
}
// [end]

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s POOL [--n N] [--steps T] [--bs ROWS]\n", argv[0]);
    return 2;
  }
  std::uint64_t n = 256, steps = 20, bs = 8;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    char* end = nullptr;
    const std::uint64_t v = std::strtoull(argv[i + 1], &end, 10);
    if (*end != '\0' || v == 0) {
      std::fprintf(stderr, "heat: %s needs a positive integer, got '%s'\n", opt.c_str(),
                   argv[i + 1]);
      return 2;
    }
    if (opt == "--n")
      n = v;
    else if (opt == "--steps")
      steps = v;
    else if (opt == "--bs")
      bs = v;
    else {
      std::fprintf(stderr, "heat: unknown option %s\n", opt.c_str());
      return 2;
    }
  }
  if (n < 3 || bs > n - 2) {
    std::fprintf(stderr, "heat: needs --n >= 3 and --bs <= n - 2\n");
    return 2;
  }
  try {
    pmlab::lp::LoopReport r;
    const std::vector<double> got = heat(argv[1], n, steps, bs, &r);
    std::printf("heat n=%llu steps=%llu bs=%llu: %llu regions per step, persistence %s\n",
                static_cast<unsigned long long>(n), static_cast<unsigned long long>(steps),
                static_cast<unsigned long long>(bs),
                static_cast<unsigned long long>((n - 2 + bs - 1) / bs), r.persistence.c_str());
    if (r.already_done) std::printf("  the pool holds a completed run (already complete)\n");
    if (r.resumed)
      std::printf(
          "  recovered: %llu regions validated, %llu inconsistent, %llu never written, %llu "
          "recomputed; resumed at step %llu\n",
          static_cast<unsigned long long>(r.recovery.regions_validated),
          static_cast<unsigned long long>(r.recovery.regions_inconsistent),
          static_cast<unsigned long long>(r.recovery.regions_unwritten),
          static_cast<unsigned long long>(r.recovery.regions_recomputed),
          static_cast<unsigned long long>(r.resume_phase));
    const std::vector<double> want = heat(n, steps);
    std::uint64_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      bad += std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(want[i]);
    std::printf("  verify: %s (%llu of %zu values differ from the unprotected loop)\n",
                bad == 0 ? "OK" : "FAILED", static_cast<unsigned long long>(bad), want.size());
    return bad == 0 ? 0 : 1;
  } catch (const pmlab::Error& e) {
    std::fprintf(stderr, "heat: %s\n", e.what());
    return e.code() == pmlab::ErrorCode::kInvalidArgument ? 2 : 3;
  }
}
