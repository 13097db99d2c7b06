// rbtree (seed 004 BEP) as a benchmark: fault-free runs natively (tests/bep/undo_log_bench_test.cpp
// has its simulated runs and crash campaigns, shared with sdg) and its size limit.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "bep_test_util.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/rbtree.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/persist/persister.hpp"
#include "word_line.hpp"

namespace pmlab::bep::rbtree {
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

TEST(BepRbtreeBench, FaultFreeOnPlainBackendMatchesTheReplay) {
  mem::PlainBackend be;
  const Shape s{512, 1, 3000, 3};
  for (const bool tx : {true, false}) {
    const auto c = run_native(be, s, tx);
    EXPECT_EQ(c.bad, 0u) << c.first;
    EXPECT_GT(c.keys, 100u);
  }
}

// Real threads under one lock, real flushes: the replay's key set whatever the interleaving.
TEST(BepRbtreeBench, NativeEpochPersistencyWithFourAndEightThreads) {
  for (const int threads : {4, 8}) {
    EpNative be({}, threads);
    const Shape s{4096, static_cast<std::uint64_t>(threads), threads == 8 ? 10000u : 2000u, 9};
    const auto c = run_native(be, s, true);
    EXPECT_EQ(c.bad, 0u) << threads << " threads: " << c.first;
  }
}

TEST(BepRbtreeBench, RefusesATreeWhoseRebalanceCouldOverflowTheLog) {
  auto spec = test::bench_spec("rbtree", "tx", (1u << 15) + 1, 1, 1);
  EXPECT_THROW(run::validate(spec), Error);
  spec.run.n = 1u << 15;
  EXPECT_NO_THROW(run::validate(spec));
}

}  // namespace
}  // namespace pmlab::bep::rbtree
