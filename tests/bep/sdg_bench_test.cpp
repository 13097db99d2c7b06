// sdg (seed 004 BEP) as a benchmark: fault-free runs natively and in the simulator, crash
// campaigns under the software barrier (crashes in recovery included) and the negative control.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "bep_test_util.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/sdg.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/persist/persister.hpp"

namespace pmlab::bep::sdg {
namespace {

using EpNative = mem::NativeBackend<persist::CpuPersist<persist::FlushKind::kClflush>>;

struct alignas(64) Line {
  std::array<std::uint64_t, kLineWords> w{};
};

// Runs the scheme on a heap in ordinary memory and checks it against the replay of every op.
template <mem::Backend B>
Check run_native(B& be, const Shape& s, bool tx) {
  std::vector<Line> heap_lines(s.heap_words() / kLineWords);
  std::uint64_t* heap = heap_lines[0].w.data();
  std::vector<TxLog> logs(s.threads);
  init(heap, s);
  if (tx) {
    EpochTracked<B> et(be, configured_barrier(be));
    run_tx(et, heap, logs.data(), s);
    for (std::size_t t = 0; t < s.threads; ++t) EXPECT_EQ(tx_done(be, logs[t]), s.ops);
  } else {
    EpochTracked<B> et(be, sim::Barrier::kNone);
    run_base(et, heap, s);
  }
  return check_all(heap, s, s.ops);
}

TEST(BepSdgBench, FaultFreeOnPlainBackendMatchesTheReplay) {
  mem::PlainBackend be;
  const Shape s{256, 1, 3000, 3};
  for (const bool tx : {true, false}) {
    const auto c = run_native(be, s, tx);
    EXPECT_EQ(c.bad, 0u) << c.first;
    EXPECT_GT(c.keys, 100u);  // edges
  }
}

// Real threads under per-vertex stripe locks, real flushes: the replay's edge set whatever the
// interleaving.
TEST(BepSdgBench, NativeEpochPersistencyWithFourAndEightThreads) {
  for (const int threads : {4, 8}) {
    EpNative be({}, threads);
    const Shape s{2048, static_cast<std::uint64_t>(threads), threads == 8 ? 10000u : 2000u, 9};
    const auto c = run_native(be, s, true);
    EXPECT_EQ(c.bad, 0u) << threads << " threads: " << c.first;
  }
}

TEST(BepSdgBench, SimulatedRunsVerifyWithoutCrash) {
  for (const auto b : {sim::Barrier::kSoftware, sim::Barrier::kNone})
    for (const char* scheme : {"tx", "base"})
      test::expect_simulated_run_verifies(test::bench_spec("sdg", scheme, 64, 4, 16, b));
}

// Fine-grained interleaving (fibers switching every few ops): the lock is a simulated atomic
// section (SimBackend::atomically), so ops of different threads never interleave inside it.
TEST(BepSdgBench, FiberInterleavingKeepsTheLockAtomic) {
  for (const char* scheme : {"tx", "base"}) {
    auto spec = test::bench_spec("sdg", scheme, 64, 4, 16);
    spec.machine.interleave_quantum = 3;
    test::expect_simulated_run_verifies(spec);
  }
}

// The barrier mode changes when lines persist, never the program: the same loads and stores
// (and, the simulator being deterministic, the same final content) under sw and none.
TEST(BepSdgBench, BarrierModeDoesNotChangeTheProgram) {
  const auto sw = run::simulate(test::bench_spec("sdg", "tx", 64, 4, 16));
  const auto none = run::simulate(test::bench_spec("sdg", "tx", 64, 4, 16, sim::Barrier::kNone));
  EXPECT_EQ(sw.stats.loads, none.stats.loads);
  EXPECT_EQ(sw.stats.stores, none.stats.stores);
  EXPECT_GT(sw.stats.fences, 0u);
  EXPECT_EQ(none.stats.fences, 0u);
}

// The hardware barriers (the epoch engine): the same program as sw, and the same final content.
TEST(BepSdgBench, HardwareBarriersRunTheSameProgramAndVerify) {
  const auto sw = run::simulate(test::bench_spec("sdg", "tx", 64, 4, 16));
  for (const auto b :
       {sim::Barrier::kLb, sim::Barrier::kLbIdt, sim::Barrier::kLbPf, sim::Barrier::kLbPlusPlus}) {
    const auto spec = test::bench_spec("sdg", "tx", 64, 4, 16, b);
    const auto hw = run::simulate(spec);
    EXPECT_EQ(hw.stats.loads, sw.stats.loads) << sim::to_string(b);
    EXPECT_EQ(hw.stats.stores, sw.stats.stores) << sim::to_string(b);
    test::expect_simulated_run_verifies(spec);
  }
}

TEST(BepSdgBench, CrashCampaignUnderTheSoftwareBarrierAllPass) {
  const auto r = test::campaign(test::bench_spec("sdg", "tx", 48, 4, 12), 200);
  test::expect_all_pass(r);
  std::uint64_t in_recovery = 0, undone = 0;
  for (const auto& t : r.results) {
    in_recovery += t.crashes_in_recovery;
    undone += t.recovery.regions_recomputed;
  }
  EXPECT_GT(in_recovery, 0u);  // some restarts were cut inside the rollback
  EXPECT_GT(undone, 0u);       // and some crashes left an ACTIVE log to undo
}

// Negative control: the same campaign with the barriers off must fail some trials.
TEST(BepSdgBench, CrashCampaignWithoutBarriersFails) {
  const auto r = test::campaign(test::bench_spec("sdg", "tx", 48, 4, 12, sim::Barrier::kNone), 200);
  EXPECT_LT(r.passed, r.trials);
}

TEST(BepSdgBench, RefusesAGraphBeyondItsKeyArithmetic) {
  auto spec = test::bench_spec("sdg", "tx", kMaxVertices + 1, 1, 1);
  EXPECT_THROW(run::validate(spec), Error);
}

// Tiny graphs (the kill suites draw n from 1): fewer keys than threads leave some threads
// without edges, whose ops only count; every size still verifies.
TEST(BepSdgBench, TinyGraphsVerify) {
  mem::PlainBackend be;
  for (const std::uint64_t n : {1u, 2u, 3u, 4u, 5u}) {
    const auto c = run_native(be, Shape{n, 1, 50, 1}, true);
    EXPECT_EQ(c.bad, 0u) << "n=" << n << ": " << c.first;
  }
  test::expect_simulated_run_verifies(test::bench_spec("sdg", "tx", 5, 3, 8));
}

}  // namespace
}  // namespace pmlab::bep::sdg
