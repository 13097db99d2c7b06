// GEMM (thesis Ch. 4) as the drivers see it: arrays, A and B inputs, the variant and packing from
// its own parameters (variant, pack, mr, nr), scheme table (base, ep-lazy, ep-eager, lp),
// verification against naive.
#include <string_view>
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/gemm.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

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
  return c;
}

// Sizes only (no arrays): table and record counts.
gm::Operands shape_of(const pool::RunParams& p) {
  return {{nullptr, p.n, p.n}, {nullptr, p.n, p.n}, {nullptr, p.n, p.n}, p.n, p.bs, config_of(p)};
}

template <gm::Grain G>
constexpr auto ep_scheme(std::string_view name) {
  return Scheme{.name = name,
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

// The outer iteration is a kc step for GEPP1/GEPP2 and "all done" (0 or 1) for the others.
constexpr auto kSchemes = std::tuple{
    Scheme{.name = "base",
           .run = [](mem::Backend auto& be, const Ctx& c,
                     std::size_t first) { gm::run_base(be, c.op, first); },
           .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
             r.recovery_action = "restart";  // C += A·B in place: back to C = 0
             gm::restart(be, c.op);
             return 0;
           }},
    ep_scheme<gm::Grain::kLazy>("ep-lazy"),
    ep_scheme<gm::Grain::kEager>("ep-eager"),
    Scheme{.name = "lp",
           .arrays =
               [](const pool::RunParams& p) {
                 return std::vector{lp_table_spec(shape_of(p).table_slots())};
               },
           .run =
               [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
                 lp::with_checksum_kind(c.params.checksum, [&](auto kind) {
                   gm::run_lp<decltype(kind)::value>(be, c.op, c.checksum_table(), first);
                 });
               },
           .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
             r.recovery_action = "lp-recovery";
             return lp::with_checksum_kind(c.params.checksum, [&](auto kind) {
               return gm::recover_lp<decltype(kind)::value>(be, c.op, c.checksum_table(),
                                                            r.recovery);
             });
           },
           .mutants = kLpMutants},
};

struct Gemm {
  using Operands = gm::Operands;
  static constexpr std::string_view kName = "gemm";
  static constexpr std::uint64_t kCrashTestMaxN = 400;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  // Loop nest, packing and micro-tile: the CLI offers them as --variant, --pack, --mr, --nr.
  static std::vector<KernelParamSpec> params() {
    std::vector<std::string> names(gm::kVariantNames.begin(), gm::kVariantNames.end());
    return {{.name = "variant",
             .help = "loop nest (thesis Ch. 4, docs/gemm.md; default gepp1)",
             .choices = names},
            {.name = "pack",
             .help = "pack the A and B blocks (GotoBLAS) before each second-level call",
             .flag = true},
            {.name = "mr",
             .help = "micro-tile rows (default 4)",
             .min = 1,
             .max = gm::Config::kMaxMicro},
            {.name = "nr",
             .help = "micro-tile columns (default 8)",
             .min = 1,
             .max = gm::Config::kMaxMicro}};
  }
  static void validate(const pool::RunParams& p) {
    require_sizes(kName, p, kMaxN);
    require_table_fits(kName, p, lp::ChecksumTable::bytes_for(shape_of(p).table_slots()),
                       "panel and kc step");
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
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (std::size_t k = 0; k < n; ++k) acc = std::fma(a[i * n + k], b[k * n + j], acc);
        c[i * n + j] = acc;
      }
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
