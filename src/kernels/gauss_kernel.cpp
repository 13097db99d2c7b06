// Gaussian elimination as the drivers see it: arrays, [A | b] input, scheme table (base, lp, ep,
// wal, cp, hr-x8), verification — one description for `pmlab run` and the simulator.
#include <cstring>
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/gauss_rivals.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace ga = kernels::gauss;

// Sizes only (no arrays): table and record counts.
ga::Operands shape_of(const pool::RunParams& p) {
  return {{nullptr, p.n, p.n + 1}, {nullptr, p.n, p.n + 1}, p.n, p.bs};
}

// Outer iteration = elimination step k (column k); the row blocks are the regions.
constexpr auto kSchemes = in_place_schemes<shape_of>();

struct Gauss {
  using Operands = ga::Operands;
  static constexpr std::string_view kName = "gauss";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams& p) {
    return kernels::gauss::rival_steps(shape_of(p));
  }
  static constexpr std::uint64_t kCrashTestMaxN = 400;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static void validate(const pool::RunParams& p) { require_sizes(kName, p, 1u << 16); }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t mat = p.n * (p.n + 1) * sizeof(double);
    return {{"a", mat}, {"w", mat}};
  }
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    ga::fill_input(pool.array<double>("a"), p.n, p.seed);
    std::memcpy(pool.array<double>("w"), pool.array<const double>("a"),
                p.n * (p.n + 1) * sizeof(double));
  }
  static Operands operands(const pool::Pool& pool) {
    const std::size_t n = pool.params().n;
    return {{pool.array<const double>("a"), n, n + 1},
            {pool.array<double>("w"), n, n + 1},
            n,
            pool.params().bs};
  }
  static OutputBytes output(const Operands& op) { return {op.w.data(), op.w.bytes()}; }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n;
    std::vector<double> a(n * (n + 1));
    ga::fill_input(a.data(), n, p.seed);
    std::vector<double> w = a;
    mem::PlainBackend be({}, 1);
    ga::run_base(be, ga::Operands{{a.data(), n, n + 1}, {w.data(), n, n + 1}, n, p.bs});
    return compare_bits(pool.array<const double>("w"), w, [n](std::size_t i) {
      return fmt::format("W[{}][{}]", i / (n + 1), i % (n + 1));
    });
  }
  // Step k: two loads and a store per element of the trailing (n-k) x (n-k+1) block.
  static std::uint64_t base_refs(const pool::RunParams& p) { return p.n * p.n * p.n; }
};
static_assert(ResumableKernel<Gauss>);

}  // namespace

KernelDriver make_gauss_driver() {
  return make_kernel_driver<Gauss>();
}
SimKernel make_gauss_sim() {
  return make_sim_kernel<Gauss>();
}

}  // namespace pmlab::run
