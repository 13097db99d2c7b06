// 2D convolution as the drivers see it: arrays, image and kernel, scheme table (base, lp, ep, wal,
// cp), verification — one description for `pmlab run` and the simulator.
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/conv2d_rivals.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace cv = kernels::conv2d;
using Ctx = SchemeContext<cv::Operands>;

// conv2d's own parameter: the convolution kernel's width (absent: 5, narrowed on tiny images).
std::size_t width_of(const pool::RunParams& p) {
  return cv::width_for(p.kernel_param("width", 0), p.n);
}

// Sizes only (no arrays): table and record counts.
cv::Operands shape_of(const pool::RunParams& p) {
  return {{nullptr, p.n, p.n}, nullptr, width_of(p), {nullptr, p.n, p.n}, p.n, p.bs};
}

// Outer iteration = row blocks done, 0 or all of them: the blocks are independent and run in
// one parallel loop, and recovery (lp, ep) completes every block, so it resumes "at the end".
constexpr auto kSchemes = std::tuple{
    Scheme{.name = kBaseScheme,
           .family = scheme::Family::kBase,
           .run =
               [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
                 if (first < c.op.blocks()) cv::run_base(be, c.op);
               },
           .recover = [](mem::Backend auto&, const Ctx&, RunReport& r) -> std::size_t {
             r.recovery_action = "restart";  // out of place: the inputs are intact, run again
             return 0;
           }},
    lp_scheme<shape_of>(),  // one slot per block
    ep_scheme<shape_of>(),  // one record per block
    wal_scheme<shape_of>(),
    wal_entry_scheme<shape_of>(),
    cp_scheme<shape_of>(),
    cp_clflush_scheme<shape_of>(),
    cp_par_clflush_scheme<shape_of>(),
    cp_nt_scheme<shape_of>(),
};

struct Conv2d {
  using Operands = cv::Operands;
  static constexpr std::string_view kName = "conv2d";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams& p) { return shape_of(p).blocks(); }
  static constexpr std::uint64_t kCrashTestMaxN = 1500;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static std::vector<KernelParamSpec> params() {
    return {{.name = "width",
             .help = "width of the convolution kernel, odd and <= --n (default 5, narrowed to the "
                     "largest odd width <= n for n < 5)",
             .min = 1,
             .max = 1u << 16}};
  }
  static void validate(const pool::RunParams& p) {
    require_sizes(kName, p, 1u << 16);
    const std::uint64_t w = width_of(p);
    if (w % 2 == 0)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("conv2d: --width must be odd (the kernel has a centre), got {}", w));
    if (w > p.n)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("conv2d: --width must be <= --n = {}, got {}", p.n, w));
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t img = p.n * p.n * sizeof(double), w = width_of(p);
    return {{"in", img}, {"ker", w * w * sizeof(double)}, {"out", img}};
  }
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    cv::fill_input(pool.array<double>("in"), p.n, pool.array<double>("ker"), width_of(p), p.seed);
    // out is zero-filled by the pool; every region rewrites all of its elements.
  }
  static Operands operands(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n;
    return {{pool.array<const double>("in"), n, n},
            pool.array<const double>("ker"),
            width_of(p),
            {pool.array<double>("out"), n, n},
            n,
            p.bs};
  }
  static OutputBytes output(const Operands& op) { return {op.out.data(), op.out.bytes()}; }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n, w = width_of(p);
    std::vector<double> in(n * n), ker(w * w), out(n * n);
    cv::fill_input(in.data(), n, ker.data(), w, p.seed);
    mem::PlainBackend be({}, 1);
    cv::run_base(be, cv::Operands{{in.data(), n, n}, ker.data(), w, {out.data(), n, n}, n, p.bs});
    return compare_bits(pool.array<const double>("out"), out,
                        [n](std::size_t i) { return fmt::format("out[{}][{}]", i / n, i % n); });
  }
  // Two loads per kernel tap and one store per output element.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    const std::uint64_t w = width_of(p);
    return p.n * p.n * (2 * w * w + 1);
  }
};
static_assert(ResumableKernel<Conv2d>);

}  // namespace

KernelDriver make_conv2d_driver() {
  return make_kernel_driver<Conv2d>();
}
SimKernel make_conv2d_sim() {
  return make_sim_kernel<Conv2d>();
}

}  // namespace pmlab::run
