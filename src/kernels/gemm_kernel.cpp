// GEMM (thesis Ch. 4) as the drivers see it: arrays, A and B inputs, the variant and packing from
// its own parameters (variant, pack, mr, nr), scheme table (base, ep-lazy, ep-eager, lp, hr),
// verification against naive.
#include <string_view>
#include <tuple>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/gemm.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/partial_copy.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace gm = kernels::gemm;
using Ctx = SchemeContext<gm::Operands>;

constexpr std::uint64_t kMaxN = 1u << 16;

// gemm's own parameters (Gemm::params), each at its default when absent.
gm::Config config_of(const pool::RunParams& p) {
  gm::Config c;
  c.variant = static_cast<gm::Variant>(p.kernel_param("variant", 0));
  c.pack = p.kernel_param("pack", 0) != 0;
  c.mr = static_cast<std::uint32_t>(p.kernel_param("mr", c.mr));
  c.nr = static_cast<std::uint32_t>(p.kernel_param("nr", c.nr));
  c.row_order = p.kernel_param("order", 0) != 0;
  c.pack_dram = p.kernel_param("pack-mem", 0) != 0;
  c.pack_panels = p.kernel_param("pack-layout", 0) != 0;
  c.mc = p.kernel_param("mc", 0);  // 0: the run's --bs
  c.kc = p.kernel_param("kc", 0);
  c.nc = p.kernel_param("nc", 0);
  c.micro = static_cast<gm::Micro>(p.kernel_param("micro", 0));
  if (c.micro != gm::Micro::kScalar) {
    // The micro-kernel's shape and layout; blocking not given comes from this host's caches,
    // read at run time (so a pool written without --mc/--kc resumes on a host like its own).
    c.pack = c.pack_panels = true;
    c.mr = static_cast<std::uint32_t>(gm::micro::kMr);
    c.nr = static_cast<std::uint32_t>(gm::micro::kNr);
    const auto blocking = gm::micro::blocking_for(gm::micro::host_caches());
    if (c.mc == 0) c.mc = blocking.mc;
    if (c.kc == 0) c.kc = blocking.kc;
    if (c.nc == 0) c.nc = blocking.nc;
  }
  return c;
}

// The reference product: C = A·B with, per element, one fused multiply-add per term in
// ascending k from 0. The loops run i, k, j (B and C in unit stride), which keeps each
// element's order, so the bits equal the textbook i, j, k loop's. Where the CPU has FMA the
// loop is compiled for it, so that the fma is one instruction over a vector of j (lanes are
// different elements: nothing is reordered); elsewhere it is libm's exact fma. The loop is
// written into each target's function: a shared template could be left uninlined, and then
// compiled without FMA.
#define PMLAB_NAIVE_PRODUCT(FMA)                                          \
  for (std::size_t i = 0; i < n; ++i)                                     \
    for (std::size_t k = 0; k < n; ++k) {                                 \
      const double aik = a[i * n + k];                                    \
      const double* bk = b + k * n;                                       \
      double* ci = c + i * n;                                             \
      for (std::size_t j = 0; j < n; ++j) ci[j] = FMA(aik, bk[j], ci[j]); \
    }
__attribute__((target("avx2,fma"))) void naive_product_fma(const double* a, const double* b,
                                                           double* c, std::size_t n) {
  PMLAB_NAIVE_PRODUCT(__builtin_fma)
}
void naive_product(const double* a, const double* b, double* c, std::size_t n) {
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    naive_product_fma(a, b, c, n);
    return;
  }
  PMLAB_NAIVE_PRODUCT(std::fma)
}
#undef PMLAB_NAIVE_PRODUCT

// Sizes only (no arrays): table and record counts.
gm::Operands shape_of(const pool::RunParams& p) {
  return {{nullptr, p.n, p.n}, {nullptr, p.n, p.n}, {nullptr, p.n, p.n}, p.n, p.bs, config_of(p)};
}

template <gm::Grain G>
constexpr auto ep_scheme(std::string_view name) {
  return Scheme{.name = name,
                .family = scheme::Family::kEp,
                .arrays =
                    [](const pool::RunParams& p) {
                      return std::vector{ep_index_spec(shape_of(p).panels())};  // one per panel
                    },
                .run =
                    [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
                      gm::run_ep<G>(be, c.op, c.index_records(c.op.panels()), first);
                    },
                .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
                  r.recovery_action = "ep-recovery";
                  return gm::recover_ep<G>(be, c.op, c.index_records(c.op.panels()), r.recovery);
                },
                .mutants = kEagerMutants};
}

// Hybrid Recompute (thesis §3.2.1) on ep-lazy: 1/kHrParts of C copied durably after every kc
// step, round robin, so an unfinished panel restarts from the newest copy instead of zero. Only
// GEPP has a step after which all of C is consistent (the others finish panel after panel), so
// `hr` is offered for gepp1/gepp2 (Gemm::validate). 8 parts: at n/bs = 16 steps, every part is
// copied twice per run (docs/gemm.md).
constexpr std::size_t kHrParts = 8;
scheme::PartialCopier copier_of(const Ctx& c) {
  return {c.op.c.data(), c.pool.array<double>(scheme::kHrCopyArray),
          c.pool.array<scheme::PartState>(scheme::kHrPartsArray), c.op.n * c.op.n, kHrParts};
}

constexpr auto hr_scheme() {
  return Scheme{
      .name = "hr",
      .family = scheme::Family::kHr,
      .arrays =
          [](const pool::RunParams& p) {
            return std::vector{
                ep_index_spec(shape_of(p).panels()),
                pool::ArraySpec{scheme::kHrCopyArray, scheme::PartialCopier::copy_bytes(p.n * p.n)},
                pool::ArraySpec{scheme::kHrPartsArray,
                                scheme::PartialCopier::state_bytes(kHrParts)}};
          },
      .run =
          [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
            const auto copier = copier_of(c);
            gm::run_ep<gm::Grain::kLazy>(be, c.op, c.index_records(c.op.panels()), first, &copier);
          },
      .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
        r.recovery_action = "restore latest partial copy + recompute";
        const auto copier = copier_of(c);
        return gm::recover_ep<gm::Grain::kLazy>(be, c.op, c.index_records(c.op.panels()),
                                                r.recovery, &copier);
      },
      .mutants = kEagerMutants,
      .validate =
          [](std::string_view, const pool::RunParams& p) {
            if (!shape_of(p).steps_outer())
              throw Error(
                  ErrorCode::kInvalidArgument,
                  fmt::format("gemm: scheme hr needs a GEPP variant (gepp1, gepp2), whose kc "
                              "steps leave all of C consistent; --variant {} has none",
                              gm::to_string(shape_of(p).cfg.variant)));
          }};
}

// The outer iteration is a kc step for GEPP1/GEPP2 and "all done" (0 or 1) for the others.
constexpr auto kSchemes = std::tuple{
    Scheme{.name = kBaseScheme,
           .family = scheme::Family::kBase,
           .run = [](mem::Backend auto& be, const Ctx& c,
                     std::size_t first) { gm::run_base(be, c.op, first); },
           .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
             r.recovery_action = "restart";  // C += A·B in place: back to C = 0
             gm::restart(be, c.op);
             return 0;
           }},
    ep_scheme<gm::Grain::kLazy>("ep-lazy"),
    ep_scheme<gm::Grain::kEager>("ep-eager"),
    lp_scheme<shape_of>(),
    hr_scheme(),
};

struct Gemm {
  using Operands = gm::Operands;
  static constexpr std::string_view kName = "gemm";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams& p) { return shape_of(p).outer_count(); }
  static constexpr std::uint64_t kCrashTestMaxN = 400;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;
  // The kill tests also run LP and ep-lazy on the native micro-kernel, with blocking small
  // enough that their n <= kCrashTestMaxN runs have many regions to crash in.
  static std::vector<CrashTestVariant> crash_test_variants() {
    return {{.label = "micro",
             .schemes = {"lp", "ep-lazy"},
             .args = {"--micro", "auto", "--mc", "40", "--kc", "24"}}};
  }

  // Loop nest, packing, blocking and micro-tile: the CLI offers them as --variant, --pack,
  // --mc, --kc, --nc, --mr, --nr and the rest below.
  static std::vector<KernelParamSpec> params() {
    std::vector<std::string> names(gm::kVariantNames.begin(), gm::kVariantNames.end());
    return {{.name = "variant",
             .help = "loop nest (thesis Ch. 4, docs/gemm.md; default gepp1)",
             .choices = names},
            {.name = "pack",
             .help = "pack the A and B blocks (GotoBLAS) before each second-level call",
             .flag = true},
            {.name = "mc",
             .help = "rows of a C row panel and of a packed A block (default: --bs)",
             .min = 1,
             .max = kMaxN},
            {.name = "kc",
             .help = "depth of a k step: columns of an A block, rows of a B block (default: --bs)",
             .min = 1,
             .max = kMaxN},
            {.name = "nc",
             .help = "columns of a C column panel and of a packed B block (default: --bs)",
             .min = 1,
             .max = kMaxN},
            {.name = "mr",
             .help = "micro-tile rows (default 4)",
             .min = 1,
             .max = gm::Config::kMaxMicro},
            {.name = "nr",
             .help = "micro-tile columns (default 8)",
             .min = 1,
             .max = gm::Config::kMaxMicro},
            {.name = "order",
             .help = "micro-tile order in GEBP/GEPDOT: goto (nr-column slivers, default) or rows "
                     "(mr-row slivers; docs/gemm.md)",
             .choices = {"goto", "rows"}},
            {.name = "pack-mem",
             .help = "where packing buffers live: nvm (default, the thesis' all-PCM machine) or "
                     "dram (the simulator leaves them out of the NVM statistics)",
             .choices = {"nvm", "dram"}},
            {.name = "micro",
             .help = "micro-kernel of a native GEBP: scalar (default: the generic loop), auto "
                     "(the best of avx512, avx2 and portable this CPU runs), avx512, avx2 or "
                     "portable; other than scalar: gepp1 only, 8x24 micro-panels, --mc/--kc/--nc "
                     "from the caches unless given (docs/gemm-fast.md)",
             .choices = std::vector<std::string>(gm::kMicroNames.begin(), gm::kMicroNames.end())},
            {.name = "pack-layout",
             .help = "how packed blocks are laid out: rows (default: row-major copies) or panels "
                     "(GotoBLAS/BLIS micro-panels: A in mr-row panels, B in nr-column panels, so "
                     "the micro-kernel walks k with unit stride; docs/gemm.md)",
             .choices = {"rows", "panels"}}};
  }
  static void validate(const pool::RunParams& p) {
    require_sizes(kName, p, kMaxN);
    const auto micro = static_cast<gm::Micro>(p.kernel_param("micro", 0));
    if (micro == gm::Micro::kScalar) return;
    const auto refuse = [&](std::string_view why) {
      throw Error(
          ErrorCode::kInvalidArgument,
          fmt::format("gemm: --micro {} {}", gm::kMicroNames[static_cast<int>(micro)], why));
    };
    if (p.kernel_param("variant", 0) != static_cast<std::uint64_t>(gm::Variant::kGepp1))
      refuse("runs GEBP, so it needs --variant gepp1");
    if (p.kernel_param("order", 0) != 0) refuse("walks micro-tiles in Goto's order (--order goto)");
    if (p.kernel_param("pack-layout", 1) != 1) refuse("packs micro-panels (--pack-layout panels)");
    if (p.kernel_param("mr", gm::micro::kMr) != gm::micro::kMr ||
        p.kernel_param("nr", gm::micro::kNr) != gm::micro::kNr)
      refuse(fmt::format("computes {}x{} micro-tiles (--mr {} --nr {})", gm::micro::kMr,
                         gm::micro::kNr, gm::micro::kMr, gm::micro::kNr));
    if (!gm::micro::isa_supported(gm::isa_of(micro)))
      refuse("needs an instruction set this CPU lacks (try --micro auto)");
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t mat = p.n * p.n * sizeof(double);
    return {{"a", mat}, {"b", mat}, {"c", mat}};
  }
  // C is zero-filled by the pool (its initial value).
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    kernels::fill_product_inputs(pool.array<double>("a"), pool.array<double>("b"), p.n, p.seed);
  }
  static Operands operands(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n;
    return {{pool.array<const double>("a"), n, n},
            {pool.array<const double>("b"), n, n},
            {pool.array<double>("c"), n, n},
            n,
            p.bs,
            config_of(p)};
  }
  static OutputBytes output(const Operands& op) { return {op.c.data(), op.c.bytes()}; }
  // Against naive with fma in ascending k: every variant must give exactly these bits.
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n;
    std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
    kernels::fill_product_inputs(a.data(), b.data(), n, p.seed);
    naive_product(a.data(), b.data(), c.data(), n);
    return compare_bits(pool.array<const double>("c"), c,
                        [n](std::size_t i) { return fmt::format("C[{}][{}]", i / n, i % n); });
  }
  // Per kc step every C element is loaded and stored once, plus an A and a B load per k
  // (packing adds its copies; naive does one step over all of k).
  static std::uint64_t base_refs(const pool::RunParams& p) {
    const gm::Operands op = shape_of(p);
    return p.n * p.n * (2 * op.steps() + 2 * p.n);
  }
};
static_assert(ResumableKernel<Gemm>);

}  // namespace

KernelDriver make_gemm_driver() {
  return make_kernel_driver<Gemm>();
}
SimKernel make_gemm_sim() {
  return make_sim_kernel<Gemm>();
}

}  // namespace pmlab::run
