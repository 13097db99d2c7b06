// Proves the backend abstraction is free: base tmm through NativeBackend vs the same loop on raw
// pointers.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace {

struct Data {
  std::size_t n, bs;
  std::vector<double> a, b, c;
  Data(std::size_t n_, std::size_t bs_) : n(n_), bs(bs_), a(n * n), b(n * n), c(n * n, 0.0) {
    for (std::size_t i = 0; i < n * n; ++i) {
      a[i] = pmlab::kernels::input_value(1, 0, i);
      b[i] = pmlab::kernels::input_value(1, 1, i);
    }
  }
};

// Fig. 4 of the LP paper written directly on raw pointers: the reference for "no abstraction".
__attribute__((noinline)) void tmm_raw(const double* a, const double* b, double* c, std::size_t n,
                                       std::size_t bs) {
  for (std::size_t kk = 0; kk < n; kk += bs) {
    const std::size_t k_end = std::min(kk + bs, n);
    for (std::size_t ii = 0; ii < n; ii += bs) {
      const std::size_t i_end = std::min(ii + bs, n);
      for (std::size_t jj = 0; jj < n; jj += bs) {
        const std::size_t j_end = std::min(jj + bs, n);
        for (std::size_t i = ii; i < i_end; ++i)
          for (std::size_t j = jj; j < j_end; ++j) {
            double sum = c[i * n + j];
            for (std::size_t k = kk; k < k_end; ++k) sum += a[i * n + k] * b[k * n + j];
            c[i * n + j] = sum;
          }
      }
    }
  }
}

// Kept out of line (like tmm_raw) so callgrind can count each variant's instructions alone.
template <class B>
__attribute__((noinline)) void tmm_through_backend(B& be, const pmlab::kernels::tmm::Operands& op) {
  pmlab::kernels::tmm::run_base(be, op);
}

void BM_TmmRawPointers(benchmark::State& st) {
  Data d(static_cast<std::size_t>(st.range(0)), 16);
  for (auto _ : st) {
    tmm_raw(d.a.data(), d.b.data(), d.c.data(), d.n, d.bs);
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
}

void BM_TmmNativeBackend(benchmark::State& st) {
  Data d(static_cast<std::size_t>(st.range(0)), 16);
  pmlab::kernels::tmm::Operands op{
      {d.a.data(), d.n, d.n}, {d.b.data(), d.n, d.n}, {d.c.data(), d.n, d.n}, d.n, d.bs};
  // The persister used for measurements (cpu mode, clwb); base issues no flush.
  pmlab::mem::NativeBackend<pmlab::persist::CpuPersist<pmlab::persist::FlushKind::kClwb>> be;
  for (auto _ : st) {
    tmm_through_backend(be, op);
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
}

BENCHMARK(BM_TmmRawPointers)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TmmNativeBackend)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
