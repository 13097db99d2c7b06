// Machine presets reproducing the papers' simulated systems, plus a cachegrind-shaped builder.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "pmlab/sim/params.hpp"

namespace pmlab::sim {

// LP paper (ISCA'18) Table II: 9 cores (8 worker threads + 1 master), private L1D 64KB 8-way
// 2 cyc, shared L2 512KB 8-way 11 cyc, NVMM 150 ns read / 300 ns write at 2 GHz, WriteQ 64, ADR.
[[nodiscard]] SimParams lp_isca18();

// Thesis Table 3.1 / §3.3.1 (PACT'17 Recompute): 8 cores at 2 GHz, private L1D 64KB 16-way
// 2 cyc, shared L2 1MB per core 16-way 20 cyc, PCM 60 ns read / 150 ns write (§3.3.1: the
// table's DDR timings "yield" 60/150), 64-entry WQ, 16 banks (1 channel x 2 ranks x 8 banks).
[[nodiscard]] SimParams pact17(int cores = 8);

// Thesis Table 4.1 (= Table 3.1) for Ch. 4's GEMM runs: pact17's core and PCM on the 8-core
// chip (shared L2 8 MB, 16-way, 20 cyc) with 5 cores used (4 worker threads + 1 master), and the
// row-buffer model on: 1 channel x 2 ranks x 8 banks, 1 KB rows, RoRaBaChCo, open-adaptive,
// FR-FCFS, RQ 32 / WQ 64, drain at 85 % down to 50 %, >= 16 writes per drain.
[[nodiscard]] SimParams thesis_ch4();

// Seed 004 (Joshi et al., MICRO'15) Table 1: 32 cores at 2 GHz, 1 thread each, private L1D
// 32 KB 4-way 3 cyc, shared LLC 1 MB per core (32 tiles) 16-way 30 cyc, NVRAM 120 ns read /
// 180 ns write. Assumed (not in the seed): a monolithic LLC, 4 MCs x 32-entry write queues
// = 128 entries, 8 banks per MC = 32 write units. The persist barrier stays the default (sw)
// until --barrier picks lb, lb-idt, lb-pf or lb++ (8 in-flight epochs, 4 IDT registers).
[[nodiscard]] SimParams micro15(int cores = 32);

// Seed 002's Table 1 machine (Huang et al.: Xeon E5-2630 v3, 2.4 GHz, L1 32 KB, L2 256 KB, L3
// 20 MB, DDR4) for flush latency by line state: a home agent with its directory in DRAM
// (SimParams::home_agent). Ways, latencies and the home agent's two costs are pmlab's choices,
// stated in presets.cpp.
[[nodiscard]] SimParams haswell_ep();

// Geometry of one cachegrind cache (--D1=size,assoc,line / --LL=...).
struct CacheGeometry {
  std::uint64_t size_bytes = 0;
  std::uint32_t assoc = 0;
  std::uint32_t line_bytes = 64;
};

// A single-core, single-thread machine with cachegrind's D1 and LL (LRU, write-allocate, LL
// not inclusive: an LL eviction leaves D1 alone, as in cg_sim.c) for validating miss counts
// against `valgrind --tool=cachegrind --cache-sim=yes`. Set inclusive_llc = true to see the
// presets' inclusion policy on the same geometry. Only 64-byte lines are modelled; other line
// sizes are rejected with kInvalidArgument.
[[nodiscard]] SimParams cachegrind_like(CacheGeometry d1, CacheGeometry ll);

// Preset by name ("lp-isca18", "pact17", "thesis-ch4", "micro15", "cachegrind" = cachegrind_like
// with lp-isca18's L1 and L2 geometry: D1 64 KB 8-way, LL 512 KB 8-way); throws kInvalidArgument
// listing the names.
[[nodiscard]] SimParams preset(std::string_view name);
[[nodiscard]] std::vector<std::string_view> preset_names();

}  // namespace pmlab::sim
