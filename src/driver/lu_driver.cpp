// Kernel driver for tiled LU: arrays, input, resumable base/LP runs, bit-exact verification.
#include <bit>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/driver/kernel_driver.hpp"
#include "pmlab/driver/native_dispatch.hpp"
#include "pmlab/kernels/lu.hpp"
#include "pmlab/scheme/index_record.hpp"

namespace pmlab::driver {
namespace {

namespace ch = kernels::lu;

constexpr std::uint64_t kMaxN = 1u << 16;
constexpr std::uint64_t kMaxTableBytes = 2ull << 30;  // 2 GiB

std::uint64_t tiles_of(const pool::RunParams& p) {
  return (p.n + p.bs - 1) / p.bs;
}

void validate_lu(const pool::RunParams& p) {
  if (p.n < 1 || p.n > kMaxN)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("lu: --n must be in [1, {}], got {}", kMaxN, p.n));
  if (p.bs < 1 || p.bs > kMaxN)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("lu: --bs must be in [1, {}], got {}", kMaxN, p.bs));
  if (p.threads < 1 || p.threads > 1024)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("lu: --threads must be in [1, 1024], got {}", p.threads));
  if (p.scheme != "base" && p.scheme != "lp" && p.scheme != "ep")
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("unknown scheme '{}' for lu (known: base, lp, ep)", p.scheme));
  // One checksum slot per (step, tile): T(T+1)(2T+1)/6 of them.
  const std::uint64_t bytes = lp::ChecksumTable::bytes_for(ch::Operands::squares(tiles_of(p)));
  if (p.scheme == "lp" && bytes > kMaxTableBytes)
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("lu: --bs {} is too small for --n {}: the LP checksum table (one slot per "
                    "step and tile) would take {} MiB; use a larger --bs",
                    p.bs, p.n, bytes >> 20));
}

std::vector<pool::ArraySpec> lu_arrays(const pool::RunParams& p) {
  const std::uint64_t mat = p.n * p.n * sizeof(double);
  std::vector<pool::ArraySpec> arrays{{"a", mat}, {"w", mat}};
  if (p.scheme == "lp")
    arrays.push_back(
        {"lp_table", lp::ChecksumTable::bytes_for(ch::Operands::squares(tiles_of(p)))});
  if (p.scheme == "ep")
    arrays.push_back(
        {"ep_index", scheme::IndexRecordTable<1>::bytes_for(tiles_of(p) * tiles_of(p))});
  return arrays;
}

void lu_init(pool::Pool& pool) {
  const auto& p = pool.params();
  ch::fill_input(pool.array<double>("a"), p.n, p.seed);
  std::memcpy(pool.array<double>("w"), pool.array<const double>("a"), p.n * p.n * sizeof(double));
}

ch::Operands operands_of(const pool::Pool& pool) {
  const std::size_t n = pool.params().n;
  return {{pool.array<const double>("a"), n, n},
          {pool.array<double>("w"), n, n},
          {n, pool.params().bs}};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

RunReport lu_execute(pool::Pool& pool, const ExecOptions& opt) {
  const auto& p = pool.params();
  validate_lu(p);
  RunReport report;
  if (pool.state() == pool::RunState::kDone) {
    report.recovery_action = "none (run already complete)";
    return report;
  }
  report.resumed = pool.state() == pool::RunState::kRunning;
  pool.count_start();
  pool.set_state(pool::RunState::kRunning);
  const ch::Operands op = operands_of(pool);
  const bool lazy = p.scheme == "lp";
  const lp::ChecksumTable table =
      lazy ? lp::ChecksumTable(pool.array<lp::ChecksumSlot>("lp_table"), op.table_slots())
           : lp::ChecksumTable();
  const bool eager = p.scheme == "ep";
  const scheme::IndexRecordTable<1> records =
      eager ? scheme::IndexRecordTable<1>(pool.array<scheme::IndexRecordLayout<1>>("ep_index"),
                                          ch::ep_records(op))
            : scheme::IndexRecordTable<1>();
  with_native_backend(pool, opt, static_cast<int>(p.threads), [&](auto& be) {
    auto t0 = std::chrono::steady_clock::now();
    std::size_t first_k = 0;
    if (report.resumed && lazy) {
      report.recovery_action = "lp-recovery";
      first_k = lp::with_checksum_kind(p.checksum, [&](auto kind) {
        return ch::recover_lp<decltype(kind)::value>(be, op, table, report.recovery);
      });
    } else if (report.resumed && eager) {
      report.recovery_action = "ep-recovery";
      first_k = ch::recover_ep(be, op, records, report.recovery);
    } else if (report.resumed) {
      report.recovery_action = "restart";  // base keeps no persistent progress
      ch::restart(be, op);
    }
    report.recovery_seconds = seconds_since(t0);
    report.resume_point = first_k;
    auto t1 = std::chrono::steady_clock::now();
    if (lazy)
      lp::with_checksum_kind(p.checksum, [&](auto kind) {
        ch::run_lp<decltype(kind)::value>(be, op, table, first_k);
      });
    else if (eager)
      ch::run_ep(be, op, records, first_k);
    else
      ch::run_base(be, op, first_k);
    report.compute_seconds = seconds_since(t1);
    pool.persist(op.w.data(), op.w.bytes());  // "done" only once L and U are durable
  });
  pool.set_state(pool::RunState::kDone);
  return report;
}

VerifyResult lu_verify(const pool::Pool& pool) {
  const auto& p = pool.params();
  const std::size_t n = p.n;
  std::vector<double> a(n * n);
  ch::fill_input(a.data(), n, p.seed);
  std::vector<double> l = a;
  mem::PlainBackend be({}, 1);
  ch::run_base(be, ch::Operands{{a.data(), n, n}, {l.data(), n, n}, {n, p.bs}});
  VerifyResult v;
  v.elements = n * n;
  const double* got = pool.array<const double>("w");
  for (std::size_t i = 0; i < n * n; ++i)
    if (std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(l[i]) &&
        v.mismatches++ == 0)
      v.first_mismatch = fmt::format("W[{}][{}] = {:a}, expected {:a}", i / n, i % n, got[i], l[i]);
  return v;
}

}  // namespace

KernelDriver make_lu_driver() {
  return KernelDriver{"lu",    {"base", "lp", "ep"}, 500,      validate_lu, lu_arrays,
                      lu_init, lu_execute,           lu_verify};
}

}  // namespace pmlab::driver
