// Simulator parameters: plain structs with defaults and validate(), kept apart from the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/persist/barrier.hpp"
#include "pmlab/sim/row_buffer.hpp"

namespace pmlab::sim {

enum class Replacement : std::uint8_t { kLru, kRandom, kSrrip };

[[nodiscard]] std::string_view to_string(Replacement r);
[[nodiscard]] Replacement replacement_from_string(std::string_view s);  // throws pmlab::Error

// One cache level. Lines are always kCacheLineBytes (64) bytes.
struct LevelParams {
  std::string name = "L1";
  std::uint64_t size_bytes = 64 * 1024;
  std::uint32_t ways = 8;
  // Load-to-use latency of an access served by this level (not added to the levels above).
  Cycles hit_latency{2};
  Replacement replacement = Replacement::kLru;

  [[nodiscard]] std::uint64_t sets() const {
    return size_bytes / (std::uint64_t{ways} * kCacheLineBytes);
  }
  void validate() const;  // throws pmlab::Error(kInvalidArgument)
};

// The NVM main memory behind an ADR memory controller.
// How the memory controller's write queue is split between the cores (docs/simulator.md, "Write
// queue").
//  kPerCore: each core running a parallel loop owns 1/active-cores of the entries and write
//    units, a FIFO in its own clock (write_queue.hpp); the default, which the golden figures
//    record.
//  kShared: one queue for the machine, booked by time (shared_write_queue.hpp), so a core's
//    burst of flushes can use every write unit while the other cores compute.
//  kBanks: the row-buffer model's banks, rows and data bus timed by the device's timings
//    (timed_nvm.hpp): reads cost by row hit or miss, writes drain between the queue's marks.
//    Needs the row-buffer model on; write_ns, read_ns and write_units are then unused.
enum class WriteQueueModel : std::uint8_t { kPerCore, kShared, kBanks };
[[nodiscard]] std::string_view to_string(WriteQueueModel m);
[[nodiscard]] WriteQueueModel write_queue_model_from_string(std::string_view s);  // throws

struct NvmParams {
  double read_ns = 150.0;
  double write_ns = 300.0;
  // Memory-controller write queue; a write is durable once it is accepted here (ADR).
  std::uint32_t write_queue_entries = 64;
  // Writes the NVM performs concurrently (banks); the queue drains at write_units per write_ns.
  std::uint32_t write_units = 16;
  WriteQueueModel write_queue = WriteQueueModel::kPerCore;
  RowBufferParams row_buffer;  // banks and rows behind the queue (off by default; row_buffer.hpp)

  void validate() const;
};

// How a core turns its memory operations into time (docs/simulator.md, "Core timing").
//  kMemory: the first-order model, every access adds its latency to the core's clock (no
//    overlap, compute free); the default, which the golden figures record.
//  kInterval: interval simulation in the spirit of Eyerman & Eeckhout / Sniper. The core
//    dispatches issue_width instructions per cycle; an access is insts_per_access instructions
//    (itself plus the non-memory work charged to it); an L1 hit's latency is hidden by the
//    pipeline; a longer access holds one of `mshrs` miss-status registers until it completes,
//    so independent misses overlap; a load also blocks in-order retirement, so dispatch stops
//    once rob_entries instructions lie behind the oldest incomplete load; clflushopt/clwb hold
//    an MSHR until the controller accepts the line but stall nothing; sfence waits only for
//    this core's outstanding flushes; a full write queue stalls dispatch.
enum class CoreModel : std::uint8_t { kMemory, kInterval };
[[nodiscard]] std::string_view to_string(CoreModel m);
[[nodiscard]] CoreModel core_model_from_string(std::string_view s);  // throws pmlab::Error

struct CoreParams {
  CoreModel model = CoreModel::kMemory;
  std::uint32_t issue_width = 8;    // instructions dispatched per cycle
  std::uint32_t rob_entries = 192;  // reorder buffer
  std::uint32_t mshrs = 16;         // outstanding misses and flushes per core
  // Instructions charged per load or store: the access and the arithmetic, address and loop
  // instructions around it. 3 = tmm's inner loop at -O2 (2 loads, mul, add, 2 index updates,
  // compare-and-branch: 7 instructions per 2 accesses, rounded down).
  std::uint32_t insts_per_access = 3;
  // A flush of a line whose store miss (read for ownership) is still outstanding starts only
  // when that fill completes, as a real clwb/clflushopt cannot write back a line the core does
  // not own yet. Off by default (the recorded interval figures were made without it); matters
  // where a fence follows a store miss closely (a log persisted line by line).
  bool flush_after_fill = false;
  // Store queue (LP paper Table II "LSQ 48"; thesis Table 3.1 "store queue 32"): a store miss
  // and a clflushopt/clwb each hold an entry from dispatch until the memory system acknowledges
  // it (a flush: the controller's acceptance and the ack's trip back), dispatch stalls while all
  // are busy, and sfence waits for every older entry. Under sq_tso the entries complete one at a
  // time in program order (gem5's O3 LSQ on x86: a store is sent only when no older one is in
  // flight). Off by default; L1 store hits are not modelled in it (they would complete in the L1
  // latency). docs/simulator.md "Store queue".
  bool store_queue = false;
  std::uint32_t sq_entries = 48;
  bool sq_tso = true;

  void validate() const;
};

// PreFlush (thesis Ch. 5, src/sim/preflush.hpp): the per-core flush predictor, optimised design
// (LastStore on sampled L1 sets, Signatures, FlushedTags; PreFlushers in the directory). Off by
// default. Table sizes are not in the thesis; the defaults add up to ~3.8 KB per core on a
// 1024-line L1 (storage_bytes).
struct PreflushParams {
  bool enabled = false;
  std::uint32_t signatures = 128;   // fully associative, LRU; 32-bit PC + 2-bit conf + type bit
  std::uint32_t flushed_tags = 64;  // FIFO; 42-bit tag + 32-bit signature + valid
  std::uint32_t sample_every = 2;   // LastStore kept on every Nth L1 set (35 bits per line)
  std::uint32_t dir_entries = 64;   // directory PreFlushers entries per core (FIFO, 42-bit tag +
                                    // core bitmap), modelled and counted in the budget
  // Negative controls only (the transparency proof must catch them): skip the own-store
  // misprediction check, or skip the directory's NACK on another core's store.
  bool own_store_check = true;
  bool nack = true;
  // pmlab's loop-code extension (the thesis' §5.3.8 fix is missing from its text): each
  // signature remembers the last line its PC stored to, and a confident PC moving to another
  // line PreFlushes the previous one, instead of predicting its current store is the last.
  // +42 bits per signature. false = the thesis' design, which oscillates on loop code.
  bool line_change = false;
  // The thesis' baseline design (§5.3.3) instead of the optimised one: a trace (XOR of the
  // store PCs since the last flush, 32 bits + VT) on every L1 line, signatures keyed on traces.
  bool trace = false;
  // pmlab's storage extension (not in the thesis): a PreFlushed line is marked on its own L1
  // line (a bit + the predicting signature's index) instead of in FlushedTags and the
  // directory's PreFlushers table. A region of loop code PreFlushes more lines than a 64-entry
  // FIFO holds until its real flushes come; L1 holds them all. Another core's store NACKs by
  // the invalidation coherence already sends it; an L1 eviction drops the mark (the flush then
  // takes its normal path). A PreFlush keeps the line in L1 (written back, clean) whatever the
  // signature's flush type, so the mark has a line to sit on. flushed_tags and dir_entries are
  // unused.
  bool l1_marks = false;

  // Bytes of predictor state per core for an L1 of `l1_lines` lines in `l1_sets` sets.
  [[nodiscard]] std::uint64_t storage_bytes(std::uint64_t l1_sets, std::uint64_t l1_ways) const;
  void validate() const;
};

// Stream prefetcher on each core's L1D (src/sim/stream_prefetcher.hpp): gem5's RubyPrefetcher
// (src/mem/ruby/structures/RubyPrefetcher.py). Off by default and in every preset: the papers'
// gem5 runs had it off (MESI_Two_Level-L1cache.sm, enable_prefetch "False"); it is a sensitivity
// switch (docs/simulator.md "Stream prefetcher"). Every value is pmlab's choice, gem5's default.
enum class PrefetchModel : std::uint8_t { kOff, kStream };
[[nodiscard]] std::string_view to_string(PrefetchModel m);
[[nodiscard]] PrefetchModel prefetch_model_from_string(std::string_view s);  // throws

struct PrefetchParams {
  PrefetchModel model = PrefetchModel::kOff;
  std::uint32_t streams = 4;         // num_streams: streams tracked, LRU replacement
  std::uint32_t train_misses = 4;    // train_misses: filter hits before a stream is allocated
  std::uint32_t startup = 1;         // num_startup_pfs: prefetches a new stream issues at once
  std::uint32_t unit_filter = 8;     // unit_filter: +1 and -1 stride filter entries (each)
  std::uint32_t nonunit_filter = 8;  // nonunit_filter: per-page stride filter entries
  std::uint64_t page_bytes = 4096;   // streams and training stay within one page
  bool cross_page = false;           // cross_page: gem5's default false; true = a control

  [[nodiscard]] bool on() const { return model != PrefetchModel::kOff; }
  void validate() const;
};

// The persist barrier's modes are a persistency concept (persist/barrier.hpp), which the BEP
// building blocks name too; the simulator models the hardware ones.
using persist::Barrier;
using persist::barrier_from_string;
using persist::to_string;

// Epoch persistency in the cache hierarchy (seed 004; docs/simulator.md "Persist barriers").
// Only the hardware modes (kLb...) change the machine; the others leave every figure as it was.
struct PersistencyParams {
  Barrier barrier = Barrier::kSoftware;
  std::uint32_t max_inflight = 8;  // unpersisted epochs per core (seed §4.3: 8, a 3-bit EpochID)
  std::uint32_t idt_regs = 4;      // (dependence, inform) register pairs per in-flight epoch
  // Epoch flushes invalidate the line (clflush-like) instead of keeping it clean (clwb-like,
  // the seed's choice); §7 compares the two.
  bool invalidating_epoch_flush = false;
  Cycles epoch_ack{60};  // BankAck + PersistCMP handshake after an epoch's last write
  // PF timing: false (default) = a completed epoch's proactive flush starts when the core's
  // arbiter is free (the previous epoch's flush has completed, one epoch at a time, seed §4.1);
  // true = at once at the barrier, however busy the arbiter (an upper bound on PF's benefit).
  bool pf_instant = false;
  // Buffered strict persistency in bulk mode (seed 004 §7.2, Figs. 13-14), hardware barriers
  // only, off (0) by default: the hardware ends each core's epoch after every
  // `bsp_epoch_stores` stores of its dynamic store stream (a barrier the program never wrote).
  std::uint64_t bsp_epoch_stores = 0;
  // BSP's recovery log: one extra NVM write per line first modified in an epoch, issued at that
  // store and ordered before the line's own epoch write (LB++NOLOG of Fig. 14 = off).
  bool bsp_log = false;
  // Naive write-through BSP (§7.2's ~8x baseline): every store to a persistent line is written
  // to NVM at once, in order, the core waiting for each acceptance. Hardware barriers only.
  bool bsp_write_through = false;
  // Run the persist-order oracle (SimBackend::check_order): every NVM write of a persistent
  // line is checked against program epoch order, in every barrier mode. Costs time, not figures.
  bool check_order = false;
  // Critical sections take time (bep::EpochTracked::exclusive): a lock remembers when its last
  // holder released it, and an acquirer's core waits until then plus one LLC hit (the lock line
  // moving between cores). Off (default): a section is only atomic in simulation order, so
  // threads under one global lock run in parallel in time (docs/bep.md "Locks that take time").
  bool timed_locks = false;
  // Negative controls of the epoch engine (tests only; the persist-order oracle must catch each):
  // every switch breaks one rule of docs/simulator.md "Persist barriers" on purpose.
  struct Debug {
    bool no_intra_flush = false;        // an intra-thread conflict just retags the line
    bool no_replacement_order = false;  // an LLC victim is written before its older epochs
    bool ignore_deps = false;           // IDT dependences are recorded but never enforced
    bool no_split = false;              // a conflict on an ongoing epoch does not split it
    bool dep_only_waw = false;          // IDT: a WAW conflict only records a dependence
    bool per_bank_no_arbiter = false;   // Fig. 7a: 2 LLC banks flush their lines independently
    // Not the engine's: a BEP critical section skips reading its previous holder's commit word
    // (bep::EpochTracked::order_critical_sections_after), the bug rbtree had at a 4 KiB LLC.
    bool no_lock_order = false;
  } debug;

  [[nodiscard]] bool hardware() const { return barrier >= Barrier::kLb; }
  [[nodiscard]] bool bsp() const { return bsp_epoch_stores != 0 || bsp_write_through; }
  [[nodiscard]] bool idt() const {
    return barrier == Barrier::kLbIdt || barrier == Barrier::kLbPlusPlus;
  }
  [[nodiscard]] bool pf() const {
    return barrier == Barrier::kLbPf || barrier == Barrier::kLbPlusPlus;
  }
  void validate() const;
};

// Seed 002 §4.2: how the helper core writes a flush_async range back. kAuto applies the paper's
// rule (WBINVD once the range is at least 10 x the LLC's bytes, else a flush per line); kNever
// and kAlways force one way.
// Seed 002 §3's DRAM cache in front of NVM (src/sim/dram_cache.hpp): software-managed, whole
// objects placed (SimBackend::dram_cache_place). An LLC miss to a resident line costs
// `latency_cycles` instead of an NVM read; a write-back of one stays in DRAM, not durable, until
// SimBackend::dram_cache_flush writes it to NVM at `flush_cycles_per_line`. Off by default.
struct DramCacheParams {
  bool enabled = false;
  std::uint64_t size_bytes = 256ull * 1024 * 1024;  // seed 002 §3: 256 MB
  // One DRAM access: haswell-ep's (90 ns at 2.4 GHz = 216 cycles, its --dir-lookup).
  std::uint64_t latency_cycles = 216;
  // NVM at 1/8 of DRAM's bandwidth (seed 002 §3): DRAM 59 GB/s (E5-2630 v3, 4 x DDR4-1866, the
  // vendor's sheet; pmlab's choice) / 8 = 7.4 GB/s = 20.8 cycles per 64-byte line at 2.4 GHz.
  double flush_cycles_per_line = 20.8;
};

enum class WholeCacheFlush : std::uint8_t { kAuto, kNever, kAlways };
[[nodiscard]] std::string_view to_string(WholeCacheFlush w);
[[nodiscard]] WholeCacheFlush whole_cache_flush_from_string(std::string_view s);  // throws

struct SimParams {
  std::string name = "custom";
  int cores = 1;    // simulated cores, each with private L1 (and L2 when l2 is set)
  int threads = 1;  // default logical thread count of a SimBackend built from these params
  double freq_ghz = 2.0;
  LevelParams l1{"L1", 64 * 1024, 8, Cycles{2}, Replacement::kLru};
  std::optional<LevelParams> l2;  // private per-core L2; the LLC is then an L3
  LevelParams llc{"L2", 512 * 1024, 8, Cycles{11}, Replacement::kLru};  // shared by all cores
  NvmParams nvm;
  Cycles flush_issue_latency{1};  // cycles a clflush/clflushopt/clwb occupies the issuing core
  Cycles fence_latency{1};        // cycles an sfence costs when nothing is outstanding
  std::uint64_t seed = 1;         // seeds the random replacement policy
  // Inclusive LLC (gem5 Ruby MESI_Two_Level, the papers' protocol): an LLC eviction
  // back-invalidates private copies. false = cachegrind's policy (no back-invalidation); the
  // LLC then cannot serve as the coherence directory, so it is allowed for 1 core only.
  bool inclusive_llc = true;
  // The per-core "same line as last access" filter; exact, so only tests turn it off.
  bool same_line_filter = true;
  // Hierarchy's lean path for the commonest miss (hierarchy.hpp); exact, so only tests turn it
  // off (not in machine files).
  bool lean_miss_path = true;
  // Machine's inline L1 hit path (and with it the lean path, which relies on its arrays); exact,
  // so only tests turn it off: with the filter also off, every access is modelled eagerly in
  // Hierarchy::access, the reference for lazy dispatch (not in machine files).
  bool inline_l1_hits = true;
  // Periodic cache cleaning (LP §III-E hardware): every dirty line is written back, and kept
  // clean, once per this many cycles, one LLC set at a time (set s at (s+1)·T/sets in each
  // period, like DRAM refresh) so the write-backs are spread out. 0 = off.
  Cycles periodic_flush_cycles{0};
  // Non-temporal stores (src/sim/nt_store.hpp): when on, SimBackend::store_nt bypasses the
  // caches through `wc_buffers` write-combining buffers per core. Off (the default), a
  // checkpoint copy is modelled as stores + a flush per line, as before.
  bool nt_stores = false;
  std::uint32_t wc_buffers = 10;  // ~ Intel's line fill buffers
  CoreParams core;                // kMemory unless asked (CLI --core-model)
  // Thread interleaving in a parallel loop (SimBackend::parallel_for): 0 = one whole iteration
  // per thread per turn; Q > 0 = each thread runs Q loads/stores/flushes/fences per turn, so
  // the threads' iterations progress together. Deterministic either way.
  std::uint64_t interleave_quantum = 0;
  // The flush round trip of the thesis §2.3.2: 0 = the first-order model (a flush completes at
  // the LLC, a dirty one when the controller accepts it). C > 0 = every flush, clean or absent,
  // goes down to the directory and comes back (2 LLC latencies), and a dirty one also travels C
  // cycles each way between the directory and the controller.
  std::uint64_t flush_mc_hop = 0;
  // Flush latency by line state (seed 002 Table 1: dirty < clean < not cached). With a home
  // agent that keeps its directory in memory (Haswell-EP) a flush of a line the LLC does not hold
  // looks the directory up in DRAM (dir_lookup_cycles) and one of a clean line snoops the other
  // socket (remote_snoop_cycles), both on top of the round trip of flush_mc_hop. Off: gem5's
  // Ruby directory (the inclusive LLC) answers at once, as the papers' simulators do.
  bool home_agent = false;
  std::uint64_t dir_lookup_cycles = 0;
  std::uint64_t remote_snoop_cycles = 0;
  PreflushParams preflush;
  PrefetchParams prefetch;        // L1D stream prefetcher (off unless asked)
  PersistencyParams persistency;  // seed 004's persist barriers (software EP unless asked)
  // Seed 002's helper core (SimBackend::helper_flush_async; only schemes with a helper, ipv,
  // reach it): WBINVD or per-line flushes, and WBINVD's price per LLC line it walks (an
  // assumption: the paper gives none).
  WholeCacheFlush whole_cache_flush = WholeCacheFlush::kAuto;
  std::uint64_t wbinvd_cycles_per_line = 1;
  DramCacheParams dram_cache;  // seed 002 §3 (off unless asked: --dram-cache on)

  [[nodiscard]] Cycles nvm_read_cycles() const;
  [[nodiscard]] Cycles nvm_write_cycles() const;
  [[nodiscard]] Cycles nvm_timing_cycles(double ns) const;  // a device timing at the core clock
  [[nodiscard]] int levels() const { return l2 ? 3 : 2; }
  void validate() const;  // throws pmlab::Error(kInvalidArgument) naming the bad field
};

// The machine as JSON: cores, threads, freq_ghz, inclusive_llc, levels (array, top down: name,
// shared, size_bytes, ways, sets, hit_latency, replacement), nvm, flush_issue_latency,
// fence_latency, periodic_flush_cycles, core (model, issue_width, rob_entries, mshrs,
// insts_per_access), interleave_quantum. Include <nlohmann/json.hpp>.
[[nodiscard]] nlohmann::json to_json(const SimParams& p);

// Upper bound from the LLC directory's sharer bit mask.
inline constexpr int kMaxCores = 64;

}  // namespace pmlab::sim
