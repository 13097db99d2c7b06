// Machine options: registration, size parsing, preset + overrides, replay flags, periodic flush.
#include "machine_options.hpp"

#include <cctype>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine_file.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::cli {
namespace {

[[noreturn]] void bad(const std::string& msg) {
  throw Error(ErrorCode::kInvalidArgument, msg);
}

// cachegrind's --D1/--LL syntax: size,assoc,line_size.
sim::CacheGeometry parse_geometry(const std::string& flag, const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == ',') {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  if (parts.size() != 3)
    bad(fmt::format(
        "{} expects size,assoc,line_size as cachegrind does (e.g. 65536,8,64), got '{}'", flag,
        text));
  const std::uint64_t assoc = parse_size(flag, parts[1]), line = parse_size(flag, parts[2]);
  if (assoc < 1 || assoc > 1024)
    bad(fmt::format("{}: associativity must be in [1, 1024], got {}", flag, assoc));
  return {parse_size(flag, parts[0]), static_cast<std::uint32_t>(assoc),
          static_cast<std::uint32_t>(line)};
}

// Registers `--name` for an optional value, showing a preset default as the command's.
template <class T>
CLI::Option* add_opt(CLI::Option_group& g, const std::string& name, std::optional<T>& v,
                     const std::string& help) {
  CLI::Option* o = g.add_option(name, v, help);
  if (v) o->default_str(fmt::format("{}", *v));
  return o;
}

}  // namespace

std::uint64_t parse_size(const std::string& flag, const std::string& text) {
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    // stoull would take " 5" and wrap "-1" around to 2^64 - 1: digits only.
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
      throw std::invalid_argument(text);
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    bad(fmt::format("{}: '{}' is not a size (e.g. 65536, 64K, 512KiB, 8M)", flag, text));
  }
  std::string suffix = text.substr(pos);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::uint64_t mult = 1;
  if (suffix == "" || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    mult = 1ull << 30;
  else
    bad(fmt::format("{}: '{}' is not a size (suffixes: K, M, G = 2^10, 2^20, 2^30 bytes)", flag,
                    text));
  if (v > (1ull << 40) / mult) bad(fmt::format("{}: '{}' is too large", flag, text));
  return v * mult;
}

bool is_machine_file(const std::string& config) {
  return config.find('/') != std::string::npos || (config.size() > 5 && config.ends_with(".json"));
}

void dump_machine(const sim::SimParams& p) {
  fmt::print("{}\n", sim::to_machine_file(p).dump(2));
}

void add_machine_options(CLI::App& cmd, MachineArgs& a) {
  std::string presets;
  for (auto p : sim::preset_names()) presets += (presets.empty() ? "" : ", ") + std::string(p);
  cmd.add_option("--config", a.config,
                 "Machine: a preset (" + presets +
                     ") or a machine file (a path with '/' or ending in .json; the presets' own "
                     "files are in configs/ and share/pmlab/configs; docs/cli.md)")
      ->capture_default_str();
  cmd.add_flag("--dump-config", a.dump_config,
               "Print the effective machine (--config with every override applied) as a machine "
               "file and exit, running nothing");
  auto& m = *cmd.add_option_group("machine overrides", "Changes to the preset");
  add_opt(m, "--cores", a.cores, "Simulated cores (pact17: the shared L2 stays 1 MiB per core)");
  add_opt(m, "--l1-size", a.l1_size, "Private L1 size (bytes, or with K/M suffix)");
  add_opt(m, "--l1-ways", a.l1_ways, "L1 associativity");
  add_opt(m, "--l2-size", a.l2_size,
          "Adds/resizes a private L2 per core (0 removes it); the LLC is then L3");
  add_opt(m, "--l2-ways", a.l2_ways, "Private L2 associativity");
  add_opt(m, "--llc-size", a.llc_size, "Shared last-level cache size");
  add_opt(m, "--llc-ways", a.llc_ways, "LLC associativity");
  add_opt(m, "--llc-inclusion", a.llc_inclusion,
          "inclusive (presets) or non-inclusive (1 core only, cachegrind's)")
      ->check(CLI::IsMember({"inclusive", "non-inclusive"}));
  add_opt(m, "--replacement", a.replacement,
          "Replacement policy of every level: lru, random, srrip");
  add_opt(m, "--nvm-read-ns", a.nvm_read_ns, "NVM read latency (ns)");
  add_opt(m, "--nvm-write-ns", a.nvm_write_ns, "NVM write latency (ns)");
  add_opt(m, "--freq-ghz", a.freq_ghz, "Core clock (GHz)");
  add_opt(m, "--wq-entries", a.wq_entries, "Memory-controller write-queue entries");
  add_opt(m, "--write-units", a.write_units, "Concurrent NVM writes (banks)");
  add_opt(m, "--write-queue", a.write_queue,
          "How the cores share the controller's write queue: per-core (default: each core "
          "running a loop owns 1/cores of its entries and units) or shared (one queue booked by "
          "time, so one core's burst of flushes may use every unit while the others compute)")
      ->check(CLI::IsMember({"per-core", "shared"}));
  add_opt(m, "--wc-buffers", a.wc_buffers,
          "Model non-temporal stores with this many write-combining buffers per core (no fill, "
          "no RFO, lost at a power failure unless drained); 0 or absent: stores + flushes");
  add_opt(m, "--whole-cache-flush", a.whole_cache_flush,
          "Seed 002 helper core (scheme ipv): write a flush_async range back with WBINVD "
          "(always), per line (never), or by the paper's rule, WBINVD once the range is >= 10x "
          "the LLC (auto, default); simulator only")
      ->check(CLI::IsMember({"auto", "never", "always"}));
  add_opt(m, "--wbinvd-cycles", a.wbinvd_cycles,
          "Cycles WBINVD spends per LLC line it walks (default 1, an assumption)");
  add_opt(m, "--D1", a.d1, "With --config cachegrind: D1 as size,assoc,line (cachegrind's syntax)");
  add_opt(m, "--LL", a.ll, "With --config cachegrind: LL as size,assoc,line");
  add_opt(m, "--periodic-flush", a.periodic_flush,
          "Periodic cache cleaning (LP paper §III-E): every dirty line is written back, and kept "
          "clean, once per CYCLES, one LLC set at a time; 'P%' = P percent of the run's cycles "
          "(measured by a first run without it); 0 = off");
  add_opt(m, "--core-model", a.core_model,
          "Core timing: memory (default: every access adds its latency, no overlap) or interval "
          "(issue width, ROB and MSHRs from the preset; misses overlap, flushes do not stall "
          "until sfence)")
      ->check(CLI::IsMember({"memory", "interval"}));
  add_opt(m, "--issue-width", a.issue_width, "Interval model: instructions dispatched per cycle");
  add_opt(m, "--rob", a.rob_entries, "Interval model: reorder-buffer entries");
  add_opt(m, "--mshrs", a.mshrs, "Interval model: outstanding misses and flushes per core");
  add_opt(m, "--insts-per-access", a.insts_per_access,
          "Interval model: instructions charged per load/store (itself + its non-memory work)");
  add_opt(m, "--flush-after-fill", a.flush_after_fill,
          "Interval model: on = a flush of a line whose store miss is still outstanding waits for "
          "that fill (a clwb cannot write back a line the core does not own yet); off (default) = "
          "the store's line counts as owned at once")
      ->check(CLI::IsMember({"on", "off"}));
  add_opt(m, "--interleave-quantum", a.interleave_quantum,
          "Thread interleaving in parallel loops: 0 = one iteration per thread per turn (default), "
          "Q = Q memory operations per thread per turn");
  add_opt(m, "--row-buffer", a.row_buffer,
          "NVM row-buffer model (thesis Ch. 4 row writes): on or off (thesis-ch4: on)")
      ->check(CLI::IsMember({"on", "off"}));
  add_opt(m, "--row-bytes", a.row_bytes, "Row-buffer size (bytes, power of two, >= 64)");
  add_opt(m, "--ranks", a.ranks, "Row buffer: ranks per channel (power of two)");
  add_opt(m, "--banks", a.banks, "Row buffer: banks per rank (power of two)");
  add_opt(m, "--rq-entries", a.rq_entries, "Row buffer: read-queue entries");
  add_opt(m, "--wq-high", a.wq_high, "Row buffer: write-queue fill fraction that starts a drain");
  add_opt(m, "--wq-low", a.wq_low, "Row buffer: fill fraction a drain goes down to");
  add_opt(m, "--min-writes-per-drain", a.min_writes_per_drain,
          "Row buffer: writes a drain does at least");
  add_opt(m, "--flush-mc-hop", a.flush_mc_hop,
          "Flush round trip (thesis §2.3.2): 0 = first-order (done at the LLC or when the "
          "controller accepts the line); C = every flush goes to the directory and back, a dirty "
          "one also C cycles each way to the controller");
  add_opt(m, "--preflush", a.preflush, "PreFlush flush predictor (thesis Ch. 5): on or off")
      ->check(CLI::IsMember({"on", "off"}));
  add_opt(m, "--preflush-signatures", a.preflush_signatures, "PreFlush: Signatures entries");
  add_opt(m, "--preflush-flushed-tags", a.preflush_flushed_tags, "PreFlush: FlushedTags entries");
  add_opt(m, "--preflush-sample", a.preflush_sample,
          "PreFlush: LastStore kept on every Nth L1 set");
  add_opt(m, "--preflush-loop", a.preflush_loop,
          "PreFlush loop code: off (the thesis' design, oscillates on loops, §5.3.8) or "
          "line-change (pmlab's extension: a PC moving to a new line PreFlushes its previous one)")
      ->check(CLI::IsMember({"off", "line-change"}));
  add_opt(m, "--preflush-marks", a.preflush_marks,
          "PreFlush: where PreFlushed lines are remembered: table (the thesis' FlushedTags and "
          "the directory's PreFlushers, default) or l1 (pmlab's: a mark on the L1 line, NACKed "
          "by coherence invalidation, lost with the line)")
      ->check(CLI::IsMember({"table", "l1"}));
  add_opt(m, "--preflush-design", a.preflush_design,
          "PreFlush design: optimised (LastStore on sampled sets, thesis §5.3.4-5, default) or "
          "trace (the baseline: an XOR trace of store PCs on every L1 line, §5.3.3)")
      ->check(CLI::IsMember({"optimised", "trace"}));
  add_opt(m, "--preflush-dir-entries", a.preflush_dir_entries,
          "PreFlush: directory PreFlushers entries per core (FIFO; an evicted entry NACKs its "
          "PreFlushes)");
  add_opt(m, "--preflush-mutant", a.preflush_mutant,
          "Negative control: no-own-store (skip the own-store misprediction check) or no-nack "
          "(skip the directory's NACK); transparency then fails")
      ->check(CLI::IsMember({"no-own-store", "no-nack"}));
  add_opt(m, "--barrier", a.barrier,
          "Persist barriers of the epoch-persistency workloads (seed 004: hash, queue, rbtree, "
          "sdg, sps): sw (default: the code writes the epoch's lines back and fences), none (no "
          "ordering: a negative control), lb (lazy barrier, BPFS), lb-idt (+ inter-thread "
          "dependence tracking), lb-pf (+ proactive flush), lb++ (both)")
      ->check(CLI::IsMember({"none", "sw", "lb", "lb-idt", "lb-pf", "lb++"}));
  m.add_flag("--check-order", a.check_order,
             "Check every NVM write of a persistent line against program epoch order (the "
             "persist-order oracle, docs/simulator.md); a violation fails the run with exit 1");
  add_opt(m, "--bsp-epoch", a.bsp_epoch,
          "Buffered strict persistency, bulk mode (seed 004 Figs. 13-14; needs --barrier lb*): "
          "the hardware ends each core's epoch every N stores (e.g. 300, 1000, 10000)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100'000'000}));
  add_opt(m, "--bsp-log", a.bsp_log,
          "BSP bulk mode's hardware log: one NVM log write per line first stored to in an epoch "
          "(on, default with --bsp-epoch) or none (off: Fig. 14's NOLOG)")
      ->check(CLI::IsMember({"on", "off"}));
  m.add_flag("--timed-locks", a.timed_locks,
             "BEP benchmarks: a critical section waits for its lock's previous holder to release "
             "it (plus one LLC hit), so threads under one lock serialise in time (off: atomic in "
             "simulation order only; docs/bep.md)");
  m.add_flag("--bsp-write-through", a.bsp_write_through,
             "Naive write-through BSP (needs --barrier lb*): every store to a persistent line "
             "goes to NVM at once and the core waits for it");
}

sim::SimParams build_machine(const MachineArgs& a) {
  if ((a.d1 || a.ll) && a.config != "cachegrind")
    bad("--D1 and --LL describe cachegrind's caches: use them with --config cachegrind");
  run::MachineOverrides o;
  o.cores = a.cores;
  if (a.l1_size) o.l1_size = parse_size("--l1-size", *a.l1_size);
  if (a.l2_size) o.l2_size = parse_size("--l2-size", *a.l2_size);
  if (a.llc_size) o.llc_size = parse_size("--llc-size", *a.llc_size);
  o.l1_ways = a.l1_ways;
  o.l2_ways = a.l2_ways;
  o.llc_ways = a.llc_ways;
  if (a.replacement) o.replacement = sim::replacement_from_string(*a.replacement);
  if (a.llc_inclusion) o.inclusive_llc = *a.llc_inclusion == "inclusive";
  o.nvm_read_ns = a.nvm_read_ns;
  o.nvm_write_ns = a.nvm_write_ns;
  o.freq_ghz = a.freq_ghz;
  o.write_queue_entries = a.wq_entries;
  o.write_units = a.write_units;
  o.wc_buffers = a.wc_buffers;
  if (a.periodic_flush) {
    const PeriodicFlushArg pf = parse_periodic_flush(*a.periodic_flush);
    if (!pf.percent) o.periodic_flush_cycles = pf.cycles;
  }
  sim::SimParams p = is_machine_file(a.config)
                         ? run::machine_from(sim::load_machine_file(a.config), o)
                         : run::machine_from(a.config, o);
  if (a.core_model) p.core.model = sim::core_model_from_string(*a.core_model);
  if (a.write_queue) p.nvm.write_queue = sim::write_queue_model_from_string(*a.write_queue);
  if (a.issue_width) p.core.issue_width = *a.issue_width;
  if (a.rob_entries) p.core.rob_entries = *a.rob_entries;
  if (a.mshrs) p.core.mshrs = *a.mshrs;
  if (a.insts_per_access) p.core.insts_per_access = *a.insts_per_access;
  if (a.flush_after_fill) p.core.flush_after_fill = *a.flush_after_fill == "on";
  if (a.interleave_quantum) p.interleave_quantum = *a.interleave_quantum;
  if (a.flush_mc_hop) p.flush_mc_hop = *a.flush_mc_hop;
  if (a.whole_cache_flush)
    p.whole_cache_flush = sim::whole_cache_flush_from_string(*a.whole_cache_flush);
  if (a.wbinvd_cycles) p.wbinvd_cycles_per_line = *a.wbinvd_cycles;
  if (a.preflush) p.preflush.enabled = *a.preflush == "on";
  if (a.preflush_signatures) p.preflush.signatures = *a.preflush_signatures;
  if (a.preflush_flushed_tags) p.preflush.flushed_tags = *a.preflush_flushed_tags;
  if (a.preflush_sample) p.preflush.sample_every = *a.preflush_sample;
  if (a.preflush_loop) p.preflush.line_change = *a.preflush_loop == "line-change";
  if (a.preflush_design) p.preflush.trace = *a.preflush_design == "trace";
  if (a.preflush_marks) p.preflush.l1_marks = *a.preflush_marks == "l1";
  if (a.preflush_dir_entries) p.preflush.dir_entries = *a.preflush_dir_entries;
  if (a.preflush_mutant) {
    if (!p.preflush.enabled) bad("--preflush-mutant needs --preflush on");
    p.preflush.own_store_check = *a.preflush_mutant != "no-own-store";
    p.preflush.nack = *a.preflush_mutant != "no-nack";
  }
  if (a.barrier) p.persistency.barrier = sim::barrier_from_string(*a.barrier);
  p.persistency.check_order = a.check_order;
  if (a.bsp_log && !a.bsp_epoch) bad("--bsp-log needs --bsp-epoch N");
  if (a.bsp_epoch) {
    p.persistency.bsp_epoch_stores = *a.bsp_epoch;
    p.persistency.bsp_log = a.bsp_log.value_or("on") == "on";
  }
  p.persistency.bsp_write_through = a.bsp_write_through;
  if (a.timed_locks) p.persistency.timed_locks = true;
  p.validate();
  if (a.config == "cachegrind" && (a.d1 || a.ll)) {
    // Rebuild from the geometries, then re-apply the overrides on top.
    const sim::SimParams cg = sim::cachegrind_like(
        a.d1 ? parse_geometry("--D1", *a.d1) : sim::CacheGeometry{p.l1.size_bytes, p.l1.ways, 64},
        a.ll ? parse_geometry("--LL", *a.ll)
             : sim::CacheGeometry{p.llc.size_bytes, p.llc.ways, 64});
    p.l1.size_bytes = cg.l1.size_bytes;
    p.l1.ways = cg.l1.ways;
    p.llc.size_bytes = cg.llc.size_bytes;
    p.llc.ways = cg.llc.ways;
    p.validate();
  }
  // The row buffer is set on the built machine (no preset but thesis-ch4 turns it on); its
  // queue size is --wq-entries, the same controller queue the timing model uses.
  auto& rb = p.nvm.row_buffer;
  if (a.row_buffer) rb.enabled = *a.row_buffer == "on";
  if (a.row_bytes) {
    const std::uint64_t v = parse_size("--row-bytes", *a.row_bytes);
    if (v > (1u << 20)) bad(fmt::format("--row-bytes: {} is more than 1 MiB", v));
    rb.row_bytes = static_cast<std::uint32_t>(v);
  }
  if (a.ranks) rb.ranks = *a.ranks;
  if (a.banks) rb.banks = *a.banks;
  if (a.rq_entries) rb.rq_entries = *a.rq_entries;
  if (a.wq_entries) rb.wq_entries = *a.wq_entries;
  if (a.wq_high) rb.wq_high = *a.wq_high;
  if (a.wq_low) rb.wq_low = *a.wq_low;
  if (a.min_writes_per_drain) rb.min_writes_per_drain = *a.min_writes_per_drain;
  p.validate();
  return p;
}

std::string machine_flags(const MachineArgs& a) {
  std::string s = "--config " + a.config;
  const auto add = [&s](const char* flag, const auto& v) {
    if (v) s += fmt::format(" {} {}", flag, *v);
  };
  add("--cores", a.cores);
  add("--l1-size", a.l1_size);
  add("--l1-ways", a.l1_ways);
  add("--l2-size", a.l2_size);
  add("--l2-ways", a.l2_ways);
  add("--llc-size", a.llc_size);
  add("--llc-ways", a.llc_ways);
  add("--llc-inclusion", a.llc_inclusion);
  add("--replacement", a.replacement);
  add("--nvm-read-ns", a.nvm_read_ns);
  add("--nvm-write-ns", a.nvm_write_ns);
  add("--freq-ghz", a.freq_ghz);
  add("--wq-entries", a.wq_entries);
  add("--write-units", a.write_units);
  add("--write-queue", a.write_queue);
  add("--wc-buffers", a.wc_buffers);
  add("--whole-cache-flush", a.whole_cache_flush);
  add("--wbinvd-cycles", a.wbinvd_cycles);
  add("--D1", a.d1);
  add("--LL", a.ll);
  add("--core-model", a.core_model);
  add("--issue-width", a.issue_width);
  add("--rob", a.rob_entries);
  add("--mshrs", a.mshrs);
  add("--insts-per-access", a.insts_per_access);
  add("--flush-after-fill", a.flush_after_fill);
  add("--interleave-quantum", a.interleave_quantum);
  add("--row-buffer", a.row_buffer);
  add("--row-bytes", a.row_bytes);
  add("--ranks", a.ranks);
  add("--banks", a.banks);
  add("--rq-entries", a.rq_entries);
  add("--wq-high", a.wq_high);
  add("--wq-low", a.wq_low);
  add("--min-writes-per-drain", a.min_writes_per_drain);
  add("--flush-mc-hop", a.flush_mc_hop);
  add("--preflush", a.preflush);
  add("--preflush-signatures", a.preflush_signatures);
  add("--preflush-flushed-tags", a.preflush_flushed_tags);
  add("--preflush-sample", a.preflush_sample);
  add("--preflush-loop", a.preflush_loop);
  add("--preflush-design", a.preflush_design);
  add("--preflush-marks", a.preflush_marks);
  add("--preflush-dir-entries", a.preflush_dir_entries);
  add("--preflush-mutant", a.preflush_mutant);
  add("--barrier", a.barrier);
  if (a.check_order) s += " --check-order";
  add("--bsp-epoch", a.bsp_epoch);
  add("--bsp-log", a.bsp_log);
  if (a.bsp_write_through) s += " --bsp-write-through";
  if (a.timed_locks) s += " --timed-locks";
  return s;
}

PeriodicFlushArg parse_periodic_flush(const std::string& text) {
  const auto fail = [&] {
    bad(fmt::format(
        "--periodic-flush: '{}' is neither a cycle count nor a percentage of the run (e.g. "
        "100000, 0.08%, 33%; 0 = off)",
        text));
  };
  PeriodicFlushArg r;
  std::size_t pos = 0;
  try {
    if (!text.empty() && text.back() == '%') {
      const double p = std::stod(text.substr(0, text.size() - 1), &pos);
      if (pos != text.size() - 1 || !(p > 0) || !std::isfinite(p)) fail();
      // A period longer than the run would never clean anything: certainly a typo.
      if (p > 100)
        bad(
            fmt::format("--periodic-flush: {}% is more than the whole run; a percentage must "
                        "be in (0, 100]",
                        text.substr(0, text.size() - 1)));
      r.percent = p;
    } else {
      if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) fail();
      r.cycles = std::stoull(text, &pos);
      if (pos != text.size()) fail();
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception&) {
    fail();
  }
  return r;
}

PeriodicFlushArg apply_periodic_flush(const MachineArgs& a, run::SimRunSpec& spec) {
  if (!a.periodic_flush) return {spec.machine.periodic_flush_cycles.value(), std::nullopt};
  PeriodicFlushArg pf = parse_periodic_flush(*a.periodic_flush);
  if (pf.percent) {
    run::SimRunSpec probe = spec;
    probe.machine.periodic_flush_cycles = Cycles{0};
    probe.verify = false;
    probe.drain = false;
    const double run = static_cast<double>(run::simulate(probe).stats.cycles.value());
    pf.cycles = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::llround(run * *pf.percent / 100.0)));
  }
  spec.machine.periodic_flush_cycles = Cycles{pf.cycles};
  return pf;
}

}  // namespace pmlab::cli
