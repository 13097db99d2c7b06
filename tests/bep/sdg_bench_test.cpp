// sdg (seed 004 BEP) as a benchmark: fault-free runs natively (tests/bep/undo_log_bench_test.cpp
// has its simulated runs and crash campaigns, shared with rbtree), tiny graphs and its size limit.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "bep_test_util.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/sdg.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/persist/persister.hpp"
#include "word_line.hpp"

namespace pmlab::bep::sdg {
namespace {

using EpNative = mem::NativeBackend<persist::CpuPersist<persist::FlushKind::kClflush>>;

// The same type in every BEP test file (one unity-build batch may hold several).
using Line = test::WordLine;

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
