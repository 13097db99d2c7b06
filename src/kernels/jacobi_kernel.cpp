// 2-D damped Jacobi (and its --mg-like variant) as the drivers see it: inputs, scheme table
// (base, lp, wal, cp and seed 002's variants, ipv-sync, ipv), verification.
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/iterative_rows.hpp"
#include "pmlab/kernels/jacobi.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace jk = kernels::jacobi;
using Ctx = SchemeContext<jk::Operands>;

std::size_t iterations_of(const pool::RunParams& p) {
  return p.kernel_param("iters", jk::kDefaultIterations);
}

// Sizes only (no arrays).
jk::Operands shape_of(const pool::RunParams& p) {
  jk::Operands op;
  op.n = p.n;
  op.bs = p.bs;
  op.mg_like = p.kernel_param("mg-like", 0) != 0;
  op.seed = p.seed;
  jk::set_shape(op, iterations_of(p));
  op.lp_anchor = p.kernel_param("lp-anchor", kDefaultLpAnchor);
  return op;
}

// Outer iteration = Jacobi sweep.
constexpr auto kSchemes = iterative_schemes<shape_of>();

struct Jacobi {
  using Operands = jk::Operands;
  static constexpr std::string_view kName = "jacobi";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams& p) { return iterations_of(p); }
  static constexpr std::uint64_t kCrashTestMaxN = 200;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static std::vector<KernelParamSpec> params() {
    return {iterations_param(),
            lp_anchor_param(),
            {.name = "mg-like",
             .help = "NAS MG's shape: the update covers the interior, then a second loop scales "
                     "the whole grid (non-uniform: ipv falls back to a non-temporal copy)",
             .flag = true}};
  }
  static void validate(const pool::RunParams& p) { require_sizes(kName, p, 1u << 14); }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t grid = p.n * p.n * sizeof(double);
    return {{"f", grid}, {"res", grid}, {"state", Operands::state_elements(p.n) * sizeof(double)}};
  }
  static Operands operands(const pool::Pool& pool) {
    Operands op = shape_of(pool.params());
    op.f = pool.array<const double>("f");
    op.res = pool.array<double>("res");
    op.s = pool.array<double>("state");
    return op;
  }
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    jk::fill_inputs(pool.array<double>("f"), p.n, p.seed);
    mem::PlainBackend be({}, 1);
    jk::initial_state(be, operands(pool));
  }
  static OutputBytes output(const Operands& op) { return {op.s, op.state_bytes()}; }
  static std::vector<scheme::IpvObject> ipv_objects(const Operands& op) {
    return iterative_ipv_objects(op, {"u"});
  }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    Operands op = shape_of(p);
    std::vector<double> f(op.n * op.n), res(op.n * op.n), s(op.elements);
    jk::fill_inputs(f.data(), op.n, p.seed);
    op.f = f.data();
    op.res = res.data();
    op.s = s.data();
    mem::PlainBackend be({}, 1);
    jk::initial_state(be, op);
    kernels::iterative::run_base(be, op, 0);
    const std::size_t n = op.n;
    return compare_bits(pool.array<const double>("state"), s, [n](std::size_t i) {
      if (i < n * n) return fmt::format("u[{}][{}]", i / n, i % n);
      return std::string(i == n * n ? "|res|^2" : "iterations");
    });
  }
  // Per sweep and point: 6 loads + 1 store (residual), 2 loads + 1 store (update).
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return iterations_of(p) * p.n * p.n * 10;
  }
};
static_assert(ResumableKernel<Jacobi>);

}  // namespace

KernelDriver make_jacobi_driver() {
  return make_kernel_driver<Jacobi>();
}
SimKernel make_jacobi_sim() {
  return make_sim_kernel<Jacobi>();
}

}  // namespace pmlab::run
