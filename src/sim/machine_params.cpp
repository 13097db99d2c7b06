// The declaration of every machine parameter, and what follows from it: parsing, ranges, settings.
#include "pmlab/sim/machine_params.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/core/suggest.hpp"
#include "pmlab/sim/machine_file.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::sim {
namespace {

[[noreturn]] void bad(const std::string& msg) {
  throw Error(ErrorCode::kInvalidArgument, msg);
}

constexpr double kU32 = 4294967295.0;
constexpr double kU64 = 18446744073709551615.0;
constexpr double kTiB = 1099511627776.0;

// The C++ type of a field and how its value crosses ParamValue.
template <class T>
ParamValue to_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (std::is_same_v<T, Cycles>) {
    return std::uint64_t{v.value()};
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else {
    static_assert(std::is_integral_v<T>);
    return static_cast<std::uint64_t>(v);
  }
}

template <class T>
T from_value(const ParamValue& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return std::get<bool>(v);
  } else if constexpr (std::is_same_v<T, Cycles>) {
    return Cycles{std::get<std::uint64_t>(v)};
  } else if constexpr (std::is_same_v<T, double>) {
    return std::get<double>(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::get<std::string>(v);
  } else {
    return static_cast<T>(std::get<std::uint64_t>(v));
  }
}

template <class T>
constexpr ParamKind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return ParamKind::kBool;
  if constexpr (std::is_same_v<T, double>) return ParamKind::kDouble;
  if constexpr (std::is_same_v<T, std::string>) return ParamKind::kChoice;
  return ParamKind::kInt;
}

template <class T>
constexpr double type_max() {
  if constexpr (std::is_same_v<T, Cycles>) return kU64;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<double>(std::numeric_limits<T>::max());
  return std::numeric_limits<double>::max();
}

// A plain field: `ref` returns a reference to it. The range (when given) is declared here and
// nowhere else; without one the field's C++ type bounds it.
struct Range {
  double min = 0, max = 0;
  bool open_min = false;
};
constexpr Range kNoRange{-1, -1};
// Every latency the simulator adds to a clock is declared with at most 1e6 (cycles, or ns, which
// --freq-ghz <= 100 turns into at most 1e8 cycles), so that a 64-bit clock holds 1.8e11 events
// at the largest latency; an unbounded one (2^64 - 1 cycles in a machine file) would overflow
// it at its first use. A period compared with the clock (--periodic-flush, computed in 128 bits)
// is not a latency and keeps its type's bound.
constexpr Range kLatency{0, 1e6};

// What every declaration has: names, kind, unit, range (without one, `type_max` bounds it), help.
MachineParam declared(std::string_view flag, std::string_view key, ParamKind kind,
                      std::string_view unit, Range r, double type_max, std::string_view help) {
  MachineParam m;
  m.flag = flag;
  m.key = key;
  m.kind = kind;
  m.unit = unit;
  m.help = help;
  m.ranged = r.min >= 0;
  m.min = m.ranged ? r.min : 0;
  m.max = m.ranged ? r.max : type_max;
  m.type_max = type_max;
  m.min_open = r.open_min;
  return m;
}

template <class Ref>
MachineParam field(std::string_view flag, std::string_view key, std::string_view unit, Range r,
                   std::string_view help, Ref ref) {
  using T = std::remove_cvref_t<decltype(ref(std::declval<SimParams&>()))>;
  MachineParam m = declared(flag, key, kind_of<T>(), unit, r, type_max<T>(), help);
  m.get = [ref](const SimParams& p) -> std::optional<ParamValue> {
    return to_value(ref(const_cast<SimParams&>(p)));
  };
  m.set = [ref](SimParams& p, const ParamValue& v) { ref(p) = from_value<T>(v); };
  return m;
}

// A byte count (K/M/G suffixes on the command line).
template <class Ref>
MachineParam size_field(std::string_view flag, std::string_view key, Range r, std::string_view help,
                        Ref ref) {
  MachineParam m = field(flag, key, "bytes", r, help, ref);
  m.kind = ParamKind::kSize;
  return m;
}

// A switch with two spellings on the command line ({false, true}), true/false in a file.
template <class Ref>
MachineParam spelled_bool(std::string_view flag, std::string_view key,
                          std::vector<std::string_view> spellings, std::string_view help, Ref ref) {
  MachineParam m = field(flag, key, "", kNoRange, help, ref);
  m.spellings = std::move(spellings);
  return m;
}

// An enum spelled by its to_string names (from_string throws for others).
template <class Ref,
          class E = std::remove_cvref_t<decltype(std::declval<Ref>()(std::declval<SimParams&>()))>>
MachineParam choice(std::string_view flag, std::string_view key, std::vector<E> values,
                    std::string_view help, Ref ref) {
  MachineParam m = declared(flag, key, ParamKind::kChoice, "", kNoRange, 0, help);
  for (E e : values) m.spellings.push_back(to_string(e));
  m.get = [ref](const SimParams& p) -> std::optional<ParamValue> {
    return std::string(to_string(ref(const_cast<SimParams&>(p))));
  };
  m.set = [ref, values](SimParams& p, const ParamValue& v) {
    for (E e : values)
      if (to_string(e) == std::get<std::string>(v)) ref(p) = e;
  };
  return m;
}

// A value that is not a plain field: `set` changes the fields it stands for (a command-line
// control has no key; its fields keep their own).
MachineParam control(std::string_view flag, std::string_view key, ParamKind kind,
                     std::string_view unit, Range r, std::vector<std::string_view> spellings,
                     std::string_view help,
                     std::function<std::optional<ParamValue>(const SimParams&)> get,
                     std::function<void(SimParams&, const ParamValue&)> set) {
  MachineParam m = declared(flag, key, kind, unit, r, kU64, help);
  m.spellings = std::move(spellings);
  m.get = std::move(get);
  m.set = std::move(set);
  return m;
}

// A private L2 is created by --l2-size (or a machine file's "l2" object): its latency halfway
// between L1's and the LLC's, as no preset has one to copy.
void ensure_l2(SimParams& p) {
  if (p.l2) return;
  const auto lat = (p.l1.hit_latency.value() + p.llc.hit_latency.value() + 1) / 2;
  p.l2 = LevelParams{"L2", 256 * 1024, 8, Cycles{lat}, p.l1.replacement};
  if (p.llc.name == "L2") p.llc.name = "L3";
}

// The fields of the private L2, which exist only when it does.
MachineParam l2_field(MachineParam m) {
  m.get = [get = m.get](const SimParams& p) -> std::optional<ParamValue> {
    if (!p.l2) return std::nullopt;
    return get(p);
  };
  return m;
}

#define PMLAB_REF(expr)        \
  [](SimParams & p) -> auto& { \
    return p.expr;             \
  }

std::vector<MachineParam> declare() {
  std::vector<MachineParam> d;
  const auto add = [&d](MachineParam m) { d.push_back(std::move(m)); };
  // -- Identity and chip --------------------------------------------------------------------
  {
    MachineParam name = field("", "name", "", kNoRange, "The machine's name", PMLAB_REF(name));
    name.kind = ParamKind::kChoice;  // free text: no spellings
    add(std::move(name));
  }
  {
    MachineParam cores =
        field("cores", "cores", "", {1, kMaxCores},
              "Simulated cores (pact17: the shared L2 stays 1 MiB per core)", PMLAB_REF(cores));
    cores.set = [](SimParams& p, const ParamValue& v) {
      p.cores = static_cast<int>(std::get<std::uint64_t>(v));
      p.threads = std::min(p.threads, p.cores);
    };
    add(std::move(cores));
  }
  add(field("", "threads", "", {1, kMaxCores}, "Default logical threads of a run",
            PMLAB_REF(threads)));
  add(field("freq-ghz", "freq_ghz", "GHz", {0, 100, true}, "Core clock", PMLAB_REF(freq_ghz)));
  // -- Caches -------------------------------------------------------------------------------
  add(field("", "l1.name", "", kNoRange, "L1's name in reports", PMLAB_REF(l1.name)));
  add(size_field("l1-size", "l1.size_bytes", {1, kTiB}, "Private L1 size",
                 PMLAB_REF(l1.size_bytes)));
  add(field("l1-ways", "l1.ways", "", {1, 1024}, "L1 associativity", PMLAB_REF(l1.ways)));
  add(field("", "l1.hit_latency", "cycles", kLatency, "L1 load-to-use latency",
            PMLAB_REF(l1.hit_latency)));
  add(choice("", "l1.replacement", {Replacement::kLru, Replacement::kRandom, Replacement::kSrrip},
             "L1 replacement policy", PMLAB_REF(l1.replacement)));
  add(control(
      "l2-size", "l2.size_bytes", ParamKind::kSize, "bytes", {0, kTiB}, {},
      "Adds/resizes a private L2 per core (0 removes it); the LLC is then L3",
      [](const SimParams& p) -> std::optional<ParamValue> {
        if (!p.l2) return std::nullopt;  // no private L2: the file writes "l2": null
        return std::uint64_t{p.l2->size_bytes};
      },
      [](SimParams& p, const ParamValue& v) {
        const auto bytes = std::get<std::uint64_t>(v);
        if (bytes == 0) {
          p.l2.reset();
          if (p.llc.name == "L3") p.llc.name = "L2";
          return;
        }
        ensure_l2(p);
        p.l2->size_bytes = bytes;
      }));
  {
    MachineParam ways = l2_field(field(
        "l2-ways", "l2.ways", "", {1, 1024}, "Private L2 associativity",
        [](SimParams & p) -> auto& { return p.l2->ways; }));
    ways.set = [](SimParams& p, const ParamValue& v) {
      if (!p.l2) bad("--l2-ways needs a private L2: give --l2-size too");
      p.l2->ways = static_cast<std::uint32_t>(std::get<std::uint64_t>(v));
    };
    add(std::move(ways));
  }
  add(l2_field(field(
      "", "l2.name", "", kNoRange, "L2's name in reports",
      [](SimParams & p) -> auto& { return p.l2->name; })));
  add(l2_field(field(
      "", "l2.hit_latency", "cycles", kLatency, "L2 load-to-use latency",
      [](SimParams & p) -> auto& { return p.l2->hit_latency; })));
  add(l2_field(choice(
      "", "l2.replacement", {Replacement::kLru, Replacement::kRandom, Replacement::kSrrip},
      "L2 replacement policy", [](SimParams & p) -> auto& { return p.l2->replacement; })));
  add(field("", "llc.name", "", kNoRange, "The LLC's name in reports", PMLAB_REF(llc.name)));
  add(size_field("llc-size", "llc.size_bytes", {1, kTiB}, "Shared last-level cache size",
                 PMLAB_REF(llc.size_bytes)));
  add(field("llc-ways", "llc.ways", "", {1, 1024}, "LLC associativity", PMLAB_REF(llc.ways)));
  add(field("", "llc.hit_latency", "cycles", kLatency, "LLC load-to-use latency",
            PMLAB_REF(llc.hit_latency)));
  add(choice("", "llc.replacement", {Replacement::kLru, Replacement::kRandom, Replacement::kSrrip},
             "LLC replacement policy", PMLAB_REF(llc.replacement)));
  add(control(
      "replacement", "", ParamKind::kChoice, "", kNoRange, {"lru", "random", "srrip"},
      "Replacement policy of every level",
      [](const SimParams& p) -> std::optional<ParamValue> {
        return std::string(to_string(p.l1.replacement));
      },
      [](SimParams& p, const ParamValue& v) {
        const Replacement r = replacement_from_string(std::get<std::string>(v));
        p.l1.replacement = p.llc.replacement = r;
        if (p.l2) p.l2->replacement = r;
      }));
  add(spelled_bool("llc-inclusion", "inclusive_llc", {"non-inclusive", "inclusive"},
                   "inclusive (presets) or non-inclusive (1 core only, cachegrind's)",
                   PMLAB_REF(inclusive_llc)));
  add(field("", "same_line_filter", "", kNoRange,
            "The per-core same-line filter (exact; tests turn it off)",
            PMLAB_REF(same_line_filter)));
  // -- NVM and its controller ---------------------------------------------------------------
  add(field("nvm-read-ns", "nvm.read_ns", "ns", {0, 1e6, true}, "NVM read latency",
            PMLAB_REF(nvm.read_ns)));
  add(field("nvm-write-ns", "nvm.write_ns", "ns", {0, 1e6, true}, "NVM write latency",
            PMLAB_REF(nvm.write_ns)));
  {
    MachineParam wq = field("wq-entries", "nvm.write_queue_entries", "entries", {1, 4096},
                            "Memory-controller write-queue entries (the row buffer's queue too)",
                            PMLAB_REF(nvm.write_queue_entries));
    wq.set = [](SimParams& p, const ParamValue& v) {
      p.nvm.write_queue_entries = p.nvm.row_buffer.wq_entries =
          static_cast<std::uint32_t>(std::get<std::uint64_t>(v));
    };
    add(std::move(wq));
  }
  add(field("write-units", "nvm.write_units", "", {1, 4096}, "Concurrent NVM writes (banks)",
            PMLAB_REF(nvm.write_units)));
  add(choice("write-queue", "nvm.write_queue",
             {WriteQueueModel::kPerCore, WriteQueueModel::kShared, WriteQueueModel::kBanks},
             "How the controller times NVM: per-core (default: each core running a loop owns "
             "1/cores of the write queue's entries and units), shared (one queue booked by "
             "time, so one core's burst of flushes may use every unit while the others "
             "compute), or banks (with --row-buffer on: reads and writes timed by row hit or "
             "miss on the row-buffer model's banks and data bus, --t-rcd/--t-cl/--t-wr/--t-rp/"
             "--t-burst; writes drain between --wq-high and --wq-low)",
             PMLAB_REF(nvm.write_queue)));
  add(spelled_bool("row-buffer", "nvm.row_buffer.enabled", {"off", "on"},
                   "NVM row-buffer model (thesis Ch. 4 row writes): on or off (thesis-ch4: on)",
                   PMLAB_REF(nvm.row_buffer.enabled)));
  add(field("", "nvm.row_buffer.channels", "", {1, 1024}, "Row buffer: channels (power of two)",
            PMLAB_REF(nvm.row_buffer.channels)));
  add(field("ranks", "nvm.row_buffer.ranks", "", {1, 1024},
            "Row buffer: ranks per channel (power of two)", PMLAB_REF(nvm.row_buffer.ranks)));
  add(field("banks", "nvm.row_buffer.banks", "", {1, 1024},
            "Row buffer: banks per rank (power of two)", PMLAB_REF(nvm.row_buffer.banks)));
  add(size_field("row-bytes", "nvm.row_buffer.row_bytes", {64, 1 << 20},
                 "Row-buffer size (power of two)", PMLAB_REF(nvm.row_buffer.row_bytes)));
  add(field("rq-entries", "nvm.row_buffer.rq_entries", "entries", {1, kU32},
            "Row buffer: read-queue entries", PMLAB_REF(nvm.row_buffer.rq_entries)));
  add(field("", "nvm.row_buffer.wq_entries", "entries", {1, 4096},
            "Row buffer: write-queue entries (--wq-entries sets it)",
            PMLAB_REF(nvm.row_buffer.wq_entries)));
  add(field("wq-high", "nvm.row_buffer.wq_high", "fraction", {0, 1, true},
            "Row buffer: write-queue fill fraction that starts a drain",
            PMLAB_REF(nvm.row_buffer.wq_high)));
  add(field("wq-low", "nvm.row_buffer.wq_low", "fraction", {0, 1, true},
            "Row buffer: fill fraction a drain goes down to", PMLAB_REF(nvm.row_buffer.wq_low)));
  add(field("min-writes-per-drain", "nvm.row_buffer.min_writes_per_drain", "", {1, kU32},
            "Row buffer: writes a drain does at least",
            PMLAB_REF(nvm.row_buffer.min_writes_per_drain)));
  add(field("", "nvm.row_buffer.merge", "", kNoRange,
            "Row buffer: a write to a queued line updates that entry",
            PMLAB_REF(nvm.row_buffer.merge)));
  add(field("t-rcd", "nvm.row_buffer.t_rcd_ns", "ns", {0, 1e6},
            "Timed banks (--write-queue banks): row activation to column access",
            PMLAB_REF(nvm.row_buffer.t_rcd_ns)));
  add(field("t-cl", "nvm.row_buffer.t_cl_ns", "ns", {0, 1e6},
            "Timed banks: column access of a read", PMLAB_REF(nvm.row_buffer.t_cl_ns)));
  add(field("t-wr", "nvm.row_buffer.t_wr_ns", "ns", {0, 1e6},
            "Timed banks: write recovery, paid when a row holding written data closes",
            PMLAB_REF(nvm.row_buffer.t_wr_ns)));
  add(field("t-rp", "nvm.row_buffer.t_rp_ns", "ns", {0, 1e6},
            "Timed banks: precharge before another row opens", PMLAB_REF(nvm.row_buffer.t_rp_ns)));
  add(field("t-burst", "nvm.row_buffer.t_burst_ns", "ns", {0, 1e6, true},
            "Timed banks: one 64-byte line on the data bus", PMLAB_REF(nvm.row_buffer.t_burst_ns)));
  // -- Flushes, fences, cleaning, non-temporal stores -----------------------------------------
  add(field("", "flush_issue_latency", "cycles", kLatency,
            "Cycles a clflush/clflushopt/clwb occupies the issuing core",
            PMLAB_REF(flush_issue_latency)));
  add(field("", "fence_latency", "cycles", kLatency,
            "Cycles an sfence costs when nothing is outstanding", PMLAB_REF(fence_latency)));
  add(field("", "seed", "", kNoRange, "Seeds the random replacement policy", PMLAB_REF(seed)));
  add(field("periodic-flush", "periodic_flush_cycles", "cycles", kNoRange,
            "Periodic cache cleaning (LP paper §III-E): every dirty line is written back, and "
            "kept clean, once per CYCLES, one LLC set at a time; 'P%' = P percent of the run's "
            "cycles (measured by a first run without it); 0 = off",
            PMLAB_REF(periodic_flush_cycles)));
  add(field("", "nt_stores", "", kNoRange,
            "Non-temporal stores bypass the caches through write-combining buffers",
            PMLAB_REF(nt_stores)));
  add(field("", "wc_buffers", "", {1, 64}, "Write-combining buffers per core",
            PMLAB_REF(wc_buffers)));
  add(control(
      "wc-buffers", "", ParamKind::kInt, "", {0, 64}, {},
      "Model non-temporal stores with this many write-combining buffers per core (no fill, no "
      "RFO, lost at a power failure unless drained); 0 or absent: stores + flushes",
      [](const SimParams& p) -> std::optional<ParamValue> {
        return std::uint64_t{p.nt_stores ? p.wc_buffers : 0};
      },
      [](SimParams& p, const ParamValue& v) {
        const auto n = static_cast<std::uint32_t>(std::get<std::uint64_t>(v));
        p.nt_stores = n > 0;
        if (n > 0) p.wc_buffers = n;
      }));
  // -- Core timing ----------------------------------------------------------------------------
  add(choice("core-model", "core.model", {CoreModel::kMemory, CoreModel::kInterval},
             "Core timing: memory (default: every access adds its latency, no overlap) or "
             "interval (issue width, ROB and MSHRs from the preset; misses overlap, flushes do "
             "not stall until sfence)",
             PMLAB_REF(core.model)));
  add(field("issue-width", "core.issue_width", "", {1, 64},
            "Interval model: instructions dispatched per cycle", PMLAB_REF(core.issue_width)));
  add(field("rob", "core.rob_entries", "entries", {1, 4096},
            "Interval model: reorder-buffer entries", PMLAB_REF(core.rob_entries)));
  add(field("mshrs", "core.mshrs", "", {1, 256},
            "Interval model: outstanding misses and flushes per core", PMLAB_REF(core.mshrs)));
  add(field("insts-per-access", "core.insts_per_access", "", {1, 1024},
            "Interval model: instructions charged per load/store (itself + its non-memory work)",
            PMLAB_REF(core.insts_per_access)));
  add(spelled_bool("flush-after-fill", "core.flush_after_fill", {"off", "on"},
                   "Interval model: on = a flush of a line whose store miss is still outstanding "
                   "waits for that fill (a clwb cannot write back a line the core does not own "
                   "yet); off (default) = the store's line counts as owned at once",
                   PMLAB_REF(core.flush_after_fill)));
  add(spelled_bool("store-queue", "core.store_queue", {"off", "on"},
                   "Interval model: store misses and flushes hold a store-queue entry until "
                   "acknowledged, sfence waits for the queue to drain (docs/simulator.md)",
                   PMLAB_REF(core.store_queue)));
  add(field("sq-entries", "core.sq_entries", "entries", {1, 1024},
            "Store-queue entries (LP Table II: 48; thesis Table 3.1: 32)",
            PMLAB_REF(core.sq_entries)));
  add(spelled_bool("sq-tso", "core.sq_tso", {"off", "on"},
                   "Store queue: on = entries complete one at a time in program order (x86 TSO, "
                   "gem5's O3); off = they overlap",
                   PMLAB_REF(core.sq_tso)));
  add(field("interleave-quantum", "interleave_quantum", "", kNoRange,
            "Thread interleaving in parallel loops: 0 = one iteration per thread per turn "
            "(default), Q = Q memory operations per thread per turn",
            PMLAB_REF(interleave_quantum)));
  // -- Seed 002's helper core -----------------------------------------------------------------
  add(choice("whole-cache-flush", "whole_cache_flush",
             {WholeCacheFlush::kAuto, WholeCacheFlush::kNever, WholeCacheFlush::kAlways},
             "Seed 002 helper core (scheme ipv): write a flush_async range back with WBINVD "
             "(always), per line (never), or by the paper's rule, WBINVD once the range is >= "
             "10x the LLC (auto, default); simulator only",
             PMLAB_REF(whole_cache_flush)));
  add(field("wbinvd-cycles", "wbinvd_cycles_per_line", "cycles", {0, 1e6},
            "Cycles WBINVD spends per LLC line it walks (default 1, an assumption)",
            PMLAB_REF(wbinvd_cycles_per_line)));
  // -- Seed 002's DRAM cache in front of NVM (src/sim/dram_cache.hpp) --------------------------
  add(spelled_bool("dram-cache", "dram_cache.enabled", {"off", "on"},
                   "Seed 002 §3's DRAM cache in front of NVM (software-managed, whole objects: "
                   "each kernel's output, ipv's second version): an LLC miss to it costs "
                   "--dram-cache-latency, its write-backs are not durable until the scheme's "
                   "dram_cache_flush (ipv, cp rows); off (default) or on",
                   PMLAB_REF(dram_cache.enabled)));
  add(size_field("dram-cache-size", "dram_cache.size_bytes", {64, kTiB},
                 "DRAM cache capacity; an object that does not fit whole stays in NVM (seed 002 "
                 "§3: 256 MB)",
                 PMLAB_REF(dram_cache.size_bytes)));
  add(field("dram-cache-latency", "dram_cache.latency_cycles", "cycles", kLatency,
            "DRAM cache: an LLC miss to a resident line, after the LLC lookup (pmlab's choice: "
            "one DRAM access as haswell-ep's --dir-lookup, 90 ns at 2.4 GHz = 216)",
            PMLAB_REF(dram_cache.latency_cycles)));
  add(field("dram-cache-flush-cycles-per-line", "dram_cache.flush_cycles_per_line", "cycles",
            {0, 1e6},
            "DRAM cache: cycles per dirty line written to NVM by dram_cache_flush (NVM at 1/8 of "
            "DRAM bandwidth, seed 002 §3; DRAM 59 GB/s, E5-2630 v3 4 x DDR4-1866, pmlab's "
            "choice: 7.4 GB/s = 20.8 cycles per line at 2.4 GHz)",
            PMLAB_REF(dram_cache.flush_cycles_per_line)));
  // -- Thesis Ch. 5: flush round trip and PreFlush ---------------------------------------------
  add(field("flush-mc-hop", "flush_mc_hop", "cycles", {0, 1e6},
            "Flush round trip (thesis §2.3.2): 0 = first-order (done at the LLC or when the "
            "controller accepts the line); C = every flush goes to the directory and back, a "
            "dirty one also C cycles each way to the controller",
            PMLAB_REF(flush_mc_hop)));
  add(spelled_bool("home-agent", "home_agent", {"off", "on"},
                   "Flush latency by line state (seed 002 Table 1): on = a flush of a clean line "
                   "adds --remote-snoop, of an uncached line --dir-lookup (a directory in DRAM, "
                   "Haswell-EP); off = the directory answers at once (gem5 Ruby)",
                   PMLAB_REF(home_agent)));
  add(field("dir-lookup", "dir_lookup_cycles", "cycles", {0, 1e6},
            "Home agent: a directory lookup in memory, paid by a flush of an uncached line",
            PMLAB_REF(dir_lookup_cycles)));
  add(field("remote-snoop", "remote_snoop_cycles", "cycles", {0, 1e6},
            "Home agent: a snoop of the other socket, paid by a flush of a clean line",
            PMLAB_REF(remote_snoop_cycles)));
  add(spelled_bool("preflush", "preflush.enabled", {"off", "on"},
                   "PreFlush flush predictor (thesis Ch. 5): on or off",
                   PMLAB_REF(preflush.enabled)));
  add(field("preflush-signatures", "preflush.signatures", "entries", {1, 65536},
            "PreFlush: Signatures entries", PMLAB_REF(preflush.signatures)));
  add(field("preflush-flushed-tags", "preflush.flushed_tags", "entries", {1, 65536},
            "PreFlush: FlushedTags entries", PMLAB_REF(preflush.flushed_tags)));
  add(field("preflush-sample", "preflush.sample_every", "", {1, kU32},
            "PreFlush: LastStore kept on every Nth L1 set", PMLAB_REF(preflush.sample_every)));
  add(field("preflush-dir-entries", "preflush.dir_entries", "entries", {1, 65536},
            "PreFlush: directory PreFlushers entries per core (FIFO; an evicted entry NACKs its "
            "PreFlushes)",
            PMLAB_REF(preflush.dir_entries)));
  add(field("", "preflush.own_store_check", "", kNoRange,
            "PreFlush: the own-store misprediction check (false: a negative control)",
            PMLAB_REF(preflush.own_store_check)));
  add(field("", "preflush.nack", "", kNoRange,
            "PreFlush: the directory's NACK on another core's store (false: a negative control)",
            PMLAB_REF(preflush.nack)));
  add(spelled_bool("preflush-loop", "preflush.line_change", {"off", "line-change"},
                   "PreFlush loop code: off (the thesis' design, oscillates on loops, §5.3.8) or "
                   "line-change (pmlab's extension: a PC moving to a new line PreFlushes its "
                   "previous one)",
                   PMLAB_REF(preflush.line_change)));
  add(spelled_bool("preflush-design", "preflush.trace", {"optimised", "trace"},
                   "PreFlush design: optimised (LastStore on sampled sets, thesis §5.3.4-5, "
                   "default) or trace (the baseline: an XOR trace of store PCs on every L1 line, "
                   "§5.3.3)",
                   PMLAB_REF(preflush.trace)));
  add(spelled_bool("preflush-marks", "preflush.l1_marks", {"table", "l1"},
                   "PreFlush: where PreFlushed lines are remembered: table (the thesis' "
                   "FlushedTags and the directory's PreFlushers, default) or l1 (pmlab's: a mark "
                   "on the L1 line, NACKed by coherence invalidation, lost with the line)",
                   PMLAB_REF(preflush.l1_marks)));
  add(control(
      "preflush-mutant", "", ParamKind::kChoice, "", kNoRange, {"no-own-store", "no-nack"},
      "Negative control: no-own-store (skip the own-store misprediction check) or no-nack "
      "(skip the directory's NACK); transparency then fails",
      [](const SimParams&) -> std::optional<ParamValue> { return std::nullopt; },
      [](SimParams& p, const ParamValue& v) {
        if (!p.preflush.enabled) bad("--preflush-mutant needs --preflush on");
        p.preflush.own_store_check = std::get<std::string>(v) != "no-own-store";
        p.preflush.nack = std::get<std::string>(v) != "no-nack";
      }));
  // -- Stream prefetcher (issue 53; gem5 RubyPrefetcher.py defaults, pmlab's choice) ----------
  add(choice("prefetch", "prefetch.model", {PrefetchModel::kOff, PrefetchModel::kStream},
             "L1D prefetcher: off (default, every preset: the papers' gem5 ran with "
             "enable_prefetch False) or stream (gem5's RubyPrefetcher: a stream per page after "
             "--prefetch-train-misses same-stride misses, prefetches fill L1 off the critical "
             "path; docs/simulator.md \"Stream prefetcher\")",
             PMLAB_REF(prefetch.model)));
  add(field("prefetch-streams", "prefetch.streams", "", {1, 64},
            "Stream prefetcher: streams tracked per core, LRU replacement (gem5 num_streams 4: "
            "pmlab's choice)",
            PMLAB_REF(prefetch.streams)));
  add(field("prefetch-train-misses", "prefetch.train_misses", "", {1, 64},
            "Stream prefetcher: same-stride misses a filter entry counts before a stream starts "
            "(gem5 train_misses 4: the 5th miss of a unit-stride run starts it; pmlab's choice)",
            PMLAB_REF(prefetch.train_misses)));
  add(field("prefetch-startup", "prefetch.startup", "", {1, 16},
            "Stream prefetcher: prefetches a new stream issues (its degree; then one more per "
            "prefetched line used, so this is also its distance; gem5 num_startup_pfs 1: "
            "pmlab's choice)",
            PMLAB_REF(prefetch.startup)));
  add(field("", "prefetch.unit_filter", "entries", {1, 64},
            "Stream prefetcher: +1 and -1 stride filter entries each (gem5 unit_filter 8)",
            PMLAB_REF(prefetch.unit_filter)));
  add(field("", "prefetch.nonunit_filter", "entries", {1, 64},
            "Stream prefetcher: per-page stride filter entries (gem5 nonunit_filter 8)",
            PMLAB_REF(prefetch.nonunit_filter)));
  add(size_field("", "prefetch.page_bytes", {64, 1 << 30},
                 "Stream prefetcher: page that training and streams stay in (power of two; gem5 "
                 "4 KiB)",
                 PMLAB_REF(prefetch.page_bytes)));
  add(field("", "prefetch.cross_page", "", kNoRange,
            "Stream prefetcher: streams may cross a page (gem5 cross_page false; true only as a "
            "negative control)",
            PMLAB_REF(prefetch.cross_page)));
  // -- Seed 004: persist barriers -------------------------------------------------------------
  add(choice("barrier", "persistency.barrier",
             {Barrier::kNone, Barrier::kSoftware, Barrier::kLb, Barrier::kLbIdt, Barrier::kLbPf,
              Barrier::kLbPlusPlus},
             "Persist barriers of the epoch-persistency workloads (seed 004: hash, queue, rbtree, "
             "sdg, sps): sw (default: the code writes the epoch's lines back and fences), none "
             "(no ordering: a negative control), lb (lazy barrier, BPFS), lb-idt (+ inter-thread "
             "dependence tracking), lb-pf (+ proactive flush), lb++ (both)",
             PMLAB_REF(persistency.barrier)));
  add(field("", "persistency.max_inflight", "epochs", {1, 64},
            "Unpersisted epochs per core (seed 004 §4.3: 8)", PMLAB_REF(persistency.max_inflight)));
  add(field("", "persistency.idt_regs", "", {1, 64},
            "IDT (dependence, inform) register pairs per in-flight epoch",
            PMLAB_REF(persistency.idt_regs)));
  add(field("", "persistency.invalidating_epoch_flush", "", kNoRange,
            "Epoch flushes invalidate the line (clflush-like) instead of keeping it clean",
            PMLAB_REF(persistency.invalidating_epoch_flush)));
  add(field("", "persistency.epoch_ack", "cycles", {0, 1e6},
            "BankAck + PersistCMP handshake after an epoch's last write",
            PMLAB_REF(persistency.epoch_ack)));
  add(field("", "persistency.pf_instant", "", kNoRange,
            "Proactive flushes start at the barrier, however busy the arbiter (an upper bound)",
            PMLAB_REF(persistency.pf_instant)));
  {
    MachineParam bsp = field("bsp-epoch", "persistency.bsp_epoch_stores", "stores", {0, 1e8},
                             "Buffered strict persistency, bulk mode (seed 004 Figs. 13-14; "
                             "needs --barrier lb*): the hardware ends each core's epoch every N "
                             "stores (e.g. 300, 1000, 10000); its log is on unless --bsp-log off",
                             PMLAB_REF(persistency.bsp_epoch_stores));
    bsp.set = [](SimParams& p, const ParamValue& v) {
      p.persistency.bsp_epoch_stores = std::get<std::uint64_t>(v);
      p.persistency.bsp_log = p.persistency.bsp_epoch_stores != 0;
    };
    add(std::move(bsp));
  }
  add(spelled_bool("bsp-log", "persistency.bsp_log", {"off", "on"},
                   "BSP bulk mode's hardware log: one NVM log write per line first stored to in "
                   "an epoch (on, default with --bsp-epoch) or none (off: Fig. 14's NOLOG)",
                   PMLAB_REF(persistency.bsp_log)));
  add(field("bsp-write-through", "persistency.bsp_write_through", "", kNoRange,
            "Naive write-through BSP (needs --barrier lb*): every store to a persistent line goes "
            "to NVM at once and the core waits for it",
            PMLAB_REF(persistency.bsp_write_through)));
  add(field("check-order", "persistency.check_order", "", kNoRange,
            "Check every NVM write of a persistent line against program epoch order (the "
            "persist-order oracle, docs/simulator.md); a violation fails the run with exit 1",
            PMLAB_REF(persistency.check_order)));
  add(field("timed-locks", "persistency.timed_locks", "", kNoRange,
            "BEP benchmarks: a critical section waits for its lock's previous holder to release "
            "it (plus one LLC hit), so threads under one lock serialise in time (off: atomic in "
            "simulation order only; docs/bep.md)",
            PMLAB_REF(persistency.timed_locks)));
  return d;
}

#undef PMLAB_REF

std::string number_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

std::string bound_text(const MachineParam& m, double v) {
  if (m.kind == ParamKind::kDouble) return number_text(v);
  // kU64 rounds up to 2^64 as a double, one past what uint64_t holds: converting it is undefined.
  if (v >= kU64) return fmt::format("{}", std::numeric_limits<std::uint64_t>::max());
  return fmt::format("{}", static_cast<std::uint64_t>(v));
}

// "[1, 64]", "(0, 100]": the accepted range as messages and help spell it (unranged: the type's).
std::string range_text(const MachineParam& m) {
  return fmt::format("{}{}, {}]", m.ranged && m.min_open ? "(" : "[",
                     bound_text(m, m.ranged ? m.min : 0), bound_text(m, m.max));
}

bool in_range(const MachineParam& m, double x) {
  if (std::isnan(x) || x > m.max) return false;
  return !m.ranged || (m.min_open ? x > m.min : x >= m.min);
}

}  // namespace

std::string MachineParam::display_name() const {
  return flag.empty() ? std::string(key) : "--" + std::string(flag);
}

std::string MachineParam::full_help() const {
  std::string h(help);
  const std::string u = unit.empty() || unit == "fraction" ? "" : std::string(unit) + " ";
  if (kind == ParamKind::kSize)
    h += "; bytes, or with a K/M/G suffix";
  else if (ranged && (kind == ParamKind::kInt || kind == ParamKind::kDouble))
    h += fmt::format("; {}in {}", u, range_text(*this));
  else if (!u.empty())
    h += "; " + std::string(unit);
  return h;
}

std::string MachineParam::to_text(const ParamValue& v) const {
  return std::visit(
      [this](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (spellings.size() == 2) return std::string(spellings[x ? 1 : 0]);
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          return number_text(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else {
          return std::to_string(x);
        }
      },
      v);
}

void MachineParam::check_range(const ParamValue& v, std::string_view who) const {
  if (!ranged) return;
  double x = 0;
  if (const auto* u = std::get_if<std::uint64_t>(&v))
    x = static_cast<double>(*u);
  else if (const auto* f = std::get_if<double>(&v))
    x = *f;
  else
    return;
  if (!in_range(*this, x))
    bad(fmt::format("{} must be in {} (got {})", who, range_text(*this),
                    kind == ParamKind::kDouble ? number_text(x) : to_text(v)));
}

ParamValue MachineParam::parse_text(const std::string& text) const {
  // The flag, and the machine-file key it sets: "--mshrs (core.mshrs)".
  const std::string who = on_command_line() && in_machine_file()
                              ? fmt::format("{} ({})", display_name(), key)
                              : display_name();
  ParamValue v;
  switch (kind) {
    case ParamKind::kBool: {
      if (spellings.size() == 2) {
        if (text == spellings[0]) return false;
        if (text == spellings[1]) return true;
        bad(fmt::format("{}: '{}' is not one of {}, {}", who, text, spellings[0], spellings[1]));
      }
      if (text == "true" || text == "on" || text == "1") return true;
      if (text == "false" || text == "off" || text == "0") return false;
      bad(fmt::format("{}: '{}' is not true/on or false/off", who, text));
    }
    case ParamKind::kChoice: {
      if (spellings.empty()) return text;
      for (auto s : spellings)
        if (text == s) return text;
      std::string all;
      for (auto s : spellings) all += (all.empty() ? "" : ", ") + std::string(s);
      bad(fmt::format("{}: '{}' is not one of {}", who, text, all));
    }
    case ParamKind::kDouble: {
      std::size_t pos = 0;
      double x = 0;
      try {
        x = std::stod(text, &pos);
      } catch (const std::exception&) {
        pos = 0;
      }
      if (pos != text.size() || text.empty() || !std::isfinite(x))
        bad(fmt::format("{}: '{}' is not a number", who, text));
      v = x;
      break;
    }
    case ParamKind::kInt:
    case ParamKind::kSize: {
      // Digits only: stoull would take " 5" and wrap "-1" around to 2^64 - 1.
      if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
        bad(fmt::format("{}: '{}' is out of range: a non-negative integer in {} expected", who,
                        text, range_text(*this)));
      std::size_t pos = 0;
      unsigned long long x = 0;
      try {
        x = std::stoull(text, &pos, 10);
      } catch (const std::exception&) {
        bad(fmt::format("{}: {} is out of range {}", who, text, range_text(*this)));
      }
      std::string suffix = text.substr(pos);
      for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      std::uint64_t mult = 1;
      if (kind == ParamKind::kSize && (suffix == "K" || suffix == "KB" || suffix == "KIB"))
        mult = 1ull << 10;
      else if (kind == ParamKind::kSize && (suffix == "M" || suffix == "MB" || suffix == "MIB"))
        mult = 1ull << 20;
      else if (kind == ParamKind::kSize && (suffix == "G" || suffix == "GB" || suffix == "GIB"))
        mult = 1ull << 30;
      else if (!(suffix.empty() || (kind == ParamKind::kSize && suffix == "B")))
        bad(kind == ParamKind::kSize
                ? fmt::format("{}: '{}' is not a size (e.g. 65536, 64K, 512KiB, 8M; suffixes K, "
                              "M, G = 2^10, 2^20, 2^30 bytes)",
                              who, text)
                : fmt::format("{}: '{}' is not an integer", who, text));
      if (x > std::numeric_limits<std::uint64_t>::max() / mult)
        bad(fmt::format("{}: '{}' is too large, out of range {}", who, text, range_text(*this)));
      v = std::uint64_t{x * mult};
      break;
    }
  }
  const double x = std::holds_alternative<double>(v)
                       ? std::get<double>(v)
                       : static_cast<double>(std::get<std::uint64_t>(v));
  if (!in_range(*this, x))
    bad(fmt::format("{}: {} is out of range {}", who, text, range_text(*this)));
  return v;
}

std::uint64_t parse_bytes(std::string_view who, const std::string& text) {
  MachineParam m;
  m.key = who;  // display_name() of a parameter without a flag is its key
  m.kind = ParamKind::kSize;
  m.max = m.type_max = kTiB;
  return std::get<std::uint64_t>(m.parse_text(text));
}

const std::vector<MachineParam>& machine_params() {
  static const std::vector<MachineParam> params = declare();
  return params;
}

const MachineParam* find_machine_param(std::string_view flag_or_key) {
  for (const auto& m : machine_params())
    if ((!m.flag.empty() && m.flag == flag_or_key) || (!m.key.empty() && m.key == flag_or_key))
      return &m;
  return nullptr;
}

void check_declared_ranges(const SimParams& p) {
  for (const auto& m : machine_params()) {
    if (!m.ranged || !m.in_machine_file()) continue;
    if (const auto v = m.get(p)) m.check_range(*v, m.key);
  }
}

MachineSettings::MachineSettings(std::initializer_list<std::pair<std::string, std::string>> items) {
  for (const auto& [k, v] : items) set(k, v);
}

MachineSettings& MachineSettings::set(std::string_view flag, std::string text) {
  const MachineParam* m = find_machine_param(flag);
  if (m == nullptr || !m->on_command_line() || m->flag != flag) {
    std::vector<std::string_view> flags;
    for (const auto& p : machine_params())
      if (p.on_command_line()) flags.push_back(p.flag);
    bad(fmt::format("unknown machine setting '{}'{}", flag, did_you_mean(flag, flags)));
  }
  for (auto& [k, v] : items_)
    if (k == flag) {
      v = std::move(text);
      return *this;
    }
  items_.emplace_back(std::string(flag), std::move(text));
  return *this;
}

MachineSettings& MachineSettings::set(std::string_view flag, double v) {
  return set(flag, number_text(v));
}

MachineSettings& MachineSettings::set(std::string_view flag, bool v) {
  const MachineParam* m = find_machine_param(flag);
  if (m != nullptr && m->spellings.size() == 2)
    return set(flag, std::string(m->spellings[v ? 1 : 0]));
  return set(flag, std::string(v ? "true" : "false"));
}

void MachineSettings::erase(std::string_view flag) {
  std::erase_if(items_, [&](const auto& kv) { return kv.first == flag; });
}

const std::string* MachineSettings::find(std::string_view flag) const {
  for (const auto& [k, v] : items_)
    if (k == flag) return &v;
  return nullptr;
}

void MachineSettings::apply_to(SimParams& p) const {
  for (const auto& m : machine_params()) {
    if (!m.on_command_line()) continue;
    if (const std::string* text = find(m.flag)) m.set(p, m.parse_text(*text));
  }
  p.validate();
}

std::string MachineSettings::flags() const {
  std::string s;
  for (const auto& m : machine_params()) {
    if (!m.on_command_line()) continue;
    const std::string* text = find(m.flag);
    if (text == nullptr) continue;
    if (m.kind == ParamKind::kBool && m.spellings.empty()) {
      if (m.parse_text(*text) == ParamValue{true}) s += " --" + std::string(m.flag);
    } else {
      s += fmt::format(" --{} {}", m.flag, *text);
    }
  }
  return s;
}

bool is_machine_file_path(std::string_view config) {
  return config.find('/') != std::string_view::npos ||
         (config.size() > 5 && config.ends_with(".json"));
}

SimParams machine_from(SimParams base, const MachineSettings& s) {
  s.apply_to(base);
  return base;
}

SimParams machine_from(std::string_view config, const MachineSettings& s) {
  if (is_machine_file_path(config)) return machine_from(load_machine_file(std::string(config)), s);
  // pact17's shared L2 is "1MB tile/core": it scales with the core count.
  const std::string* cores = s.find("cores");
  if (config == "pact17" && cores != nullptr) {
    const auto n = std::get<std::uint64_t>(find_machine_param("cores")->parse_text(*cores));
    return machine_from(pact17(static_cast<int>(n)), s);
  }
  return machine_from(preset(config), s);
}

}  // namespace pmlab::sim
