// Seed 004's epoch engine, driven per op: tags, LB rules, IDT, PF, splitting, capacity, filter.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::ParamsBuilder;

constexpr int kEpochLines = 48;

// A machine over a registered persistent buffer of kEpochLines lines. Stores run the model first
// and then write the byte, as SimBackend does under a hardware barrier (a conflict flush must
// capture the old value).
class Rig {
 public:
  explicit Rig(SimParams p) : m(std::move(p)) { m.image().add_range(mem_->data(), mem_->size()); }
  [[nodiscard]] LineAddr line(int i) const {
    return LineAddr(reinterpret_cast<std::uintptr_t>(mem_->data()) / kCacheLineBytes +
                    static_cast<std::uint64_t>(i));
  }
  void store(int core, int i, std::uint8_t v) {
    m.store(core, line(i));
    byte(i) = std::byte{v};
  }
  void load(int core, int i) { m.load(core, line(i)); }
  void barrier(int core) { m.epoch_barrier(core); }
  [[nodiscard]] std::uint8_t durable(int i) const {
    return std::to_integer<std::uint8_t>(m.image().durable(&byte(i)));
  }
  [[nodiscard]] std::uint8_t live(int i) const { return std::to_integer<std::uint8_t>(byte(i)); }
  [[nodiscard]] EpochStats ep() const { return *m.stats().epochs; }
  [[nodiscard]] std::uint64_t writes() const { return m.stats().nvm.writes; }
  [[nodiscard]] std::uint64_t flushed(EpochCause c) const {
    return ep().flushed_by[static_cast<std::size_t>(c)];
  }
  [[nodiscard]] std::uint64_t stalled(EpochCause c) const {
    return ep().stall_cycles[static_cast<std::size_t>(c)];
  }

  Machine m;

 private:
  [[nodiscard]] std::byte& byte(int i) const {
    return (*mem_)[static_cast<std::size_t>(i) * kCacheLineBytes];
  }
  struct alignas(4096) Buf : std::array<std::byte, kEpochLines * kCacheLineBytes> {};
  std::unique_ptr<Buf> mem_ = std::make_unique<Buf>();
};

SimParams with_barrier(ParamsBuilder b, Barrier mode, std::uint32_t max_inflight = 8) {
  SimParams p = b.build();
  p.persistency.barrier = mode;
  p.persistency.max_inflight = max_inflight;
  return p;
}

constexpr Barrier kHardware[] = {Barrier::kLb, Barrier::kLbIdt, Barrier::kLbPf,
                                 Barrier::kLbPlusPlus};

// Test 1.
TEST(SimEpoch, BarrierBumpsTheEpochAndStoresTagTheirLine) {
  Rig r(with_barrier(ParamsBuilder(), Barrier::kLb));
  r.store(0, 0, 1);
  EXPECT_EQ(r.m.probe(0, r.line(0)).epoch_core, 0);
  EXPECT_EQ(r.m.probe(0, r.line(0)).epoch_seq, 0u);
  r.barrier(0);
  r.store(0, 1, 1);
  EXPECT_EQ(r.m.probe(0, r.line(1)).epoch_seq, 1u);
  EXPECT_EQ(r.m.probe(0, r.line(0)).epoch_seq, 0u);
  r.load(0, 0);  // one's own older line: not a conflict
  EXPECT_EQ(r.writes(), 0u);
  EXPECT_EQ(r.ep().stall_total(), 0u);
  EXPECT_EQ(r.ep().barriers, 1u);
}

TEST(SimEpoch, OffModesHaveNoEngineAndRefuseTheBarrier) {
  Machine m(ParamsBuilder().build());
  EXPECT_FALSE(m.stats().epochs.has_value());
  EXPECT_THROW(m.epoch_barrier(0), Error);
}

TEST(SimEpoch, LinesOutsideRegisteredRangesAreNotTagged) {
  Rig r(with_barrier(ParamsBuilder(), Barrier::kLb));
  r.m.store(0, LineAddr(5));
  EXPECT_EQ(r.m.probe(0, LineAddr(5)).epoch_core, -1);
}

// Test 2: a victim of epoch 1 while epoch 0 has a dirty line: epoch 0 is written first, online.
TEST(SimEpoch, ReplacementWritesOlderEpochsFirstAndStalls) {
  Rig r(with_barrier(ParamsBuilder().l1(1, 1).llc(1, 2), Barrier::kLb));
  r.store(0, 0, 1);  // A in e0
  r.barrier(0);
  r.store(0, 1, 2);  // B in e1
  r.load(0, 0);      // A becomes MRU in the LLC, B is the LRU way
  EXPECT_EQ(r.writes(), 0u);
  r.m.load(0, LineAddr(7));  // a volatile line's fill evicts B
  EXPECT_EQ(r.durable(0), 1);
  EXPECT_EQ(r.durable(1), 2);
  const SimStats s = r.m.stats();
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kEpochOnline), 1u);  // A, by the replacement rule
  EXPECT_EQ(s.nvm.writes_for(WriteCause::kEviction), 1u);     // then B itself
  EXPECT_EQ(r.flushed(EpochCause::kReplacement), 1u);
  EXPECT_GT(r.stalled(EpochCause::kReplacement), 0u);
}

TEST(SimEpoch, NoReplacementOrderMutantWritesTheVictimAlone) {
  SimParams p = with_barrier(ParamsBuilder().l1(1, 1).llc(1, 2), Barrier::kLb);
  p.persistency.debug.no_replacement_order = true;
  Rig r(p);
  r.store(0, 0, 1);
  r.barrier(0);
  r.store(0, 1, 2);
  r.load(0, 0);
  r.m.load(0, LineAddr(7));
  EXPECT_EQ(r.durable(0), 0);  // B (epoch 1) is durable before A (epoch 0): the bug
  EXPECT_EQ(r.durable(1), 2);
}

// Test 3 (Fig. 3b): St B in E0, St B in E2: "the epoch that last wrote to the conflicting
// line and all the epochs before it" (seed §3.2) are flushed first, i.e. E0 with B's old value;
// E1 stays buffered.
TEST(SimEpoch, IntraConflictFlushesOlderEpochsWithTheOldValue) {
  Rig r(with_barrier(ParamsBuilder(), Barrier::kLb));
  r.store(0, 2, 4);  // St C, E0
  r.store(0, 1, 1);  // St B, E0
  r.barrier(0);
  r.store(0, 0, 5);  // St A, E1
  r.barrier(0);
  r.store(0, 1, 2);  // St B, E2: intra conflict
  EXPECT_EQ(r.durable(1), 1);
  EXPECT_EQ(r.durable(2), 4);
  EXPECT_EQ(r.durable(0), 0);
  EXPECT_EQ(r.flushed(EpochCause::kIntra), 1u);
  EXPECT_GT(r.stalled(EpochCause::kIntra), 0u);
  EXPECT_EQ(r.m.probe(0, r.line(1)).epoch_seq, 2u);
  EXPECT_TRUE(r.m.probe(0, r.line(2)).in_l1);  // clwb-like: C stays cached, clean
  EXPECT_FALSE(r.m.probe(0, r.line(2)).dirty);
  r.store(0, 0, 6);  // St A, E2: E1 now
  EXPECT_EQ(r.durable(0), 5);
  EXPECT_EQ(r.flushed(EpochCause::kIntra), 2u);
}

TEST(SimEpoch, NoIntraFlushMutantLeavesTheOldEpochUnwritten) {
  SimParams p = with_barrier(ParamsBuilder(), Barrier::kLb);
  p.persistency.debug.no_intra_flush = true;
  Rig r(p);
  r.store(0, 1, 1);
  r.barrier(0);
  r.store(0, 0, 5);
  r.barrier(0);
  r.store(0, 1, 2);
  EXPECT_EQ(r.writes(), 0u);
}

// Test 4 (Fig. 3a/4): LB flushes the source online; IDT records a dependence instead.
TEST(SimEpoch, InterRawFlushesUnderLbAndTracksUnderIdt) {
  {
    Rig r(with_barrier(ParamsBuilder().cores(2), Barrier::kLb));
    r.store(0, 0, 1);  // E00, ongoing
    r.load(1, 0);
    EXPECT_EQ(r.ep().splits, 1u);
    EXPECT_EQ(r.flushed(EpochCause::kInterRaw), 1u);
    EXPECT_EQ(r.durable(0), 1);
    EXPECT_GT(r.stalled(EpochCause::kInterRaw), 0u);
  }
  Rig r(with_barrier(ParamsBuilder().cores(2), Barrier::kLbIdt));
  r.store(0, 0, 1);
  r.load(1, 0);
  EXPECT_EQ(r.writes(), 0u);
  EXPECT_EQ(r.ep().stall_total(), 0u);
  EXPECT_EQ(r.ep().idt_deps, 1u);
  EXPECT_EQ(r.ep().splits, 1u);
  // Core 1's epoch depends on core 0's E0: persisting it (here by an intra conflict) persists
  // the source first.
  r.store(1, 1, 7);
  r.barrier(1);
  r.store(1, 1, 8);
  EXPECT_EQ(r.durable(0), 1);
  EXPECT_EQ(r.durable(1), 7);
  EXPECT_EQ(r.flushed(EpochCause::kIntra), 2u);  // core 0's E0 and core 1's E0
}

TEST(SimEpoch, IgnoreDepsMutantPersistsTheDependentAlone) {
  SimParams p = with_barrier(ParamsBuilder().cores(2), Barrier::kLbIdt);
  p.persistency.debug.ignore_deps = true;
  Rig r(p);
  r.store(0, 0, 1);
  r.load(1, 0);
  r.store(1, 1, 7);
  r.barrier(1);
  r.store(1, 1, 8);
  EXPECT_EQ(r.durable(1), 7);
  EXPECT_EQ(r.durable(0), 0);  // the source is still volatile: the order is broken
}

// Test 5 (Fig. 5a): a circular pattern over two ongoing epochs completes under every variant.
TEST(SimEpoch, CircularDependencesSplitAndComplete) {
  for (Barrier b : kHardware) {
    Rig r(with_barrier(ParamsBuilder().cores(2), b));
    r.store(0, 0, 1);  // T0: St A in E_i
    r.store(1, 1, 2);  // T1: St X in E_j
    r.load(1, 0);      // T1: Ld A (source E_i ongoing: split)
    r.load(0, 1);      // T0: Ld X (source E_j ongoing: split)
    r.store(0, 2, 3);
    r.barrier(0);
    r.store(1, 3, 4);
    r.barrier(1);
    r.m.write_back_all(WriteCause::kDrain);
    EXPECT_GE(r.ep().splits, 2u) << to_string(b);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r.durable(i), i + 1) << to_string(b);
  }
}

TEST(SimEpoch, NoSplitMutantTerminatesOnTheCycle) {
  for (Barrier b : kHardware) {
    SimParams p = with_barrier(ParamsBuilder().cores(2), b);
    p.persistency.debug.no_split = true;
    Rig r(p);
    r.store(0, 0, 1);
    r.store(1, 1, 2);
    r.load(1, 0);
    r.load(0, 1);
    r.store(0, 2, 3);
    r.barrier(0);
    r.store(1, 3, 4);
    r.barrier(1);
    r.m.write_back_all(WriteCause::kDrain);
    EXPECT_EQ(r.ep().splits, 0u);
  }
}

// Test 6: WAW. IDT writes L back (old bytes) after its predecessors and needs no dependence;
// LB splits and flushes the whole source chain.
TEST(SimEpoch, InterWawWritesTheLineBackAfterItsPredecessors) {
  {
    Rig r(with_barrier(ParamsBuilder().cores(2), Barrier::kLbIdt));
    r.store(0, 0, 1);  // P in e0
    r.barrier(0);
    r.store(0, 1, 2);  // L in e1 (ongoing)
    r.store(1, 1, 9);  // core 1 overwrites L
    EXPECT_EQ(r.durable(0), 1);
    EXPECT_EQ(r.durable(1), 2);  // L's core-0 bytes, not core 1's
    EXPECT_EQ(r.ep().idt_deps, 0u);
    EXPECT_EQ(r.ep().splits, 0u);
    EXPECT_EQ(r.m.probe(1, r.line(1)).epoch_core, 1);
    EXPECT_GT(r.stalled(EpochCause::kInterWaw), 0u);
  }
  Rig r(with_barrier(ParamsBuilder().cores(2), Barrier::kLb));
  r.store(0, 0, 1);
  r.barrier(0);
  r.store(0, 1, 2);
  r.store(1, 1, 9);
  EXPECT_EQ(r.ep().splits, 1u);
  EXPECT_EQ(r.flushed(EpochCause::kInterWaw), 2u);
  EXPECT_EQ(r.durable(1), 2);
}

TEST(SimEpoch, DepOnlyWawMutantLeavesTheOldBytesUnwritten) {
  SimParams p = with_barrier(ParamsBuilder().cores(2), Barrier::kLbIdt);
  p.persistency.debug.dep_only_waw = true;
  Rig r(p);
  r.store(0, 0, 1);
  r.barrier(0);
  r.store(0, 1, 2);
  r.store(1, 1, 9);
  EXPECT_EQ(r.writes(), 0u);
  EXPECT_EQ(r.ep().idt_deps, 1u);
}

// Test 7: the (k+1)-th unpersisted epoch flushes the oldest online.
class SimEpochCapacity : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(SimEpochCapacity, OldestEpochIsFlushedWhenTheRingIsFull) {
  const std::uint32_t k = GetParam();
  Rig r(with_barrier(ParamsBuilder(), Barrier::kLb, k));
  for (std::uint32_t i = 0; i + 1 < k; ++i) {
    r.store(0, static_cast<int>(i), 1);
    r.barrier(0);
  }
  EXPECT_EQ(r.flushed(EpochCause::kCapacity), 0u);
  EXPECT_EQ(r.writes(), 0u);
  r.store(0, static_cast<int>(k) - 1, 1);
  r.barrier(0);
  EXPECT_EQ(r.flushed(EpochCause::kCapacity), 1u);
  EXPECT_EQ(r.durable(0), 1);
  EXPECT_EQ(r.writes(), 1u);
  EXPECT_GT(r.stalled(EpochCause::kCapacity), 0u);
}
INSTANTIATE_TEST_SUITE_P(MaxInflight, SimEpochCapacity, ::testing::Values(1u, 2u, 8u));

TEST(SimEpoch, IdtOverflowFallsBackToLb) {
  Rig r(with_barrier(ParamsBuilder().cores(6), Barrier::kLbIdt));
  for (int c = 1; c < 6; ++c) r.store(c, c, static_cast<std::uint8_t>(c));
  for (int c = 1; c < 6; ++c) r.load(0, c);  // one register per source core: the 5th overflows
  EXPECT_EQ(r.ep().idt_deps, 4u);
  EXPECT_EQ(r.ep().idt_overflows, 1u);
  EXPECT_EQ(r.durable(5), 5);
  EXPECT_EQ(r.durable(4), 0);
  EXPECT_EQ(r.flushed(EpochCause::kInterRaw), 1u);
}

// Test 8: PF writes a completed epoch without a stall and keeps the line cached clean
// (invalidating: dropped); it waits for an unpersisted source instead of forcing it.
TEST(SimEpoch, ProactiveFlushIsOfflineAndNonInvalidating) {
  for (bool inval : {false, true}) {
    SimParams p = with_barrier(ParamsBuilder(), Barrier::kLbPf);
    p.persistency.invalidating_epoch_flush = inval;
    Rig r(p);
    r.store(0, 0, 1);
    r.barrier(0);
    EXPECT_EQ(r.durable(0), 1);
    EXPECT_EQ(r.flushed(EpochCause::kProactive), 1u);
    EXPECT_EQ(r.m.stats().nvm.writes_for(WriteCause::kEpochProactive), 1u);
    EXPECT_EQ(r.ep().stall_total(), 0u);
    EXPECT_EQ(r.m.probe(0, r.line(0)).in_l1, !inval);
    EXPECT_FALSE(r.m.probe(0, r.line(0)).dirty);
  }
}

TEST(SimEpoch, ProactiveFlushWaitsForItsSource) {
  // The order of PF's flushes, not their timing: each flush starts at once when allowed.
  SimParams p = with_barrier(ParamsBuilder().cores(2), Barrier::kLbPlusPlus);
  p.persistency.pf_instant = true;
  Rig r(p);
  r.store(0, 0, 1);  // core 0's E0
  r.load(1, 0);      // dependence E0(core 0) -> core 1's E0; core 0 is split
  r.store(1, 1, 2);
  r.barrier(1);  // core 1's E0 completes, but its source is not durable: PF waits
  r.store(1, 2, 3);
  r.barrier(1);  // core 1's E1 has no source, but its predecessor E0 waits: so does E1
  EXPECT_EQ(r.durable(1), 0);
  EXPECT_EQ(r.durable(2), 0);
  EXPECT_EQ(r.durable(0), 0);
  r.barrier(0);  // core 0's PF writes A; its inform register wakes core 1's PF
  EXPECT_EQ(r.durable(0), 1);
  EXPECT_EQ(r.durable(1), 2);
  EXPECT_EQ(r.durable(2), 3);
  EXPECT_EQ(r.ep().stall_total(), 0u);
  EXPECT_EQ(r.m.stats().nvm.writes_for(WriteCause::kEpochProactive), 3u);
}

// A load of a line dirtied in an older epoch must not let the next store to it skip the
// intra-conflict check through the same-line filter (the persist-order oracle found this).
TEST(SimEpoch, LoadOfAnOlderEpochsLineDoesNotHideTheNextStore) {
  for (Barrier b : kHardware) {
    // A 2-set L1: lines 0 and 2 share a set and a filter entry, and both stay cached.
    Rig r(with_barrier(ParamsBuilder().l1(2, 2).llc(4, 4), b));
    r.store(0, 0, 1);
    r.barrier(0);
    r.load(0, 2);      // takes the filter entry, so that the next load of 0 is not filtered
    r.load(0, 0);      // the slow path records line 0 (dirty in L1, from E0) in the filter
    r.store(0, 0, 2);  // E1 overwrites E0's line: E0 must be durable first (or already be)
    EXPECT_EQ(r.durable(0), 1) << to_string(b);
    EXPECT_EQ(r.flushed(EpochCause::kIntra) + r.flushed(EpochCause::kProactive), 1u)
        << to_string(b);
  }
}

// The arbiter flushes one epoch at a time: an epoch completed while the previous one is still
// being flushed waits in the PF queue, and a store to one of its lines is an intra conflict
// that waits for it online; with pf_instant (flush at the barrier) nothing conflicts.
TEST(SimEpoch, ProactiveFlushWaitsForTheArbiter) {
  for (bool instant : {false, true}) {
    SimParams p = with_barrier(ParamsBuilder(), Barrier::kLbPf);
    p.persistency.pf_instant = instant;
    Rig r(p);
    r.load(0, 1);  // cached, so that E1's store below takes a few cycles, not an NVM read
    r.store(0, 0, 1);
    r.barrier(0);  // E0 completes: its flush starts now and lasts an NVM write + the handshake
    r.store(0, 1, 2);
    r.barrier(0);  // E1 completes at once: the arbiter is still busy with E0
    EXPECT_EQ(r.durable(0), 1);
    EXPECT_EQ(r.durable(1), instant ? 2 : 0) << "instant " << instant;
    r.store(0, 1, 3);  // E1's line again, from E2
    EXPECT_EQ(r.durable(1), 2);
    EXPECT_EQ(r.flushed(EpochCause::kIntra), instant ? 0u : 1u);
    EXPECT_EQ(r.stalled(EpochCause::kIntra) > 0, !instant);
    EXPECT_EQ(r.flushed(EpochCause::kProactive), instant ? 2u : 1u);
  }
}

TEST(SimEpoch, PerBankMutantWritesAYoungerLineFirst) {
  SimParams p = with_barrier(ParamsBuilder(), Barrier::kLb, 2);
  p.persistency.debug.per_bank_no_arbiter = true;
  Rig r(p);
  // Fig. 7a: E1 = {A (bank 0), B (bank 1)}, E2 = {C (bank 1)}; capacity flushes E1 and E2
  // bank by bank, so C (E2) reaches NVM before A (E1). The image after the flush cannot show
  // the order, so the oracle (branch oracle) checks it; here the flush must still complete.
  r.store(0, 0, 1);
  r.store(0, 1, 2);
  r.barrier(0);
  r.store(0, 3, 3);
  r.barrier(0);
  EXPECT_EQ(r.durable(0), 1);
  EXPECT_EQ(r.durable(1), 2);
}

TEST(SimEpoch, DrainWritesEveryEpochAndPowerFailForgetsThem) {
  for (Barrier b : kHardware) {
    Rig r(with_barrier(ParamsBuilder().cores(2), b));
    r.store(0, 0, 1);
    r.barrier(0);
    r.store(0, 1, 2);
    r.store(1, 2, 3);
    r.m.write_back_all(WriteCause::kDrain);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(r.durable(i), i + 1) << to_string(b);
    r.store(0, 3, 4);
    r.m.power_fail();
    EXPECT_EQ(r.durable(3), 0);
    r.store(0, 3, 5);  // the engine runs on after a power failure
    r.m.write_back_all(WriteCause::kDrain);
    EXPECT_EQ(r.durable(3), 5);
  }
}

// SimBackend under a hardware barrier: the model sees a store before its bytes land, so the
// flush an intra conflict forces captures the previous value; a barrier is an op.
TEST(SimEpoch, BackendRunsTheModelBeforeTheStoreBytes) {
  SimBackend be(with_barrier(ParamsBuilder(), Barrier::kLb), FlushMode::kNone);
  alignas(64) std::array<std::uint64_t, 16> v{};
  be.register_persistent(v.data(), sizeof v);
  be.store(&v[0], std::uint64_t{1});
  be.persist_barrier();
  be.persist_barrier();
  be.store(&v[0], std::uint64_t{2});
  EXPECT_EQ(be.image().durable(&v[0]), 1u);
  EXPECT_EQ(v[0], 2u);
  EXPECT_EQ(be.ops(), 4u);
  SimBackend sw(ParamsBuilder().build(), FlushMode::kNone);
  sw.persist_barrier();  // software EP: nothing here, and not an op
  EXPECT_EQ(sw.ops(), 0u);
}

TEST(SimEpoch, Micro15IsTable1) {
  const SimParams p = preset("micro15");
  EXPECT_EQ(p.cores, 32);
  EXPECT_EQ(p.threads, 32);
  EXPECT_EQ(p.l1.size_bytes, 32u * 1024);
  EXPECT_EQ(p.l1.ways, 4u);
  EXPECT_EQ(p.l1.hit_latency.value(), 3u);
  EXPECT_FALSE(p.l2.has_value());
  EXPECT_EQ(p.llc.size_bytes, 32u * 1024 * 1024);
  EXPECT_EQ(p.llc.ways, 16u);
  EXPECT_EQ(p.llc.hit_latency.value(), 30u);
  EXPECT_EQ(p.nvm_read_cycles().value(), 240u);
  EXPECT_EQ(p.nvm_write_cycles().value(), 360u);
  EXPECT_EQ(p.persistency.max_inflight, 8u);
  SimParams lb = p;
  lb.persistency.barrier = Barrier::kLbPlusPlus;
  EXPECT_NO_THROW(Machine{lb});
  lb.periodic_flush_cycles = Cycles{1000};
  EXPECT_THROW(lb.validate(), Error);
}

// Test 9: the same-line filter stays exact under barriers (its dirty bits are cleared at every
// new epoch, so a store to a line of an older epoch reaches the intra-conflict check).
void run_trace(Rig& r, std::uint64_t seed, int cores) {
  std::mt19937_64 rng(seed);
  int line = 0;
  for (int i = 0; i < 6000; ++i) {
    const int core = static_cast<int>(rng() % static_cast<std::uint64_t>(cores));
    const std::uint64_t x = rng() % 100;
    if (x < 50) {
      // same-line reuse
    } else if (x < 88) {
      line = static_cast<int>(rng() % kEpochLines);
    } else if (x < 98) {
      r.barrier(core);
      continue;
    } else {
      r.m.load(core, LineAddr(rng() % 32));  // volatile lines too
      continue;
    }
    if (rng() % 3 == 0)
      r.store(core, line, static_cast<std::uint8_t>(i));
    else
      r.load(core, line);
  }
}

TEST(SimEpoch, FilterIsExactWithRandomBarriers) {
  for (Barrier b : kHardware) {
    for (bool inval : {false, true}) {
      for (std::uint64_t seed : {1, 2}) {
        SimParams on = with_barrier(ParamsBuilder().cores(3).l1(2, 2).llc(4, 4), b);
        on.persistency.invalidating_epoch_flush = inval;
        SimParams off = on;
        off.same_line_filter = false;
        Rig a(on), c(off);
        run_trace(a, seed, 3);
        run_trace(c, seed, 3);
        nlohmann::json ja = to_json(a.m.stats()), jc = to_json(c.m.stats());
        EXPECT_GT(ja["filtered_accesses"].get<std::uint64_t>(), 100u);
        ja.erase("filtered_accesses");
        jc.erase("filtered_accesses");
        EXPECT_EQ(ja, jc) << to_string(b) << " seed " << seed;
        EXPECT_GT(ja["epochs"]["epochs"].get<std::uint64_t>(), 100u);
        for (int i = 0; i < kEpochLines; ++i) {
          EXPECT_EQ(a.durable(i), c.durable(i));
          const LineState x = a.m.probe(0, a.line(i)), y = c.m.probe(0, c.line(i));
          EXPECT_EQ(x.epoch_core, y.epoch_core);
          EXPECT_EQ(x.epoch_seq, y.epoch_seq);
          EXPECT_EQ(x.dirty, y.dirty);
        }
      }
    }
  }
}

// Every mode and mutant on tiny caches (evictions, conflicts, splits, overflows): nothing hangs
// or loses a line, and the drain leaves the image equal to memory.
TEST(SimEpoch, RandomTracesDrainToTheLiveBytes) {
  for (Barrier b : kHardware)
    for (int mutant = 0; mutant < 7; ++mutant)
      for (std::uint64_t seed : {1, 2, 3}) {
        SimParams p = with_barrier(ParamsBuilder().cores(4).l1(1, 2).llc(2, 2), b,
                                   static_cast<std::uint32_t>(1 + seed));
        p.persistency.idt_regs = 2;
        p.persistency.invalidating_epoch_flush = seed == 2;
        PersistencyParams::Debug& d = p.persistency.debug;
        d.no_intra_flush = mutant == 1;
        d.no_replacement_order = mutant == 2;
        d.ignore_deps = mutant == 3;
        d.no_split = mutant == 4;
        d.dep_only_waw = mutant == 5;
        d.per_bank_no_arbiter = mutant == 6;
        Rig r(p);
        run_trace(r, seed, 4);
        r.m.write_back_all(WriteCause::kDrain);
        for (int i = 0; i < kEpochLines; ++i)
          ASSERT_EQ(r.durable(i), r.live(i))
              << to_string(b) << " mutant " << mutant << " line " << i;
        const EpochStats e = r.ep();
        // Drained: only the ongoing epochs (one per core, plus the drain's own) are left.
        EXPECT_GE(e.epochs, e.barriers + e.splits) << to_string(b) << " mutant " << mutant;
        EXPECT_LE(e.epochs, e.barriers + e.splits + 4);
      }
}

}  // namespace
}  // namespace pmlab::sim
