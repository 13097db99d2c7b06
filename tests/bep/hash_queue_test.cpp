// Hash and queue (seed 004 BEP): fault-free runs natively (1 and 4 real threads) and simulated,
// crash campaigns under the software barrier, and the negative control without barriers.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "bep_test_util.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/hash.hpp"
#include "pmlab/bep/queue.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/persist/persister.hpp"

namespace pmlab::bep {
namespace {

using EpNative = mem::NativeBackend<persist::CpuPersist<persist::FlushKind::kClflush>>;

// 64-byte aligned zeroed bytes (the pool's arrays are).
std::vector<Entry> buffer(std::size_t bytes) {
  return std::vector<Entry>(bytes / sizeof(Entry) + 1);
}

template <mem::Backend B>
hash::Check run_hash(B& be, const hash::Shape& s) {
  auto mem = buffer(s.bytes());
  auto* base = reinterpret_cast<std::byte*>(mem.data());
  const hash::Layout l(base, s);
  DirectStores d;
  hash::init(d, l, s);
  EpochTracked<B> et(be, configured_barrier(be));
  hash::run(et, l, s);
  return hash::check(base, s);
}

template <mem::Backend B>
queue::Check run_queue(B& be, const queue::Shape& s) {
  auto mem = buffer(s.bytes());
  auto* base = reinterpret_cast<std::byte*>(mem.data());
  const queue::Layout l(base, s);
  DirectStores d;
  queue::init(d, l, s);
  EpochTracked<B> et(be, configured_barrier(be));
  queue::run(et, l, s);
  for (std::size_t t = 0; t < s.threads; ++t) EXPECT_EQ(queue::done_of(be, l, t), s.ops);
  return queue::check(base, s);
}

TEST(BepHash, FaultFreeOnPlainBackendMatchesTheReplay) {
  mem::PlainBackend be;
  const auto c = run_hash(be, {256, 1, 2000, 3});
  EXPECT_EQ(c.bad, 0u) << c.first;
  EXPECT_EQ(c.elements, 256u);
}

// Four real threads share buckets (striped locks): chains stay sound and the key set equals
// the replay whatever the interleaving.
TEST(BepHash, NativeEpochPersistencyWithFourThreads) {
  EpNative be({}, 4);
  const auto c = run_hash(be, {512, 4, 5000, 9});
  EXPECT_EQ(c.bad, 0u) << c.first;
}

// Eight real threads x 10k operations on 2 cores: preemption inside critical sections, long
// chains under contention (issue 18's native stress, as rbtree and sdg have).
TEST(BepHash, NativeEpochPersistencyStressEightThreads) {
  EpNative be({}, 8);
  const auto c = run_hash(be, {512, 8, 10000, 11});
  EXPECT_EQ(c.bad, 0u) << c.first;
}

TEST(BepQueue, FaultFreeOnPlainBackendKeepsFifoOrder) {
  mem::PlainBackend be;
  const auto c = run_queue(be, {64, 1, 501});
  EXPECT_EQ(c.bad, 0u) << c.first;
}

// Four real threads on one lock: per-producer FIFO order, nothing lost or duplicated.
TEST(BepQueue, NativeEpochPersistencyWithFourThreads) {
  EpNative be({}, 4);
  const auto c = run_queue(be, {64, 4, 5000});
  EXPECT_EQ(c.bad, 0u) << c.first;
}

TEST(BepQueue, NativeEpochPersistencyStressEightThreads) {
  EpNative be({}, 8);
  const auto c = run_queue(be, {64, 8, 10000});
  EXPECT_EQ(c.bad, 0u) << c.first;
}

TEST(BepQueue, CheckCatchesALostInsert) {
  mem::PlainBackend be;
  const queue::Shape s{16, 2, 6};
  auto mem = buffer(s.bytes());
  auto* base = reinterpret_cast<std::byte*>(mem.data());
  const queue::Layout l(base, s);
  DirectStores d;
  queue::init(d, l, s);
  EpochTracked<mem::PlainBackend> et(be, sim::Barrier::kSoftware);
  queue::run(et, l, s);
  ASSERT_EQ(queue::check(base, s).bad, 0u);
  l.slots[(l.ptr->head - 1) % s.cap()].w[5] ^= 1;  // a torn last insert
  EXPECT_GT(queue::check(base, s).bad, 0u);
}

TEST(BepHash, CheckCatchesACycle) {
  const hash::Shape s{32, 1, 0, 1};
  auto mem = buffer(s.bytes());
  auto* base = reinterpret_cast<std::byte*>(mem.data());
  const hash::Layout l(base, s);
  DirectStores d;
  hash::init(d, l, s);
  ASSERT_EQ(hash::check(base, s).bad, 0u);
  const std::uint64_t first = l.heads[0];
  ASSERT_NE(first, 0u);
  l.entries[first - 1].w[1] = first;  // points at itself
  EXPECT_GT(hash::check(base, s).bad, 0u);
}

TEST(BepHashQueue, SimulatedRunsVerifyWithoutCrash) {
  for (const char* k : {"hash", "queue"})
    for (const auto b : {sim::Barrier::kSoftware, sim::Barrier::kNone})
      for (const char* scheme : {"tx", "base"})
        test::expect_simulated_run_verifies(test::bench_spec(k, scheme, 64, 4, 20, b));
}

TEST(BepHashQueue, CrashCampaignsUnderTheSoftwareBarrierAllPass) {
  for (const char* k : {"hash", "queue"}) {
    SCOPED_TRACE(k);
    test::expect_all_pass(test::campaign(test::bench_spec(k, "tx", 64, 4, 16), 300));
  }
}

// The negative control: hash with no barrier must fail some trials (queue too).
TEST(BepHashQueue, CrashCampaignsWithoutBarriersFail) {
  for (const char* k : {"hash", "queue"}) {
    const auto r = test::campaign(test::bench_spec(k, "tx", 64, 4, 16, sim::Barrier::kNone), 300);
    EXPECT_LT(r.passed, r.trials) << k;
  }
}

}  // namespace
}  // namespace pmlab::bep
