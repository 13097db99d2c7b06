// Simulator speed: simulated memory references per second on a tiled matmul (n=128, bs=16).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "pmlab/mem/native_backend.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace {

constexpr std::size_t kN = 128;
constexpr std::size_t kBs = 16;

// A tiny local tmm (the LP paper's Fig. 4 loop order) so this bench measures only the backend.
template <class B>
void tiled_matmul(B& be, const double* a, const double* b, double* c, std::size_t n,
                  std::size_t bs) {
  for (std::size_t kk = 0; kk < n; kk += bs)
    be.parallel_for(0, n / bs, [&](std::size_t it) {
      const std::size_t ii = it * bs;
      for (std::size_t jj = 0; jj < n; jj += bs)
        for (std::size_t i = ii; i < ii + bs; ++i)
          for (std::size_t j = jj; j < jj + bs; ++j) {
            double sum = be.load(c + i * n + j);
            for (std::size_t k = kk; k < kk + bs; ++k)
              sum += be.load(a + i * n + k) * be.load(b + k * n + j);
            be.store(c + i * n + j, sum);
          }
    });
}

struct Matrices {
  std::vector<double> a = std::vector<double>(kN * kN, 1.0), b = std::vector<double>(kN * kN, 0.5),
                      c = std::vector<double>(kN * kN, 0.0);
};

// References per run: per (kk, i, j) one load and one store of C plus 2 * bs loads.
constexpr std::int64_t kRefs = static_cast<std::int64_t>(kN * kN * (kN / kBs) * (2 * kBs + 2));

void BM_SimTmm(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  Matrices m;
  pmlab::sim::SimBackend be =
      pmlab::sim::SimBackend::from_preset("lp-isca18", pmlab::sim::FlushMode::kNone, threads);
  for (auto _ : state) {
    tiled_matmul(be, m.a.data(), m.b.data(), m.c.data(), kN, kBs);
    benchmark::DoNotOptimize(m.c.data());
  }
  state.SetItemsProcessed(state.iterations() * kRefs);
  const auto s = be.stats();
  state.counters["filtered"] =
      static_cast<double>(s.filtered_accesses) / static_cast<double>(s.accesses());
  state.counters["l1_miss_rate"] = s.l1().miss_rate();
}
BENCHMARK(BM_SimTmm)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond);

// Eight threads taking turns of Q ops (--interleave-quantum Q): what a fiber switch costs. Q = 0
// is whole-iteration turns without fibers, the reference (docs/simulator.md, "The interleaved threads' fibers").
void BM_SimTmmInterleaved(benchmark::State& state) {
  Matrices m;
  pmlab::sim::SimParams p = pmlab::sim::preset("lp-isca18");
  p.interleave_quantum = static_cast<std::uint64_t>(state.range(0));
  pmlab::sim::SimBackend be(p, pmlab::sim::FlushMode::kNone, 8);
  for (auto _ : state) {
    tiled_matmul(be, m.a.data(), m.b.data(), m.c.data(), kN, kBs);
    benchmark::DoNotOptimize(m.c.data());
  }
  state.SetItemsProcessed(state.iterations() * kRefs);
}
BENCHMARK(BM_SimTmmInterleaved)->Arg(0)->Arg(1000)->Arg(100)->Arg(1)->Unit(benchmark::kMillisecond);

// The same loop on plain memory, for the simulator's slowdown factor.
void BM_NativeTmm(benchmark::State& state) {
  Matrices m;
  pmlab::mem::PlainBackend be;
  for (auto _ : state) {
    tiled_matmul(be, m.a.data(), m.b.data(), m.c.data(), kN, kBs);
    benchmark::DoNotOptimize(m.c.data());
  }
  state.SetItemsProcessed(state.iterations() * kRefs);
}
BENCHMARK(BM_NativeTmm)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
