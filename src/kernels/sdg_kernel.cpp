// sdg (seed 004 BEP, docs/bep.md) as the drivers see it: vertices and edge entries in one heap,
// --ops, schemes tx (undo-log transactions under epoch persistency) and base (no persistency;
// restart), and the verification of adjacency symmetry and of the edge set against the replay.
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/sdg.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/run/bep_bench_params.hpp"
#include "pmlab/run/bep_undo_log_schemes.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace sg = bep::sdg;

struct SdgOperands {
  std::uint64_t* heap = nullptr;
  sg::Shape shape;
};
using Ctx = SchemeContext<SdgOperands>;

sg::Shape shape_of(const pool::RunParams& p) {
  return {p.n, p.threads, bep::ops_of(p), p.seed};
}

// sdg's operations for the shared undo-log scheme rows (run/bep_undo_log_schemes.hpp).
struct SdgOps {
  // Not idt-dep-only-waw: no two threads store to one line while the first one's epoch is
  // unpersisted (0 such conflicts in every fault-free run of the controls' ladder, 0 of 40
  // trials failed on each of its machines; docs/crash-campaigns.md).
  static constexpr mem::MutationSet kMutants =
      bep::kTxSoftwareMutants |
      mem::MutationSet{mem::Mutation::kLbNoIntraFlush, mem::Mutation::kLbNoReplacementOrder,
                       mem::Mutation::kLbPerBankNoArbiter, mem::Mutation::kIdtIgnoreDeps};
  static void run_tx(auto& et, const Ctx& c, bep::TxLog* logs) {
    sg::run_tx(et, c.op.heap, logs, c.op.shape);
  }
  static std::uint64_t recover_tx(auto& et, const Ctx& c, bep::TxLog* logs) {
    return sg::recover_tx(et, c.op.heap, logs, c.op.shape);
  }
  static void run_base(auto& be, const Ctx& c) {
    bep::with_epochs(be, sim::Barrier::kNone,
                     [&](auto& et) { sg::run_base(et, c.op.heap, c.op.shape); });
  }
  static void restart(auto& be, const Ctx& c) {
    const sg::Shape& s = c.op.shape;
    sg::build_initial(be, sg::graph_of(c.op.heap, s), sg::EdgeSpace(s.n), s);
  }
};

constexpr auto kSchemes = bep::undo_log_schemes<Ctx, SdgOps>();

struct Sdg {
  using Operands = SdgOperands;
  static constexpr std::string_view kName = "sdg";
  static constexpr std::uint64_t kCrashTestMaxN = 256;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static std::vector<KernelParamSpec> params() { return bep::bench_params(); }
  static void validate(const pool::RunParams& p) {
    bep::require_bench_sizes(kName, p);
    if (p.n > sg::kMaxVertices)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("sdg: --n {} exceeds {} vertices", p.n, sg::kMaxVertices));
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    return {{"sdg", shape_of(p).heap_words() * sizeof(std::uint64_t)}};
  }
  static void init(pool::Pool& pool) {
    sg::init(pool.array<std::uint64_t>("sdg"), shape_of(pool.params()));
  }
  static Operands operands(const pool::Pool& pool) {
    return {pool.array<std::uint64_t>("sdg"), shape_of(pool.params())};
  }
  static OutputBytes output(const Operands& op) {
    return {op.heap, op.shape.heap_words() * sizeof(std::uint64_t)};
  }
  static VerifyResult verify(const pool::Pool& pool) {
    const sg::Shape s = shape_of(pool.params());
    const auto c = sg::check_all(pool.array<std::uint64_t>("sdg"), s, s.ops);
    return {c.keys, c.bad, c.first};
  }
  // An op walks an adjacency list (degree <= ~4: key and next per entry) and an insert writes
  // two entries.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return p.threads * bep::ops_of(p) * (16 + 2 * bep::kEntryWords / 3);
  }
};
static_assert(ResumableKernel<Sdg>);

}  // namespace

KernelDriver make_sdg_driver() {
  return make_kernel_driver<Sdg>();
}
SimKernel make_sdg_sim() {
  return make_sim_kernel<Sdg>();
}

}  // namespace pmlab::run
