// Queue (seed 004 BEP, Fig. 10a, docs/bep.md) as the drivers see it: the ring array, --ops,
// schemes tx (epoch persistency: two epochs per op, a per-thread record) and base (no barriers;
// restart), and the verification of the pointers, slots and per-producer FIFO order.
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include "pmlab/bep/queue.hpp"
#include "pmlab/run/bep_bench_params.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace qu = bep::queue;

struct QueueOperands {
  std::byte* base = nullptr;
  qu::Shape shape;
  [[nodiscard]] qu::Layout layout() const { return {base, shape}; }
};
using Ctx = SchemeContext<QueueOperands>;

qu::Shape shape_of(const pool::RunParams& p) {
  return {p.n, p.threads, bep::ops_of(p)};
}

constexpr auto kSchemes = std::tuple{
    Scheme{.name = "tx",
           .family = scheme::Family::kTx,
           .run =
               [](mem::Backend auto& be, const Ctx& c, std::size_t) {
                 bep::with_epochs(be, bep::configured_barrier(be),
                                  [&](auto& et) { qu::run(et, c.op.layout(), c.op.shape); });
               },
           .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
             r.recovery_action = "resolve pending records, per-thread resume";
             bep::with_epochs(be, bep::configured_barrier(be),
                              [&](auto& et) { (void)qu::recover(et, c.op.layout(), c.op.shape); });
             return 0;
           },
           // Of the epoch engine's mutants, only IDT's: queue's epochs persist by inter-thread
           // reads alone (no intra-thread conflict, no replacement-ordered victim in any
           // fault-free run of the ladder), and no machine of the ladder catches intra-flush,
           // replacement-order or per-bank (docs/crash-campaigns.md).
           .mutants = bep::kTxSoftwareMutants | mem::MutationSet{mem::Mutation::kIdtIgnoreDeps,
                                                                 mem::Mutation::kIdtDepOnlyWaw}},
    Scheme{.name = kBaseScheme,
           .family = scheme::Family::kBase,
           .run =
               [](mem::Backend auto& be, const Ctx& c, std::size_t) {
                 bep::with_epochs(be, sim::Barrier::kNone,
                                  [&](auto& et) { qu::run(et, c.op.layout(), c.op.shape); });
               },
           .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
             r.recovery_action = "restart";  // no ordering: back to the initial queue
             qu::init(be, c.op.layout(), c.op.shape);
             return 0;
           }},
};

struct Queue {
  using Operands = QueueOperands;
  static constexpr std::string_view kName = "queue";
  static constexpr std::uint64_t kCrashTestMaxN = 64;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static std::vector<KernelParamSpec> params() { return bep::bench_params(); }
  static void validate(const pool::RunParams& p) {
    bep::require_bench_sizes(kName, p);
    // A record keeps the position in 31 bits (queue.hpp).
    const qu::Shape s = shape_of(p);
    if (s.initial() + s.threads * s.inserts_per_thread() >= (std::uint64_t{1} << 31))
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("queue: --n/2 + --threads x --ops/2 must stay below 2^31 inserts"));
  }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    return {{"queue", shape_of(p).bytes()}};
  }
  static void init(pool::Pool& pool) {
    const auto s = shape_of(pool.params());
    bep::DirectStores d;
    qu::init(d, qu::Layout(pool.array<std::byte>("queue"), s), s);
  }
  static Operands operands(const pool::Pool& pool) {
    return {pool.array<std::byte>("queue"), shape_of(pool.params())};
  }
  static OutputBytes output(const Operands& op) { return {op.base, op.shape.bytes()}; }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto c = qu::check(pool.array<const std::byte>("queue"), shape_of(pool.params()));
    return {c.elements, c.bad, c.first};
  }
  // An insert writes an entry, a delete reads one.
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return p.threads * bep::ops_of(p) * (bep::kEntryWords + 4);
  }
};
static_assert(ResumableKernel<Queue>);

}  // namespace

KernelDriver make_queue_driver() {
  return make_kernel_driver<Queue>();
}
SimKernel make_queue_sim() {
  return make_sim_kernel<Queue>();
}

}  // namespace pmlab::run
