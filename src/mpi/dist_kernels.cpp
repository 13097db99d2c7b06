// The distributed jacobi and cg descriptions (operands = the rank's share plus its halo; rows =
// base and the coordinated LP) and the distributed execution: every rank recovers when any rank
// was interrupted, so that every collective is met by every rank.
#include "dist_kernels.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <tuple>
#include <vector>

#include "comm.hpp"
#include "dist_cg.hpp"
#include "dist_jacobi.hpp"
#include "dist_lp.hpp"
#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/iterative_rows.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::dist {
namespace {

int ranks_of(const pool::RunParams& p) {
  return static_cast<int>(p.kernel_param(kRanksParam, 1));
}
int rank_of(const pool::RunParams& p) {
  return static_cast<int>(p.kernel_param(kRankParam, 0));
}

std::vector<run::KernelParamSpec> job_params() {
  return {{.name = kRanksParam, .help = "ranks of the job", .min = 1, .max = 1u << 20},
          {.name = kRankParam, .help = "this pool's rank", .min = 0, .max = 1u << 20},
          {.name = kJobParam, .help = "the job's id", .min = 0}};
}

// Each rank needs a block of its own: the share is whole blocks (comm.hpp share_of).
void require_blocks(std::string_view kernel, const pool::RunParams& p) {
  const std::uint64_t blocks = (p.n + p.bs - 1) / p.bs;
  if (blocks < static_cast<std::uint64_t>(ranks_of(p)))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: {} ranks need at least {} blocks of --bs rows, but --n {} "
                            "--bs {} makes {}: lower --bs or use fewer ranks",
                            kernel, ranks_of(p), ranks_of(p), p.n, p.bs, blocks));
}

// ---- jacobi ------------------------------------------------------------------------------

namespace dj = dist::jacobi;

std::size_t jacobi_iterations(const pool::RunParams& p) {
  return p.kernel_param("iters", kernels::jacobi::kDefaultIterations);
}

dj::Operands jacobi_shape(const pool::RunParams& p) {
  dj::Operands op = dj::shape(p.n, p.bs, jacobi_iterations(p), p.seed, ranks_of(p), rank_of(p));
  op.lp_anchor = p.kernel_param("lp-anchor", run::kDefaultLpAnchor);
  return op;
}

constexpr auto kJacobiSchemes =
    std::tuple{scheme::restart_base_scheme(), dist_lp_scheme<jacobi_shape>()};

struct Jacobi {
  using Operands = dj::Operands;
  static constexpr std::string_view kName = "jacobi";
  static constexpr std::uint64_t kCrashTestMaxN = 200;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kJacobiSchemes;
  static std::uint64_t outer_steps(const pool::RunParams& p) { return jacobi_iterations(p); }
  static std::vector<run::KernelParamSpec> params() {
    auto ps = job_params();
    ps.push_back(run::iterations_param());
    ps.push_back(run::lp_anchor_param());
    return ps;
  }
  static void validate(const pool::RunParams& p) {
    run::require_sizes(kName, p, 1u << 14);
    require_blocks(kName, p);
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const Operands op = jacobi_shape(p);
    const std::uint64_t band = op.rows() * op.n * sizeof(double);
    return {{"f", band}, {"res", band}, {"state", op.state_bytes()}};
  }
  static Operands operands(const pool::Pool& pool) {
    Operands op = jacobi_shape(pool.params());
    op.f = pool.array<const double>("f");
    op.res = pool.array<double>("res");
    op.s = pool.array<double>("state");
    op.comm = &world();
    op.halo = std::make_shared<std::vector<double>>(2 * op.n);
    return op;
  }
  static void init(pool::Pool& pool) {
    const Operands op = operands(pool);
    dj::fill_inputs(pool.array<double>("f"), op);
    mem::PlainBackend be({}, 1);
    dj::initial_state(be, op);
  }
  static run::OutputBytes output(const Operands& op) { return {op.s, op.state_bytes()}; }
  // The rank's rows of the single-process reference.
  static run::VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const Operands me = jacobi_shape(p);
    kernels::jacobi::Operands ref;
    ref.n = p.n;
    ref.bs = p.bs;
    ref.seed = p.seed;
    kernels::jacobi::set_shape(ref, jacobi_iterations(p));
    std::vector<double> f(ref.n * ref.n), res(ref.n * ref.n), s(ref.elements);
    kernels::jacobi::fill_inputs(f.data(), ref.n, p.seed);
    ref.f = f.data();
    ref.res = res.data();
    ref.s = s.data();
    mem::PlainBackend be({}, 1);
    kernels::jacobi::initial_state(be, ref);
    kernels::iterative::run_base(be, ref, 0);
    const std::size_t n = p.n, cells = me.rows() * n;
    std::vector<double> want(s.begin() + me.r0 * n, s.begin() + me.r1 * n);
    want.insert(want.end(), s.end() - kernels::jacobi::kScalars, s.end());
    return run::compare_bits(pool.array<const double>("state"), want, [&](std::size_t i) {
      if (i < cells) return fmt::format("u[{}][{}]", me.r0 + i / n, i % n);
      return std::string(i == cells ? "|res|^2" : "iterations");
    });
  }
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return jacobi_iterations(p) * p.n * p.n * 10;
  }
};
static_assert(run::ResumableKernel<Jacobi>);

// ---- cg ----------------------------------------------------------------------------------

namespace dc = dist::cg;

std::size_t cg_entries(const pool::RunParams& p) {
  return kernels::cg::entries_for(p.kernel_param("nnz", 0), p.n);
}
std::size_t cg_iterations(const pool::RunParams& p) {
  return p.kernel_param("iters", kernels::cg::kDefaultIterations);
}

dc::Operands cg_shape(const pool::RunParams& p) {
  dc::Operands op = dc::shape(p.n, cg_entries(p), p.bs, cg_iterations(p), ranks_of(p), rank_of(p));
  op.lp_anchor = p.kernel_param("lp-anchor", run::kDefaultLpAnchor);
  return op;
}

kernels::cg::Operands cg_reference_shape(const pool::RunParams& p) {
  kernels::cg::Operands op;
  op.n = p.n;
  op.w = cg_entries(p);
  op.bs = p.bs;
  kernels::cg::set_shape(op, cg_iterations(p));
  return op;
}

constexpr auto kCgSchemes = std::tuple{scheme::restart_base_scheme(), dist_lp_scheme<cg_shape>()};

struct Cg {
  using Operands = dc::Operands;
  static constexpr std::string_view kName = "cg";
  static constexpr std::uint64_t kCrashTestMaxN = 1000;
  static constexpr std::uint64_t kDefaultBs = 256;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kCgSchemes;
  static std::uint64_t outer_steps(const pool::RunParams& p) { return cg_iterations(p); }
  static std::vector<run::KernelParamSpec> params() {
    auto ps = job_params();
    ps.push_back({.name = "nnz",
                  .help = "entries per matrix row (as pmlab run cg)",
                  .min = 1,
                  .max = 1u << 10});
    ps.push_back(run::iterations_param());
    ps.push_back(run::lp_anchor_param());
    return ps;
  }
  static void validate(const pool::RunParams& p) {
    run::require_sizes(kName, p, 1u << 24);
    const std::uint64_t w = cg_entries(p);
    if (w % 2 == 0 || w > p.n)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("cg: --nnz must be odd and <= --n = {}, got {}", p.n, w));
    require_blocks(kName, p);
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const Operands op = cg_shape(p);
    const std::uint64_t m = op.rows(), w = op.w;
    return {{"a_vals", m * w * sizeof(double)},
            {"a_cols", m * w * sizeof(std::uint64_t)},
            {"b", m * sizeof(double)},
            {"q", m * sizeof(double)},
            {"state", op.state_bytes()}};
  }
  static Operands operands(const pool::Pool& pool) {
    Operands op = cg_shape(pool.params());
    op.vals = pool.array<const double>("a_vals");
    op.cols = pool.array<const std::uint64_t>("a_cols");
    op.b = pool.array<const double>("b");
    op.q = pool.array<double>("q");
    op.s = pool.array<double>("state");
    op.comm = &world();
    op.p_all = std::make_shared<std::vector<double>>(op.n);
    return op;
  }
  static void init(pool::Pool& pool) {
    const Operands op = operands(pool);
    dc::fill_inputs(pool.array<double>("a_vals"), pool.array<std::uint64_t>("a_cols"),
                    pool.array<double>("b"), op, pool.params().seed);
    mem::PlainBackend be({}, 1);
    dc::initial_state(be, op);
  }
  static run::OutputBytes output(const Operands& op) { return {op.s, op.state_bytes()}; }
  static run::VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const Operands me = cg_shape(p);
    kernels::cg::HeapProblem ref(cg_reference_shape(p), p.seed);
    mem::PlainBackend be({}, 1);
    kernels::iterative::run_base(be, ref.op, 0);
    const std::size_t n = p.n, m = me.rows();
    std::vector<double> want;
    for (std::size_t v = 0; v < 3; ++v)
      want.insert(want.end(), ref.s.begin() + v * n + me.r0, ref.s.begin() + v * n + me.r1);
    want.insert(want.end(), ref.s.end() - kernels::cg::kScalars, ref.s.end());
    return run::compare_bits(pool.array<const double>("state"), want, [&](std::size_t i) {
      static constexpr const char* kNames[] = {"z", "r", "p"};
      if (i < 3 * m) return fmt::format("{}[{}]", kNames[i / m], me.r0 + i % m);
      static constexpr const char* kScalarNames[] = {"rho", "|z|^2", "alpha", "beta"};
      return std::string(kScalarNames[i - 3 * m]);
    });
  }
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return cg_iterations(p) * p.n * (3 * cg_entries(p) + 13);
  }
};
static_assert(run::ResumableKernel<Cg>);

// ---- the distributed run -----------------------------------------------------------------

// run::execute_resumable with the ranks kept in step: a pool that is done skips its run only
// when every rank's is; otherwise every rank recovers (a done rank's recovery finds its result
// and resumes at the end) so that the agreement's collective is met by all.
template <run::ResumableKernel K>
run::RunReport execute_distributed(pool::Pool& pool, const run::ExecOptions& opt) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const Comm& comm = world();
  const pool::RunParams& p = pool.params();
  run::validate_run<K>(p);
  run::require_layout_tag<K>(pool);
  run::RunReport report;
  const bool done = pool.state() == pool::RunState::kDone;
  if (comm.min_of(done ? 1 : 0) == 1) {
    report.recovery_action = "none (run already complete)";
    return report;
  }
  report.resumed = comm.max_of(pool.state() != pool::RunState::kInitialized ? 1 : 0) == 1;
  pool.count_start();
  pool.set_state(pool::RunState::kRunning);
  const run::ContextOf<K> ctx{pool, K::operands(pool), p};
  run::with_native_backend(pool, opt, static_cast<int>(p.threads), [&](auto& be) {
    scheme::with_scheme(K::schemes, p.scheme, [&](const auto& scheme) {
      scheme.prepare(be, ctx);
      comm.barrier();  // every rank's pool is open: the timings start together
      const auto t0 = Clock::now();
      const std::size_t first = report.resumed ? scheme.recover(be, ctx, report) : 0;
      report.recovery_seconds = seconds_since(t0);
      report.resume_point = first;
      const double cpu1 = run::process_cpu_seconds();
      const auto t1 = Clock::now();
      scheme.run(be, ctx, first);
      report.compute_seconds = seconds_since(t1);
      report.compute_cpu_seconds = run::process_cpu_seconds() - cpu1;
    });
    const run::OutputBytes out = K::output(ctx.op);
    pool.persist(out.data, out.bytes);
  });
  pool.set_state(pool::RunState::kDone);
  return report;
}

// Rank 0 gets the state of every rank in the single-process layout: each vector's pieces in rank
// order, then the scalars (equal on every rank).
template <run::ResumableKernel K>
std::vector<double> gather_state(const pool::Pool& pool) {
  const Comm& comm = world();
  const typename K::Operands op = K::operands(pool);
  const std::size_t tail = op.elements - op.tail_begin();
  std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    pool::RunParams pr = pool.params();
    pr.set_kernel_param(kRankParam, static_cast<std::uint64_t>(r));
    counts[static_cast<std::size_t>(r)] =
        K::arrays(pr).back().bytes / sizeof(double);  // "state" is the last array
  }
  const std::vector<double> all = comm.gather({op.s, op.elements}, counts);
  if (comm.rank() != 0) return {};
  std::vector<double> out;
  for (std::size_t v = 0; v < op.vectors; ++v) {
    std::size_t at = 0;
    for (const std::size_t c : counts) {
      const std::size_t per = (c - tail) / op.vectors;
      out.insert(out.end(), all.begin() + static_cast<std::ptrdiff_t>(at + v * per),
                 all.begin() + static_cast<std::ptrdiff_t>(at + (v + 1) * per));
      at += c;
    }
  }
  out.insert(out.end(), all.begin() + static_cast<std::ptrdiff_t>(counts[0] - tail),
             all.begin() + static_cast<std::ptrdiff_t>(counts[0]));
  return out;
}

template <run::ResumableKernel K>
DistDriver make_dist_driver() {
  DistDriver d{run::make_kernel_driver<K>(), gather_state<K>, "state"};
  d.driver.execute = execute_distributed<K>;
  return d;
}

}  // namespace

const std::vector<DistDriver>& dist_drivers() {
  static const std::vector<DistDriver> all{make_dist_driver<Jacobi>(), make_dist_driver<Cg>()};
  return all;
}

const DistDriver* dist_driver_named(const std::string& name) {
  for (const auto& d : dist_drivers())
    if (d.driver.name == name) return &d;
  return nullptr;
}

}  // namespace pmlab::dist
