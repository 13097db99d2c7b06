// The persist-order oracle (seed 004 §3.5): hand-built orders, SimBackend hooks, random traces.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/sim/persist_oracle.hpp"
#include "../support/process.hpp"
#include "../support/test_seed.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::LineBuffer;
using testing::ParamsBuilder;

constexpr LineAddr kA{100}, kB{101}, kC{102}, kX{103}, kY{104};

// Runs `fn` and returns the OrderViolation's message, or nullopt when none was thrown.
template <class Fn>
std::optional<std::string> violation(Fn&& fn) {
  try {
    fn();
  } catch (const OrderViolation& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// --- hand-built sequences ------------------------------------------------------------------

TEST(SimOracle, EpochOrderAndInterThreadOrderPass) {
  PersistOracle o;
  o.on_store(0, kA, 1);
  o.on_barrier(0);
  o.on_store(0, kB, 2);
  o.on_load(1, kB, 3);  // t1 depends on t0's epoch 1 (and so on its epoch 0)
  o.on_store(1, kC, 4);
  o.on_capture(kA);
  o.on_capture(kB);
  o.on_capture(kC);
  EXPECT_EQ(o.pending_lines(), 0u);
  EXPECT_EQ(o.edges_added(), 1u);
  // Reordering inside one epoch is allowed (coalescing, E1 only orders epochs).
  o.on_store(0, kX, 5);
  o.on_store(0, kY, 6);
  o.on_capture(kY);
  o.on_capture(kX);
  o.on_capture(kA);  // nothing pending on it: a write changes no order
  EXPECT_EQ(o.captures_checked(), 6u);
}

TEST(SimOracle, IntraThreadEpochReorderThrows) {
  PersistOracle o;
  o.on_store(0, kA, 1);
  o.on_barrier(0);
  o.on_store(0, kB, 2);
  const auto v = violation([&] { o.on_capture(kB); });
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("thread 0's store (op 2, epoch 1)"), std::string::npos) << *v;
  EXPECT_NE(v->find("line 0x64 (op 1, epoch 0)"), std::string::npos) << *v;
}

TEST(SimOracle, OlderEpochsOfTheSameLineCountAsPersistedByTheSameCapture) {
  PersistOracle o;
  o.on_store(0, kA, 1);
  o.on_barrier(0);
  o.on_store(0, kA, 2);  // one write-back carries both epochs: nothing is out of order
  o.on_capture(kA);
  EXPECT_EQ(o.pending_lines(), 0u);
}

TEST(SimOracle, RawDependentPersistedBeforeItsSourceThrows) {
  for (const bool later_epoch : {false, true}) {
    PersistOracle o;
    o.on_store(0, kA, 1);
    o.on_load(1, kA, 2);
    if (later_epoch) o.on_barrier(1);  // program order carries the dependence on
    o.on_store(1, kB, 3);
    const auto v = violation([&] { o.on_capture(kB); });
    ASSERT_TRUE(v) << later_epoch;
    EXPECT_NE(v->find("thread 0's store to line 0x64 (op 1, epoch 0)"), std::string::npos) << *v;
    EXPECT_NE(v->find("read that line at op 2"), std::string::npos) << *v;
  }
  // A load of a line whose stores are already durable adds no edge.
  PersistOracle o;
  o.on_store(0, kA, 1);
  o.on_capture(kA);
  o.on_load(1, kA, 2);
  o.on_store(1, kB, 3);
  o.on_capture(kB);
  EXPECT_EQ(o.edges_added(), 0u);
}

// A store made earlier in the epoch than the read did not see the source: it may persist first.
// The same line stored again after the read may not.
TEST(SimOracle, StoresBeforeTheAccessInTheSameEpochAreNotOrderedByIt) {
  PersistOracle o;
  o.on_store(1, kB, 1);
  o.on_store(0, kA, 2);
  o.on_load(1, kA, 3);
  o.on_capture(kB);
  o.on_store(1, kB, 4);
  EXPECT_TRUE(violation([&] { o.on_capture(kB); }));
}

TEST(SimOracle, DependenceOnAnEpochCoversTheSourcesOlderEpochs) {
  PersistOracle o;
  o.on_store(0, kX, 1);
  o.on_barrier(0);
  o.on_store(0, kA, 2);
  o.on_load(1, kA, 3);
  o.on_store(1, kB, 4);
  // t0's epoch 1 cannot persist before its epoch 0, so neither can what depends on it.
  EXPECT_TRUE(violation([&] { o.on_capture(kA); }));
  PersistOracle p;
  p.on_store(0, kX, 1);
  p.on_barrier(0);
  p.on_store(0, kA, 2);
  p.on_load(1, kA, 3);
  p.on_store(1, kB, 4);
  p.on_load(2, kB, 5);  // a chain t0 -> t1 -> t2
  p.on_store(2, kC, 6);
  EXPECT_TRUE(violation([&] { p.on_capture(kC); }));
  EXPECT_TRUE(violation([&] { p.on_capture(kB); }));
  p.on_capture(kX);
  p.on_capture(kA);
  p.on_capture(kB);
  p.on_capture(kC);
}

// WAW: t1 overwrites a line holding t0's pending store.
TEST(SimOracle, WawOrdersTheOverwriterAfterTheSource) {
  {  // the overwriter's epoch reaches NVM elsewhere while the overwritten store is pending
    PersistOracle o;
    o.on_store(0, kA, 1);
    o.on_store(1, kA, 2);
    o.on_store(1, kB, 3);
    const auto v = violation([&] { o.on_capture(kB); });
    ASSERT_TRUE(v);
    EXPECT_NE(v->find("overwrote that line at op 2"), std::string::npos) << *v;
  }
  {  // one write of the line carries both stores: it must still follow the source's past
    PersistOracle o;
    o.on_store(0, kX, 1);
    o.on_barrier(0);
    o.on_store(0, kA, 2);
    o.on_store(1, kA, 3);
    EXPECT_TRUE(violation([&] { o.on_capture(kA); }));
  }
  // Spec D4: after t1 has read t0's later epoch, a dependence alone cannot order the shared
  // write of A (it must follow t0's epoch 1 through t1 and precede it through t0): every
  // capture order fails...
  for (const bool y_first : {false, true}) {
    PersistOracle o;
    o.on_store(0, kA, 1);
    o.on_barrier(0);
    o.on_store(0, kY, 2);
    o.on_load(1, kY, 3);
    o.on_store(1, kA, 4);
    EXPECT_TRUE(violation([&] { o.on_capture(y_first ? kY : kA); })) << y_first;
  }
  // ...while writing A back with t0's bytes before t1's store (the WAW rule) is a legal order.
  PersistOracle o;
  o.on_store(0, kA, 1);
  o.on_barrier(0);
  o.on_store(0, kY, 2);
  o.on_load(1, kY, 3);
  o.on_capture(kA);
  o.on_store(1, kA, 4);
  o.on_capture(kY);
  o.on_capture(kA);
}

// Fig. 7a: A and B of epoch E1 in banks B0 and B1, C of E2 in B1; B1 flushes B then C on its
// own while B0 still holds A.
TEST(SimOracle, Fig7aPerBankFlushWithoutArbiterThrows) {
  PersistOracle o;
  o.on_store(0, kA, 1);
  o.on_store(0, kB, 2);
  o.on_barrier(0);
  o.on_store(0, kC, 3);
  o.on_capture(kB);  // legal on its own: same epoch as A
  const auto v = violation([&] { o.on_capture(kC); });
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("line 0x66"), std::string::npos) << *v;
  EXPECT_NE(v->find("its store to line 0x64 (op 1, epoch 0)"), std::string::npos) << *v;
  // With the arbiter: B0 finishes A, then B1 may write C.
  o.reset();
  o.on_store(0, kA, 1);
  o.on_store(0, kB, 2);
  o.on_barrier(0);
  o.on_store(0, kC, 3);
  o.on_capture(kB);
  o.on_capture(kA);
  o.on_capture(kC);
}

TEST(SimOracle, ResetForgetsEverythingPending) {
  PersistOracle o;
  o.on_store(0, kA, 1);
  o.on_barrier(0);
  o.on_store(0, kB, 2);
  o.on_load(1, kB, 3);
  o.reset();
  EXPECT_EQ(o.pending_lines(), 0u);
  EXPECT_EQ(o.epoch(0), 0u);
  o.on_store(1, kC, 4);
  o.on_capture(kC);
}

// --- SimBackend hooks ----------------------------------------------------------------------

// A 1-core machine with a 1-line L1 and a 2-line LLC: a third line evicts the LLC's least
// recently used line (an L1 miss refreshes it there).
SimParams tiny(Barrier b, bool check) {
  SimParams p = ParamsBuilder().l1(1, 1).llc(1, 2).build();
  p.persistency.barrier = b;
  p.persistency.check_order = check;
  return p;
}

// Epoch 0 writes line 0; epoch 1 writes line 1, reads line 0 (now the LLC's most recent) and
// writes line 2, whose fill evicts line 1 (epoch 1) to NVM while line 0 (epoch 0) is dirty.
std::optional<std::string> reorder_by_eviction(SimBackend& be, bool software) {
  LineBuffer buf(3);
  be.register_persistent(buf.line_ptr(0), buf.bytes);
  auto* w = buf.as<std::uint64_t>();
  return violation([&] {
    be.store(&w[0], std::uint64_t{1});
    if (software) be.persist(&w[0], 8);
    be.persist_barrier();
    be.store(&w[8], std::uint64_t{2});
    (void)be.load(&w[0]);
    be.store(&w[16], std::uint64_t{3});  // evicts line 1 (LRU) to NVM
    if (software) {
      be.flush(&w[8]);
      be.flush(&w[16]);
      be.fence();
    }
    be.persist_barrier();
  });
}

TEST(SimOracleBackend, NoBarrierAndEvictionsViolateSoftwareEpochsPass) {
  {
    SimBackend be(tiny(Barrier::kNone, true));
    ASSERT_TRUE(be.checking_order());
    const auto v = reorder_by_eviction(be, false);
    ASSERT_TRUE(v) << "the negative control must be caught";
    EXPECT_NE(v->find("epoch 1"), std::string::npos) << *v;
  }
  {
    SimBackend be(tiny(Barrier::kSoftware, true));
    EXPECT_FALSE(reorder_by_eviction(be, true));
    EXPECT_EQ(be.oracle()->epoch(0), 2u);
    EXPECT_GT(be.oracle()->captures_checked(), 0u);
  }
  {  // off: no oracle, no check (and the default)
    SimBackend be(tiny(Barrier::kNone, false));
    EXPECT_FALSE(be.checking_order());
    EXPECT_FALSE(reorder_by_eviction(be, false));
  }
}

TEST(SimOracleBackend, VolatileLinesAreIgnoredAndACrashResetsTheOracle) {
  SimBackend be(tiny(Barrier::kNone, true));
  LineBuffer buf(4);
  be.register_persistent(buf.line_ptr(0), 2 * testing::kLine);  // lines 2, 3 are volatile
  auto* w = buf.as<std::uint64_t>();
  be.store(&w[16], std::uint64_t{1});
  be.store(&w[24], std::uint64_t{1});
  EXPECT_EQ(be.oracle()->pending_lines(), 0u);
  be.store(&w[0], std::uint64_t{1});
  be.persist_barrier();
  be.store(&w[8], std::uint64_t{2});
  EXPECT_EQ(be.oracle()->pending_lines(), 2u);
  be.arm_crash(be.ops() + 1);
  EXPECT_THROW(be.store(&w[8], std::uint64_t{3}), PowerFailure);
  be.apply_crash_image();
  EXPECT_EQ(be.oracle()->pending_lines(), 0u);
  EXPECT_EQ(be.oracle()->epoch(0), 0u);
}

// --check-order end to end. tmm calls no persist barrier (one epoch per thread); at n = 192
// its LP threads share a line, which the oracle reports as an unmet inter-thread order.
TEST(SimOracleCli, CheckOrderIsInTheJsonAndAViolationExitsOne) {
  const std::string scratch =
      (std::filesystem::temp_directory_path() / ("pmlab-oraclecli-" + std::to_string(getpid())))
          .string();
  const std::vector<std::string> base{PMLAB_BINARY,    "sim",      "tmm",
                                      "--no-progress", "--scheme", "lp"};
  auto args = base;
  args.insert(args.end(), {"--n", "64", "--threads", "1", "--check-order", "--json"});
  const auto ok = pmlab::testing::run_process(args, scratch);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto j = nlohmann::json::parse(ok.out);
  EXPECT_EQ(j["machine"]["persistency"]["check_order"], true);
  EXPECT_EQ(j["machine"]["persistency"]["barrier"], "sw");
  args = base;
  args.insert(args.end(), {"--n", "192", "--threads", "4", "--cores", "4", "--check-order"});
  const auto bad = pmlab::testing::run_process(args, scratch);
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.err.find("pmlab: error: persist order violated: line 0x"), std::string::npos)
      << bad.err;
  args.pop_back();  // the same run without the oracle passes
  const auto off = pmlab::testing::run_process(args, scratch);
  EXPECT_EQ(off.exit_code, 0) << off.err;
}

// --- random traces -------------------------------------------------------------------------

constexpr int kThreads = 4;
constexpr std::size_t kOracleLines = 16;
constexpr std::size_t kTraces = 2000;

struct TraceOp {
  enum Kind : std::uint8_t { kStore, kLoad, kBarrier } kind;
  std::uint8_t line;
  std::uint8_t word;
};
using Txn = std::vector<TraceOp>;  // a critical section: 1-3 epochs, each ended by a barrier
using Trace = std::vector<std::vector<Txn>>;  // [thread][transaction]

Trace random_trace(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> txns(2, 6), epochs(1, 3), ops(1, 4), pct(0, 99);
  std::uniform_int_distribution<int> line(0, kOracleLines - 1), word(0, 7);
  Trace t(kThreads);
  const int n = txns(rng);  // the same count per thread: parallel_for's chunks are equal
  for (auto& th : t)
    for (int x = 0; x < n; ++x) {
      Txn txn;
      for (int e = epochs(rng); e > 0; --e) {
        for (int k = ops(rng); k > 0; --k)
          txn.push_back({pct(rng) < 60 ? TraceOp::kStore : TraceOp::kLoad,
                         static_cast<std::uint8_t>(line(rng)),
                         static_cast<std::uint8_t>(word(rng))});
        txn.push_back({TraceOp::kBarrier, 0, 0});
      }
      th.push_back(std::move(txn));
    }
  return t;
}

// A 4-core machine with 2-line L1s and an 8-line LLC for 16 persistent lines: evictions reach
// NVM all the time. quantum 0: one transaction per turn (critical sections, spec D9);
// quantum q > 0: threads interleave every q ops.
SimParams trace_machine(Barrier b, std::uint64_t quantum) {
  SimParams p = ParamsBuilder().cores(kThreads).l1(1, 2).llc(2, 4).quantum(quantum).build();
  p.persistency.barrier = b;
  p.persistency.check_order = true;
  return p;
}

struct Campaign {
  std::size_t violations = 0;
  std::size_t errors = 0;      // other failures (a mechanism's own refusal or watchdog)
  std::uint64_t captures = 0;  // NVM writes of persistent lines the oracle judged
  std::string first, first_error;
};

// Runs the trace; software barriers write the epoch's lines back (clwb each) and fence first,
// as mem::EpochTracked does natively; hardware barriers are the machine's alone.
void run_trace(const Trace& trace, const SimParams& params, Campaign& c, std::size_t index) {
  const Barrier b = params.persistency.barrier;
  SimBackend be(params, b == Barrier::kSoftware ? FlushMode::kClwb : FlushMode::kNone, kThreads);
  LineBuffer buf(kOracleLines);
  be.register_persistent(buf.line_ptr(0), buf.bytes);
  auto* w = buf.as<std::uint64_t>();
  const std::size_t per = trace[0].size();
  std::vector<std::vector<std::size_t>> epoch_lines(kThreads);
  std::uint64_t value = 0;
  try {
    be.parallel_for(0, kThreads * per, [&](std::size_t i) {
      const auto t = static_cast<std::size_t>(be.current_thread());
      for (const TraceOp& op : trace[t][i % per]) {
        std::uint64_t* p = &w[op.line * 8u + op.word];
        switch (op.kind) {
          case TraceOp::kStore:
            be.store(p, ++value);
            epoch_lines[t].push_back(op.line);
            break;
          case TraceOp::kLoad:
            (void)be.load(p);
            break;
          case TraceOp::kBarrier:
            if (b == Barrier::kSoftware) {
              for (std::size_t l : epoch_lines[t]) be.flush(buf.line_ptr(l));
              be.fence();
            }
            epoch_lines[t].clear();
            be.persist_barrier();
            break;
        }
      }
    });
    // The end of the run: every cached line reaches NVM (the epoch engine drains in
    // happens-before order), so the last epochs are judged too.
    be.machine().write_back_all(WriteCause::kDrain);
  } catch (const OrderViolation& e) {
    if (c.violations++ == 0) c.first = "trace " + std::to_string(index) + ": " + e.what();
  } catch (const pmlab::Error& e) {
    if (c.errors++ == 0) c.first_error = "trace " + std::to_string(index) + ": " + e.what();
  }
  c.captures += be.oracle()->captures_checked();
}

// kTraces traces from `seed`; configure(params, i) adjusts trace i's machine.
template <class Configure>
Campaign run_campaign(Barrier b, std::uint64_t seed, Configure&& configure) {
  std::mt19937_64 rng(seed);
  Campaign c;
  for (std::size_t i = 0; i < kTraces; ++i) {
    const Trace t = random_trace(rng);
    SimParams p = trace_machine(b, 0);
    configure(p, i);
    run_trace(t, p, c, i);
  }
  return c;
}
Campaign run_campaign(Barrier b, std::uint64_t seed) {
  return run_campaign(b, seed, [](SimParams&, std::size_t) {});
}

TEST(SimOracleProperty, SoftwareEpochsNeverViolateAndNoBarrierDoes) {
  const std::uint64_t seed = pmlab::test::test_seed();
  SCOPED_TRACE(pmlab::test::seed_trace(seed));
  const Campaign sw = run_campaign(Barrier::kSoftware, seed);
  EXPECT_EQ(sw.violations, 0u) << sw.first;
  EXPECT_EQ(sw.errors, 0u) << sw.first_error;
  EXPECT_GT(sw.captures, kTraces * 10) << "the traces must write lines back";
  // The negative control: the same traces with barriers that order nothing.
  const Campaign none = run_campaign(Barrier::kNone, seed);
  EXPECT_GE(none.violations, 1u);
  std::printf(
      "[ oracle ] %zu traces: sw %zu violations in %llu checked writes, none %zu (first: "
      "%s)\n",
      kTraces, sw.violations, static_cast<unsigned long long>(sw.captures), none.violations,
      none.first.c_str());
}

// The hardware barriers on the same traces, interleaved per transaction (quantum 0) or every
// 1-3 ops, with 8, 2 or 1 epochs in flight per core (capacity flushes).
void vary(SimParams& p, std::size_t i) {
  p.interleave_quantum = i % 4;
  p.persistency.max_inflight = i % 3 == 0 ? 8u : (i % 3 == 1 ? 2u : 1u);
}

constexpr Barrier kHardware[] = {Barrier::kLb, Barrier::kLbIdt, Barrier::kLbPf,
                                 Barrier::kLbPlusPlus};

// Every hardware mode keeps the epoch order over the random traces. (It found the same-line
// filter letting a store skip its intra-conflict check after a load: hierarchy.cpp.)
TEST(SimOracleProperty, HardwareBarriersNeverViolate) {
  const std::uint64_t seed = pmlab::test::test_seed();
  SCOPED_TRACE(pmlab::test::seed_trace(seed));
  for (const Barrier b : kHardware) {
    const Campaign c = run_campaign(b, seed, vary);
    EXPECT_EQ(c.violations, 0u) << to_string(b) << ": " << c.first;
    EXPECT_EQ(c.errors, 0u) << to_string(b) << ": " << c.first_error;
    EXPECT_GT(c.captures, kTraces * 10) << to_string(b);
    std::printf("[ oracle ] %zu traces, %s: %zu violations in %llu checked writes\n", kTraces,
                std::string(to_string(b)).c_str(), c.violations,
                static_cast<unsigned long long>(c.captures));
  }
}

// Each negative-control switch of the epoch engine, under the modes where its rule applies:
// the oracle must catch it at least once within the same traces.
struct Mutant {
  const char* name;
  void (*set)(PersistencyParams::Debug&);
  std::vector<Barrier> modes;
};

TEST(SimOracleProperty, EveryMechanismMutantIsCaught) {
  const std::uint64_t seed = pmlab::test::test_seed();
  SCOPED_TRACE(pmlab::test::seed_trace(seed));
  const std::vector<Mutant> mutants{
      {"no-intra-flush", [](auto& d) { d.no_intra_flush = true; }, {Barrier::kLb}},
      {"no-replacement-order", [](auto& d) { d.no_replacement_order = true; }, {Barrier::kLb}},
      {"ignore-deps", [](auto& d) { d.ignore_deps = true; }, {Barrier::kLbIdt}},
      {"no-split", [](auto& d) { d.no_split = true; }, {Barrier::kLbIdt, Barrier::kLbPlusPlus}},
      {"dep-only-waw", [](auto& d) { d.dep_only_waw = true; }, {Barrier::kLbIdt}},
      {"per-bank-no-arbiter", [](auto& d) { d.per_bank_no_arbiter = true; }, {Barrier::kLb}},
  };
  for (const Mutant& m : mutants) {
    std::size_t caught = 0;
    for (const Barrier b : m.modes) {
      const Campaign c = run_campaign(b, seed, [&](SimParams& p, std::size_t i) {
        vary(p, i);
        m.set(p.persistency.debug);
      });
      caught += c.violations;
      std::printf(
          "[ oracle ] mutant %s under %s: %zu of %zu traces violate, %zu other errors "
          "(first: %s)\n",
          m.name, std::string(to_string(b)).c_str(), c.violations, kTraces, c.errors,
          c.violations > 0 ? c.first.c_str() : c.first_error.c_str());
    }
    EXPECT_GE(caught, 1u) << m.name << " was not caught";
  }
}

}  // namespace
}  // namespace pmlab::sim
