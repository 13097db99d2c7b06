// `pmlab sim`: run a kernel x scheme in the persistence simulator; NVM traffic, misses, cycles,
// optionally normalised to base.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "build_info.hpp"
#include "commands.hpp"
#include "interrupt.hpp"
#include "kernel_options.hpp"
#include "machine_options.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/core/progress.hpp"
#include "pmlab/lp/checksum_param.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/machine_file.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::cli {
namespace {

struct SimArgs {
  std::string kernel;
  std::string scheme = "lp";
  std::uint64_t n = 256;
  std::optional<std::uint64_t> bs;  // --bs; absent: the kernel's default (16, cg 256)
  std::optional<std::uint32_t> threads;
  std::string checksum = "modular";
  std::uint64_t seed = 1;
  KernelOptions kernel_options;  // the kernel's own parameters (--width, ...)
  std::string flush = "clflushopt";
  bool drain = false;
  std::optional<std::string> vs;
  bool verify = false;
  bool json = false;
  bool quiet = false;  // --quiet (old spelling: --no-progress)
  MachineArgs machine;
};

run::SimRunResult simulate_one(const run::SimRunSpec& spec, bool progress) {
  ProgressBar bar(fmt::format("sim {} {} n={}", spec.run.kernel, spec.run.scheme, spec.run.n), 1000,
                  progress);
  return run::simulate(spec, [&bar](double f) { bar.update_fraction(f); });
}

std::string human(double v) {
  if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.0f} ", v);
}

std::string level_line(const sim::LevelParams& l, bool shared) {
  return fmt::format("{} {} {} KiB {}-way {} cyc{}", l.name, shared ? "shared" : "private",
                     l.size_bytes / 1024, l.ways, l.hit_latency.value(),
                     l.replacement == sim::Replacement::kLru
                         ? ""
                         : fmt::format(" {}", sim::to_string(l.replacement)));
}

// Rows of the text report: label and the figure from the stats JSON (a path of keys).
struct Row {
  std::string label;
  std::vector<std::string> path;
};

std::vector<Row> report_rows(const sim::SimParams& m) {
  std::vector<Row> rows{{"cycles", {"cycles"}},
                        {"NVM reads (lines)", {"nvm_reads"}},
                        {"NVM writes (lines)", {"nvm_writes"}}};
  const bool epochs = m.persistency.hardware();
  for (std::size_t i = 0; i < (epochs ? sim::kWriteCauseCount : sim::kWriteCauseCountOff); ++i) {
    const std::string c(sim::to_string(static_cast<sim::WriteCause>(i)));
    rows.push_back({"  by " + c, {"nvm_writes_by_cause", c}});
  }
  std::vector<std::string> names{m.l1.name};
  if (m.l2) names.push_back(m.l2->name);
  names.push_back(m.llc.name);
  for (const auto& n : names) rows.push_back({n + " misses", {"levels", n, "misses"}});
  if (m.nvm.row_buffer.enabled)  // thesis Ch. 4's metric (docs/simulator.md "Row buffer")
    for (const char* k : {"row_writes_total", "row_writes", "rows_dirty_at_end", "device_writes",
                          "wq_merges", "activations_write", "row_hits_write", "drains"})
      rows.push_back({fmt::format("row buffer: {}", k), {"row_buffer", k}});
  if (m.prefetch.on())  // the L1D stream prefetcher (docs/simulator.md "Stream prefetcher")
    for (const char* k : {"issued", "used", "late", "useless", "dropped", "streams"})
      rows.push_back({fmt::format("prefetch: {}", k), {"prefetch", k}});
  if (epochs) {  // seed 004's epoch engine (docs/simulator.md "Persist barriers")
    for (const char* k : {"barriers", "epochs", "splits", "idt_deps", "idt_overflows",
                          "conflict_pct", "stall_cycles"})
      rows.push_back({fmt::format("epochs: {}", k), {"epochs", k}});
    for (std::size_t i = 0; i < sim::kEpochCauseCount; ++i) {
      const std::string c(sim::to_string(static_cast<sim::EpochCause>(i)));
      rows.push_back({"  flushed by " + c, {"epochs", "flushed_by", c}});
    }
  }
  if (m.dram_cache.enabled)  // seed 002's DRAM cache (docs/simulator.md "DRAM cache")
    for (const char* k : {"hits", "absorbed_writes", "flushed_lines", "placed_bytes"})
      rows.push_back({fmt::format("DRAM cache: {}", k), {"dram_cache", k}});
  rows.push_back({"line accesses", {"accesses"}});
  rows.push_back({"flushes", {"flushes"}});
  rows.push_back({"fences", {"fences"}});
  rows.push_back({"fence stall cycles", {"fence_stall_cycles"}});
  rows.push_back({"write-queue stall cycles", {"write_queue_stall_cycles"}});
  rows.push_back({"max volatility (cycles)", {"volatility", "max_cycles"}});
  rows.push_back({"lines dirty at the end", {"volatility", "open_lines"}});
  rows.push_back({"  oldest of them (cycles)", {"volatility", "open_max_cycles"}});
  return rows;
}

const nlohmann::json& at_path(const nlohmann::json& j, const std::vector<std::string>& path) {
  const nlohmann::json* p = &j;
  for (const auto& k : path) p = &p->at(k);
  return *p;
}

std::string ratio_text(const nlohmann::json& r) {
  return r.is_null() ? std::string("n/a") : fmt::format("{:.4f}x", r.get<double>());
}

int do_sim(const SimArgs& a) {
  run::SimRunSpec spec;
  spec.machine = build_machine(a.machine);
  if (a.machine.dump_config) {
    dump_machine(spec.machine);
    return kExitOk;
  }
  spec.run.kernel = a.kernel;
  spec.run.scheme = a.scheme;
  spec.run.n = a.n;
  spec.run.bs = a.bs ? *a.bs : run::find_kernel(a.kernel).default_bs;
  spec.run.threads = a.threads.value_or(static_cast<std::uint32_t>(spec.machine.threads));
  lp::set_checksum(spec.run, lp::checksum_kind_from_string(a.checksum));
  spec.run.seed = a.seed;
  a.kernel_options.apply(spec.run);
  spec.flush = sim::flush_mode_from_string(a.flush);
  spec.drain = a.drain;
  spec.verify = a.verify;
  run::validate(spec);              // before a --periodic-flush P% calibration run
  run::require_scratch_room(spec);  // the arrays on /dev/shm, and memory: refused up front
  const PeriodicFlushArg periodic = apply_periodic_flush(a.machine, spec);
  const sim::SimParams& machine = spec.machine;

  std::optional<run::SimRunSpec> ref;
  if (a.vs) {
    ref = spec;
    ref->run.scheme = *a.vs;
    ref->verify = false;
    run::validate(*ref);  // refuses a bad reference scheme before the long run
    run::require_scratch_room(*ref);
  }
  const bool progress = progress_wanted(a.quiet);
  const run::SimRunResult r = simulate_one(spec, progress);
  std::optional<run::SimRunResult> base;
  // Simulated even when it is the same scheme: runs are deterministic, so x/x = 1 exactly.
  if (ref) base = simulate_one(*ref, progress);
  const std::optional<run::VerifyResult>& verdict = r.verify;

  const nlohmann::json stats = sim::to_json(r.stats);
  if (a.json) {
    nlohmann::json j{{"kernel", a.kernel},
                     {"scheme", a.scheme},
                     {"config", a.machine.config},
                     {"n", a.n},
                     {"bs", spec.run.bs},
                     {"threads", spec.run.threads},
                     {"checksum", spec.run.checksum},
                     {"seed", a.seed},
                     {"flush", a.flush},
                     {"drain", a.drain},
                     {"machine", sim::to_json(machine)},
                     // Every declared parameter's effective value, as a machine file holds it.
                     {"machine_parameters", sim::to_machine_file(machine)},
                     {"periodic_flush",
                      {{"cycles", periodic.cycles},
                       {"percent_of_run", periodic.percent ? nlohmann::json(*periodic.percent)
                                                           : nlohmann::json(nullptr)}}},
                     {"ops", r.ops},
                     {"wall_seconds", r.seconds},
                     {"cpu_seconds", r.cpu_seconds},
                     {"refs_per_second", r.refs_per_second()}};
    j.update(stats);
    if (base) {
      j["vs"] = *a.vs;
      j["base"] = sim::to_json(base->stats);
      j["normalized"] = run::normalized_to(r.stats, base->stats);
      if (r.stats.nvm.writes == 0 && base->stats.nvm.writes == 0)
        j["warnings"].push_back(
            "neither run wrote anything to NVM: normalized 0/0 figures are null (n/a)");
    }
    if (verdict) {
      j["verified"] = verdict->ok();
      j["mismatches"] = verdict->mismatches;
    }
    fmt::print("{}\n", with_meta(j).dump(2));
  } else {
    fmt::print("pmlab sim {} --scheme {} --config {} --n {} --bs {} --threads {} --flush {}{}\n",
               a.kernel, a.scheme, a.machine.config, a.n, spec.run.bs, spec.run.threads, a.flush,
               a.drain ? " --drain" : "");
    fmt::print("  machine: {} cores {:g} GHz; {}", machine.cores, machine.freq_ghz,
               level_line(machine.l1, false));
    if (machine.l2) fmt::print("; {}", level_line(*machine.l2, false));
    fmt::print("; {}{}; NVM {:g}/{:g} ns read/write, WQ {}, {} units\n",
               level_line(machine.llc, true),
               machine.inclusive_llc ? " inclusive" : " non-inclusive", machine.nvm.read_ns,
               machine.nvm.write_ns, machine.nvm.write_queue_entries, machine.nvm.write_units);
    if (periodic.cycles > 0)
      fmt::print("  periodic flush: every {} cycles{}, one LLC set at a time\n", periodic.cycles,
                 periodic.percent ? fmt::format(" ({:g}% of the run)", *periodic.percent) : "");
    fmt::print("  simulated {}refs in {:.2f} s, {:.2f} s CPU ({}refs/s)\n",
               human(static_cast<double>(r.stats.accesses())), r.seconds, r.cpu_seconds,
               human(r.refs_per_second()));
    const nlohmann::json base_stats = base ? sim::to_json(base->stats) : nlohmann::json();
    const nlohmann::json norm = base ? run::normalized_to(r.stats, base->stats) : nlohmann::json();
    if (base)
      fmt::print("  {:<26}{:>16}{:>16}{:>12}\n", "", a.scheme, *a.vs, fmt::format("/{}", *a.vs));
    for (const Row& row : report_rows(machine)) {
      const auto v = at_path(stats, row.path).get<std::uint64_t>();
      if (base) {
        const auto bv = at_path(base_stats, row.path).get<std::uint64_t>();
        // 0/0 says nothing: "n/a", not 1.0000x (warned about below for NVM writes).
        fmt::print("  {:<26}{:>16}{:>16}{:>12}\n", row.label, v, bv,
                   v == 0 && bv == 0 ? std::string("n/a") : ratio_text(at_path(norm, row.path)));
      } else
        fmt::print("  {:<26}{:>16}\n", row.label, v);
    }
    if (verdict) {
      if (verdict->ok())
        fmt::print("  verify: OK, {} elements bit-identical to the fault-free reference\n",
                   verdict->elements);
      else
        fmt::print("  verify: FAILED, {} of {} elements differ; first: {}\n", verdict->mismatches,
                   verdict->elements, verdict->first_mismatch);
    }
    if (base && r.stats.nvm.writes == 0 && base->stats.nvm.writes == 0)
      fmt::print(stderr,
                 "pmlab: warning: neither {} nor {} wrote anything to NVM (the data fits in the "
                 "caches): their write ratio is n/a, not 1; try a larger --n or a smaller "
                 "--llc-size\n",
                 a.scheme, *a.vs);
  }
  return verdict && !verdict->ok() ? kExitVerifyFailed : kExitOk;
}

}  // namespace

void add_sim_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SimArgs>();
  auto* cmd = app.add_subcommand(
      "sim",
      "Run a kernel under a persistency scheme in the persistence simulator (heap-like scratch "
      "memory, inputs "
      "registered as persistent) and report NVM reads/writes by cause, per-level misses and "
      "cycles. "
      "--vs base also simulates base with the same parameters and normalises every figure to it. "
      "The machine is a preset (--config) with optional overrides; see docs/simulator.md.");
  std::string kernels;
  for (const auto& k : run::sim_kernels()) kernels += (kernels.empty() ? "" : ", ") + k.name;
  cmd->add_option("kernel", a->kernel, "Kernel to simulate: " + kernels)->required();
  cmd->add_option("--scheme", a->scheme,
                  "Persistency scheme (base, lp, ep-ii, ep-jj, wal-ii, wal-jj, cp, hr-*-x32/x64)")
      ->capture_default_str();
  cmd->add_option("--n", a->n, "Problem size n")->capture_default_str();
  cmd->add_option("--bs", a->bs,
                  "Block/tile size (default 16; cg 256: its bs is LP's region of one vector)");
  cmd->add_option("--threads", a->threads,
                  "Logical threads (default: the preset's; thread t runs on core t % cores)");
  cmd->add_option("--checksum", a->checksum,
                  "LP checksum: modular, parity, adler32, modular-parity, crc32c (adler32 can miss "
                  "a stale value in a one-value tile, --bs 1: docs/lp-checksums.md)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the deterministic inputs")->capture_default_str();
  a->kernel_options.add_to(*cmd);
  cmd->add_option("--flush", a->flush,
                  "Flush instruction: clflushopt (the papers'), clwb, clflush, none")
      ->capture_default_str();
  cmd->add_flag("--drain", a->drain,
                "Write every dirty line back at the end (counted as nvm_writes_by_cause.drain)");
  cmd->add_option("--vs", a->vs,
                  "Also simulate this scheme (normally base) and normalise every figure to it");
  cmd->add_flag(
      "--verify", a->verify,
      "Check the simulated result bit for bit against the native reference (exit 1 on mismatch)");
  cmd->add_flag("--json", a->json, "Print JSON (keys: docs/simulator.md, \"pmlab sim JSON\")");
  cmd->add_flag("--quiet", a->quiet,
                "No progress bar (it is drawn only when stderr is a terminal)");
  cmd->add_flag("--no-progress", a->quiet)->group("");  // the old spelling, hidden
  add_machine_options(*cmd, a->machine);
  cmd->callback([a, &exit_code] {
    const InterruptScope interrupts(OnInterrupt::kExitNow);  // everything is in memory
    exit_code = do_sim(*a);
  });
}

}  // namespace pmlab::cli
