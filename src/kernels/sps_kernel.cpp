// SPS (seed 004 BEP, docs/bep.md) as the drivers see it: the entry array, --ops, schemes tx
// (undo-log transactions under epoch persistency) and base (no persistency; restart), and the
// verification against the replay of every swap.
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include "pmlab/bep/sps.hpp"
#include "pmlab/run/bep_bench_params.hpp"
#include "pmlab/run/bep_undo_log_schemes.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace sp = bep::sps;

struct SpsOperands {
  bep::Entry* a = nullptr;
  sp::Shape shape;
};
using Ctx = SchemeContext<SpsOperands>;

sp::Shape shape_of(const pool::RunParams& p) {
  return {p.n, p.threads, bep::ops_of(p), p.seed};
}

// sps's operations for the shared undo-log scheme rows (run/bep_undo_log_schemes.hpp).
struct SpsOps {
  // Not idt-dep-only-waw (as rbtree and sdg) nor lb-per-bank-no-arbiter: under lb++ no machine
  // of the controls' ladder catches the latter (0 of 40 trials on each; under lb 2-3 of 40
  // fail on the campaign's machine), and a row declares its controls for every barrier
  // (docs/crash-campaigns.md). hash and rbtree carry it.
  static constexpr mem::MutationSet kMutants =
      bep::kTxSoftwareMutants |
      mem::MutationSet{mem::Mutation::kLbNoIntraFlush, mem::Mutation::kLbNoReplacementOrder,
                       mem::Mutation::kIdtIgnoreDeps};
  static void run_tx(auto& et, const Ctx& c, bep::TxLog* logs) {
    sp::run_tx(et, c.op.a, logs, c.op.shape);
  }
  static std::uint64_t recover_tx(auto& et, const Ctx& c, bep::TxLog* logs) {
    return sp::recover_tx(et, c.op.a, logs, c.op.shape);
  }
  static void run_base(auto& be, const Ctx& c) { sp::run_base(be, c.op.a, c.op.shape); }
  static void restart(auto& be, const Ctx& c) {
    for (std::size_t i = 0; i < c.op.shape.n; ++i) bep::write_entry(be, c.op.a[i], i, 0, i);
  }
};

constexpr auto kSchemes = bep::undo_log_schemes<Ctx, SpsOps>();

struct Sps {
  using Operands = SpsOperands;
  static constexpr std::string_view kName = "sps";
  static constexpr std::uint64_t kCrashTestMaxN = 64;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static std::vector<KernelParamSpec> params() { return bep::bench_params(); }
  static void validate(const pool::RunParams& p) { bep::require_bench_sizes(kName, p); }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    return {{"sps", p.n * sizeof(bep::Entry)}};
  }
  static void init(pool::Pool& pool) {
    sp::init(pool.array<bep::Entry>("sps"), shape_of(pool.params()));
  }
  static Operands operands(const pool::Pool& pool) {
    return {pool.array<bep::Entry>("sps"), shape_of(pool.params())};
  }
  static OutputBytes output(const Operands& op) { return {op.a, op.shape.n * sizeof(bep::Entry)}; }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto c = sp::check(pool.array<const bep::Entry>("sps"), shape_of(pool.params()));
    return {c.entries, c.bad, c.first};
  }
  // A swap loads and stores two entries.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return p.threads * bep::ops_of(p) * 4 * bep::kEntryWords;
  }
};
static_assert(ResumableKernel<Sps>);

}  // namespace

KernelDriver make_sps_driver() {
  return make_kernel_driver<Sps>();
}
SimKernel make_sps_sim() {
  return make_sim_kernel<Sps>();
}

}  // namespace pmlab::run
