// Plans and runs the evaluation sections, with a time-weighted progress estimate and Ctrl-C
// support.
#include "pmlab/experiments/eval.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pmlab/core/error.hpp"
#include "pmlab/experiments/barrier_study.hpp"
#include "pmlab/experiments/bench.hpp"
#include "pmlab/experiments/blas_study.hpp"
#include "pmlab/experiments/checksum_study.hpp"
#include "pmlab/experiments/crash_campaign.hpp"
#include "pmlab/experiments/gemm_study.hpp"
#include "pmlab/experiments/preflush_study.hpp"
#include "pmlab/experiments/seed002_study.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/stats.hpp"
#include "row_family.hpp"
#include "step_runner.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct Sizes {
  std::uint64_t bench_n, sim_n, crash_n;
};

// Per-kernel sizes. quick: minutes on 2 cores; full: the papers' sizes where the simulator can
// afford them (LP paper Table V / thesis Table 3.3).
Sizes sizes_for(const std::string& kernel, bool full) {
  static const std::map<std::string, std::pair<Sizes, Sizes>> table = {
      // native: the LP paper's sizes (Table V) in both modes, except gauss's 4096 under quick
      // (22 s per execution: one pair would spend the kernel's budget); quick gauss is 1024, the
      // largest whose executions fit its budget many times and whose matrix (8 MiB) still
      // overflows L2 like the paper's. Below that gauss's rows run from L2, where LP's one add per
      // stored value costs a loop of two flops per value +13 to +26% (n = 512, 95% interval;
      // docs/lp-native-cost.md).
      // A timed repetition repeats the kernel to >= 0.2 s, so the size sets what is measured,
      // not the budget;
      // quick sim sizes overflow lp-isca18's 512 KiB LLC (and the scaled pact17 one) with
      // the data the kernel writes: else base writes ~nothing and ratios divide by ~0.
      {"tmm", {{1024, 256, 40}, {1024, 1024, 64}}},
      {"cholesky", {{1024, 512, 40}, {1024, 1024, 64}}},
      {"lu", {{1024, 512, 40}, {1024, 1024, 64}}},
      {"gauss", {{1024, 512, 40}, {4096, 1024, 64}}},
      {"conv2d", {{1024, 512, 40}, {1024, 1024, 64}}},
      {"fft", {{1u << 20, 1u << 15, 64}, {1u << 20, 1u << 17, 256}}},
      // jacobi's state is n^2 doubles: from n = 24 on the campaign's 4 KiB LLC has written the
      // whole output back before LP's checksums and cp's publish, so no crash image separates
      // them and those negative controls go undetected (0 of 100); n = 16 keeps it cached.
      // Their sim sizes overflow the 512 KiB LLC with the state base writes (at n = 96 base
      // writes nothing and every write ratio is n/a).
      {"jacobi", {{256, 256, 16}, {512, 512, 16}}},
      {"cg", {{256, 12000, 32}, {4096, 40000, 32}}},
  };
  auto it = table.find(kernel);
  if (it == table.end()) return full ? Sizes{512, 256, 48} : Sizes{256, 96, 32};
  return full ? it->second.second : it->second.first;
}

bool simulable(const run::SimRunSpec& spec) {
  try {
    run::validate(spec);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// The machine a kernel study starts from: a preset by name, or the user's --config machine.
struct Machine {
  std::string name;
  const sim::SimParams* given = nullptr;  // --config; null: the preset `name`
};

// Block size of the native and simulated runs: the kernel's default (cg 256, else 16;
// KernelDriver::default_bs says why).
std::uint64_t block_size_for(const std::string& kernel) {
  return run::find_kernel(kernel).default_bs;
}

run::SimRunSpec sim_spec(const std::string& kernel, const std::string& scheme, std::uint64_t n,
                         const Machine& m, const sim::MachineSettings& o) {
  run::SimRunSpec spec;
  spec.run.kernel = kernel;
  spec.run.scheme = scheme;
  spec.run.n = n;
  spec.run.bs = block_size_for(kernel);
  spec.machine = m.given ? sim::machine_from(*m.given, o) : sim::machine_from(m.name, o);
  spec.run.threads = static_cast<std::uint32_t>(spec.machine.threads);
  // Like the papers, NVM writes are LLC write-backs plus flushes: lines still dirty at the end
  // are not counted (no drain). Every size below therefore overflows the LLC, or base would
  // write (almost) nothing and every ratio would divide by ~0.
  spec.drain = false;
  return spec;
}

json sim_figures(const sim::SimStats& s) {
  return {{"cycles", s.cycles.value()}, {"nvm_writes", s.nvm.writes},
          {"nvm_reads", s.nvm.reads},   {"flushes", s.flushes},
          {"fences", s.fences},         {"llc_misses", s.llc().misses}};
}

// a / b, or null when b is 0: x/0 and 0/0 say nothing (`pmlab sim --json` writes null too; the
// report prints "n/a", the plots skip the point).
json ratio(double a, double b) {
  return b > 0 ? json(a / b) : json(nullptr);
}

// Simulates `schemes` and base with the same spec; one row per scheme, normalized to base.
json sim_rows(run::SimRunSpec spec, const std::vector<std::string>& schemes) {
  spec.run.scheme = std::string(scheme::kBaseScheme);
  const auto base = run::simulate(spec).stats;
  json rows = json::array();
  for (const auto& s : schemes) {
    spec.run.scheme = s;
    if (!simulable(spec)) continue;
    auto r = s == scheme::kBaseScheme ? base : run::simulate(spec).stats;
    rows.push_back({{"scheme", s},
                    {"family", scheme::to_string(family_of(spec.run.kernel, s))},
                    {"stats", sim_figures(r)},
                    {"cycles_vs_base", ratio(static_cast<double>(r.cycles.value()),
                                             static_cast<double>(base.cycles.value()))},
                    {"writes_vs_base", ratio(static_cast<double>(r.nvm.writes),
                                             static_cast<double>(base.nvm.writes))}});
  }
  return rows;
}

// Runs scripts/instruction-counts on this very binary; {"skipped": why} when valgrind or
// python3 is missing, so the evaluation goes on without the section.
json instruction_counts() {
  if (std::system("valgrind --version >/dev/null 2>&1") != 0)
    return {{"skipped", "valgrind not found (apt-get install valgrind)"}};
  if (std::system("python3 --version >/dev/null 2>&1") != 0)
    return {{"skipped", "python3 not found"}};
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {{"skipped", "cannot locate the pmlab binary (/proc/self/exe)"}};
  const fs::path out = fs::temp_directory_path() / fmt::format("pmlab-icount-{}.json", ::getpid());
  const std::string cmd =
      fmt::format("python3 '{}' --pmlab '{}' --json > '{}' 2>/dev/null",
                  (fs::path(PMLAB_SOURCE_DIR) / "scripts" / "instruction-counts").string(),
                  self.string(), out.string());
  const int rc = std::system(cmd.c_str());
  json j;
  {
    std::ifstream in(out);
    if (rc == 0 && in) j = json::parse(in, nullptr, false);
  }
  fs::remove(out, ec);
  if (rc != 0 || j.is_discarded() || !j.is_object())
    return {{"skipped", fmt::format("scripts/instruction-counts failed (exit {})", rc)}};
  return j;
}

}  // namespace

std::vector<NativeCell> native_cells(const EvalOptions& opt) {
  std::vector<NativeCell> cells;
  for (const auto& k : run::kernel_drivers()) {
    const auto has = [](const std::vector<std::string>& list, const std::string& s) {
      return std::find(list.begin(), list.end(), s) != list.end();
    };
    NativeCell cell{k.name, {}};
    if (!opt.native_schemes.empty()) {
      for (const auto& s : k.schemes)
        if (has(opt.native_schemes, s)) cell.schemes.push_back(s);
      if (cell.schemes.empty()) continue;  // none of them is this kernel's: no cell to measure
    } else if (!opt.full && has(k.schemes, "lp")) {
      cell.schemes = {"lp"};  // the headline's column
    }
    cells.push_back(std::move(cell));
  }
  return cells;
}

namespace {

std::vector<EvalStep> plan(const EvalOptions& opt) {
  std::vector<EvalStep> steps;
  const bool full = opt.full;
  // 1. Native execution time vs base: paired, order-alternating repetitions until the ratio's
  // 95% interval is within ±1% or the budget is spent (then the cell is unresolved). One
  // thread: no OpenMP team, so no thread spin-waits for a core another process holds
  // (docs/measurement.md). Quick mode measures LP only (the headline's column, LP paper Table
  // VII) on a small budget so that `make run` stays within minutes; --full measures every
  // scheme at the papers' sizes; --native-schemes names the schemes in either mode.
  for (const NativeCell& cell : native_cells(opt)) {
    const Sizes sz = sizes_for(cell.kernel, full);
    const std::vector<std::string> timed = cell.schemes;
    const run::KernelDriver& k = run::find_kernel(cell.kernel);
    const std::uint64_t bs = k.default_bs;
    // Quick: 17 s per cell keeps `make run` under 10 minutes on 2 cores (at 20 s it took
    // 10 min 15 s on 2026-11-27, native 215 s of it).
    const double budget = full ? 120.0 : 17.0;
    // tmm also times base against itself (the A/A row): the method's own bias at this load,
    // printed beside the kernels' ratios.
    const bool aa = k.name == "tmm";
    const double schemes =
        static_cast<double>(timed.empty() ? k.schemes.size() : timed.size()) + (aa ? 1 : 0);
    steps.push_back({"native", "native " + k.name, (budget + 5) * schemes,
                     [=, name = k.name] {
                       experiments::BenchOptions b;
                       b.kernel = name;
                       b.n = sz.bench_n;
                       b.bs = bs;
                       b.schemes = timed;
                       b.aa_check = aa;
                       b.threads = 1;
                       b.budget_seconds = budget;
                       b.min_rep_seconds = 0.2;
                       b.target = 0.01;
                       b.seed = opt.seed;
                       b.stop = opt.stop;  // Ctrl-C stops inside the benchmark too
                       return experiments::to_json(experiments::run_bench(b));
                     },
                     /*timed=*/true});
  }
  // 1b. Instructions per scheme vs base under callgrind (scripts/instruction-counts): the
  // deterministic companion of the native column. ~1 min at its moderate sizes on 2 cores.
  steps.push_back(
      {"instructions", "instruction counts", 60.0, [] { return instruction_counts(); }});
  // 2. Simulated cycles and NVM writes vs base under both papers' machines (or --config's).
  const Machine given{opt.machine_name, opt.machine ? &*opt.machine : nullptr};
  const Machine lp_isca18 = opt.machine ? given : Machine{"lp-isca18"};
  std::vector<Machine> machines{lp_isca18};
  if (!opt.machine) machines.push_back({"pact17"});
  for (const Machine& machine : machines) {
    const std::string preset = machine.name;
    for (const auto& k : run::kernel_drivers()) {
      const Sizes sz = sizes_for(k.name, full);
      steps.push_back({"sim", fmt::format("sim {} {}", preset, k.name), full ? 900.0 : 6.0,
                       [=, name = k.name, schemes = k.schemes] {
                         // Quick mode keeps pact17's footprint/LLC ratio of the papers'
                         // n = 1024 tmm (24 MiB / 8 MiB = 3) at n = 256: its 8 MiB LLC is
                         // scaled to 512 KiB. --full runs the preset unchanged.
                         sim::MachineSettings o;
                         if (!full && !machine.given && preset == "pact17")
                           o.set("llc-size", "512K");
                         auto spec = sim_spec(name, "base", sz.sim_n, machine, o);
                         if (!simulable(spec))
                           return json{{"kernel", name},
                                       {"preset", preset},
                                       {"skipped", "no simulator entry point"}};
                         return json{{"kernel", name},
                                     {"preset", preset},
                                     {"n", sz.sim_n},
                                     {"bs", spec.run.bs},
                                     {"threads", spec.run.threads},
                                     {"llc_bytes", spec.machine.llc.size_bytes},
                                     {"rows", sim_rows(spec, schemes)}};
                       }});
    }
  }
  // 3. Crash campaigns: every kernel x simulable, crash-safe scheme (measurement rows such as
  // ipv-nf give up crash consistency on purpose).
  for (const auto& k : run::kernel_drivers()) {
    for (const auto& s : k.schemes) {
      if (!k.crash_safe(s)) continue;
      const Sizes sz = sizes_for(k.name, full);
      steps.push_back(
          {"crash", fmt::format("crash {} {}", k.name, s), full ? 120.0 : 1.5, [=, name = k.name] {
             auto spec =
                 sim_spec(name, s, sz.crash_n, lp_isca18, experiments::control_machine(name, s));
             spec.run.bs = 8;
             spec.run.threads = 2;
             if (!simulable(spec))
               return json{{"kernel", name}, {"scheme", s}, {"skipped", "native only"}};
             experiments::CampaignOptions c;
             c.spec = spec;
             c.trials = full ? 2000 : 100;
             c.seed = opt.seed;
             auto j = experiments::to_json(experiments::run_campaign(c), false);
             j["n"] = spec.run.n;
             // Negative controls: the same campaign on each mutant the scheme must catch
             // ("detects N/M mutants"; an undetected one is reported, not hidden).
             j["controls"] = experiments::to_json(experiments::run_controls(c));
             return j;
           }});
    }
  }
  // 3b. Persist barriers (seed 004, Fig. 11-12, §7): the BEP micro-benchmarks under LB, LB+IDT,
  // LB+PF, LB++ on the paper's machine. Quick: 16 cores x 100 transactions (seconds); full: the
  // paper's 32 cores, 2000 transactions per thread and larger structures.
  for (const auto& bench : bep_benchmarks()) {
    steps.push_back({"barriers", "persist barriers " + bench, full ? 120.0 : 3.0, [=] {
                       BarrierStudyOptions b;
                       b.threads = full ? 32 : 16;
                       b.ops = full ? 2000 : 100;
                       b.entries = full ? 8192 : 1024;
                       b.seed = opt.seed;
                       return barrier_study_bench(bench, b);
                     }});
  }
  // 3c. Seed 002 (Huang, Wu, Li): Table 1, then Figs. 6, 12-14 on every kernel with ipv rows.
  steps.push_back({"seed002", "seed 002 flush states", full ? 20.0 : 4.0, [=] {
                     return seed002_flush_states({full, opt.seed});
                   }});
  steps.push_back({"seed002", "seed 002 flush scaling", full ? 10.0 : 3.0, [=] {
                     return seed002_flush_scaling({full, opt.seed});
                   }});
  steps.push_back({"seed002", "seed 002 IPV rules (Table 2)", 0.5, [=] {
                     return seed002_rules({full, opt.seed});
                   }});
  for (const auto& k : seed002_kernels())
    steps.push_back({"seed002", "seed 002 " + k, full ? 120.0 : 8.0, [=] {
                       return seed002_kernel(k, {full, opt.seed});
                     }});
  // Figs. 6, 12, 13 natively: jacobi (quick; ~25 s), every seed-002 kernel (full).
  for (const auto& k : seed002_kernels()) {
    if (!full && k != "jacobi") continue;
    steps.push_back({"seed002", "seed 002 native " + k, full ? 240.0 : 25.0,
                     [=] {
                       Seed002Options so{full, opt.seed};
                       so.stop = opt.stop;  // Ctrl-C stops inside the benchmark too
                       return seed002_native(k, so);
                     },
                     /*timed=*/true});
  }
  // 3d. BSP bulk mode (seed 004 Figs. 13-14): the base schemes with hardware epochs of N
  // stores. Quick: 8 cores x 4000 transactions (~2 s per benchmark).
  for (const auto& bench : bep_benchmarks()) {
    steps.push_back({"barriers", "BSP bulk mode " + bench, full ? 60.0 : 2.0, [=] {
                       BarrierStudyOptions b;
                       b.threads = full ? 32 : 8;
                       b.ops = full ? 20000 : 4000;
                       b.entries = full ? 8192 : 1024;
                       b.seed = opt.seed;
                       return bsp_study_bench(bench, b);
                     }});
  }
  // 3e. PreFlush (thesis Ch. 5): every flushing scheme with the predictor off / on, and a tmm
  // sensitivity sweep (docs/preflush.md). Quick: n = 64 (tmm 128); full: n = 256.
  for (const auto& kernel : preflush_kernels())
    steps.push_back({"preflush", "preflush " + kernel, full ? 60.0 : 2.0, [=, name = kernel] {
                       PreflushStudyOptions p;
                       p.n = full ? 256 : (name == "tmm" ? 128 : 64);
                       p.bs = 16;
                       p.seed = opt.seed;
                       return preflush_study_kernel(name, p);
                     }});
  steps.push_back({"preflush", "preflush sensitivity", full ? 120.0 : 4.0, [=] {
                     PreflushStudyOptions p;
                     p.n = full ? 256 : 128;
                     p.seed = opt.seed;
                     return preflush_study_sensitivity(p, full);
                   }});
  // 3f. Thesis Ch. 4 (Fig. 4.3): GEMM variants x {base, eager, lazy} x packing, row writes on
  // thesis-ch4. Quick: n = 256 with a 1 MiB LLC so that A, B, C (1.5 MiB) overflow it.
  for (const auto& v : {"naive", "gepp1", "gepp2", "gepm1", "gepm2", "gemp1", "gemp2"}) {
    steps.push_back(
        {"gemm", fmt::format("thesis ch4 gemm {}", v), full ? 400.0 : 4.0, [=, v = std::string(v)] {
           GemmStudyOptions g;
           g.n = full ? 1024 : 256;
           g.bs = full ? 64 : 32;
           g.llc_bytes = full ? 0 : 1u << 20;
           g.seed = opt.seed;
           return gemm_study_variant(v, g);
         }});
  }
  // 3g. gemm's native micro-kernel, its LP and ep-lazy, beside OpenBLAS and BLIS (GFLOP/s and
  // the CPU's peak): timed, so it runs alone. Quick: n = 1024 on one thread, 5 s per row (the
  // rows' pairs resolve LP's +-1% on a quiet host; on a busy one they say unresolved).
  for (const BlasCell& cell : blas_cells(full)) {
    const double budget = full ? 30.0 : 5.0;
    steps.push_back({"blas", fmt::format("blas gemm n={} threads={}", cell.n, cell.threads),
                     (budget + 2) * 4,
                     [=] {
                       static const CpuPeak peak = measure_cpu_peak();
                       return blas_study_cell(cell, budget, opt.seed, peak, opt.stop);
                     },
                     /*timed=*/true});
  }
  // 4. Checksum accuracy and time overhead (LP paper §III-D, Fig. 15b).
  steps.push_back({"checksum", "checksum accuracy", full ? 900.0 : 8.0, [=] {
                     ChecksumStudyOptions c;
                     c.trials_per_cell = full ? 2'000'000 : 20'000;
                     c.seed = opt.seed;
                     ChecksumStudy st;
                     st.accuracy = run_accuracy_study(c);
                     return st.to_json();
                   }});
  // Paired CI per kind, like `pmlab bench` (one thread, budget per kind; quick: 5 x 4 s).
  steps.push_back({"checksum", "checksum overhead", full ? 5 * 60.0 : 5 * 4.0,
                   [=] {
                     ChecksumStudyOptions c;
                     c.overhead_n = full ? 1024 : 384;
                     c.overhead_budget_seconds = full ? 60 : 4;
                     c.threads = 1;
                     ChecksumStudy st;
                     st.overhead = run_overhead_study(c);
                     return st.to_json();
                   },
                   /*timed=*/true});
  // 5. Sensitivity (LP paper §VI-C) for tmm: LLC size, NVM latency, threads.
  // 384: C (1.1 MiB) overflows even the largest LLC studied, as at the papers' n = 1024.
  const std::uint64_t sens_n = full ? 1024 : 384;
  for (const std::string llc : {"256K", "512K", "1M"}) {
    steps.push_back(
        {"sensitivity", "LLC " + llc, full ? 200.0 : 3.0, [=] {
           const sim::MachineSettings o{{"llc-size", llc}};
           auto rows = sim_rows(sim_spec("tmm", "base", sens_n, lp_isca18, o), {"lp", "ep-ii"});
           return json{{"study", "llc"}, {"value", llc}, {"n", sens_n}, {"rows", rows}};
         }});
  }
  for (auto [r, w] : {std::pair{60.0, 150.0}, {150.0, 300.0}, {300.0, 600.0}}) {
    steps.push_back(
        {"sensitivity", fmt::format("NVM {}/{} ns", r, w), full ? 200.0 : 3.0, [=] {
           sim::MachineSettings o;
           o.set("nvm-read-ns", r).set("nvm-write-ns", w);
           auto rows = sim_rows(sim_spec("tmm", "base", sens_n, lp_isca18, o), {"lp", "ep-ii"});
           return json{{"study", "nvm"},
                       {"value", fmt::format("{:.0f}/{:.0f}", r, w)},
                       {"n", sens_n},
                       {"rows", rows}};
         }});
  }
  // Periodic flush (LP paper §III-E, Fig. 11): LP tmm with the cleaning hardware every T
  // cycles, T a fraction of LP's own run; writes vs base tmm without it. Volatility duration
  // (the longest a line stays dirty before reaching NVM) for base, LP and EagerRecompute.
  // Every run of this study has one write queue for the machine, as gem5's controller: with
  // per-core shares the sweeping core's 1/8 share takes all the cleaning write-backs, its
  // evictions stall, and the run's cycles and dirty stretches grow 2.5x for no reason the
  // paper has (docs/simulator.md, "Periodic flush"; the write counts differ by 0.01%). Also on
  // a --config machine: the study is about the cleaning, not about the queue.
  const sim::MachineSettings one_queue{{"write-queue", "shared"}};
  steps.push_back(
      {"sensitivity", "periodic flush", full ? 900.0 : 12.0, [=] {
         auto spec = sim_spec("tmm", "base", sens_n, lp_isca18, one_queue);
         const auto base = run::simulate(spec).stats;
         spec.run.scheme = "lp";
         const auto lp = run::simulate(spec).stats;
         spec.run.scheme = "ep-ii";
         const auto ep = run::simulate(spec).stats;
         auto volatility = [&](const sim::SimStats& st) {
           return std::max(st.volatility.max_cycles, st.volatility.open_max_cycles);
         };
         json points = json::array();
         for (double frac : {0.0008, 0.01, 0.1, 0.33}) {
           sim::MachineSettings o = one_queue;
           const auto period = std::max<std::uint64_t>(
               1, static_cast<std::uint64_t>(frac * static_cast<double>(lp.cycles.value())));
           o.set("periodic-flush", period);
           const auto r = run::simulate(sim_spec("tmm", "lp", sens_n, lp_isca18, o)).stats;
           points.push_back({{"fraction_of_run", frac},
                             {"period_cycles", period},
                             {"writes_vs_base", ratio(static_cast<double>(r.nvm.writes),
                                                      static_cast<double>(base.nvm.writes))},
                             {"periodic_writes", r.nvm.writes_for(sim::WriteCause::kPeriodic)},
                             {"max_dirty_cycles", volatility(r)}});
         }
         return json{
             {"study", "periodic"},
             {"n", sens_n},
             {"write_queue", "shared"},
             {"lp_writes_vs_base",
              ratio(static_cast<double>(lp.nvm.writes), static_cast<double>(base.nvm.writes))},
             {"ep_writes_vs_base",
              ratio(static_cast<double>(ep.nvm.writes), static_cast<double>(base.nvm.writes))},
             {"volatility_max_cycles",
              {{"base", volatility(base)}, {"lp", volatility(lp)}, {"ep-ii", volatility(ep)}}},
             {"points", points}};
       }});
  for (int t : {1, 2, 4, 8, 16}) {
    steps.push_back(
        {"sensitivity", fmt::format("{} threads", t), full ? 200.0 : 3.0, [=] {
           const sim::MachineSettings o{{"cores", std::to_string(t)}};
           auto spec = sim_spec("tmm", "base", sens_n, lp_isca18, o);
           spec.run.threads = static_cast<std::uint32_t>(t);
           auto rows = sim_rows(spec, {"lp", "ep-ii", "ep-jj"});
           return json{{"study", "threads"}, {"value", t}, {"n", sens_n}, {"rows", rows}};
         }});
  }
  return steps;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write '{}'", p.string()));
}

// matplotlib comes from the project's setup (Debian python3-matplotlib); prefer the system
// Python that has it over another python3 earlier on PATH.
std::string python_with_matplotlib() {
  for (const char* py : {"/usr/bin/python3", "python3"}) {
    std::string cmd = fmt::format("{} -c 'import matplotlib' >/dev/null 2>&1", py);
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return {};
}

fs::path tools_dir() {
  // The plot script lives in the source tree; PMLAB_SOURCE_DIR is set by CMake.
  return fs::path(PMLAB_SOURCE_DIR) / "tools";
}

}  // namespace

std::vector<std::string> failed_checks(const json& results) {
  std::vector<std::string> failed;
  if (results.contains("native"))
    for (const auto& k : results["native"])
      if (k.contains("schemes"))
        for (const auto& s : k["schemes"])
          if (!s.value("bit_exact_vs_base", true))
            failed.push_back(fmt::format("native {} {}: result not bit-identical to base",
                                         k.value("kernel", "?"), s.value("scheme", "?")));
  if (results.contains("crash"))
    for (const auto& c : results["crash"])
      if (c.contains("trials") && c.value("passed", 0ull) < c["trials"].get<std::uint64_t>())
        failed.push_back(fmt::format("crash {} {}: {} of {} trials failed", c.value("kernel", "?"),
                                     c.value("scheme", "?"),
                                     c["trials"].get<std::uint64_t>() - c.value("passed", 0ull),
                                     c["trials"].get<std::uint64_t>()));
  // A negative control the campaign did not catch: its passes cannot rule that bug out.
  if (results.contains("crash"))
    for (const auto& c : results["crash"])
      if (c.contains("controls") && c["controls"].contains("runs"))
        for (const auto& r : c["controls"]["runs"])
          if (!r.value("detected", true) && !r.contains("not_reached"))
            failed.push_back(
                fmt::format("crash {} {}: negative control {} not detected (0 of {} trials failed)",
                            c.value("kernel", "?"), c.value("scheme", "?"),
                            r.value("mutation", "?"), r.value("trials", 0ull)));
  if (results.contains("gemm"))
    for (auto& f : gemm_failed_checks(results["gemm"])) failed.push_back(std::move(f));
  // An ipv row's declared rule that the kernel's first iteration contradicts.
  if (results.contains("seed002"))
    for (const auto& e : results["seed002"])
      if (e.value("table", "") == "ipv-rules")
        for (const auto& r : e["rows"])
          if (!r.value("matches_declaration", true))
            failed.push_back(fmt::format("seed002 {} {}: declared {}, profiled {}",
                                         r.value("kernel", "?"), r.value("object", "?"),
                                         r.value("declared", "?"), r.value("rule", "?")));
  return failed;
}

int default_eval_jobs() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

const std::vector<std::string>& eval_sections() {
  static const std::vector<std::string> names{"native",   "instructions", "sim",        "crash",
                                              "barriers", "seed002",      "preflush",   "gemm",
                                              "blas",     "checksum",     "sensitivity"};
  return names;
}

namespace {

// The sections `opt` asks for, checked before anything runs: all of them when none is named.
std::vector<std::string> chosen_sections(const EvalOptions& opt) {
  const auto& known = eval_sections();
  if (opt.sections.empty()) return known;
  for (const auto& s : opt.sections)
    if (std::find(known.begin(), known.end(), s) == known.end())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("unknown eval section '{}' (known: {})", s, fmt::join(known, ", ")));
  return opt.sections;
}

// --native-schemes, checked before anything runs: each name must be a scheme of some kernel.
void check_native_schemes(const EvalOptions& opt) {
  std::set<std::string> known;
  for (const auto& k : run::kernel_drivers()) known.insert(k.schemes.begin(), k.schemes.end());
  for (const auto& s : opt.native_schemes)
    if (!known.contains(s))
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("unknown scheme '{}' in --native-schemes (known: {})", s,
                              fmt::join(known, ", ")));
}

// The earlier results in `dir` whose sections a partial run may carry over: same mode, seed and
// machine, or null (none, unreadable, or of another evaluation: then nothing is carried, since a
// report mixing two modes or machines would compare figures that are not comparable).
json earlier_results(const fs::path& dir, const json& now) {
  std::ifstream in(dir / "results.json");
  if (!in) return nullptr;
  json e = json::parse(in, nullptr, false);
  const auto config = [](const json& r) {
    return r.contains("machine") ? r["machine"].value("config", "") : std::string();
  };
  if (e.is_discarded() || !e.is_object() || e.value("mode", "") != now.value("mode", "") ||
      e.value("seed", std::uint64_t{0}) != now.value("seed", std::uint64_t{0}) ||
      config(e) != config(now))
    return nullptr;
  return e;
}

// Whether `earlier` holds `section` unfinished: listed in its partial_sections, or (results
// written before that list existed) run by an evaluation that did not complete.
bool section_was_partial(const json& earlier, const std::string& section) {
  const auto lists = [&](const char* key) {
    const json l = earlier.value(key, json::array());
    return l.is_array() && std::find(l.begin(), l.end(), section) != l.end();
  };
  if (earlier.contains("partial_sections")) return lists("partial_sections");
  return !earlier.value("complete", true) && lists("sections_run");
}

}  // namespace

json run_eval(const EvalOptions& opt) {
  const std::vector<std::string> chosen = chosen_sections(opt);
  check_native_schemes(opt);
  const auto is_chosen = [&](const std::string& s) {
    return std::find(chosen.begin(), chosen.end(), s) != chosen.end();
  };
  std::vector<EvalStep> steps;
  for (auto& s : plan(opt)) {
    // The section names are spelled in plan() and in eval_sections(): a step under a name the
    // list lacks would be filtered out of every run, so it is a programming error, not a skip.
    const auto& known = eval_sections();
    if (std::find(known.begin(), known.end(), s.section) == known.end())
      throw std::logic_error("eval step '" + s.label + "' is in section '" + s.section +
                             "', which eval_sections() does not list");
    if (is_chosen(s.section)) steps.push_back(std::move(s));
  }
  json results{{"pmlab_version", PMLAB_VERSION},
               {"mode", opt.full ? "full" : "quick"},
               {"seed", opt.seed},
               {"complete", false}};
  if (!opt.meta.is_null()) results["meta"] = opt.meta;
  // The machine of the kernel studies when --config replaced the papers' presets.
  if (opt.machine)
    results["machine"] = {{"config", opt.machine_name}, {"params", sim::to_json(*opt.machine)}};
  for (const auto& section : eval_sections()) results[section] = json::array();
  results["section_seconds"] = json::object();
  results["sections_run"] = chosen;
  if (!opt.native_schemes.empty()) results["native_schemes"] = opt.native_schemes;
  std::set<std::string> partial;  // sections whose steps did not all run
  if (chosen.size() < eval_sections().size()) {
    // A partial run: the other sections come from this directory's last results, if any.
    const json earlier = earlier_results(opt.out_dir, results);
    results["carried_over"] = json::object();
    if (!earlier.is_null())
      for (const auto& section : eval_sections()) {
        if (is_chosen(section) || !earlier.contains(section) || !earlier[section].is_array() ||
            earlier[section].empty())
          continue;
        results[section] = earlier[section];
        // A section the earlier run did not finish stays partial: this run is not complete.
        if (section_was_partial(earlier, section)) partial.insert(section);
        // Where it came from: the earlier run's own origin if it too was carried over.
        json origin = earlier.value("carried_over", json::object()).value(section, json());
        if (origin.is_null()) origin = earlier.value("meta", json::object());
        results["carried_over"][section] = origin;
        if (earlier.contains("section_seconds") && earlier["section_seconds"].contains(section))
          results["section_seconds"][section] = earlier["section_seconds"][section];
      }
  }
  const auto t0 = std::chrono::steady_clock::now();
  StepRunOptions run_opt;
  run_opt.jobs = std::max(1, opt.jobs);
  run_opt.progress = opt.progress;
  run_opt.stop = opt.stop;
  const StepRun run = run_steps(steps, run_opt);
  const bool interrupted = run.interrupted;
  results["jobs"] = run_opt.jobs;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!run.outcomes[i]) {  // not run: interrupted
      partial.insert(steps[i].section);
      continue;
    }
    json r = run.outcomes[i]->result;
    r["label"] = steps[i].label;
    // Where `make run`'s minutes go (the quick mode promises under 10 of them on 2 cores).
    // With --jobs > 1 untimed steps overlap, so a section's sum may exceed its wall time.
    const double step_seconds = run.outcomes[i]->seconds;
    r["step_seconds"] = step_seconds;
    results["section_seconds"][steps[i].section] =
        results["section_seconds"].value(steps[i].section, 0.0) + step_seconds;
    results[steps[i].section].push_back(std::move(r));
  }
  results["partial_sections"] = partial;
  results["complete"] = !interrupted && partial.empty();
  results["failed_checks"] = failed_checks(results);
  results["wall_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opt.progress) opt.progress(1.0, 0, interrupted ? "interrupted" : "done");

  fs::create_directories(opt.out_dir);
  const fs::path dir(opt.out_dir);
  write_file(dir / "results.json", results.dump(2));
  std::string py = python_with_matplotlib();
  results["figures"] = json::array();
  if (!py.empty()) {
    // A directory reused with --sections may hold figures of earlier runs that this run's
    // plot does not redraw (a section no longer in it): only figures the plot script wrote now,
    // new or rewritten, belong to this report.
    std::map<fs::path, fs::file_time_type> before;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".png") before[e.path()] = e.last_write_time();
    std::string cmd = fmt::format("{} '{}' '{}' '{}' >/dev/null 2>&1", py,
                                  (tools_dir() / "plot_results.py").string(),
                                  (dir / "results.json").string(), dir.string());
    if (std::system(cmd.c_str()) == 0) {
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() != ".png") continue;
        const auto old = before.find(e.path());
        if (old == before.end() || e.last_write_time() != old->second)
          results["figures"].push_back(e.path().filename().string());
      }
    } else {
      results["figures_error"] = fmt::format("the plot script failed; run `{} {} {} {}` to see why",
                                             py, (tools_dir() / "plot_results.py").string(),
                                             (dir / "results.json").string(), dir.string());
    }
  } else {
    results["figures_error"] = "no python3 with matplotlib (scripts/setup-deps installs it)";
  }
  write_file(dir / "results.json", results.dump(2));
  write_file(dir / "report.md", render_report(results));
  return results;
}

}  // namespace pmlab::experiments
