// A user's 2-D Jacobi stencil described as a pmlab kernel (ResumableKernel) with two schemes,
// base and Lazy Persistency: run natively on a pool (stencil.cpp) and crash-tested in the
// simulator (examples/stencil-crash). docs/protect-your-own-loop.md explains each LP rule used.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <pmlab/core/error.hpp>
#include <pmlab/kernels/checks.hpp>
#include <pmlab/lp/checksum.hpp>
#include <pmlab/lp/checksum_param.hpp>
#include <pmlab/lp/checksum_table.hpp>
#include <pmlab/lp/recovery.hpp>
#include <pmlab/lp/region.hpp>
#include <pmlab/mem/backend.hpp>
#include <pmlab/mem/native_backend.hpp>
#include <pmlab/pool/pool.hpp>
#include <pmlab/run/resumable.hpp>
#include <pmlab/scheme/scheme.hpp>

namespace stencil {

using namespace pmlab;

// Parameters: n = grid side (the boundary is fixed, the interior (n-2)^2 is updated),
// bs = rows per LP region (a band), seed = inputs; the stencil's own parameter "steps" (time
// steps, declared in Stencil::params(), stored in the pool) defaults to kDefaultSteps.
inline constexpr std::uint64_t kDefaultSteps = 6;
[[nodiscard]] inline std::size_t steps_of(const pool::RunParams& p) {
  return p.kernel_param("steps", kDefaultSteps);
}

[[nodiscard]] inline double input_value(std::size_t r, std::size_t c, std::uint64_t seed) {
  const std::uint64_t h = (r * 0x9e3779b97f4a7c15ull) ^ (c * 0xc2b2ae3d27d4eb4full) ^ seed;
  return static_cast<double>(h % 1000) / 100.0;
}

// Three grids in rotation: step t reads grid t % 3 and writes grid (t + 1) % 3. Two would not
// do under LP: step t + 1 would overwrite step t's input while step t's output may still be
// only in the caches, and a region that recovery must redo needs its input (rule 3 of the
// guide). With three, step t overwrites the input of step t - 2, and step_boundary makes step
// t - 2's output durable first.
struct Operands {
  double* grid[3] = {nullptr, nullptr, nullptr};
  std::size_t n = 0, bs = 1, steps = 0;
  std::uint64_t* durable_steps = nullptr;  // steps [0, *durable_steps) are durable
  lp::ChecksumSlot* slots = nullptr;       // two banks of bands() slots (LP only)

  [[nodiscard]] std::size_t bands() const { return (n - 2 + bs - 1) / bs; }
  [[nodiscard]] std::size_t band_begin(std::size_t k) const { return 1 + k * bs; }
  [[nodiscard]] std::size_t band_end(std::size_t k) const {
    return std::min(n - 1, 1 + (k + 1) * bs);
  }
  [[nodiscard]] std::size_t grid_bytes() const { return n * n * sizeof(double); }
  [[nodiscard]] double* output() const { return grid[steps % 3]; }
  // Slot reuse: step t uses bank t % 2 (rule 2 of the guide: cleared before reuse).
  [[nodiscard]] std::size_t slot(std::size_t t, std::size_t k) const {
    return (t % 2) * bands() + k;
  }
  [[nodiscard]] lp::ChecksumTable table() const { return {slots, 2 * bands()}; }
};

// One band of one step: rows [r0, r1), every interior column, in a fixed order (bit-exact).
template <mem::Backend B, class Store>
void sweep_band(B& be, const Operands& op, std::size_t t, std::size_t k, Store&& store) {
  const double* src = op.grid[t % 3];
  double* dst = op.grid[(t + 1) % 3];
  const std::size_t n = op.n;
  for (std::size_t r = op.band_begin(k); r < op.band_end(k); ++r)
    for (std::size_t c = 1; c + 1 < n; ++c) {
      const double v = 0.2 * (be.load(src + r * n + c) + be.load(src + (r - 1) * n + c) +
                              be.load(src + (r + 1) * n + c) + be.load(src + r * n + c - 1) +
                              be.load(src + r * n + c + 1));
      store(dst + r * n + c, v);
    }
}

// --- base: no persistence; recovery restores the input and restarts ------------------------

template <mem::Backend B>
void run_base(B& be, const Operands& op, std::size_t first) {
  for (std::size_t t = first; t < op.steps; ++t)
    be.parallel_for(0, op.bands(), [&](std::size_t k) {
      sweep_band(be, op, t, k, [&](double* p, double v) { be.store(p, v); });
    });
}

template <mem::Backend B>
void restore_input(B& be, const Operands& op, std::uint64_t seed) {
  for (std::size_t r = 0; r < op.n; ++r)
    for (std::size_t c = 0; c < op.n; ++c)
      be.store(op.grid[0] + r * op.n + c, input_value(r, c, seed));
}

// --- LP ---------------------------------------------------------------------------------------

// Before step t: make step t - 2's output durable (step t overwrites its input), clear the
// checksum bank step t reuses, and only then record that steps < t - 1 are durable. The order
// matters: with the record first, a crash while clearing would leave stale step t - 2
// checksums that match the stale data still in step t's output grid, and recovery would skip
// regions it must redo.
template <mem::Backend B>
void step_boundary(B& be, const Operands& op, std::size_t t) {
  if (t >= 2) be.persist(op.grid[(t - 1) % 3], op.grid_bytes());
  for (std::size_t k = 0; k < op.bands(); ++k)
    be.store(&op.slots[op.slot(t, k)].tag, std::uint64_t{0});
  be.persist(op.slots + op.slot(t, 0), op.bands() * sizeof(lp::ChecksumSlot));
  if (t >= 2) {
    be.store(op.durable_steps, std::uint64_t{t - 1});
    be.persist(op.durable_steps, sizeof(std::uint64_t));
  }
}

template <lp::ChecksumKind CK, mem::Backend B>
void run_lp(B& be, const Operands& op, std::size_t first) {
  const lp::ChecksumTable table = op.table();
  for (std::size_t t = first; t < op.steps; ++t) {
    step_boundary(be, op, t);
    be.parallel_for(0, op.bands(), [&](std::size_t k) {
      lp::Region<CK, B> region(be, table, op.slot(t, k),
                               {static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(k)});
      sweep_band(be, op, t, k, [&](double* p, double v) { region.store(p, v); });
      region.commit();  // plain stores: no flush, no fence
    });
  }
}

// Steps before *durable_steps are durable, so at most steps s = *durable_steps and s + 1 ran
// (s + 2 would have recorded s + 1 first). Step s's input (grid s % 3) is durable and intact:
// validate its bands, redo the mismatched and unwritten ones. Step s + 1 is simply run again
// (its bank may hold stale checksums of step s - 1: never validate against it). Returns where
// normal execution resumes.
template <lp::ChecksumKind CK, mem::Backend B>
std::size_t recover_lp(B& be, const Operands& op, lp::RecoveryStats& stats) {
  const std::size_t s = be.load(op.durable_steps);
  if (s >= op.steps) return op.steps;
  const auto checksum_of = [&](std::size_t k) {
    lp::Accumulator<CK> acc;
    const double* dst = op.grid[(s + 1) % 3];
    for (std::size_t r = op.band_begin(k); r < op.band_end(k); ++r)
      for (std::size_t c = 1; c + 1 < op.n; ++c) acc.add(be.load(dst + r * op.n + c));
    return acc.value();
  };
  const auto repair = [&](std::size_t k) {
    lp::Accumulator<CK> acc;
    sweep_band(be, op, s, k, [&](double* p, double v) {
      be.store(p, v);
      acc.add(v);
    });
    for (std::size_t r = op.band_begin(k); r < op.band_end(k); ++r)
      be.persist(op.grid[(s + 1) % 3] + r * op.n + 1, (op.n - 2) * sizeof(double));
    return acc.value();
  };
  stats += lp::recover_independent_regions(be, op.table(), op.slot(s, 0), op.bands(), checksum_of,
                                           repair, /*repair_unwritten=*/true);
  return s + 1;
}

// --- the kernel description -------------------------------------------------------------------

using Ctx = scheme::SchemeContext<Operands>;

inline std::vector<pool::ArraySpec> lp_arrays(const pool::RunParams& p) {
  const std::size_t bands = (p.n - 2 + p.bs - 1) / p.bs;
  return {{"durable_steps", sizeof(std::uint64_t)},
          {lp::kTableArray, lp::ChecksumTable::bytes_for(2 * bands)}};
}

inline constexpr auto kSchemes = std::tuple{
    scheme::Scheme{
        .name = scheme::kBaseScheme,
        .run = [](mem::Backend auto& be, const Ctx& c,
                  std::size_t first) { run_base(be, c.op, first); },
        .recover = [](mem::Backend auto& be, const Ctx& c, scheme::RunReport& r) -> std::size_t {
          r.recovery_action = "restart";  // grid 0 may have been overwritten
          restore_input(be, c.op, c.params.seed);
          return 0;
        }},
    scheme::Scheme{
        .name = "lp",
        .arrays = lp_arrays,
        .run =
            [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
              lp::with_checksum_kind(lp::checksum_of(c.params), [&](auto kind) {
                run_lp<decltype(kind)::value>(be, c.op, first);
              });
            },
        .recover = [](mem::Backend auto& be, const Ctx& c, scheme::RunReport& r) -> std::size_t {
          r.recovery_action = "lp-recovery";
          return lp::with_checksum_kind(lp::checksum_of(c.params), [&](auto kind) {
            return recover_lp<decltype(kind)::value>(be, c.op, r.recovery);
          });
        }},
};

struct Stencil {
  using Operands = stencil::Operands;
  static constexpr std::string_view kName = "stencil";
  static constexpr std::uint64_t kCrashTestMaxN = 128;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  // A parameter of the stencil's own, beside n, bs, seed and threads.
  static std::vector<run::KernelParamSpec> params() {
    return {{.name = "steps", .help = "time steps (default 6)", .min = 1, .max = 1u << 20}};
  }
  static void validate(const pool::RunParams& p) {
    run::require_in_range(kName, "n", p.n, 3, 1u << 14);
    run::require_in_range(kName, "bs", p.bs, 1, p.n - 2);
    run::require_in_range(kName, "steps", steps_of(p), 1, 1u << 20);
    run::require_in_range(kName, "threads", p.threads, 1, 1024);
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t g = p.n * p.n * sizeof(double);
    return {{"grid0", g}, {"grid1", g}, {"grid2", g}};
  }
  // Grid 0 holds the input; the boundary of every grid is the input's (never written again).
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    double* g[3] = {pool.array<double>("grid0"), pool.array<double>("grid1"),
                    pool.array<double>("grid2")};
    for (std::size_t r = 0; r < p.n; ++r)
      for (std::size_t c = 0; c < p.n; ++c) {
        const bool boundary = r == 0 || c == 0 || r + 1 == p.n || c + 1 == p.n;
        const double v = input_value(r, c, p.seed);
        g[0][r * p.n + c] = v;
        g[1][r * p.n + c] = g[2][r * p.n + c] = boundary ? v : 0.0;
      }
  }
  static Operands operands(const pool::Pool& pool) {
    const auto& p = pool.params();
    Operands op{
        {pool.array<double>("grid0"), pool.array<double>("grid1"), pool.array<double>("grid2")},
        p.n,
        p.bs,
        steps_of(p)};
    if (pool.has_array("lp_table")) {
      op.durable_steps = pool.array<std::uint64_t>("durable_steps");
      op.slots = pool.array<lp::ChecksumSlot>(lp::kTableArray);
    }
    return op;
  }
  static run::OutputBytes output(const Operands& op) { return {op.output(), op.grid_bytes()}; }
  // The fault-free reference: base on ordinary memory, same arithmetic order.
  static run::VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    std::vector<double> g[3];
    Operands op{{}, p.n, p.bs, steps_of(p)};
    for (int i = 0; i < 3; ++i) {
      g[i].assign(p.n * p.n, 0.0);
      op.grid[i] = g[i].data();
    }
    for (std::size_t r = 0; r < p.n; ++r)
      for (std::size_t c = 0; c < p.n; ++c) {
        const bool boundary = r == 0 || c == 0 || r + 1 == p.n || c + 1 == p.n;
        g[0][r * p.n + c] = input_value(r, c, p.seed);
        if (boundary) g[1][r * p.n + c] = g[2][r * p.n + c] = g[0][r * p.n + c];
      }
    mem::PlainBackend be;
    run_base(be, op, 0);
    const Operands mine = operands(pool);
    return run::compare_bits(mine.output(), g[op.steps % 3], [n = p.n](std::size_t i) {
      return fmt::format("grid[{}][{}]", i / n, i % n);
    });
  }
  // Five loads and one store per interior point and step (a progress estimate only).
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return (p.n - 2) * (p.n - 2) * 6 * steps_of(p);
  }
};
static_assert(run::ResumableKernel<Stencil>);

}  // namespace stencil
