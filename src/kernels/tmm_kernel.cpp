// Tiled matmul as the drivers see it: arrays, A and B inputs, scheme table (base, lp, ep-ii/jj,
// wal-ii/jj(-entry), cp, hr-{ii,jj}-x{32,64}, pmemobj), verification — one description for `pmlab
// run`, `pmlab bench` and the simulator.
#include <algorithm>
#include <string_view>
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm.hpp"
#include "pmlab/kernels/tmm_cp_variants.hpp"
#include "pmlab/kernels/tmm_eager.hpp"
#include "pmlab/kernels/tmm_ipv.hpp"
#include "pmlab/kernels/tmm_pmemobj.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/native_path.hpp"
#include "pmlab/scheme/rows.hpp"

namespace pmlab::kernels::tmm {

// Base keeps no persistent progress: a resumed base run zeroes C (its initial value), durably,
// and starts over (found by restart_base_scheme through argument-dependent lookup).
template <mem::Backend B>
void restart(B& be, const Operands& op) {
  be.parallel_for(0, op.tiles(), [&](std::size_t it) {
    zero_panel(be, op, it);
    be.persist(op.panel(it), op.panel_bytes(it));
  });
}

}  // namespace pmlab::kernels::tmm

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

// The arrays only tmm's rows add (names spelled here only): in-place versioning's second
// version of C, and pmemobj's "C copied back" marker.
constexpr std::string_view kIpvSecondC = "ipv_c1";
constexpr std::string_view kObjStateArray = "obj_state";

namespace tm = kernels::tmm;
using Ctx = SchemeContext<tm::Operands>;

constexpr std::uint64_t kMaxN = 1u << 16;  // 32 GiB per matrix: beyond that it's a typo

std::uint64_t tiles_of(const pool::RunParams& p) {
  return (p.n + p.bs - 1) / p.bs;
}

// The granularity of an EagerRecompute-family scheme: one record per ii panel, progress per kk
// tile (ii, Fig. 3.1) or per (kk, jj) tile (jj, Fig. 3.2).
enum class Grain { kIi, kJj };

tm::EagerState eager_of(const Ctx& c, const scheme::PartialCopier* copier = nullptr) {
  return {{c.pool.array<scheme::IndexRecordLayout<2>>(scheme::kEpIndexArray), c.op.tiles()},
          copier};
}

template <Grain G, mem::Backend B>
void run_eager(B& be, const tm::Operands& op, const tm::EagerState& st, std::size_t first) {
  if constexpr (G == Grain::kJj)
    tm::run_ep_jj(be, op, st, first);
  else
    tm::run_ep_ii(be, op, st, first);
}

template <Grain G, mem::Backend B>
std::size_t recover_eager(B& be, const tm::Operands& op, const tm::EagerState& st,
                          lp::RecoveryStats& stats) {
  if constexpr (G == Grain::kJj)
    return tm::recover_ep_jj(be, op, st, stats);
  else
    return tm::recover_ep_ii(be, op, st, stats);
}

std::vector<pool::ArraySpec> ep_arrays(const pool::RunParams& p) {
  return {{scheme::kEpIndexArray, scheme::IndexRecordTable<2>::bytes_for(tiles_of(p))}};
}

// EagerRecompute at granularity G (thesis Figs. 3.1-3.4).
template <Grain G>
constexpr auto ep_scheme(std::string_view name) {
  return Scheme{.name = name,
                .family = scheme::Family::kEp,
                .arrays = ep_arrays,
                .run = [](mem::Backend auto& be, const Ctx& c,
                          std::size_t first) { run_eager<G>(be, c.op, eager_of(c), first); },
                .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
                  r.recovery_action = "recompute dirty regions from zero";
                  return recover_eager<G>(be, c.op, eager_of(c), r.recovery);
                },
                .mutants = kEagerMutants,
                .in_family_mean = G != Grain::kJj};
}

// Hybrid Recompute (thesis §3.2.1): EagerRecompute plus 1/Parts of C copied per kk iteration.
template <std::size_t Parts>
scheme::PartialCopier copier_of(const Ctx& c) {
  return {c.op.c.data(), c.pool.array<double>(scheme::kHrCopyArray),
          c.pool.array<scheme::PartState>(scheme::kHrPartsArray), c.op.n * c.op.n, Parts};
}

template <Grain G, std::size_t Parts>
constexpr auto hr_scheme(std::string_view name) {
  return Scheme{
      .name = name,
      .family = scheme::Family::kHr,
      .arrays =
          [](const pool::RunParams& p) {
            auto arrays = ep_arrays(p);
            arrays.push_back({scheme::kHrCopyArray, scheme::PartialCopier::copy_bytes(p.n * p.n)});
            arrays.push_back({scheme::kHrPartsArray, scheme::PartialCopier::state_bytes(Parts)});
            return arrays;
          },
      .run =
          [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
            const auto copier = copier_of<Parts>(c);
            run_eager<G>(be, c.op, eager_of(c, &copier), first);
          },
      .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
        r.recovery_action = "restore latest partial copy + recompute";
        const auto copier = copier_of<Parts>(c);
        return recover_eager<G>(be, c.op, eager_of(c, &copier), r.recovery);
      },
      .mutants = kEagerMutants,
      .in_family_mean = (G != Grain::kJj) && (Parts != 32)};
}

// Undo-logging transactions (thesis Fig. 2.6): one per panel (ii) or per tile (jj).
// The log format is a row parameter: wal-ii/jj keep a copy of the block (Fig. 2.6's cLog),
// wal-ii/jj-entry one {offset, old value} record per element (general-purpose undo logs, e.g.
// PMDK's, keep this format; twice the bytes). wal-ii-entry-sync also fences each log line as it
// fills, the cost of a WAL that makes each record durable before its store.
template <scheme::LogFormat F>
tm::WalState wal_of(const Ctx& c) {
  tm::WalState st{c.pool.array<scheme::UndoHeader>(scheme::kWalHeaderArray),
                  c.pool.array<tm::WalIndex>(scheme::kWalIndexArray)};
  if constexpr (scheme::entry_format(F))
    st.entries = c.pool.array<scheme::LogEntry>(scheme::kWalLogArray);
  else
    st.log = c.pool.array<double>(scheme::kWalLogArray);
  return st;
}

template <Grain G, scheme::LogFormat F = scheme::LogFormat::kBlock>
constexpr auto wal_scheme(std::string_view name) {
  return Scheme{.name = name,
                .family = scheme::Family::kWal,
                .arrays =
                    [](const pool::RunParams& p) {
                      const std::uint64_t nt = tiles_of(p), b = std::min(p.bs, p.n);
                      const std::uint64_t log = G == Grain::kJj ? nt * b * b : p.n * p.n;
                      const std::uint64_t record =
                          scheme::entry_format(F) ? sizeof(scheme::LogEntry) : sizeof(double);
                      return std::vector<pool::ArraySpec>{
                          {scheme::kWalHeaderArray, nt * sizeof(scheme::UndoHeader)},
                          {scheme::kWalIndexArray, nt * sizeof(tm::WalIndex)},
                          {scheme::kWalLogArray, log * record}};
                    },
                .run =
                    [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
                      if constexpr (G == Grain::kJj)
                        tm::run_wal_jj<F>(be, c.op, wal_of<F>(c), first);
                      else
                        tm::run_wal_ii<F>(be, c.op, wal_of<F>(c), first);
                    },
                .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
                  r.recovery_action = "undo-log rollback";
                  return tm::recover_wal<F>(be, c.op, wal_of<F>(c), G == Grain::kJj, r.recovery);
                },
                .mutants = kCommitMutants,
                .in_family_mean = G != Grain::kJj};
}

// Checkpoint of A, B and C by copy, double-buffered, after every kk tile.
tm::CpState cp_of(const Ctx& c) {
  return {c.pool.array<double>(scheme::kCpAreaArray),
          c.pool.array<tm::CpHeader>(scheme::kCpHeaderArray)};
}

constexpr auto cp_scheme() {
  return Scheme{.name = "cp",
                .family = scheme::Family::kCp,
                .arrays =
                    [](const pool::RunParams& p) {
                      return std::vector<pool::ArraySpec>{
                          {scheme::kCpAreaArray, 6 * p.n * p.n * sizeof(double)},
                          {scheme::kCpHeaderArray, kCacheLineBytes}};
                    },
                .run = [](mem::Backend auto& be, const Ctx& c,
                          std::size_t first) { tm::run_cp(be, c.op, cp_of(c), first); },
                .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
                  r.recovery_action = "restore checkpoint";
                  return tm::recover_cp(be, c.op, cp_of(c), r.recovery);
                },
                .mutants = kCommitMutants};
}

// Seed 002's checkpoint-by-copy designs on tmm: cp's arrays, the copy made by Mode, a checkpoint
// every --cp-every kk tiles (default 1, the paper's cadence).
template <scheme::CopyMode Mode>
constexpr auto cp_variant_scheme(std::string_view name) {
  return Scheme{
      .name = name,
      .family = scheme::Family::kCp,
      .arrays = cp_scheme().arrays,
      .run =
          [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
            tm::run_cp_variant(be, c.op, {cp_of(c), Mode, scheme::checkpoint_interval()}, first);
          },
      .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
        r.recovery_action = "restore checkpoint";
        return tm::recover_cp_variant(be, c.op, {cp_of(c), Mode, scheme::checkpoint_interval()},
                                      r.recovery);
      },
      .mutants = kCopyVariantMutants};
}

// In-place versioning (seed 002 §4.1): C and ipv_c1 alternate as working and consistent
// versions per kk tile; ipv-sync flushes in place, ipv hands the flush to the helper thread,
// ipv-nf does not flush (measurement only, not crash-safe).
tm::IpvState ipv_of(const Ctx& c) {
  return {c.pool.array<double>(kIpvSecondC),
          c.pool.array<scheme::IpvHeader>(scheme::kIpvHeaderArray)};
}

template <tm::IpvFlush How>
constexpr auto ipv_scheme(std::string_view name) {
  return Scheme{.name = name,
                .family = scheme::Family::kIpv,
                .arrays =
                    [](const pool::RunParams& p) {
                      return std::vector<pool::ArraySpec>{
                          {kIpvSecondC, p.n * p.n * sizeof(double)},
                          {scheme::kIpvHeaderArray, sizeof(scheme::IpvHeader)}};
                    },
                .run = [](mem::Backend auto& be, const Ctx& c,
                          std::size_t first) { tm::run_ipv(be, c.op, ipv_of(c), How, first); },
                .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
                  const std::size_t d = tm::recover_ipv(be, c.op, ipv_of(c), r.recovery);
                  // O(1): no data moved; the resumed run redoes at most the tile in flight.
                  r.recovery_action = d < c.op.tiles() ? fmt::format(
                                                             "ipv: version {} holds {} kk tiles; "
                                                             "at most 1 tile recomputed",
                                                             d % 2, d)
                                                       : std::string("ipv: complete");
                  return d;
                },
                // ipv-nf flushes nothing: a measurement row, with no protocol to break.
                .mutants = How == tm::IpvFlush::kNone ? mem::MutationSet{} : kIpvMutants,
                .crash_safe = How != tm::IpvFlush::kNone};
}

// libpmemobj flushes on its own; it is told to treat the file as pmem (cache-line flushes)
// unless the run asked for libpmem2's own choice (--persist auto).
template <class B>
inline constexpr bool kPmemobjForcePmem = true;
template <>
inline constexpr bool kPmemobjForcePmem<mem::NativeBackend<persist::Pmem2Persist>> = false;

template <mem::Backend B>
tm::PmemobjTmm open_pmemobj(B& be, const Ctx& c, bool fresh) {
  if constexpr (!scheme::kIsNativeBackend<B>)
    throw Error(ErrorCode::kUnsupported, "pmemobj runs natively only (libpmemobj)");
  return tm::PmemobjTmm::open_or_create(
      tm::PmemobjTmm::path_for(c.pool.path()),
      {c.op.n, c.op.bs, be.threads(), fresh, kPmemobjForcePmem<B>});
}

tm::ObjState* obj_state_of(const Ctx& c) {
  return c.pool.array<tm::ObjState>(kObjStateArray);
}

// libpmemobj undo transactions, one per (kk, ii): C is computed in a pool of libpmemobj's own,
// then copied into the pmlab pool, marked, and the object pool dropped. Creating that pool
// is set-up (like creating the pmlab pool), so it happens in `prepare`, outside the timing.
constexpr auto pmemobj_scheme() {
  return Scheme{.name = "pmemobj",
                .family = scheme::Family::kPmemobj,
                .arrays =
                    [](const pool::RunParams&) {
                      return std::vector<pool::ArraySpec>{{kObjStateArray, sizeof(tm::ObjState)}};
                    },
                .run =
                    [](mem::Backend auto& be, const Ctx& c, std::size_t first) {
                      auto* marker = obj_state_of(c);
                      if (be.load(&marker->copied_back) == 0) {
                        const auto obj = open_pmemobj(be, c, /*fresh=*/false);
                        obj.run(c.op, first, [&] { mem::outer_step_done(be); });
                        obj.copy_c(c.op.c.data());
                        be.persist(c.op.c.data(), c.op.c.bytes());
                        be.store(&marker->copied_back, std::uint64_t{1});
                        be.persist(&marker->copied_back, sizeof(std::uint64_t));
                      }
                      tm::PmemobjTmm::remove(tm::PmemobjTmm::path_for(c.pool.path()));
                    },
                .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
                  r.recovery_action = "libpmemobj rollback (pmemobj_open)";
                  if (be.load(&obj_state_of(c)->copied_back) != 0) return c.op.tiles();
                  return open_pmemobj(be, c, /*fresh=*/false).resume_point();
                },
                .sim_refusal =
                    "libpmemobj issues its own flushes and fences, which the simulator cannot "
                    "see",
                .prepare =
                    [](mem::Backend auto& be, const Ctx& c) {
                      // A first start must not pick up a stale object pool left at this path
                      // earlier.
                      if (c.pool.starts() <= 1) (void)open_pmemobj(be, c, /*fresh=*/true);
                    }};
}

tm::Operands shape_of(const pool::RunParams& p) {
  return {{nullptr, p.n, p.n}, {nullptr, p.n, p.n}, {nullptr, p.n, p.n}, p.n, p.bs};
}

// Outer iteration = kk tile; the (kk, ii) panels are the regions. The checksum table is one of
// the kernel's arrays (not lp's) so that every scheme's pool keeps the layout it always had.
constexpr auto kSchemes = std::tuple{
    restart_base_scheme(),
    lp_scheme<shape_of, TableArray::kKernel>(),
    ep_scheme<Grain::kIi>("ep-ii"),
    ep_scheme<Grain::kJj>("ep-jj"),
    wal_scheme<Grain::kIi>("wal-ii"),
    wal_scheme<Grain::kJj>("wal-jj"),
    wal_scheme<Grain::kIi, scheme::LogFormat::kEntry>("wal-ii-entry"),
    wal_scheme<Grain::kJj, scheme::LogFormat::kEntry>("wal-jj-entry"),
    wal_scheme<Grain::kIi, scheme::LogFormat::kEntrySynced>("wal-ii-entry-sync"),
    cp_scheme(),
    cp_variant_scheme<scheme::CopyMode::kStoresClflush>("cp-clflush"),
    cp_variant_scheme<scheme::CopyMode::kStoresParClflush>("cp-par-clflush"),
    cp_variant_scheme<scheme::CopyMode::kNt>("cp-nt"),
    ipv_scheme<tm::IpvFlush::kSync>("ipv-sync"),
    ipv_scheme<tm::IpvFlush::kAsync>("ipv"),
    ipv_scheme<tm::IpvFlush::kNone>("ipv-nf"),
    hr_scheme<Grain::kIi, 32>("hr-ii-x32"),
    hr_scheme<Grain::kIi, 64>("hr-ii-x64"),
    hr_scheme<Grain::kJj, 32>("hr-jj-x32"),
    hr_scheme<Grain::kJj, 64>("hr-jj-x64"),
    pmemobj_scheme(),
};

struct Tmm {
  using Operands = tm::Operands;
  static constexpr std::string_view kName = "tmm";
  // Outer iterations of a run (pmlab run's progress bar; the unit of resume points).
  static std::uint64_t outer_steps(const pool::RunParams& p) { return shape_of(p).tiles(); }
  static constexpr std::uint64_t kCrashTestMaxN = 400;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static void validate(const pool::RunParams& p) { require_sizes(kName, p, kMaxN); }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    const std::uint64_t mat = p.n * p.n * sizeof(double);
    return {{"a", mat}, {"b", mat}, {"c", mat}, lp_table_spec(shape_of(p).table_slots())};
  }
  // C and the checksum table are zero-filled by the pool (C's initial value; "unwritten" tags).
  static void init(pool::Pool& pool) {
    const auto& p = pool.params();
    kernels::fill_product_inputs(pool.array<double>("a"), pool.array<double>("b"), p.n, p.seed);
  }
  static Operands operands(const pool::Pool& pool) {
    const std::size_t n = pool.params().n;
    return {{pool.array<const double>("a"), n, n},
            {pool.array<const double>("b"), n, n},
            {pool.array<double>("c"), n, n},
            n,
            pool.params().bs};
  }
  static OutputBytes output(const Operands& op) { return {op.c.data(), op.c.bytes()}; }
  // tmm's ipv rows version C without a copy: every tile rewrites all of it (the basic rule).
  static std::vector<scheme::IpvObject> ipv_objects(const Operands& op) {
    return {{"C", 0, op.c.bytes() / sizeof(double), scheme::IpvObject::Declared::kUniform}};
  }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto& p = pool.params();
    const std::size_t n = p.n;
    std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
    kernels::fill_product_inputs(a.data(), b.data(), n, p.seed);
    mem::PlainBackend be({}, 1);
    tm::run_base(be, Operands{{a.data(), n, n}, {b.data(), n, n}, {c.data(), n, n}, n, p.bs});
    return compare_bits(pool.array<const double>("c"), c,
                        [n](std::size_t i) { return fmt::format("C[{}][{}]", i / n, i % n); });
  }
  // Per kk tile: every C element is loaded and stored once, plus an A and a B load per k.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    std::uint64_t refs = 0;
    for (std::uint64_t kk = 0; kk < p.n; kk += p.bs)
      refs += p.n * p.n * (2 + 2 * (std::min(kk + p.bs, p.n) - kk));
    return refs;
  }
};
static_assert(ResumableKernel<Tmm>);

}  // namespace

KernelDriver make_tmm_driver() {
  return make_kernel_driver<Tmm>();
}
SimKernel make_tmm_sim() {
  return make_sim_kernel<Tmm>();
}

}  // namespace pmlab::run
