// The L1D stream prefetcher (SimParams::prefetch, gem5's RubyPrefetcher): training and streams
// with exact counts and cycles, the page boundary, the inline path's view of prefetched lines,
// off = unchanged, and crash campaigns that still pass with it on.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "machine_probe.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/machine_params.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::clk;
using testing::L;
using testing::ParamsBuilder;

// ParamsBuilder at 1 GHz: L1 2 cycles, LLC 10, NVM read 100, so an LLC miss takes 110 cycles.
// L1 64 sets x 8 ways (the spec's), LLC 512 x 8; gem5's defaults: 4 streams, train_misses 4,
// 1 startup prefetch, 4 KiB pages (64 lines: lines 0-63 are page 0).
SimParams pf_machine(bool interval = false) {
  ParamsBuilder b;
  b.l1(64, 8).llc(512, 8);
  if (interval) b.interval(1, 1024, 16);
  SimParams p = b.build();
  p.prefetch.model = PrefetchModel::kStream;
  return p;
}

PrefetchStats pf(const Machine& m) {
  const auto s = m.stats().prefetch;
  EXPECT_TRUE(s.has_value());
  return s.value_or(PrefetchStats{});
}

void load_lines(Machine& m, std::uint64_t first, std::uint64_t last) {
  for (std::uint64_t l = first; l <= last; ++l) m.load(0, L(l));
}

// Memory model, loads of lines 0-7. Misses 0, 1, 2, 3 train the +1 filter (0 enters it, 1-3 are
// hits 1-3); miss 4 is its 4th hit = train_misses, so line 4 allocates the stream, which
// prefetches line 5 when miss 4 starts (t = 440, 4 x 110), complete at 550.
//  line 5 at 550: its prefetch is complete, an L1 hit (2 cycles); it prefetches 6 (550 -> 660).
//  line 6 at 552: in flight, waits 108 cycles (late); it prefetches 7 (552 -> 662).
//  line 7 at 660: in flight, waits 2 (late; an L1 hit's 2 cycles anyway); prefetches 8 (770).
// So 4 prefetches issued (5-8), 3 used (5-7), 2 of them late (6, 7), 662 cycles instead of 880;
// NVM reads 5 demand + 4 prefetch = 9; L1: 5 misses, 3 hits.
TEST(SimPrefetch, TheFifthMissStartsAStreamMemoryModel) {
  Machine m(pf_machine());
  load_lines(m, 0, 7);
  const PrefetchStats p = pf(m);
  EXPECT_EQ(p.streams, 1u);
  EXPECT_EQ(p.issued, 4u);
  EXPECT_EQ(p.used, 3u);
  EXPECT_EQ(p.late, 2u);
  EXPECT_EQ(p.useless, 0u);
  EXPECT_EQ(p.dropped, 0u);
  EXPECT_EQ(clk(m), 662u);
  EXPECT_EQ(m.stats().cycles, Cycles{662});
  EXPECT_EQ(m.stats().nvm.reads, 9u);
  EXPECT_EQ(m.stats().l1().misses, 5u);
  EXPECT_EQ(m.stats().l1().hits, 3u);
  EXPECT_TRUE(m.probe(0, L(8)).in_l1);  // prefetched, not used
  EXPECT_FALSE(m.probe(0, L(9)).in_l1);
  // The prefetched lines are clean: a prefetch writes nothing.
  EXPECT_FALSE(m.probe(0, L(8)).dirty);
  EXPECT_EQ(m.stats().nvm.writes, 0u);
}

TEST(SimPrefetch, OffTheSameLoadsMissEveryTime) {
  SimParams p = pf_machine();
  p.prefetch.model = PrefetchModel::kOff;
  Machine m(p);
  load_lines(m, 0, 7);
  EXPECT_EQ(clk(m), 880u);  // 8 x 110
  EXPECT_FALSE(m.stats().prefetch.has_value());
}

// Interval core, 1-wide, one instruction per access: line k is dispatched at k + 1. Miss 4
// (dispatched at 5) prefetches 5, complete at 5 + 110 = 115. Line 5, dispatched at 6, merges
// into it and completes at 115 instead of 116; it prefetches 6 at 6 (-> 116), line 6 merges at 7,
// and so on: lines 5, 6, 7 are all used late, and the run ends when line 7 completes at 117,
// one cycle before the 118 of the run without the prefetcher. The prefetch of 8 (in flight at
// the end) holds no MSHR, so the run's end does not wait for it.
TEST(SimPrefetch, InTheIntervalCoreADemandMergesIntoItsPrefetch) {
  for (const bool on : {false, true}) {
    SimParams p = pf_machine(true);
    if (!on) p.prefetch.model = PrefetchModel::kOff;
    Machine m(p);
    load_lines(m, 0, 7);
    EXPECT_EQ(m.stats().cycles, Cycles{on ? 117u : 118u}) << on;
    if (!on) continue;
    const PrefetchStats s = pf(m);
    EXPECT_EQ(s.issued, 4u);
    EXPECT_EQ(s.used, 3u);
    EXPECT_EQ(s.late, 3u);
  }
}

// Lines 60-67 cross from page 0 to page 1. Misses 60-63 count 3 hits in the +1 filter, whose
// next line (64) lies in page 1, so the entry is dropped; 64 starts a new entry and 65-67 count 3
// hits again: no stream, no prefetch, the same 880 cycles as without the prefetcher.
TEST(SimPrefetch, TrainingStopsAtAPageBoundary) {
  Machine m(pf_machine());
  load_lines(m, 60, 67);
  EXPECT_EQ(pf(m).streams, 0u);
  EXPECT_EQ(pf(m).issued, 0u);
  EXPECT_EQ(clk(m), 880u);
}

// Lines 56-63: 56 enters the filter, 57-60 are hits 1-4, so 60 allocates and prefetches 61; the
// uses of 61, 62 and 63 prefetch 62, 63 and then nothing: 64 is in the next page, and the stream
// is freed. 3 issued, 3 used, line 64 not prefetched.
TEST(SimPrefetch, AStreamStopsAtItsPageEnd) {
  Machine m(pf_machine());
  load_lines(m, 56, 63);
  const PrefetchStats p = pf(m);
  EXPECT_EQ(p.streams, 1u);
  EXPECT_EQ(p.issued, 3u);
  EXPECT_EQ(p.used, 3u);
  EXPECT_FALSE(m.probe(0, L(64)).in_l1);
}

// Negative control of the test above: with cross_page (gem5's option, off by default) the stream
// goes on into page 1, and the check that line 64 is not in L1 catches it.
TEST(SimPrefetch, NegativeControlACrossPageStreamIsCaught) {
  SimParams p = pf_machine();
  p.prefetch.cross_page = true;
  Machine m(p);
  load_lines(m, 56, 63);
  EXPECT_EQ(pf(m).issued, 4u);
  EXPECT_TRUE(m.probe(0, L(64)).in_l1) << "the page-end check would catch this stream";
}

// The -1 filter: misses 20, 19, 18, 17, 16 (16 is the 4th hit) start a descending stream at 16
// that prefetches 15; the loads of 15 and 14 use 15 and 14 and prefetch 14 and 13.
TEST(SimPrefetch, DescendingStreams) {
  Machine m(pf_machine());
  for (std::uint64_t l = 20; l >= 14; --l) m.load(0, L(l));
  const PrefetchStats p = pf(m);
  EXPECT_EQ(p.streams, 1u);
  EXPECT_EQ(p.issued, 3u);  // 15, 14, 13
  EXPECT_EQ(p.used, 2u);    // 15, 14
  EXPECT_TRUE(m.probe(0, L(13)).in_l1);
}

// Stride 2 reaches the per-page filter only: 0 enters it, 2 sets the stride, 4, 6, 8, 10 count
// hits 1-4, and 12 is the 5th, more than train_misses (gem5's `>`): a stream of stride 2 at 12
// prefetches 14, and the use of 14 prefetches 16.
TEST(SimPrefetch, NonUnitStrides) {
  Machine m(pf_machine());
  for (std::uint64_t l = 0; l <= 14; l += 2) m.load(0, L(l));
  const PrefetchStats p = pf(m);
  EXPECT_EQ(p.streams, 1u);
  EXPECT_EQ(p.issued, 2u);  // 14, 16
  EXPECT_EQ(p.used, 1u);    // 14
  EXPECT_TRUE(m.probe(0, L(16)).in_l1);
  EXPECT_FALSE(m.probe(0, L(15)).in_l1);
}

// A prefetched line that leaves the L1 unused is useless; the next demand miss on it (the
// stream's pending line) moves the stream on instead of training again.
TEST(SimPrefetch, AnUnusedLineThatLeavesIsUselessAndTheStreamMovesOn) {
  Machine m(pf_machine());
  load_lines(m, 0, 4);  // prefetches 5
  m.flush(0, L(5), FlushMode::kClflushopt);
  EXPECT_EQ(pf(m).useless, 1u);
  m.load(0, L(5));  // a miss on the pending line: prefetches 6
  EXPECT_EQ(pf(m).issued, 2u);
  EXPECT_EQ(pf(m).used, 0u);
  EXPECT_TRUE(m.probe(0, L(6)).in_l1);
}

// At most `streams` streams, the least recently used replaced: five interleaved runs in five
// pages start five streams on four entries; the first run's stream (the oldest) is gone, so the
// use of its prefetched line advances nothing.
TEST(SimPrefetch, StreamsAreReplacedLeastRecentlyUsedFirst) {
  Machine m(pf_machine());
  for (std::uint64_t i = 0; i < 5; ++i)
    for (std::uint64_t r = 0; r < 5; ++r) m.load(0, L(r * 64 + i));  // run r in page r
  EXPECT_EQ(pf(m).streams, 5u);
  EXPECT_EQ(pf(m).issued, 5u);  // line 5 of each page
  m.load(0, L(5));              // run 0's prefetched line: used, but its stream was replaced
  EXPECT_EQ(pf(m).used, 1u);
  EXPECT_EQ(pf(m).issued, 5u);
  m.load(0, L(64 + 5));  // run 1's stream is still there: prefetches 64 + 6
  EXPECT_EQ(pf(m).issued, 6u);
}

// Stores train too, and a store to a prefetched line uses it (the line was fetched exclusive:
// no upgrade), dirties it, and a flush writes it once.
TEST(SimPrefetch, AStoreUsesAPrefetchedLine) {
  Machine m(pf_machine());
  for (std::uint64_t l = 0; l <= 5; ++l) m.store(0, L(l));
  EXPECT_EQ(pf(m).used, 1u);
  EXPECT_EQ(m.stats().coherence.upgrades, 0u);
  EXPECT_TRUE(m.probe(0, L(5)).dirty);
  m.flush(0, L(5), FlushMode::kClwb);
  EXPECT_EQ(m.stats().nvm.writes, 1u);
}

// A pseudo-random mix of streams, strides, re-touches and stores on 2 cores.
void mixed_workload(Machine& m) {
  std::uint64_t x = 12345;
  for (int i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const int core = static_cast<int>((x >> 60) & 1);
    const std::uint64_t base = (x >> 40) % 64 * 64;
    const std::uint64_t n = 1 + (x >> 20) % 24;
    const std::uint64_t stride = 1 + (x >> 33) % 3;
    for (std::uint64_t k = 0; k < n; ++k) {
      const std::uint64_t line = base + k * stride;
      if (((x >> 10) + k) % 5 == 0)
        m.store(core, L(line));
      else
        m.load(core, L(line));
    }
    if ((x >> 50) % 16 == 0) m.flush(core, L(base), FlushMode::kClwb);
    if ((x >> 54) % 32 == 0) m.fence(core);
  }
}

// The inline L1 path, the same-line filter and the way hints never see an unused prefetched line,
// so every first use reaches the hierarchy: with all of them on the results are those of the
// reference path, where every access goes through Hierarchy::access.
TEST(SimPrefetch, InlinePathSeesEveryFirstUse) {
  for (const bool interval : {false, true}) {
    SimParams fast = pf_machine(interval);
    fast.cores = fast.threads = 2;
    SimParams slow = fast;
    slow.same_line_filter = false;
    slow.inline_l1_hits = false;
    Machine a(fast), b(slow);
    mixed_workload(a);
    mixed_workload(b);
    const SimStats sa = a.stats(), sb = b.stats();
    EXPECT_GT(sa.prefetch->used, 1000u) << interval;
    nlohmann::json ja = to_json(sa), jb = to_json(sb);
    // The filter's own count differs by construction; everything else must not.
    ja.erase("filtered_accesses");
    jb.erase("filtered_accesses");
    EXPECT_EQ(ja, jb) << interval;
  }
}

// Off (the default and every preset): the statistics have no prefetch key and equal those of
// a machine that never heard of the prefetcher (the golden figures check the rest).
TEST(SimPrefetch, OffChangesNothing) {
  SimParams def = ParamsBuilder().cores(2).l1(64, 8).llc(512, 8).build();
  SimParams off = machine_from(def, MachineSettings{{"prefetch", "off"}});
  Machine a(def), b(off);
  mixed_workload(a);
  mixed_workload(b);
  EXPECT_EQ(to_json(a.stats()), to_json(b.stats()));
  EXPECT_FALSE(to_json(a.stats()).contains("prefetch"));
}

TEST(SimPrefetch, ParametersComeFromTheTable) {
  const SimParams p = machine_from("lp-isca18", MachineSettings{{"prefetch", "stream"},
                                                                {"prefetch-streams", "8"},
                                                                {"prefetch-train-misses", "2"},
                                                                {"prefetch-startup", "3"}});
  EXPECT_TRUE(p.prefetch.on());
  EXPECT_EQ(p.prefetch.streams, 8u);
  EXPECT_EQ(p.prefetch.train_misses, 2u);
  EXPECT_EQ(p.prefetch.startup, 3u);
  for (const char* preset : {"lp-isca18", "pact17", "haswell-ep", "micro15", "thesis-ch4"})
    EXPECT_FALSE(machine_from(preset).prefetch.on()) << preset << ": no preset turns it on";
  EXPECT_THROW((void)machine_from("lp-isca18", MachineSettings{{"prefetch-startup", "17"}}), Error);
  // A 1-set L1 has no other set for the way hints to point at (Hierarchy::prefetch_line).
  EXPECT_THROW((void)machine_from(
                   "lp-isca18",
                   MachineSettings{{"prefetch", "stream"}, {"l1-size", "512"}, {"l1-ways", "8"}}),
               Error);
  // micro15's L1 has 4 ways: no tag hashes to hide unused lines behind.
  EXPECT_THROW((void)machine_from("micro15", MachineSettings{{"prefetch", "stream"}}), Error);
  EXPECT_THROW(
      (void)machine_from("lp-isca18", MachineSettings{{"prefetch", "stream"}, {"barrier", "lb"}}),
      Error);
}

// With several startup prefetches a stream runs ahead by that many lines (its distance).
TEST(SimPrefetch, StartupPrefetchesSetTheDistance) {
  SimParams p = pf_machine();
  p.prefetch.startup = 3;
  Machine m(p);
  load_lines(m, 0, 4);  // line 4 allocates: prefetches 5, 6, 7
  EXPECT_EQ(pf(m).issued, 3u);
  m.load(0, L(5));  // uses 5: prefetches 8
  EXPECT_EQ(pf(m).issued, 4u);
  EXPECT_TRUE(m.probe(0, L(8)).in_l1);
}

// A crash campaign with the prefetcher on: LP still recovers every trial and its negative
// controls are still caught (a prefetch writes nothing, so the crash image holds what the
// program's own write-backs and flushes put there).
TEST(SimPrefetch, CrashCampaignPassesAndDetectsItsControls) {
  const auto scratch =
      std::filesystem::temp_directory_path() / ("pmlab-prefetch-" + std::to_string(getpid()));
  const pmlab::testing::ProcessResult r = pmlab::testing::run_process(
      {PMLAB_BINARY, "crash", "tmm", "--scheme", "lp", "--prefetch", "stream", "--n", "24", "--bs",
       "4", "--trials", "30", "--seed", "5", "--json"},
      scratch.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], 30);
  EXPECT_EQ(j["machine_parameters"]["prefetch"]["model"], "stream");
  // Exit 0 also says every control the run reaches was detected (else exit 5).
  EXPECT_GT(j["controls"]["mutants"].get<int>(), 0);
  EXPECT_EQ(j["controls"]["detected"], j["controls"]["mutants"]);
}

}  // namespace
}  // namespace pmlab::sim
