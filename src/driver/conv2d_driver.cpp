// Kernel driver for conv2d: arrays, image and kernel, resumable base/LP runs, verification.
#include <bit>
#include <chrono>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/driver/kernel_driver.hpp"
#include "pmlab/driver/native_dispatch.hpp"
#include "pmlab/kernels/conv2d.hpp"
#include "pmlab/scheme/index_record.hpp"

namespace pmlab::driver {
namespace {

namespace cv = kernels::conv2d;

constexpr std::uint64_t kMaxN = 1u << 16;

void validate_conv2d(const pool::RunParams& p) {
  if (p.n < 1 || p.n > kMaxN)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("conv2d: --n must be in [1, {}], got {}", kMaxN, p.n));
  if (p.bs < 1 || p.bs > kMaxN)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("conv2d: --bs must be in [1, {}], got {}", kMaxN, p.bs));
  if (p.threads < 1 || p.threads > 1024)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("conv2d: --threads must be in [1, 1024], got {}", p.threads));
  if (p.scheme != "base" && p.scheme != "lp" && p.scheme != "ep")
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("unknown scheme '{}' for conv2d (known: base, lp, ep)", p.scheme));
  const std::uint64_t w = cv::width_for(p.extra, p.n);
  if (w % 2 == 0)
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("conv2d: the kernel width (run parameter extra) must be odd, got {}", w));
  if (w > p.n)
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("conv2d: the kernel width (run parameter extra) must be <= n = {}, got {}", p.n,
                    w));
}

std::size_t width_of(const pool::RunParams& p) {
  return cv::width_for(p.extra, p.n);
}

std::vector<pool::ArraySpec> conv2d_arrays(const pool::RunParams& p) {
  const std::uint64_t img = p.n * p.n * sizeof(double), w = width_of(p);
  std::vector<pool::ArraySpec> arrays{{"in", img}, {"ker", w * w * sizeof(double)}, {"out", img}};
  if (p.scheme == "lp")
    arrays.push_back({"lp_table", lp::ChecksumTable::bytes_for((p.n + p.bs - 1) / p.bs)});
  if (p.scheme == "ep")
    arrays.push_back({"ep_index", scheme::IndexRecordTable<1>::bytes_for((p.n + p.bs - 1) / p.bs)});
  return arrays;
}

void conv2d_init(pool::Pool& pool) {
  const auto& p = pool.params();
  cv::fill_input(pool.array<double>("in"), p.n, pool.array<double>("ker"), width_of(p), p.seed);
  // out is zero-filled by the pool; every region rewrites all of its elements.
}

cv::Operands operands_of(const pool::Pool& pool) {
  const auto& p = pool.params();
  const std::size_t n = p.n;
  return {{pool.array<const double>("in"), n, n},
          pool.array<const double>("ker"),
          width_of(p),
          {pool.array<double>("out"), n, n},
          n,
          p.bs};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

RunReport conv2d_execute(pool::Pool& pool, const ExecOptions& opt) {
  const auto& p = pool.params();
  validate_conv2d(p);
  RunReport report;
  if (pool.state() == pool::RunState::kDone) {
    report.recovery_action = "none (run already complete)";
    return report;
  }
  report.resumed = pool.state() == pool::RunState::kRunning;
  pool.count_start();
  pool.set_state(pool::RunState::kRunning);
  const cv::Operands op = operands_of(pool);
  const bool lazy = p.scheme == "lp";
  const lp::ChecksumTable table =
      lazy ? lp::ChecksumTable(pool.array<lp::ChecksumSlot>("lp_table"), op.table_slots())
           : lp::ChecksumTable();
  const bool eager = p.scheme == "ep";
  const scheme::IndexRecordTable<1> records =
      eager ? scheme::IndexRecordTable<1>(pool.array<scheme::IndexRecordLayout<1>>("ep_index"),
                                          op.blocks())
            : scheme::IndexRecordTable<1>();
  with_native_backend(pool, opt, static_cast<int>(p.threads), [&](auto& be) {
    auto t0 = std::chrono::steady_clock::now();
    bool complete = false;
    if (report.resumed && lazy) {
      // Recovery validates every block and recomputes the bad and the missing ones: afterwards
      // the output is complete.
      report.recovery_action = "lp-recovery";
      lp::with_checksum_kind(p.checksum, [&](auto kind) {
        cv::recover_lp<decltype(kind)::value>(be, op, table, report.recovery);
      });
      complete = true;
    } else if (report.resumed && eager) {
      report.recovery_action = "ep-recovery";
      cv::recover_ep(be, op, records, report.recovery);
      complete = true;
    } else if (report.resumed) {
      report.recovery_action = "restart";  // out of place: the inputs are intact, just run again
    }
    report.recovery_seconds = seconds_since(t0);
    report.resume_point = complete ? op.blocks() : 0;
    auto t1 = std::chrono::steady_clock::now();
    if (!complete && lazy)
      lp::with_checksum_kind(p.checksum,
                             [&](auto kind) { cv::run_lp<decltype(kind)::value>(be, op, table); });
    else if (!complete && eager)
      cv::run_ep(be, op, records);
    else if (!complete)
      cv::run_base(be, op);
    report.compute_seconds = seconds_since(t1);
    pool.persist(op.out.data(), op.out.bytes());
  });
  pool.set_state(pool::RunState::kDone);
  return report;
}

VerifyResult conv2d_verify(const pool::Pool& pool) {
  const auto& p = pool.params();
  const std::size_t n = p.n, w = width_of(p);
  std::vector<double> in(n * n), ker(w * w), out(n * n);
  cv::fill_input(in.data(), n, ker.data(), w, p.seed);
  mem::PlainBackend be({}, 1);
  cv::run_base(be, cv::Operands{{in.data(), n, n}, ker.data(), w, {out.data(), n, n}, n, p.bs});
  VerifyResult v;
  v.elements = n * n;
  const double* got = pool.array<const double>("out");
  for (std::size_t i = 0; i < n * n; ++i)
    if (std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(out[i]) &&
        v.mismatches++ == 0)
      v.first_mismatch =
          fmt::format("out[{}][{}] = {:a}, expected {:a}", i / n, i % n, got[i], out[i]);
  return v;
}

}  // namespace

KernelDriver make_conv2d_driver() {
  return KernelDriver{"conv2d",      {"base", "lp", "ep"}, 1500,           validate_conv2d,
                      conv2d_arrays, conv2d_init,          conv2d_execute, conv2d_verify};
}

}  // namespace pmlab::driver
