// Base tmm for the cachegrind comparison: the same kernel natively (run it under valgrind) or in
// pmlab's simulator.
//
// Usage: bench_cachegrind_tmm MODE [--n N] [--bs BS] [--D1 size,assoc,line] [--LL size,assoc,line]
// [--reps R]
//                               [--inclusive 0|1]
//   native  kernels::tmm::run_base on PlainBackend, 1 thread. Under `valgrind --tool=cachegrind`
//           the kernel is the [[gnu::noinline]] tile_step<NativeBackend<NoPersist>> (PlainBackend),
//           so its cg_annotate line holds exactly the kernel's references and misses.
//   sim     the same template through SimBackend built from cachegrind_like(D1, LL), 1 thread
//           (LL not inclusive, as cachegrind; --inclusive 1 gives the presets' inclusive LLC).
//   setup   allocation and inputs only: the fixed cost to subtract from a timed native run.
// Matrices are 2 MiB-aligned, so both modes place a, b, c identically modulo any cache size up
// to 2 MiB (set indices match). Prints one JSON object on stdout.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/sim_backend.hpp"

namespace {

using pmlab::kernels::tmm::Operands;

constexpr std::size_t kAlign = 2u << 20;

struct Args {
  std::string mode;
  std::size_t n = 256, bs = 16;
  int reps = 1;
  bool inclusive = false;  // sim: cachegrind's policy by default, 1 = the presets' inclusive LLC
  pmlab::sim::CacheGeometry d1{65536, 8, 64}, ll{524288, 8, 64};
};

pmlab::sim::CacheGeometry parse_geometry(std::string_view flag, const char* s) {
  pmlab::sim::CacheGeometry g;
  unsigned long long size = 0, assoc = 0, line = 0;
  if (std::sscanf(s, "%llu,%llu,%llu", &size, &assoc, &line) != 3)
    throw pmlab::Error(pmlab::ErrorCode::kInvalidArgument,
                       fmt::format("{} expects size,assoc,line, got '{}'", flag, s));
  g.size_bytes = size;
  g.assoc = static_cast<std::uint32_t>(assoc);
  g.line_bytes = static_cast<std::uint32_t>(line);
  return g;
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2)
    throw pmlab::Error(pmlab::ErrorCode::kInvalidArgument,
                       "usage: bench_cachegrind_tmm native|sim|setup [options]");
  a.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string_view f = argv[i];
    const char* v = argv[i + 1];
    if (f == "--n")
      a.n = std::strtoull(v, nullptr, 10);
    else if (f == "--bs")
      a.bs = std::strtoull(v, nullptr, 10);
    else if (f == "--reps")
      a.reps = std::atoi(v);
    else if (f == "--inclusive")
      a.inclusive = std::string_view(v) == "1";
    else if (f == "--D1")
      a.d1 = parse_geometry(f, v);
    else if (f == "--LL")
      a.ll = parse_geometry(f, v);
    else
      throw pmlab::Error(pmlab::ErrorCode::kInvalidArgument, fmt::format("unknown option '{}'", f));
  }
  if (a.mode != "native" && a.mode != "sim" && a.mode != "setup")
    throw pmlab::Error(pmlab::ErrorCode::kInvalidArgument,
                       fmt::format("unknown mode '{}'", a.mode));
  if (a.n < 1 || a.bs < 1 || a.reps < 1)
    throw pmlab::Error(pmlab::ErrorCode::kInvalidArgument, "n, bs and reps must be >= 1");
  return a;
}

// One 2 MiB-aligned matrix, filled with the driver's deterministic inputs (or zero).
struct Matrix {
  double* p;
  Matrix(std::size_t n, int stream) {
    const std::size_t bytes = (n * n * sizeof(double) + kAlign - 1) / kAlign * kAlign;
    p = static_cast<double*>(std::aligned_alloc(kAlign, bytes));
    for (std::size_t i = 0; i < n * n; ++i)
      p[i] =
          stream < 0 ? 0.0 : pmlab::kernels::input_value(1, static_cast<std::uint64_t>(stream), i);
  }
  ~Matrix() { std::free(p); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
};

// Reads a buffer 4x the LL so that both caches hold only its (never again used) lines: under
// LRU that behaves exactly like empty caches, so cachegrind starts as cold as the simulator.
void evict_caches(const Args& a) {
  const std::size_t bytes = 4 * std::max<std::uint64_t>(a.ll.size_bytes, a.d1.size_bytes);
  auto* buf = static_cast<volatile std::uint64_t*>(
      std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign));
  for (std::size_t i = 0; i < bytes / sizeof(std::uint64_t); i += 64 / sizeof(std::uint64_t))
    (void)buf[i];
  std::free(const_cast<std::uint64_t*>(buf));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int run(const Args& a) {
  Matrix ma(a.n, 0), mb(a.n, 1), mc(a.n, -1);
  const Operands op{{ma.p, a.n, a.n}, {mb.p, a.n, a.n}, {mc.p, a.n, a.n}, a.n, a.bs};
  // Kernel references: per (kk tile, i, j) one load and one store of C plus 2 per k.
  std::uint64_t refs = 0;
  for (std::size_t kk = 0; kk < a.n; kk += a.bs)
    refs += a.n * a.n * (2 + 2 * (std::min(kk + a.bs, a.n) - kk));
  refs *= static_cast<std::uint64_t>(a.reps);
  evict_caches(a);
  nlohmann::json j{
      {"mode", a.mode}, {"n", a.n}, {"bs", a.bs}, {"reps", a.reps}, {"kernel_refs", refs}};
  if (a.mode == "native") {
    pmlab::mem::PlainBackend be({}, 1);
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    for (int r = 0; r < a.reps; ++r) pmlab::kernels::tmm::run_base(be, op);
    j["kernel_cpu_seconds"] = cpu_seconds() - c0;
    j["kernel_seconds"] = seconds_since(t0);
  } else if (a.mode == "sim") {
    pmlab::sim::SimParams p = pmlab::sim::cachegrind_like(a.d1, a.ll);
    p.inclusive_llc = a.inclusive;
    pmlab::sim::SimBackend be(p, pmlab::sim::FlushMode::kNone, 1);
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    for (int r = 0; r < a.reps; ++r) pmlab::kernels::tmm::run_base(be, op);
    j["kernel_cpu_seconds"] = cpu_seconds() - c0;
    j["kernel_seconds"] = seconds_since(t0);
    const auto s = be.stats();
    j["accesses"] = s.accesses();
    j["D1_misses"] = s.l1().misses;
    j["LL_misses"] = s.llc().misses;
    j["filtered"] = s.filtered_accesses;
    j["inclusive"] = a.inclusive;
  }
  // Keeps the result observable so the kernel cannot be optimised away.
  double sum = 0;
  for (std::size_t i = 0; i < a.n * a.n; i += 97) sum += mc.p[i];
  j["c_sample"] = sum;
  fmt::print("{}\n", j.dump());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cachegrind_tmm: %s\n", e.what());
    return 2;
  }
}
