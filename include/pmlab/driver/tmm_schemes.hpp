// Scheme dispatch for tmm: each scheme's pool arrays, normal execution and recovery, on any native
// backend.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/driver/kernel_driver.hpp"
#include "pmlab/kernels/tmm.hpp"
#include "pmlab/kernels/tmm_eager.hpp"
#include "pmlab/kernels/tmm_pmemobj.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/scheme/native_path.hpp"

namespace pmlab::driver {

struct TmmSchemeContext {
  pool::Pool& pool;
  const kernels::tmm::Operands& op;
  const lp::ChecksumTable& table;
  const pool::RunParams& params;
};

enum class TmmFamily { kBase, kLp, kEagerRecompute, kHybridRecompute, kWal, kCheckpoint, kPmemobj };

// A parsed scheme name: family, granularity (ii or jj) and, for Hybrid Recompute, 1/parts of C
// copied per kk iteration.
struct TmmScheme {
  TmmFamily family = TmmFamily::kBase;
  bool jj = false;
  std::size_t parts = 0;
};

[[nodiscard]] inline std::vector<std::string> tmm_scheme_names() {
  return {"base", "lp",        "ep-ii",     "ep-jj",     "wal-ii",    "wal-jj",
          "cp",   "hr-ii-x32", "hr-ii-x64", "hr-jj-x32", "hr-jj-x64", "pmemobj"};
}

[[nodiscard]] inline std::optional<TmmScheme> parse_tmm_scheme(std::string_view s) {
  using F = TmmFamily;
  if (s == "base") return TmmScheme{F::kBase};
  if (s == "lp") return TmmScheme{F::kLp};
  if (s == "ep-ii" || s == "ep-jj") return TmmScheme{F::kEagerRecompute, s == "ep-jj"};
  if (s == "wal-ii" || s == "wal-jj") return TmmScheme{F::kWal, s == "wal-jj"};
  if (s == "cp") return TmmScheme{F::kCheckpoint};
  if (s == "pmemobj") return TmmScheme{F::kPmemobj};
  for (std::string_view g : {"ii", "jj"})
    for (std::size_t x : {32u, 64u})
      if (s == "hr-" + std::string(g) + "-x" + std::to_string(x))
        return TmmScheme{F::kHybridRecompute, g == "jj", x};
  return std::nullopt;
}

[[nodiscard]] inline bool is_tmm_scheme(const std::string& s) {
  return parse_tmm_scheme(s).has_value();
}

[[nodiscard]] inline TmmScheme tmm_scheme_of(const std::string& s) {
  auto parsed = parse_tmm_scheme(s);
  if (!parsed) throw Error(ErrorCode::kInvalidArgument, "unknown tmm scheme '" + s + "'");
  return *parsed;
}

// Pool arrays a scheme needs beyond a, b, c and lp_table (logs, checkpoints, index records).
// The pool zero-fills them, which every scheme reads as "nothing done, no transaction open".
[[nodiscard]] inline std::vector<pool::ArraySpec> tmm_scheme_arrays(const pool::RunParams& p) {
  const auto s = parse_tmm_scheme(p.scheme);
  if (!s) return {};
  const std::uint64_t nt = (p.n + p.bs - 1) / p.bs, elems = p.n * p.n, line = kCacheLineBytes;
  const std::uint64_t b = std::min(p.bs, p.n);
  switch (s->family) {
    case TmmFamily::kEagerRecompute:
      return {{"ep_index", scheme::IndexRecordTable<2>::bytes_for(nt)}};
    case TmmFamily::kHybridRecompute:
      return {{"ep_index", scheme::IndexRecordTable<2>::bytes_for(nt)},
              {"hr_copy", scheme::PartialCopier::copy_bytes(elems)},
              {"hr_parts", scheme::PartialCopier::state_bytes(s->parts)}};
    case TmmFamily::kWal:
      return {{"wal_header", nt * sizeof(scheme::UndoHeader)},
              {"wal_index", nt * sizeof(kernels::tmm::WalIndex)},
              {"wal_log", (s->jj ? nt * b * b : elems) * sizeof(double)}};
    case TmmFamily::kCheckpoint:
      return {{"cp_area", 6 * elems * sizeof(double)}, {"cp_header", line}};
    case TmmFamily::kPmemobj:
      return {{"obj_state", sizeof(kernels::tmm::ObjState)}};
    case TmmFamily::kBase:
    case TmmFamily::kLp:
      break;
  }
  return {};
}

// Typed views of a scheme's pool arrays (the copier is owned here, EagerState points to it).
struct TmmSchemeState {
  kernels::tmm::EagerState eager;
  scheme::PartialCopier copier;
  kernels::tmm::WalState wal;
  kernels::tmm::CpState cp;

  TmmSchemeState(const TmmSchemeContext& ctx, const TmmScheme& s) {
    const std::size_t nt = ctx.op.tiles();
    switch (s.family) {
      case TmmFamily::kHybridRecompute:
        copier = scheme::PartialCopier(ctx.op.c.data(), ctx.pool.array<double>("hr_copy"),
                                       ctx.pool.array<scheme::PartState>("hr_parts"),
                                       ctx.op.n * ctx.op.n, s.parts);
        eager.copier = &copier;
        [[fallthrough]];
      case TmmFamily::kEagerRecompute:
        eager.records = {ctx.pool.array<scheme::IndexRecordLayout<2>>("ep_index"), nt};
        break;
      case TmmFamily::kWal:
        wal = {ctx.pool.array<scheme::UndoHeader>("wal_header"),
               ctx.pool.array<kernels::tmm::WalIndex>("wal_index"),
               ctx.pool.array<double>("wal_log")};
        break;
      case TmmFamily::kCheckpoint:
        cp = {ctx.pool.array<double>("cp_area"),
              ctx.pool.array<kernels::tmm::CpHeader>("cp_header")};
        break;
      default:
        break;
    }
  }
  TmmSchemeState(const TmmSchemeState&) = delete;
  TmmSchemeState& operator=(const TmmSchemeState&) = delete;
};

// libpmemobj flushes on its own; it is told to treat the file as pmem (cache-line flushes)
// unless the run asked for libpmem2's own choice (--persist auto).
template <class B>
inline constexpr bool kPmemobjForcePmem = true;
template <>
inline constexpr bool kPmemobjForcePmem<mem::NativeBackend<persist::Pmem2Persist>> = false;

template <mem::Backend B>
[[nodiscard]] kernels::tmm::PmemobjTmm open_pmemobj(B& be, const TmmSchemeContext& ctx,
                                                    bool fresh) {
  return kernels::tmm::PmemobjTmm::open_or_create(
      kernels::tmm::PmemobjTmm::path_for(ctx.pool.path()),
      {ctx.op.n, ctx.op.bs, be.threads(), fresh, kPmemobjForcePmem<B>});
}

template <mem::Backend B>
void require_native(const char* scheme) {
  if constexpr (!scheme::kIsNativeBackend<B>)
    throw Error(ErrorCode::kUnsupported, std::string(scheme) + " runs natively only (libpmemobj)");
}

// Brings an interrupted run to a consistent state; returns the kk tile where execution resumes.
template <mem::Backend B>
std::size_t tmm_recover(B& be, const TmmSchemeContext& ctx, RunReport& report) {
  namespace k = kernels::tmm;
  const TmmScheme s = tmm_scheme_of(ctx.params.scheme);
  TmmSchemeState st(ctx, s);
  switch (s.family) {
    case TmmFamily::kLp:
      report.recovery_action = "lp-recovery";
      return lp::with_checksum_kind(ctx.params.checksum, [&](auto kind) {
        return k::recover_lp<decltype(kind)::value>(be, ctx.op, ctx.table, report.recovery);
      });
    case TmmFamily::kEagerRecompute:
    case TmmFamily::kHybridRecompute:
      report.recovery_action = s.family == TmmFamily::kEagerRecompute
                                   ? "recompute dirty regions from zero"
                                   : "restore latest partial copy + recompute";
      return s.jj ? k::recover_ep_jj(be, ctx.op, st.eager, report.recovery)
                  : k::recover_ep_ii(be, ctx.op, st.eager, report.recovery);
    case TmmFamily::kWal:
      report.recovery_action = "undo-log rollback";
      return k::recover_wal(be, ctx.op, st.wal, s.jj, report.recovery);
    case TmmFamily::kCheckpoint:
      report.recovery_action = "restore checkpoint";
      return k::recover_cp(be, ctx.op, st.cp, report.recovery);
    case TmmFamily::kPmemobj: {
      require_native<B>("pmemobj");
      report.recovery_action = "libpmemobj rollback (pmemobj_open)";
      if (be.load(&ctx.pool.array<k::ObjState>("obj_state")->copied_back) != 0)
        return ctx.op.tiles();
      return open_pmemobj(be, ctx, /*fresh=*/false).resume_point();
    }
    case TmmFamily::kBase:
      break;
  }
  // base keeps no persistent progress: the only safe resume is from scratch.
  report.recovery_action = "restart";
  be.parallel_for(0, ctx.op.tiles(), [&](std::size_t it) {
    k::zero_panel(be, ctx.op, it);
    be.persist(ctx.op.panel(it), ctx.op.panel_bytes(it));
  });
  return 0;
}

// pmemobj: compute in the object pool, then copy C into the pmlab pool, mark it, drop the file.
template <mem::Backend B>
void tmm_run_pmemobj(B& be, const TmmSchemeContext& ctx, std::size_t first_kt) {
  require_native<B>("pmemobj");
  auto* marker = ctx.pool.array<kernels::tmm::ObjState>("obj_state");
  const auto path = kernels::tmm::PmemobjTmm::path_for(ctx.pool.path());
  if (be.load(&marker->copied_back) == 0) {
    // A first start must not pick up a stale object pool left by an earlier run at this path.
    auto obj = open_pmemobj(be, ctx, /*fresh=*/ctx.pool.starts() <= 1 && first_kt == 0);
    obj.run(ctx.op, first_kt);
    obj.copy_c(ctx.op.c.data());
    be.persist(ctx.op.c.data(), ctx.op.c.bytes());
    be.store(&marker->copied_back, std::uint64_t{1});
    be.persist(&marker->copied_back, sizeof(std::uint64_t));
  }
  kernels::tmm::PmemobjTmm::remove(path);
}

template <mem::Backend B>
void tmm_run(B& be, const TmmSchemeContext& ctx, std::size_t first_kt) {
  namespace k = kernels::tmm;
  const TmmScheme s = tmm_scheme_of(ctx.params.scheme);
  TmmSchemeState st(ctx, s);
  switch (s.family) {
    case TmmFamily::kLp:
      lp::with_checksum_kind(ctx.params.checksum, [&](auto kind) {
        k::run_lp<decltype(kind)::value>(be, ctx.op, ctx.table, first_kt);
      });
      return;
    case TmmFamily::kEagerRecompute:
    case TmmFamily::kHybridRecompute:
      return s.jj ? k::run_ep_jj(be, ctx.op, st.eager, first_kt)
                  : k::run_ep_ii(be, ctx.op, st.eager, first_kt);
    case TmmFamily::kWal:
      return s.jj ? k::run_wal_jj(be, ctx.op, st.wal, first_kt)
                  : k::run_wal_ii(be, ctx.op, st.wal, first_kt);
    case TmmFamily::kCheckpoint:
      return k::run_cp(be, ctx.op, st.cp, first_kt);
    case TmmFamily::kPmemobj:
      return tmm_run_pmemobj(be, ctx, first_kt);
    case TmmFamily::kBase:
      break;
  }
  k::run_base(be, ctx.op, first_kt);
}

}  // namespace pmlab::driver
