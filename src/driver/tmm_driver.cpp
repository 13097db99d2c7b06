// Kernel driver for tiled matmul: pool arrays, inputs, resumable execution per scheme,
// verification.
#include <bit>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/driver/kernel_driver.hpp"
#include "pmlab/driver/native_dispatch.hpp"
#include "pmlab/driver/tmm_schemes.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm.hpp"

namespace pmlab::driver {
namespace {

using kernels::tmm::Operands;

constexpr std::uint64_t kMaxN = 1u << 16;  // 32 GiB per matrix: beyond that it's a typo

void validate_tmm(const pool::RunParams& p) {
  if (p.n < 1 || p.n > kMaxN)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--n must be in [1, {}], got {}", kMaxN, p.n));
  if (p.bs < 1 || p.bs > kMaxN)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--bs must be in [1, {}], got {}", kMaxN, p.bs));
  if (p.threads < 1 || p.threads > 1024)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--threads must be in [1, 1024], got {}", p.threads));
  if (!is_tmm_scheme(p.scheme))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("unknown scheme '{}' for tmm (known: {})", p.scheme,
                            fmt::join(tmm_scheme_names(), ", ")));
}

std::vector<pool::ArraySpec> tmm_arrays(const pool::RunParams& p) {
  const std::uint64_t mat = p.n * p.n * sizeof(double);
  const std::uint64_t tiles = (p.n + p.bs - 1) / p.bs;
  std::vector<pool::ArraySpec> arrays{{"a", mat},
                                      {"b", mat},
                                      {"c", mat},
                                      {"lp_table", lp::ChecksumTable::bytes_for(tiles * tiles)}};
  for (auto& extra : tmm_scheme_arrays(p)) arrays.push_back(std::move(extra));
  return arrays;
}

void fill_inputs(double* a, double* b, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = 0; i < n * n; ++i) {
    a[i] = kernels::input_value(seed, 0, i);
    b[i] = kernels::input_value(seed, 1, i);
  }
}

void tmm_init(pool::Pool& pool) {
  const auto& p = pool.params();
  fill_inputs(pool.array<double>("a"), pool.array<double>("b"), p.n, p.seed);
  // c and the checksum table are zero-filled by the pool (C's initial value; "unwritten" tags).
}

Operands operands_of(const pool::Pool& pool) {
  const auto& p = pool.params();
  const std::size_t n = p.n;
  return Operands{{pool.array<const double>("a"), n, n},
                  {pool.array<const double>("b"), n, n},
                  {pool.array<double>("c"), n, n},
                  n,
                  p.bs};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

RunReport tmm_execute(pool::Pool& pool, const ExecOptions& opt) {
  const auto& p = pool.params();
  validate_tmm(p);
  RunReport report;
  if (pool.state() == pool::RunState::kDone) {
    report.recovery_action = "none (run already complete)";
    return report;
  }
  report.resumed = pool.state() == pool::RunState::kRunning;
  pool.count_start();
  pool.set_state(pool::RunState::kRunning);
  const Operands op = operands_of(pool);
  const lp::ChecksumTable table(pool.array<lp::ChecksumSlot>("lp_table"), op.table_slots());
  with_native_backend(pool, opt, static_cast<int>(p.threads), [&](auto& be) {
    TmmSchemeContext ctx{pool, op, table, p};
    auto t0 = std::chrono::steady_clock::now();
    std::size_t first_kt = 0;
    if (report.resumed) first_kt = tmm_recover(be, ctx, report);
    report.recovery_seconds = seconds_since(t0);
    report.resume_point = first_kt;
    auto t1 = std::chrono::steady_clock::now();
    tmm_run(be, ctx, first_kt);
    report.compute_seconds = seconds_since(t1);
    // The run is only "done" once C is durable, whatever the scheme left in the caches.
    pool.persist(op.c.data(), op.c.bytes());
  });
  pool.set_state(pool::RunState::kDone);
  return report;
}

VerifyResult tmm_verify(const pool::Pool& pool) {
  const auto& p = pool.params();
  const std::size_t n = p.n;
  std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
  fill_inputs(a.data(), b.data(), n, p.seed);
  Operands ref{{a.data(), n, n}, {b.data(), n, n}, {c.data(), n, n}, n, p.bs};
  mem::PlainBackend be({}, 1);
  kernels::tmm::run_base(be, ref);
  VerifyResult v;
  v.elements = n * n;
  const double* got = pool.array<const double>("c");
  for (std::size_t i = 0; i < n * n; ++i) {
    if (std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(c[i])) {
      if (v.mismatches++ == 0)
        v.first_mismatch =
            fmt::format("C[{}][{}] = {:a}, expected {:a}", i / n, i % n, got[i], c[i]);
    }
  }
  return v;
}

}  // namespace

KernelDriver make_tmm_driver() {
  return KernelDriver{"tmm",      tmm_scheme_names(), 400,         validate_tmm,
                      tmm_arrays, tmm_init,           tmm_execute, tmm_verify};
}

}  // namespace pmlab::driver
