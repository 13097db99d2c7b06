// The four-step FFT as the drivers see it: arrays, input and twiddles, scheme table (base, lp,
// ep), verification — one description for `pmlab run` and the simulator.
#include <algorithm>
#include <bit>
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/fft_rivals.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace ff = kernels::fft;
using Ctx = SchemeContext<ff::Operands>;

// Sizes only (no arrays): table and record counts.
ff::Operands shape_of(const pool::RunParams& p) {
  return {nullptr, nullptr, nullptr, nullptr, p.n, p.bs};
}

// Outer iteration = pass (0: columns into y, 1: rows into z).
constexpr auto kSchemes = std::tuple{
    Scheme{.name = kBaseScheme,
           .family = scheme::Family::kBase,
           .run = [](mem::Backend auto& be, const Ctx& c,
                     std::size_t first) { ff::run_base(be, c.op, first); },
           .recover = [](mem::Backend auto&, const Ctx&, RunReport& r) -> std::size_t {
             r.recovery_action = "restart";  // out of place: the inputs are intact, run again
             return 0;
           }},
    lp_scheme<shape_of>(),
    ep_scheme<shape_of>(),
    wal_scheme<shape_of>(),
    wal_entry_scheme<shape_of>(),
    cp_scheme<shape_of>(),
    cp_clflush_scheme<shape_of>(),
    cp_par_clflush_scheme<shape_of>(),
    cp_nt_scheme<shape_of>(),
};

struct Fft {
  using Operands = ff::Operands;
  static constexpr std::string_view kName = "fft";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams&) {
    return static_cast<std::uint64_t>(kernels::fft::kPasses);
  }
  static constexpr std::uint64_t kCrashTestMaxN = 1u << 20;
  static constexpr bool kPowerOfTwoN = true;
  static constexpr const auto& schemes = kSchemes;

  static void validate(const pool::RunParams& p) {
    constexpr std::uint64_t kMaxN = 1u << 28;  // 4 GiB per complex array
    require_in_range(kName, "--n (points)", p.n, 1, kMaxN);
    if (!std::has_single_bit(p.n))
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("fft: --n (number of points) must be a power of two for the radix-2 "
                              "FFT, got {} (nearest: {} or {})",
                              p.n, std::bit_floor(p.n), std::bit_ceil(p.n)));
    require_in_range(kName, "--bs (sub-FFTs per LP region)", p.bs, 1, kMaxN);
    require_in_range(kName, "--threads", p.threads, 1, 1024);
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t vec = 2 * p.n * sizeof(double);
    return {{"x", vec}, {"tw", vec}, {"y", vec}, {"z", vec}};
  }
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    ff::fill_input(pool.array<double>("x"), p.n, p.seed);
    ff::fill_twiddles(pool.array<double>("tw"), p.n);
  }
  static Operands operands(const pool::Pool& pool) {
    const auto& p = pool.params();
    return {pool.array<const double>("x"),
            pool.array<const double>("tw"),
            pool.array<double>("y"),
            pool.array<double>("z"),
            p.n,
            p.bs};
  }
  static OutputBytes output(const Operands& op) { return {op.z, 2 * op.n * sizeof(double)}; }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n;
    std::vector<double> x(2 * n), tw(2 * n), y(2 * n), z(2 * n);
    ff::fill_input(x.data(), n, p.seed);
    ff::fill_twiddles(tw.data(), n);
    mem::PlainBackend be({}, 1);
    ff::run_base(be, ff::Operands{x.data(), tw.data(), y.data(), z.data(), n, p.bs});
    return compare_bits(pool.array<const double>("z"), z, [](std::size_t i) {
      return fmt::format("X[{}].{}", i / 2, i % 2 ? "im" : "re");
    });
  }
  // Per pass: a load and a store per complex part, plus a twiddle load pair per butterfly.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return 8 * p.n + 2 * p.n * static_cast<std::uint64_t>(std::bit_width(p.n));
  }
};
static_assert(ResumableKernel<Fft>);

}  // namespace

KernelDriver make_fft_driver() {
  return make_kernel_driver<Fft>();
}
SimKernel make_fft_sim() {
  return make_sim_kernel<Fft>();
}

}  // namespace pmlab::run
