// NAS-CG-shaped conjugate gradient as the drivers see it: matrix, right-hand side, scheme table
// (base, lp, wal, cp and seed 002's variants, ipv-sync, ipv), verification.
#include <tuple>
#include <vector>

#include "pmlab/kernels/cg.hpp"
#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/iterative_rows.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace cgk = kernels::cg;
using Ctx = SchemeContext<cgk::Operands>;

std::size_t entries_of(const pool::RunParams& p) {
  return cgk::entries_for(p.kernel_param("nnz", 0), p.n);
}
std::size_t iterations_of(const pool::RunParams& p) {
  return p.kernel_param("iters", cgk::kDefaultIterations);
}

// Sizes only (no arrays).
cgk::Operands shape_of(const pool::RunParams& p) {
  cgk::Operands op;
  op.n = p.n;
  op.w = entries_of(p);
  op.bs = p.bs;
  cgk::set_shape(op, iterations_of(p));
  op.lp_anchor = p.kernel_param("lp-anchor", kDefaultLpAnchor);
  return op;
}

// Outer iteration = CG iteration.
constexpr auto kSchemes = iterative_schemes<shape_of>();

struct Cg {
  using Operands = cgk::Operands;
  static constexpr std::string_view kName = "cg";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams& p) { return iterations_of(p); }
  static constexpr std::uint64_t kCrashTestMaxN = 1000;
  // bs values of one vector per LP region: 256 holds as much data per checksum as a 16 x 16
  // tile; at 16 the regions' folds and commits were half of LP's cost (KernelDriver::default_bs).
  static constexpr std::uint64_t kDefaultBs = 256;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static std::vector<KernelParamSpec> params() {
    return {{.name = "nnz",
             .help = "entries per matrix row, odd and <= --n (default 7, NPB class S's nonzer; "
                     "narrowed to the largest odd count <= n for n < 7)",
             .min = 1,
             .max = 1u << 10},
            iterations_param(),
            lp_anchor_param()};
  }
  static void validate(const pool::RunParams& p) {
    require_sizes(kName, p, 1u << 24);
    const std::uint64_t w = entries_of(p);
    if (w % 2 == 0)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("cg: --nnz must be odd (a band centred on the diagonal), got {}", w));
    if (w > p.n)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("cg: --nnz must be <= --n = {}, got {}", p.n, w));
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t n = p.n, w = entries_of(p);
    return {{"a_vals", n * w * sizeof(double)},
            {"a_cols", n * w * sizeof(std::uint64_t)},
            {"b", n * sizeof(double)},
            {"q", n * sizeof(double)},
            {"state", Operands::state_elements(n) * sizeof(double)}};
  }
  static Operands operands(const pool::Pool& pool) {
    Operands op = shape_of(pool.params());
    op.vals = pool.array<const double>("a_vals");
    op.cols = pool.array<const std::uint64_t>("a_cols");
    op.b = pool.array<const double>("b");
    op.q = pool.array<double>("q");
    op.s = pool.array<double>("state");
    return op;
  }
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    cgk::make_matrix(pool.array<double>("a_vals"), pool.array<std::uint64_t>("a_cols"), p.n,
                     entries_of(p), p.seed);
    cgk::make_rhs(pool.array<double>("b"), p.n, p.seed);
    mem::PlainBackend be({}, 1);
    cgk::initial_state(be, operands(pool));
  }
  static OutputBytes output(const Operands& op) { return {op.s, op.state_bytes()}; }
  static std::vector<scheme::IpvObject> ipv_objects(const Operands& op) {
    return iterative_ipv_objects(op, {"z", "r", "p"});
  }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    cgk::HeapProblem ref(shape_of(p), p.seed);
    mem::PlainBackend be({}, 1);
    kernels::iterative::run_base(be, ref.op, 0);
    const std::size_t n = ref.op.n;
    return compare_bits(pool.array<const double>("state"), ref.s, [n](std::size_t i) {
      static constexpr const char* kNames[] = {"z", "r", "p"};
      if (i < 3 * n) return fmt::format("{}[{}]", kNames[i / n], i % n);
      static constexpr const char* kScalarNames[] = {"rho", "|z|^2", "alpha", "beta"};
      return std::string(kScalarNames[i - 3 * n]);
    });
  }
  // Per iteration and row: the SpMV's 3 loads per entry + 1 store, then about 12 vector refs.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return iterations_of(p) * p.n * (3 * entries_of(p) + 13);
  }
};
static_assert(ResumableKernel<Cg>);

}  // namespace

KernelDriver make_cg_driver() {
  return make_kernel_driver<Cg>();
}
SimKernel make_cg_sim() {
  return make_sim_kernel<Cg>();
}

}  // namespace pmlab::run
