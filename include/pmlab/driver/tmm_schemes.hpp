// Scheme dispatch for tmm: each scheme's normal execution and recovery, on any native backend.
#pragma once

#include <string>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/driver/kernel_driver.hpp"
#include "pmlab/kernels/tmm.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::driver {

struct TmmSchemeContext {
  pool::Pool& pool;
  const kernels::tmm::Operands& op;
  const lp::ChecksumTable& table;
  const pool::RunParams& params;
};

[[nodiscard]] inline std::vector<std::string> tmm_scheme_names() { return {"base", "lp"}; }
[[nodiscard]] inline bool is_tmm_scheme(const std::string& s) {
  for (const auto& n : tmm_scheme_names())
    if (n == s) return true;
  return false;
}
// Pool arrays a scheme needs beyond a, b, c and lp_table (logs, checkpoints, index records).
[[nodiscard]] inline std::vector<pool::ArraySpec> tmm_scheme_arrays(const pool::RunParams&) {
  return {};
}

// Brings an interrupted run to a consistent state; returns the kk tile where execution resumes.
template <mem::Backend B>
std::size_t tmm_recover(B& be, const TmmSchemeContext& ctx, RunReport& report) {
  const auto& s = ctx.params.scheme;
  if (s == "lp") {
    report.recovery_action = "lp-recovery";
    return lp::with_checksum_kind(ctx.params.checksum, [&](auto kind) {
      return kernels::tmm::recover_lp<decltype(kind)::value>(be, ctx.op, ctx.table, report.recovery);
    });
  }
  // base keeps no persistent progress: the only safe resume is from scratch.
  report.recovery_action = "restart";
  be.parallel_for(0, ctx.op.tiles(), [&](std::size_t it) {
    kernels::tmm::zero_panel(be, ctx.op, it);
    be.persist(ctx.op.panel(it), ctx.op.panel_bytes(it));
  });
  return 0;
}

template <mem::Backend B>
void tmm_run(B& be, const TmmSchemeContext& ctx, std::size_t first_kt) {
  const auto& s = ctx.params.scheme;
  if (s == "lp") {
    lp::with_checksum_kind(ctx.params.checksum, [&](auto kind) {
      kernels::tmm::run_lp<decltype(kind)::value>(be, ctx.op, ctx.table, first_kt);
    });
    return;
  }
  kernels::tmm::run_base(be, ctx.op, first_kt);
}

}  // namespace pmlab::driver
