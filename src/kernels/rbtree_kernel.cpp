// rbtree (seed 004 BEP, docs/bep.md) as the drivers see it: the node heap, --ops, schemes tx
// (undo-log transactions under epoch persistency) and base (no persistency; restart), and the
// verification of the tree's invariants and of its key set against the replay of every op.
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/rbtree.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/run/bep_bench_params.hpp"
#include "pmlab/run/bep_undo_log_schemes.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace rb = bep::rbtree;

// A transaction logs at most kTxMaxLines lines. A red-black insert's write set is about
// 1.5·h + 10 node lines (recolouring climbs two levels per three nodes), h <= 2·log2(n + 1),
// which stays below 64 up to 2^15 nodes (the spec's full size).
constexpr std::uint64_t kMaxNodes = std::uint64_t{1} << 15;

struct RbtreeOperands {
  std::uint64_t* heap = nullptr;
  rb::Shape shape;
};
using Ctx = SchemeContext<RbtreeOperands>;

rb::Shape shape_of(const pool::RunParams& p) {
  return {p.n, p.threads, bep::ops_of(p), p.seed};
}

// rbtree's operations for the shared undo-log scheme rows (run/bep_undo_log_schemes.hpp).
struct RbtreeOps {
  // Not idt-dep-only-waw: no two threads store to one line while the first one's epoch is
  // unpersisted (0 such conflicts in every fault-free run of the controls' ladder, 0 of 40
  // trials failed on each of its machines; docs/crash-campaigns.md).
  static constexpr mem::MutationSet kMutants =
      bep::kTxSoftwareMutants |
      mem::MutationSet{mem::Mutation::kLbNoIntraFlush, mem::Mutation::kLbNoReplacementOrder,
                       mem::Mutation::kLbPerBankNoArbiter, mem::Mutation::kIdtIgnoreDeps};
  static void run_tx(auto& et, const Ctx& c, bep::TxLog* logs) {
    rb::run_tx(et, c.op.heap, logs, c.op.shape);
  }
  static std::uint64_t recover_tx(auto& et, const Ctx& c, bep::TxLog* logs) {
    return rb::recover_tx(et, c.op.heap, logs, c.op.shape);
  }
  static void run_base(auto& be, const Ctx& c) {
    bep::with_epochs(be, sim::Barrier::kNone,
                     [&](auto& et) { rb::run_base(et, c.op.heap, c.op.shape); });
  }
  static void restart(auto& be, const Ctx& c) {
    rb::build_initial(be, rb::tree_of(c.op.heap, c.op.shape), c.op.shape);
  }
};

constexpr auto kSchemes = bep::undo_log_schemes<Ctx, RbtreeOps>();

struct Rbtree {
  using Operands = RbtreeOperands;
  static constexpr std::string_view kName = "rbtree";
  static constexpr std::uint64_t kCrashTestMaxN = 256;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static std::vector<KernelParamSpec> params() { return bep::bench_params(); }
  static void validate(const pool::RunParams& p) {
    bep::require_bench_sizes(kName, p);
    if (p.n > kMaxNodes)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("rbtree: --n {} exceeds {} nodes (a rebalance must fit the undo "
                              "log's {} lines)",
                              p.n, kMaxNodes, bep::kTxMaxLines));
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    return {{"rbtree", shape_of(p).heap_words() * sizeof(std::uint64_t)}};
  }
  static void init(pool::Pool& pool) {
    rb::init(pool.array<std::uint64_t>("rbtree"), shape_of(pool.params()));
  }
  static Operands operands(const pool::Pool& pool) {
    return {pool.array<std::uint64_t>("rbtree"), shape_of(pool.params())};
  }
  static OutputBytes output(const Operands& op) {
    return {op.heap, op.shape.heap_words() * sizeof(std::uint64_t)};
  }
  static VerifyResult verify(const pool::Pool& pool) {
    const rb::Shape s = shape_of(pool.params());
    const auto c = rb::check_all(pool.array<std::uint64_t>("rbtree"), s, s.ops);
    return {c.keys, c.bad, c.first};
  }
  // An op walks about log2(n) nodes (key and a link each) and an insert writes a node.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    std::uint64_t depth = 1;
    while ((std::uint64_t{1} << depth) < p.n) ++depth;
    return p.threads * bep::ops_of(p) * (2 * depth + bep::kEntryWords / 3);
  }
};
static_assert(ResumableKernel<Rbtree>);

}  // namespace

KernelDriver make_rbtree_driver() {
  return make_kernel_driver<Rbtree>();
}
SimKernel make_rbtree_sim() {
  return make_sim_kernel<Rbtree>();
}

}  // namespace pmlab::run
