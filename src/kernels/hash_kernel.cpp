// Hash (seed 004 BEP, docs/bep.md) as the drivers see it: the table array, --ops, schemes tx
// (epoch persistency: one-word commits separated by barriers) and base (no barriers; restart),
// and the verification of the chains and the key set against the replay.
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include "pmlab/bep/hash.hpp"
#include "pmlab/run/bep_bench_params.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type and the rows kernels share

namespace hs = bep::hash;

struct HashOperands {
  std::byte* base = nullptr;
  hs::Shape shape;
  [[nodiscard]] hs::Layout layout() const { return {base, shape}; }
};
using Ctx = SchemeContext<HashOperands>;

hs::Shape shape_of(const pool::RunParams& p) {
  return {p.n, p.threads, bep::ops_of(p), p.seed};
}

constexpr auto kSchemes = std::tuple{
    Scheme{.name = "tx",
           .family = scheme::Family::kTx,
           .run =
               [](mem::Backend auto& be, const Ctx& c, std::size_t) {
                 bep::with_epochs(be, bep::configured_barrier(be),
                                  [&](auto& et) { hs::run(et, c.op.layout(), c.op.shape); });
               },
           .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
             // Every commit is one word on a durable entry: nothing to undo. Each thread
             // resumes at its own durable count (read here, reported) and replays its
             // interrupted op, which is idempotent.
             const hs::Layout l = c.op.layout();
             std::uint64_t resumed = 0;
             for (std::size_t t = 0; t < c.op.shape.threads; ++t)
               resumed += be.load(&l.done[t].done) < c.op.shape.ops ? 1 : 0;
             r.recovery_action = fmt::format("per-thread resume ({} of {} threads unfinished)",
                                             resumed, c.op.shape.threads);
             return 0;
           },
           .mutants = bep::kTxMutants},
    Scheme{.name = kBaseScheme,
           .family = scheme::Family::kBase,
           .run =
               [](mem::Backend auto& be, const Ctx& c, std::size_t) {
                 bep::with_epochs(be, sim::Barrier::kNone,
                                  [&](auto& et) { hs::run(et, c.op.layout(), c.op.shape); });
               },
           .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
             r.recovery_action = "restart";  // no ordering: back to the initial table
             hs::init(be, c.op.layout(), c.op.shape);
             return 0;
           }},
};

struct Hash {
  using Operands = HashOperands;
  static constexpr std::string_view kName = "hash";
  static constexpr std::uint64_t kCrashTestMaxN = 64;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kSchemes;

  static std::vector<KernelParamSpec> params() { return bep::bench_params(); }
  static void validate(const pool::RunParams& p) { bep::require_bench_sizes(kName, p); }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    return {{"hash", shape_of(p).bytes()}};
  }
  static void init(pool::Pool& pool) {
    const auto s = shape_of(pool.params());
    bep::DirectStores d;
    hs::init(d, hs::Layout(pool.array<std::byte>("hash"), s), s);
  }
  static Operands operands(const pool::Pool& pool) {
    return {pool.array<std::byte>("hash"), shape_of(pool.params())};
  }
  static OutputBytes output(const Operands& op) { return {op.base, op.shape.bytes()}; }
  static VerifyResult verify(const pool::Pool& pool) {
    const auto c = hs::check(pool.array<const std::byte>("hash"), shape_of(pool.params()));
    return {c.elements, c.bad, c.first};
  }
  // An insert writes an entry; the walks are a few loads (chains of ~4 entries).
  static std::uint64_t base_refs(const pool::RunParams& p) {
    return p.threads * bep::ops_of(p) * (bep::kEntryWords / 3 + 8);
  }
};
static_assert(ResumableKernel<Hash>);

}  // namespace

KernelDriver make_hash_driver() {
  return make_kernel_driver<Hash>();
}
SimKernel make_hash_sim() {
  return make_sim_kernel<Hash>();
}

}  // namespace pmlab::run
