// Kernel driver for the FFT: arrays, input and twiddles, resumable base/LP runs, verification.
#include <bit>
#include <chrono>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/driver/kernel_driver.hpp"
#include "pmlab/driver/native_dispatch.hpp"
#include "pmlab/kernels/fft.hpp"
#include "pmlab/scheme/index_record.hpp"

namespace pmlab::driver {
namespace {

namespace ff = kernels::fft;

constexpr std::uint64_t kMaxN = 1u << 28;  // 4 GiB per complex array

void validate_fft(const pool::RunParams& p) {
  if (p.n < 1 || p.n > kMaxN)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("fft: --n (points) must be in [1, {}], got {}", kMaxN, p.n));
  if (!std::has_single_bit(p.n))
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format(
            "fft: --n (number of points) must be a power of two for the radix-2 FFT, got {} "
            "(nearest: {} or {})",
            p.n, std::bit_floor(p.n), std::bit_ceil(p.n)));
  if (p.bs < 1 || p.bs > kMaxN)
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("fft: --bs (sub-FFTs per LP region) must be in [1, {}], got {}", kMaxN, p.bs));
  if (p.threads < 1 || p.threads > 1024)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("fft: --threads must be in [1, 1024], got {}", p.threads));
  if (p.scheme != "base" && p.scheme != "lp" && p.scheme != "ep")
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("unknown scheme '{}' for fft (known: base, lp, ep)", p.scheme));
}

std::vector<pool::ArraySpec> fft_arrays(const pool::RunParams& p) {
  const std::uint64_t vec = 2 * p.n * sizeof(double);
  std::vector<pool::ArraySpec> arrays{{"x", vec}, {"tw", vec}, {"y", vec}, {"z", vec}};
  const ff::Operands shape{nullptr, nullptr, nullptr, nullptr, p.n, p.bs};
  if (p.scheme == "lp")
    arrays.push_back({"lp_table", lp::ChecksumTable::bytes_for(shape.table_slots())});
  if (p.scheme == "ep")
    arrays.push_back({"ep_index", scheme::IndexRecordTable<1>::bytes_for(shape.table_slots())});
  return arrays;
}

void fft_init(pool::Pool& pool) {
  const auto& p = pool.params();
  ff::fill_input(pool.array<double>("x"), p.n, p.seed);
  ff::fill_twiddles(pool.array<double>("tw"), p.n);
}

ff::Operands operands_of(const pool::Pool& pool) {
  const auto& p = pool.params();
  return {pool.array<const double>("x"),
          pool.array<const double>("tw"),
          pool.array<double>("y"),
          pool.array<double>("z"),
          p.n,
          p.bs};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

RunReport fft_execute(pool::Pool& pool, const ExecOptions& opt) {
  const auto& p = pool.params();
  validate_fft(p);
  RunReport report;
  if (pool.state() == pool::RunState::kDone) {
    report.recovery_action = "none (run already complete)";
    return report;
  }
  report.resumed = pool.state() == pool::RunState::kRunning;
  pool.count_start();
  pool.set_state(pool::RunState::kRunning);
  const ff::Operands op = operands_of(pool);
  const bool lazy = p.scheme == "lp";
  const lp::ChecksumTable table =
      lazy ? lp::ChecksumTable(pool.array<lp::ChecksumSlot>("lp_table"), op.table_slots())
           : lp::ChecksumTable();
  const bool eager = p.scheme == "ep";
  const scheme::IndexRecordTable<1> records =
      eager ? scheme::IndexRecordTable<1>(pool.array<scheme::IndexRecordLayout<1>>("ep_index"),
                                          op.table_slots())
            : scheme::IndexRecordTable<1>();
  with_native_backend(pool, opt, static_cast<int>(p.threads), [&](auto& be) {
    auto t0 = std::chrono::steady_clock::now();
    int first_pass = 0;
    if (report.resumed && lazy) {
      report.recovery_action = "lp-recovery";
      first_pass = lp::with_checksum_kind(p.checksum, [&](auto kind) {
        return ff::recover_lp<decltype(kind)::value>(be, op, table, report.recovery);
      });
    } else if (report.resumed && eager) {
      report.recovery_action = "ep-recovery";
      first_pass = ff::recover_ep(be, op, records, report.recovery);
    } else if (report.resumed) {
      report.recovery_action = "restart";  // out of place: the inputs are intact, just run again
    }
    report.recovery_seconds = seconds_since(t0);
    report.resume_point = static_cast<std::uint64_t>(first_pass);
    auto t1 = std::chrono::steady_clock::now();
    if (lazy)
      lp::with_checksum_kind(p.checksum, [&](auto kind) {
        ff::run_lp<decltype(kind)::value>(be, op, table, first_pass);
      });
    else if (eager)
      ff::run_ep(be, op, records, first_pass);
    else
      ff::run_base(be, op, first_pass);
    report.compute_seconds = seconds_since(t1);
    pool.persist(op.z, 2 * p.n * sizeof(double));
  });
  pool.set_state(pool::RunState::kDone);
  return report;
}

VerifyResult fft_verify(const pool::Pool& pool) {
  const auto& p = pool.params();
  const std::size_t n = p.n;
  std::vector<double> x(2 * n), tw(2 * n), y(2 * n), z(2 * n);
  ff::fill_input(x.data(), n, p.seed);
  ff::fill_twiddles(tw.data(), n);
  mem::PlainBackend be({}, 1);
  ff::run_base(be, ff::Operands{x.data(), tw.data(), y.data(), z.data(), n, p.bs});
  VerifyResult v;
  v.elements = 2 * n;
  const double* got = pool.array<const double>("z");
  for (std::size_t i = 0; i < 2 * n; ++i)
    if (std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(z[i]) &&
        v.mismatches++ == 0)
      v.first_mismatch =
          fmt::format("X[{}].{} = {:a}, expected {:a}", i / 2, i % 2 ? "im" : "re", got[i], z[i]);
  return v;
}

}  // namespace

KernelDriver make_fft_driver() {
  return KernelDriver{"fft",        {"base", "lp", "ep"}, 1u << 20,
                      validate_fft, fft_arrays,           fft_init,
                      fft_execute,  fft_verify,           /*n_power_of_two=*/true};
}

}  // namespace pmlab::driver
