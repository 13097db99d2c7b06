// Example: crash-test the heat stencil's lp::Loop (../heat) in pmlab's simulator, from the same
// loop description: arrays, layout, inputs, and the body made for a given Loop. The campaign of
// `pmlab crash` cuts the power at uniform and adversarial points (and again inside recovery),
// restores what had reached NVM, recovers, finishes and compares every array bit for bit; LP's
// negative control (recovery that validates nothing) must fail it. A failed trial prints the
// command that replays it.
//
//   heat_crash [--loop heat|undeclared] [--trials N] [--seed S] [--jobs J] [--no-control]
//   heat_crash [--loop ...] --replay OP ...      (the command a failed trial prints)
//
// --loop undeclared is the heat loop with a mistake: it declares only grid "b" as output while
// odd steps write grid "a". Its campaign must fail (exit 1) and print replay commands.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <pmlab/experiments/loop_crash_test.hpp>

namespace {

constexpr double kAlpha = 0.1;

void init_grid(double* g, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n * n; ++i) g[i] = static_cast<double>((i * 2654435761u) % 1000);
}

// The heat loop of ../heat on an n x n grid, `steps` steps of bands of `bs` rows.
pmlab::experiments::LoopUnderTest heat_loop(std::uint64_t n, std::uint64_t steps, std::uint64_t bs,
                                            bool declare_both_grids) {
  pmlab::experiments::LoopUnderTest l;
  l.name = "heat";
  l.arrays = {{"a", n * n}, {"b", n * n}};
  l.layout = {.phases = steps,
              .outputs = declare_both_grids ? std::vector<std::string>{"b", "a"}
                                            : std::vector<std::string>{"b"},
              .first = n,
              .last = n * n - n,
              .chunk = bs * n};
  l.init = [n](pmlab::lp::Loop& loop) {
    init_grid(loop.array("a"), n), init_grid(loop.array("b"), n);
  };
  l.body = [n, bs](pmlab::lp::Loop& loop) -> pmlab::lp::Loop::Body {
    double* g[2] = {loop.array("a"), loop.array("b")};
    return [=](std::uint64_t t, std::uint64_t k) {  // the body of ../heat, unchanged
      for (std::uint64_t i = 1 + k * bs; i < std::min(n - 1, 1 + (k + 1) * bs); ++i)
        for (std::uint64_t j = 1; j + 1 < n; ++j) {
          const double* u = g[t % 2];
          g[(t + 1) % 2][i * n + j] =
              u[i * n + j] + kAlpha * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] +
                                       u[i * n + j + 1] - 4 * u[i * n + j]);
        }
    };
  };
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  // --loop first; the rest goes to crash_test_main, whose replay commands start with argv[0]
  // and the loop chosen here.
  std::string prog = argv[0];
  bool declare_both = true;
  std::vector<char*> rest;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--loop") == 0 && i + 1 < argc) {
      declare_both = std::strcmp(argv[++i], "heat") == 0;
      if (!declare_both && std::strcmp(argv[i], "undeclared") != 0) {
        std::fprintf(stderr, "heat_crash: --loop is heat or undeclared, not '%s'\n", argv[i]);
        return 2;
      }
      prog += std::string(" --loop ") + argv[i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  rest.insert(rest.begin(), prog.data());
  // Small enough for a few seconds: a 24 x 24 grid, 6 steps, bands of 4 rows.
  return pmlab::experiments::crash_test_main(heat_loop(24, 6, 4, declare_both),
                                             static_cast<int>(rest.size()), rest.data());
}
