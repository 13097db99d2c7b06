// Tiled LU as the drivers see it: arrays, diagonally dominant input, scheme table (base, lp, ep,
// wal, cp, hr-x8), verification — one description for `pmlab run` and the simulator.
#include <cstring>
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/lu.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace lu = kernels::lu;

// Sizes only (no arrays): table and record counts.
lu::Operands shape_of(const pool::RunParams& p) {
  return {{nullptr, p.n, p.n}, {nullptr, p.n, p.n}, {p.n, p.bs}};
}

// Outer iteration = factorization step k (block row and column k).
constexpr auto kSchemes = in_place_schemes<shape_of>();

struct Lu {
  using Operands = lu::Operands;
  static constexpr std::string_view kName = "lu";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams& p) { return shape_of(p).tiles(); }
  static constexpr std::uint64_t kCrashTestMaxN = 500;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static void validate(const pool::RunParams& p) { require_sizes(kName, p, 1u << 16); }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t mat = p.n * p.n * sizeof(double);
    return {{"a", mat}, {"w", mat}};
  }
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    lu::fill_input(pool.array<double>("a"), p.n, p.seed);
    std::memcpy(pool.array<double>("w"), pool.array<const double>("a"), p.n * p.n * sizeof(double));
  }
  static Operands operands(const pool::Pool& pool) {
    const std::size_t n = pool.params().n;
    return {{pool.array<const double>("a"), n, n},
            {pool.array<double>("w"), n, n},
            {n, pool.params().bs}};
  }
  static OutputBytes output(const Operands& op) { return {op.w.data(), op.w.bytes()}; }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n;
    std::vector<double> a(n * n);
    lu::fill_input(a.data(), n, p.seed);
    std::vector<double> w = a;
    mem::PlainBackend be({}, 1);
    lu::run_base(be, lu::Operands{{a.data(), n, n}, {w.data(), n, n}, {n, p.bs}});
    return compare_bits(pool.array<const double>("w"), w,
                        [n](std::size_t i) { return fmt::format("W[{}][{}]", i / n, i % n); });
  }
  // 2n³/3 loads in the updates, plus a load and a store per element per step.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return 2 * p.n * p.n * p.n / 3 + 2 * p.n * p.n * ((p.n + p.bs - 1) / p.bs) / 3;
  }
};
static_assert(ResumableKernel<Lu>);

}  // namespace

KernelDriver make_lu_driver() {
  return make_kernel_driver<Lu>();
}
SimKernel make_lu_sim() {
  return make_sim_kernel<Lu>();
}

}  // namespace pmlab::run
