// The sim backend: real loads/stores on real memory, each reported to the simulated machine.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <source_location>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/sim/crash_image.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/params.hpp"

namespace pmlab::sim {

class PersistOracle;  // src/sim/persist_oracle.hpp
namespace detail {
class HelperCore;  // src/sim/helper_core.hpp
struct HelperRequest;
}  // namespace detail

// Values a kernel may load/store through the simulator (double, uint64_t, ...).
template <class T>
concept SimScalar = std::is_trivially_copyable_v<T> && sizeof(T) <= kCacheLineBytes;
// Whether an access to a T may cross a line boundary. A T whose alignment is its size (double,
// std::uint64_t, ...: then a power of two <= 64, which divides the line) lies inside one line
// whenever it is aligned, as every T object is, so its accesses skip the straddle test: 4
// instructions per access, 7 % of tmm's simulated inner loop (commit 4a14bb5). A type aligned below
// its size (a packed struct) can cross a boundary and keeps the test.
template <class T>
inline constexpr bool kMayStraddle = alignof(T) < sizeof(T);

// A region_end marker: `ops` operations had completed when the region committed, so a crash
// armed at ops (the op before it) or ops + 1 (the first op after it) brackets the commit.
struct CommitPoint {
  mem::RegionId region;
  int thread = 0;
  std::uint64_t ops = 0;
  Cycles clock{0};  // the committing core's clock
};

// A store instruction's "PC": a compile-time id of its call site (file, line, column hashed to
// 32 bits), for the simulator's PreFlush predictor. It is built by a consteval constructor in a
// defaulted argument of SimBackend::store, so each call site passes a constant and costs
// nothing at run time; NativeBackend has no such argument and is unchanged. Stores made in one
// helper (a template copying lines) share its id, as they would share a PC in hardware.
struct StorePc {
  std::uint32_t value = 0;
  consteval explicit StorePc(std::source_location l) {
    std::uint32_t h = 2166136261u;  // FNV-1a
    for (const char* f = l.file_name(); *f != 0; ++f)
      h = (h ^ static_cast<unsigned char>(*f)) * 16777619u;
    h = (h ^ l.line()) * 16777619u;
    value = (h ^ l.column()) * 16777619u;
  }
};

// Called just before op k (see SimBackend::arm_hook); true cuts the power there.
using OpHook = std::function<bool(std::uint64_t op)>;

// Ops are loads, stores, flushes (one per line) and fences, numbered 1, 2, ... in the
// deterministic simulated order. arm_crash(K) makes op K throw PowerFailure before it has
// any effect, so exactly ops 1..K-1 happened. With FlushMode::kNone flush and fence are no-ops
// and not counted.
//
// parallel_for: iterations get OpenMP's static schedule (contiguous chunks, the first n % T
// threads one longer); logical thread t runs on core t % cores. The interleaving is
// round-robin, one iteration per thread per round: thread 0's first iteration, thread 1's
// first, ..., thread 0's second, ... With SimParams::interleave_quantum = Q > 0 each thread
// instead runs as a fiber (its own stack) for Q ops per turn, in the same round-robin order,
// so every thread's iterations progress together; still one deterministic op order, so crash
// points stay exact and replayable. Nested parallel_for runs serially on the calling thread.
class SimBackend {
 public:
  // threads == 0 takes params.threads.
  explicit SimBackend(SimParams params, FlushMode flush = FlushMode::kClwb, int threads = 0);
  ~SimBackend();
  SimBackend(SimBackend&&) noexcept;
  SimBackend& operator=(SimBackend&&) noexcept;
  [[nodiscard]] static SimBackend from_preset(std::string_view name,
                                              FlushMode flush = FlushMode::kClwb, int threads = 0);

  template <SimScalar T>
  [[nodiscard]] T load(const T* p) {
    access<false, kMayStraddle<T>>(p, sizeof(T), [] {});
    T v;
    std::memcpy(&v, p, sizeof(T));  // may straddle lines/misalign (tests do): memcpy is defined
    return v;
  }
  template <SimScalar T>
  void store(T* p, T v, StorePc pc = StorePc(std::source_location::current())) {
    access<true, kMayStraddle<T>>(
        p, sizeof(T), [&] { std::memcpy(p, &v, sizeof(T)); }, pc.value);
  }
  // A non-temporal store (x86 MOVNT*), modelled by SimParams::nt_stores' write-combining
  // buffers; callers use it only when nt_stores() (else stores + flushes, the old model).
  template <SimScalar T>
  void store_nt(T* p, T v) {
    const bool model = count_op();
    std::memcpy(p, &v, sizeof(T));
    if (!model) [[unlikely]]
      return;
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    machine_.store_nt(core(), LineAddr(a / kCacheLineBytes),
                      static_cast<unsigned>(a % kCacheLineBytes), sizeof(T));
  }
  [[nodiscard]] bool nt_stores() const {
    return flush_ != FlushMode::kNone && machine_.params().nt_stores;
  }
  void flush(const void* p) {
    if (flush_ == FlushMode::kNone || mutation_ == mem::Mutation::kNoFlush || !count_op()) return;
    if (track_unfenced_) [[unlikely]]
      machine_.image().note_flush(line_of(p), core());
    machine_.flush(core(), line_of(p), flush_);
  }
  void fence() {
    if (flush_ == FlushMode::kNone || mutation_ == mem::Mutation::kNoFence || !count_op()) return;
    if (record_fences_) [[unlikely]]
      fence_ops_.push_back(ops_);
    if (track_unfenced_) [[unlikely]]
      machine_.image().note_fence(core());
    machine_.fence(core());
  }
  void persist(const void* p, std::size_t len);
  // Seed 004: ends the running thread's epoch. Under a hardware barrier (SimParams::persistency,
  // lb*) it is an op (a crash point) handled by the machine's epoch engine; under kSoftware and
  // kNone it does nothing here (software EP writes its lines back itself: mem::EpochTracked).
  // With check_order on, the oracle sees the barrier in every mode (it defines program epochs).
  void persist_barrier() {
    if (hardware_barrier_) {
      if (!count_op()) return;
      if (oracle_) [[unlikely]]
        note_barrier();
      machine_.epoch_barrier(core());
    } else if (oracle_ && modelling_) [[unlikely]] {
      note_barrier();
    }
  }
  // The persist-order oracle (src/sim/persist_oracle.hpp, seed 004 §3.5): on, every store and
  // load to a registered persistent line and every persist barrier is reported to it, and every
  // NVM write of such a line is checked against program epoch order; a violation throws
  // OrderViolation out of the op that caused the write. Off by default (SimParams::persistency.
  // check_order turns it on at construction); when off it costs one branch per access.
  void check_order(bool on);
  [[nodiscard]] bool checking_order() const { return oracle_ != nullptr; }
  [[nodiscard]] const PersistOracle* oracle() const { return oracle_.get(); }
  [[nodiscard]] Barrier barrier() const { return machine_.params().persistency.barrier; }
  // Runs fn with no fiber switch inside it, so that a critical section stays atomic in
  // simulation order under --interleave-quantum too (seed 004 D9: locks are no-ops in the
  // simulator). A quantum used up inside ends the turn at the first op after fn. Without
  // fine-grained interleaving switch_at_ is already disarmed and this is just fn().
  template <class Fn>
  void atomically(Fn&& fn) {
    struct Restore {
      SimBackend& b;
      std::uint64_t at;
      ~Restore() {
        b.turn_end_ = at;
        b.rearm_switch();
      }
    } restore{*this, turn_end_};
    turn_end_ = kDisarmed;
    rearm_switch();
    fn();
  }
  // Seed 002 §4.2's helper core (src/sim/helper_core.cpp), started by the first call:
  // flush_async hands the lines of [p, p + len) to a helper running on core cores() - 1 with
  // its own clock (sharing that core's caches), or a WBINVD by SimParams::whole_cache_flush.
  // Before every later op the helper runs those of its ops (a flush per line or WBINVD
  // stretch, then one fence) whose start its clock has reached by the current core's clock;
  // each is a counted op, so a crash can cut the helper between two flushes.
  void helper_flush_async(const void* p, std::size_t len);
  // The same helper copies src[0, count) into dst (cp-nt-async): one op per destination line
  // (its source read into the helper core's caches, the line stored non-temporally under
  // nt_stores, else stored and flushed), then one fence. The bytes move when the op runs, so
  // the caller must not store into src before helper_barrier. A power failure loses the rest.
  void helper_copy_async(double* dst, const double* src, std::size_t count);
  // Runs the helper's remaining ops and moves the current core's clock to the helper's end;
  // the wait is HelperStats::exposed_cycles.
  void helper_barrier();
  void region_begin(mem::RegionId) { ++region_begins_; }
  // The running thread's core clock, and a wait on it until `t` (a lock handed over at t).
  [[nodiscard]] Cycles clock_now() const { return machine_.clock(core()); }
  void wait_until(Cycles t) {
    if (t > machine_.clock(core())) machine_.set_clock(core(), t);
  }
  // The run's outer position: set to `first` when a run starts, one more per finished outer
  // iteration (mem::outer_step_done). A plain counter, not a simulated access: no figure moves.
  // The crash campaigns read it at a power failure to count the iterations redone after it.
  void start_outer_steps_at(std::uint64_t first) { outer_position_ = first; }
  // Counts `n` ops that ran elsewhere, as an unmodelled run of them here would have: a crash
  // campaign measures a recovery's length natively (run/native_tail.hpp) and keeps the op
  // numbering of a measurement run here. Only between runs (no crash armed ahead, no turn).
  void count_ops_run_elsewhere(std::uint64_t n) { ops_ += n; }
  void outer_step_done() { ++outer_position_; }
  [[nodiscard]] std::uint64_t outer_position() const { return outer_position_; }
  void region_end(mem::RegionId r) {
    commits_.push_back({r, thread_, ops_, machine_.clock(core())});
  }

  template <class Fn>
  void parallel_for(std::size_t begin, std::size_t end, Fn&& fn);
  [[nodiscard]] int threads() const { return threads_; }
  // The logical thread running now (0 outside parallel_for).
  [[nodiscard]] int current_thread() const { return thread_; }
  // Called after every outermost parallel_for (progress reporting); never on the access path.
  void on_loop_end(std::function<void()> fn) { on_loop_end_ = std::move(fn); }

  // --- crash image ---
  // Registers [base, base+len) as persistent; its current bytes are taken as durable.
  void register_persistent(const void* base, std::size_t len) {
    machine_.image().add_range(base, len);
  }
  // Marks [base, base+len) as DRAM (e.g. gemm's packing buffers with --pack-mem dram): its
  // traffic leaves the NVM statistics; unmark_volatile with the same arguments undoes it.
  void mark_volatile(const void* base, std::size_t len) {
    machine_.add_volatile(line_of(base), end_line(base, len));
  }
  void unmark_volatile(const void* base, std::size_t len) {
    machine_.remove_volatile(line_of(base), end_line(base, len));
  }
  // Seed 002 §3's DRAM cache in front of NVM (SimParams::dram_cache, src/sim/dram_cache.hpp),
  // reached through mem::dram_cache_place / dram_cache_flush; both do nothing when it is off.
  // place: [base, base+len) is one object the kernel or the row declares write-intensive; it
  // is resident if it fits whole (its LLC misses cost DRAM latency, its write-backs stay in
  // DRAM, not durable). flush: the dirty resident lines of [base, base+len) go to NVM (durable
  // on return) and stay resident. Not an op (no crash point of its own, the op numbering is the
  // same on or off); dropped by --flush none and by the dram-cache-no-flush negative control.
  void dram_cache_place(const void* base, std::size_t len) {
    if (len > 0) machine_.dram_cache_place(line_of(base), end_line(base, len));
  }
  void dram_cache_flush(const void* base, std::size_t len) {
    if (flush_ == FlushMode::kNone || mutation_ == mem::Mutation::kDramCacheNoFlush || len == 0)
      return;
    machine_.dram_cache_flush(core(), line_of(base), end_line(base, len));
  }
  // The line after the last byte of [base, base+len).
  [[nodiscard]] static LineAddr end_line(const void* base, std::size_t len) {
    return LineAddr(line_of(static_cast<const char*>(base) + (len > 0 ? len - 1 : 0)).value() + 1);
  }
  // Crash before op k (k > ops(), else kInvalidArgument; also after stop_modelling()).
  void arm_crash(std::uint64_t k);
  // Calls hook(k) just before op k instead (k > ops()): if it returns true the power fails
  // there exactly as with arm_crash(k), else op k runs. The hook may arm the next crash or
  // hook. Crash campaigns fork() in it: the child cuts the power, the parent goes on.
  void arm_hook(std::uint64_t k, OpHook hook);
  void disarm_crash() {
    set_crash_at(kDisarmed);  // after stop_modelling special_at_ stays 0
    hook_ = nullptr;
  }
  [[nodiscard]] bool crashed() const { return crashed_; }
  // Crash campaigns' adversarial image model: remember flushes (and PreFlushes) not yet fenced,
  // so that a crash image may lose them (CrashImage::note_flush, note_preflush, perturb). Off by
  // default.
  void track_unfenced(bool on) {
    track_unfenced_ = on;
    machine_.image().track_preflushes(on);  // PreFlush's writes are unfenced too
  }
  // A negative control (mem::Mutation): no-flush / no-fence drop those ops here (they are not
  // counted either); the others are consulted by the building blocks via mem::mutated().
  void set_mutation(mem::Mutation m) { mutation_ = m; }
  [[nodiscard]] mem::Mutation mutation() const { return mutation_; }
  // Forgets the region commits from index n on (a crash campaign's measuring run of a
  // recovery that is then undone).
  void forget_commits_from(std::size_t n) {
    if (n < commits_.size()) commits_.resize(n);
  }
  // A crash campaign's batched trial: the counters as a power failure before op `ops` + 1 left
  // them (PowerFailure thrown, crash disarmed), the outer loop at `outer_position` and `commits`
  // recorded. Memory, the crash image and the caches are the caller's (CrashImage::load_from,
  // then apply_crash_image); state a power failure keeps (clocks, statistics) stays as it is.
  void rewind_to_failure(std::uint64_t ops, std::uint64_t outer_position,
                         std::vector<CommitPoint> commits) {
    disarm_crash();
    crashed_ = true;
    ops_ = ops;
    outer_position_ = outer_position;
    commits_ = std::move(commits);
  }
  // After PowerFailure: live memory of every registered range := its durable image, caches
  // emptied, crash disarmed. Memory outside registered ranges is left as it is.
  void apply_crash_image();

  // Ends the cache model for the rest of the run: ops still count and move real data, at a few
  // ns each, but reach no cache, clock, statistic or crash image (Machine::stop_modelling), and
  // crashes can no longer be armed. For finishing a crash trial after its last crash. It costs
  // the modelled path nothing: special_at_ stays 0 for good, and the special path skips the
  // model.
  void stop_modelling() {
    machine_.stop_modelling();
    modelling_ = false;
    disarm_crash();
  }
  // A reversible stop_modelling for a run whose op count is all that is wanted (a crash
  // campaign measuring how long a recovery is, before undoing it): ops count and move real data
  // but reach no cache, clock, statistic or crash image until resume_modelling(). No crash may
  // be armed meanwhile. The op count equals the modelled one unless seed 002's helper core was
  // asked for work (its ops are paced by the clocks): async_requests_skipped() tells.
  void pause_modelling();
  void resume_modelling();
  [[nodiscard]] std::uint64_t async_requests_skipped() const { return async_skipped_; }

  [[nodiscard]] std::uint64_t ops() const { return ops_; }
  [[nodiscard]] const std::vector<CommitPoint>& commits() const { return commits_; }
  // With recording on, the op number of every fence from then on: the steps of persistence
  // protocols (undo-log and index-record updates, persists), for crash-point corners.
  void record_fences(bool on) { record_fences_ = on; }
  [[nodiscard]] const std::vector<std::uint64_t>& fence_ops() const { return fence_ops_; }
  [[nodiscard]] std::uint64_t region_begins() const { return region_begins_; }
  [[nodiscard]] FlushMode flush_mode() const { return flush_; }
  [[nodiscard]] Machine& machine() { return machine_; }
  [[nodiscard]] const Machine& machine() const { return machine_; }
  [[nodiscard]] const CrashImage& image() const { return machine_.image(); }
  [[nodiscard]] SimStats stats() const;
  // With record_fences on: [first op, last op] of each helper request (empty without helper).
  [[nodiscard]] std::vector<std::pair<std::uint64_t, std::uint64_t>> helper_spans() const;

 private:
  static constexpr std::uint64_t kDisarmed = std::numeric_limits<std::uint64_t>::max();

  // Counts the next op; false if it must not reach the model (after stop_modelling). The
  // armed-op compare is the access path's only test: everything that needs more than counting
  // (a quantum used up, an armed crash or hook, stop_modelling, and the optional mechanisms a
  // plain access must not pay for: hardware barrier, order oracle, PreFlush) lowers
  // `special_at_` so that the compare fails into count_op_special().
  [[nodiscard]] bool count_op() {
    if (ops_ + 1 >= special_at_) [[unlikely]]
      return count_op_special();
    ++ops_;
    return true;
  }
  bool count_op_special() {
    if (ops_ >= switch_at_) [[unlikely]]
      switch_point();  // a fiber's quantum is used up, or the helper core may be due
    return count_op_at_switch_point();
  }
  // count_op_special after its switch check; the helper core's own ops (helper_count_op) come
  // here directly, as they never switch.
  bool count_op_at_switch_point() {
    if (!modelling_) {  // stop_modelling: every op lands here and skips the model
      ++ops_;
      return false;
    }
    if (ops_ + 1 == crash_at_) [[unlikely]]
      return armed_op();
    ++ops_;
    return true;
  }
  // The first op number that must take the special path (see count_op).
  void update_special_at() {
    const std::uint64_t quantum_end = switch_at_ == kDisarmed ? kDisarmed : switch_at_ + 1;
    special_at_ = always_special_ || !modelling_ ? 0 : std::min(crash_at_, quantum_end);
  }
  void set_crash_at(std::uint64_t k) {
    crash_at_ = k;
    update_special_at();
  }
  bool armed_op();  // counts the armed op: runs the hook (true: the op runs) or fails
  // Fine-grained interleaving (sim_backend.cpp): runs [begin, end) as one fiber per thread.
  using Body = void (*)(void* fn, std::size_t i);
  void run_interleaved(std::size_t begin, std::size_t end, void* fn, Body body);
  void yield_turn();  // from a fiber back to the scheduler; throws when the loop is cancelled
  // switch_at_ = turn_end_, or every op while the helper core has work (helper_core.cpp).
  void switch_point();
  void rearm_switch();
  void helper_catch_up(bool drain);
  bool helper_count_op();  // count_op without the switch point (the helper is not a fiber)
  // A power failure or stop_modelling: queued helper work is gone; with finish_copies (the
  // model stopped, memory still live) the queued copies' bytes are moved first.
  void helper_abandon(bool finish_copies);
  void helper_copy_line(int core, const detail::HelperRequest& r, std::uint64_t line);
  [[noreturn]] void power_failure(std::uint64_t op);

  // A store's bytes reach memory after the crash check and before the model sees the access:
  // periodic cleaning at the end of this very op must write the new value back. Under a
  // hardware persist barrier the model goes first instead (periodic cleaning is refused
  // there), so a conflict flush this store forces captures the line's old bytes.
  template <bool IsStore, bool MayStraddle, class Write>
  void access(const void* p, std::size_t size, Write&& write, std::uint32_t pc = 0) {
    if (ops_ + 1 >= special_at_) [[unlikely]] {
      access_special<IsStore>(p, size, write, pc);
      return;
    }
    ++ops_;
    write();
    // No mechanism is on (else special_at_ is 0): PreFlush need not be asked either.
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const LineAddr first(a / kCacheLineBytes);
    touch_plain<IsStore>(first);
    // Straddles two lines. Written against kCacheLineBytes - size (size <= kCacheLineBytes:
    // SimScalar), which GCC compiles to one compare with a constant, not an add and a compare.
    // Never for a type aligned to its size (kMayStraddle), unless the pointer is misaligned,
    // which no T* may be: debug builds check it.
    [[maybe_unused]] const bool straddles = a % kCacheLineBytes > kCacheLineBytes - size;
    if constexpr (MayStraddle) {
      if (straddles) [[unlikely]]
        touch_plain<IsStore>(LineAddr(first.value() + 1));
    } else {
      assert(!straddles && "a misaligned pointer: its access crosses a cache line");
    }
  }
  template <bool IsStore>
  void touch_plain(LineAddr line) {
    if constexpr (IsStore)
      machine_.store_plain(core_ref_, line);
    else
      machine_.load(core_ref_, line);
  }
  // Out of line: the optional mechanisms and armed ops never widen the plain path above.
  template <bool IsStore, class Write>
  [[gnu::noinline]] void access_special(const void* p, std::size_t size, Write& write,
                                        std::uint32_t pc) {
    const bool model = count_op_special();
    if constexpr (IsStore) {
      if (hardware_barrier_) [[unlikely]] {
        if (model) touch_lines<IsStore>(p, size, pc);
        write();
        if (model && oracle_) [[unlikely]]  // after the model: its write-backs held old bytes
          note_access(p, size, IsStore);
        if (model && bsp_epoch_ != 0) [[unlikely]]
          bsp_store();
        if (model && write_through_) [[unlikely]]  // after the bytes: the write carries them
          write_through(p, size);
        return;
      }
    }
    write();
    if (!model) [[unlikely]]
      return;
    // Right after the bytes change and before the model runs: a write-back the model makes
    // during this op carries them, so the oracle must already count the store as pending.
    if (oracle_) [[unlikely]]
      note_access(p, size, IsStore);
    touch_lines<IsStore>(p, size, pc);
  }
  template <bool IsStore>
  void touch_lines(const void* p, std::size_t size, std::uint32_t pc) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const LineAddr first(a / kCacheLineBytes);
    touch<IsStore>(first, pc);
    if ((a % kCacheLineBytes) + size > kCacheLineBytes) [[unlikely]]  // straddles two lines
      touch<IsStore>(LineAddr(first.value() + 1), pc);
  }
  template <bool IsStore>
  void touch(LineAddr line, std::uint32_t pc) {
    if constexpr (IsStore)
      machine_.store(core(), line, pc);
    else
      machine_.load(core(), line);
  }
  void note_access(const void* p, std::size_t size, bool is_store);  // cold: oracle on
  void bsp_store();  // BSP bulk mode: counts a store, ends the core's epoch every N
  void write_through(const void* p, std::size_t size);  // naive write-through BSP
  void note_barrier();
  void update_always_special();  // after the oracle is switched (construction, check_order)
  void set_thread(int t) {
    thread_ = t;
    core_ref_ = machine_.core_ref(t % cores_);
  }
  // The simulated core that runs the current thread.
  [[nodiscard]] int core() const { return core_ref_.index(); }

  Machine machine_;
  FlushMode flush_;
  int threads_;
  int cores_;
  int thread_ = 0;
  Machine::CoreRef core_ref_;  // the current thread's core (set_thread keeps it)
  bool in_parallel_ = false;
  bool crashed_ = false;
  bool record_fences_ = false;
  bool modelling_ = true;
  bool paused_ = false;              // pause_modelling(): modelling_ is off until resumed
  std::uint64_t async_skipped_ = 0;  // helper_flush_async calls while not modelling
  bool track_unfenced_ = false;
  bool hardware_barrier_ = false;          // SimParams::persistency.hardware()
  std::uint64_t bsp_epoch_ = 0;            // SimParams::persistency.bsp_epoch_stores (0 = off)
  bool write_through_ = false;             // SimParams::persistency.bsp_write_through
  std::vector<std::uint64_t> bsp_stores_;  // per core: stores in its ongoing BSP epoch
  mem::Mutation mutation_ = mem::Mutation::kNone;
  std::uint64_t ops_ = 0;
  std::uint64_t crash_at_ = kDisarmed;
  std::uint64_t special_at_ = kDisarmed;  // see count_op
  bool always_special_ = false;           // a hardware barrier, the oracle or PreFlush is on
  std::uint64_t quantum_ = 0;             // SimParams::interleave_quantum
  std::uint64_t switch_at_ = kDisarmed;   // op count at which count_op calls switch_point
  std::uint64_t turn_end_ = kDisarmed;    // op count that ends the running fiber's turn
  struct Fibers;                          // sim_backend.cpp
  std::shared_ptr<Fibers> fibers_;        // stacks, kept across loops
  OpHook hook_;                           // set: crash_at_ is a hook point
  std::uint64_t region_begins_ = 0;
  std::uint64_t outer_position_ = 0;
  std::vector<CommitPoint> commits_;
  std::vector<std::uint64_t> fence_ops_;
  std::function<void()> on_loop_end_;
  std::unique_ptr<PersistOracle> oracle_;       // null unless check_order(true)
  std::unique_ptr<detail::HelperCore> helper_;  // null until a scheme uses the helper
};

template <class Fn>
void SimBackend::parallel_for(std::size_t begin, std::size_t end, Fn&& fn) {
  if (end <= begin) return;
  if (in_parallel_ || threads_ == 1) {
    const bool outermost = !in_parallel_;
    for (std::size_t i = begin; i < end; ++i) fn(i);
    if (outermost && on_loop_end_) on_loop_end_();
    return;
  }
  if (quantum_ > 0) {
    using F = std::remove_reference_t<Fn>;
    run_interleaved(begin, end, const_cast<void*>(static_cast<const void*>(std::addressof(fn))),
                    [](void* f, std::size_t i) { (*static_cast<F*>(f))(i); });
    return;
  }
  // Static schedule as libgomp computes it: q = n / T, the first n % T threads get q + 1.
  const std::size_t n = end - begin, t_count = static_cast<std::size_t>(threads_);
  const std::size_t q = n / t_count, r = n % t_count;
  const std::size_t rounds = q + (r != 0 ? 1 : 0);
  // Restores sequential state even when a PowerFailure unwinds through here.
  struct Restore {
    SimBackend& b;
    ~Restore() {
      b.in_parallel_ = false;
      b.set_thread(0);
    }
  } restore{*this};
  in_parallel_ = true;
  machine_.fork_clocks(core(), std::min(threads_, cores_));
  for (std::size_t round = 0; round < rounds; ++round) {
    for (std::size_t t = 0; t < t_count; ++t) {
      const std::size_t len = q + (t < r ? 1 : 0);
      if (round >= len) continue;
      const std::size_t lo = begin + t * q + (t < r ? t : r);
      set_thread(static_cast<int>(t));
      fn(lo + round);
    }
  }
  machine_.join_clocks();  // the implicit barrier at the end of an OpenMP loop
  if (on_loop_end_) on_loop_end_();
}

static_assert(mem::Backend<SimBackend>);

}  // namespace pmlab::sim
