// Tiled Cholesky as the drivers see it: arrays, SPD input, scheme table (base, lp, ep, wal, cp,
// hr-x8), verification — one description for `pmlab run` and the simulator.
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/cholesky.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace ch = kernels::cholesky;

// Sizes only (no arrays): table and record counts.
ch::Operands shape_of(const pool::RunParams& p) {
  return {{nullptr, p.n, p.n}, {nullptr, p.n, p.n}, {p.n, p.bs}};
}

// Outer iteration = factorization step k (one tile column).
constexpr auto kSchemes = in_place_schemes<shape_of>();

struct Cholesky {
  using Operands = ch::Operands;
  static constexpr std::string_view kName = "cholesky";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams& p) { return shape_of(p).tiles(); }
  static constexpr std::uint64_t kCrashTestMaxN = 600;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static void validate(const pool::RunParams& p) { require_sizes(kName, p, 1u << 16); }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t mat = p.n * p.n * sizeof(double);
    return {{"a", mat}, {"l", mat}};
  }
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    ch::fill_input(pool.array<double>("a"), p.n, p.seed);
    ch::fill_work(pool.array<double>("l"), pool.array<const double>("a"), p.n);
  }
  static Operands operands(const pool::Pool& pool) {
    const std::size_t n = pool.params().n;
    return {{pool.array<const double>("a"), n, n},
            {pool.array<double>("l"), n, n},
            {n, pool.params().bs}};
  }
  static OutputBytes output(const Operands& op) { return {op.l.data(), op.l.bytes()}; }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n;
    std::vector<double> a(n * n), l(n * n);
    ch::fill_input(a.data(), n, p.seed);
    ch::fill_work(l.data(), a.data(), n);
    mem::PlainBackend be({}, 1);
    ch::run_base(be, ch::Operands{{a.data(), n, n}, {l.data(), n, n}, {n, p.bs}});
    return compare_bits(pool.array<const double>("l"), l,
                        [n](std::size_t i) { return fmt::format("L[{}][{}]", i / n, i % n); });
  }
  // n³/6 multiply-subtracts, two loads each, plus a load and a store per element per step.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return p.n * p.n * p.n / 3 + p.n * p.n * ((p.n + p.bs - 1) / p.bs);
  }
};
static_assert(ResumableKernel<Cholesky>);

}  // namespace

KernelDriver make_cholesky_driver() {
  return make_kernel_driver<Cholesky>();
}
SimKernel make_cholesky_sim() {
  return make_sim_kernel<Cholesky>();
}

}  // namespace pmlab::run
