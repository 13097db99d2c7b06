// Every scheme of an iterative solver whose persistent state is one array rewritten once per
// iteration (cg, jacobi): base, lp, ep, wal, cp and its seed-002 variants, and in-place
// versioning.
//
// A kernel derives its Operands from iterative::State (so that argument-dependent lookup finds
// the functions below for rows.hpp's shared rows) and provides, in its own namespace:
//   iterate(be, op, t, const double* in, double* out, before_first_write, fold = NoFold{})
//       iteration t from state `in` into state `out` (in == out: in place, the same bits); it
//       calls before_first_write() once, before its first store into `out`, and reads each
//       element of `in` before `out`'s element at the same place is stored (when in == out);
//       it folds every final value it stores into `fold` (region_of/tail_region, in element
//       order within a region, one thread per region): LP's checksums come from the registers
//       that held the values, with no second pass over the state;
//   initial_state(be, op)   writes the state before iteration 0 into op.s from the inputs.
// Floating-point order is fixed (reductions by block of bs rows, summed in block order), so
// the result does not depend on the thread count, the backend or the scheme.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/async_flush.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/eager_region.hpp"
#include "pmlab/scheme/in_place_versions.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"

namespace pmlab::kernels::iterative {

// The state: `elements` doubles at `s` (the kernel's own array, where the result must end),
// rewritten by each of `iterations` iterations: `vectors` vectors of `vector_elements` each,
// then a tail of scalars. LP's regions are `region_elements`-long pieces of one vector (one
// block of bs rows, the piece one parallel-loop iteration writes; a region never spans two
// vectors, so one thread writes all of it) and the tail. `updates` is the kernel's IPV rule.
struct State {
  double* s = nullptr;
  std::size_t elements = 0;
  std::size_t iterations = 0;
  std::size_t vectors = 1;
  std::size_t vector_elements = 0;
  std::size_t region_elements = 1;
  scheme::IpvUpdates updates = scheme::IpvUpdates::kUniform;

  [[nodiscard]] std::size_t regions_per_vector() const {
    return (vector_elements + region_elements - 1) / region_elements;
  }
  [[nodiscard]] std::size_t tail_begin() const { return vectors * vector_elements; }
  // Region of block `block` of vector `v`, and the scalars' region (the last one).
  [[nodiscard]] std::size_t region_of(std::size_t v, std::size_t block) const {
    return v * regions_per_vector() + block;
  }
  [[nodiscard]] std::size_t tail_region() const { return vectors * regions_per_vector(); }
  [[nodiscard]] std::size_t regions() const {
    return tail_region() + (elements > tail_begin() ? 1 : 0);
  }
  [[nodiscard]] std::size_t region_begin(std::size_t k) const {
    if (k >= tail_region()) return tail_begin();
    const std::size_t rpv = regions_per_vector();
    return (k / rpv) * vector_elements + (k % rpv) * region_elements;
  }
  [[nodiscard]] std::size_t region_end(std::size_t k) const {
    if (k >= tail_region()) return elements;
    const std::size_t rpv = regions_per_vector();
    return (k / rpv) * vector_elements + std::min(vector_elements, (k % rpv + 1) * region_elements);
  }
  // LP: a durable anchor every `lp_anchor` (K) iterations, over K + 2 state buffers in rotation
  // and K + 2 banks of checksum slots, stamped with their iteration (see "Lazy Persistency").
  std::size_t lp_anchor = 1;  // the drivers set it from --lp-anchor (default 4)
  [[nodiscard]] std::size_t lp_buffers() const { return lp_anchor + 2; }
  [[nodiscard]] std::size_t table_slots() const { return lp_buffers() * regions(); }
  [[nodiscard]] std::size_t slot(std::size_t t, std::size_t k) const {
    return (t % lp_buffers()) * regions() + k;
  }
  [[nodiscard]] std::size_t state_bytes() const { return elements * sizeof(double); }
};

// The fold of every scheme but LP: nothing, so their loops are LP's minus the checksum adds.
struct NoFold {
  struct Local {
    void add(double) const {}
  };
  [[nodiscard]] Local local(std::size_t) const { return {}; }
  void put(std::size_t, Local) const {}
};

// LP's fold: one checksum accumulator per region. A parallel-loop iteration takes its region's
// accumulator into a local (a register), adds each value as it stores it, and puts it back.
template <lp::ChecksumKind CK>
class RegionFolds {
 public:
  explicit RegionFolds(std::size_t regions) : acc_(regions) {}
  [[nodiscard]] lp::Accumulator<CK> local(std::size_t k) const { return acc_[k]; }
  void put(std::size_t k, const lp::Accumulator<CK>& a) { acc_[k] = a; }
  [[nodiscard]] lp::ChecksumValue value(std::size_t k) const { return acc_[k].value(); }

 private:
  std::vector<lp::Accumulator<CK>> acc_;
};

// Sums per-block partials in block order: the reduction order every scheme shares.
[[nodiscard]] inline double ordered_sum(std::span<const double> partials) {
  double s = 0.0;
  for (const double v : partials) s += v;
  return s;
}

// --- base: in place, no persistence; recovery restores the inputs and restarts ---------------

template <mem::Backend B, class Op>
void run_base(B& be, const Op& op, std::size_t first) {
  for (std::size_t t = first; t < op.iterations; ++t) {
    iterate(be, op, t, op.s, op.s, [] {});
    mem::outer_step_done(be);
  }
}

template <mem::Backend B, class Op>
void restart(B& be, const Op& op) {
  initial_state(be, op);
}

// --- WAL: one undo-logged transaction per iteration (the state is one unit) -------------------

template <class Op>
[[nodiscard]] std::array<scheme::PoolArray, 3> wal_bytes_for(const Op& op) {
  return {{{scheme::kWalHeaderArray, scheme::WalUnits::header_bytes(1)},
           {scheme::kWalIndexArray, scheme::WalUnits::progress_bytes(1)},
           {scheme::kWalLogArray, op.state_bytes()}}};
}

template <class Op>
[[nodiscard]] scheme::LogBlock<double> wal_block(const Op& op, const scheme::WalUnits& wal) {
  return {op.s, 1, op.elements, op.elements, wal.log};
}

// The iteration's reductions need the whole state, so no smaller piece of it is a transaction:
// the log holds the whole state, written and flushed once per iteration.
template <mem::Backend B, class Op>
void run_wal(B& be, const Op& op, const scheme::WalUnits& wal, std::size_t first = 0) {
  for (std::size_t t = first; t < op.iterations; ++t) {
    const mem::RegionId id{static_cast<std::uint32_t>(t), 0};
    be.region_begin(id);
    wal.transact(
        be, 0, t + 1, [&] { iterate(be, op, t, op.s, op.s, [] {}); }, wal_block(op, wal));
    be.region_end(id);
    mem::outer_step_done(be);
  }
}

template <mem::Backend B, class Op>
[[nodiscard]] std::size_t recover_wal(B& be, const Op& op, const scheme::WalUnits& wal,
                                      lp::RecoveryStats& stats) {
  ++stats.regions_validated;
  if (wal.in_tx(be, 0) && wal.roll_back(be, 0, wal_block(op, wal))) ++stats.regions_inconsistent;
  return static_cast<std::size_t>(wal.progress_of(be, 0));
}

// --- checkpoint of the whole state, double-buffered ------------------------------------------

// Every iteration: an iteration rewrites the whole state, as a checkpoint copies it (the paper's
// cadence; `cp` is then cp-nt).
template <class Op>
[[nodiscard]] std::size_t cp_default_every(const Op&) {
  return 1;
}

template <class Op>
[[nodiscard]] std::array<scheme::PoolArray, 2> cp_bytes_for(const Op& op) {
  return {{{scheme::kCpHeaderArray, scheme::StepCheckpoint::header_bytes()},
           {scheme::kCpAreaArray, scheme::StepCheckpoint::area_bytes(
                                      op.elements, scheme::CheckpointMode::kDoubleBuffered)}}};
}

template <class Op>
[[nodiscard]] scheme::StepCheckpoint cp_state(const Op& op, scheme::StepCheckpointHeader* header,
                                              double* area, std::size_t every) {
  return {header,
          area,
          op.s,
          op.elements,
          op.iterations,
          every,
          scheme::CheckpointMode::kDoubleBuffered};
}

template <mem::Backend B, class Op>
void run_cp(B& be, const Op& op, const scheme::StepCheckpoint& cp, std::size_t first = 0) {
  const auto whole = [&](std::size_t, std::size_t, auto&& fn) { fn(std::size_t{0}, op.elements); };
  for (std::size_t t = first; t < op.iterations; ++t) {
    const mem::RegionId id{static_cast<std::uint32_t>(t), 0};
    be.region_begin(id);
    iterate(be, op, t, op.s, op.s, [] {});
    be.region_end(id);
    cp.after_step(be, t + 1, whole, [&] { be.persist(op.s, op.state_bytes()); });
    mem::outer_step_done(be);
  }
}

// cp-nt-async (seed 002 §4.2, the helper copying what in-place versioning cannot version: MG's
// dotted bar in Fig. 12): iteration t's state goes to the helper, which copies it into the
// checkpoint's free slot with non-temporal stores and its own sfence. The copy overlaps
// iteration t + 1's work before its first store into the state (cg's SpMV and dot products,
// jacobi's residual); there the barrier waits for it and the checkpoint is published. The last
// iteration persists the state in place and publishes completion, as run_cp does.
template <mem::Backend B, class Op>
void run_cp_async(B& be, const Op& op, const scheme::StepCheckpoint& cp, std::size_t first = 0) {
  const auto whole = [&](std::size_t, std::size_t, auto&& fn) { fn(std::size_t{0}, op.elements); };
  // Negative control (`pmlab crash --mutate cp-barrier-after-write`); constant false natively.
  const bool barrier_late = mem::mutated(be, mem::Mutation::kCpBarrierAfterWrite);
  scheme::AsyncFlusher<B> helper(be);
  scheme::StepCheckpoint::InFlight in_flight;
  const auto barrier_and_publish = [&] {
    if (!in_flight.pending) return;
    helper.flush_barrier();
    cp.publish(be, in_flight);
  };
  for (std::size_t t = first; t < op.iterations; ++t) {
    const mem::RegionId id{static_cast<std::uint32_t>(t), 0};
    be.region_begin(id);
    iterate(be, op, t, op.s, op.s, [&] {
      if (!barrier_late) barrier_and_publish();
    });
    be.region_end(id);
    barrier_and_publish();  // barrier_late; otherwise nothing is pending here
    const std::size_t done = t + 1;
    if (done < op.iterations && done % cp.every() == 0)
      in_flight = cp.save_async(be, done, whole, [&](std::span<const scheme::CopyJob> jobs) {
        for (const auto& j : jobs) helper.copy_async({j.dst, j.src, j.count});
      });
    else
      cp.after_step(be, done, whole, [&] { be.persist(op.s, op.state_bytes()); });
    mem::outer_step_done(be);
  }
}

template <mem::Backend B, class Op>
[[nodiscard]] std::size_t recover_cp(B& be, const Op& op, const scheme::StepCheckpoint& cp,
                                     lp::RecoveryStats& stats) {
  ++stats.regions_validated;
  return cp.restore(
      be, [&](std::size_t, std::size_t, auto&& fn) { fn(std::size_t{0}, op.elements); },
      [&] { restart(be, op); });
}

// --- Lazy Persistency ------------------------------------------------------------------------
//
// Out of place over B = K + 2 state buffers in rotation (K = State::lp_anchor;
// docs/protect-your-own-loop.md, rule 3): iteration t reads buffer t % B and writes (t + 1) % B,
// which held iteration t + 1 - B's output. Each region (one piece of the state) gets a checksum
// of what the iteration stored there, in slot bank t % B, with plain stores that also stamp the
// slot with t (ChecksumTable's use): a slot left by an earlier iteration reads as unwritten, so
// a bank is reused without a durable clear. Every K iterations (t - 1 a multiple of K) iteration
// t - 2's output is made durable and only then `durable = t - 1` is recorded: the anchor.
// Between anchors nothing is flushed, so the state's write-backs to memory are those of one
// iteration in K, and the run's only fences are the anchors' (K = 1: every iteration, as the
// earlier three-buffer design, which also cleared a bank durably at every iteration).
//
// Why B = K + 2 suffices: `durable = d` is recorded at iteration d + 1's start, and the next
// anchor at iteration d + K + 1's start precedes that iteration's writes, so while durable = d
// at most iterations d .. d + K have written; the first to overwrite buffer d % B (iteration
// d - 1's durable output, the restart point) would be d - 1 + B = d + K + 1. Recovery
// validates iterations d .. d + K in order (recover_lp), each against slots stamped with its
// own t, so only that iteration's own checksums can validate it.

struct LpState {
  std::vector<double*> buf;          // the State::lp_buffers() buffers; buf[0] is the kernel's
  std::uint64_t* durable = nullptr;  // iterations [0, *durable) are durable
  lp::ChecksumSlot* slots = nullptr;
};

template <class Op>
[[nodiscard]] lp::ChecksumTable lp_table(const Op& op, const LpState& st) {
  return {st.slots, op.table_slots()};
}

template <mem::Backend B, class Op>
void lp_boundary(B& be, const Op& op, const LpState& st, std::size_t t) {
  const std::size_t nb = op.lp_buffers();
  // An anchor moves `durable` forward only: a run resumed by recovery at an iteration at or
  // before the durable one must not re-anchor an output it may since have overwritten.
  const bool anchor = t >= 2 && (t - 1) % op.lp_anchor == 0 &&
                      t - 1 > static_cast<std::size_t>(be.load(st.durable));
  if (!anchor) return;
  be.persist(st.buf[(t - 1) % nb], op.state_bytes());
  be.store(st.durable, std::uint64_t{t - 1});
  be.persist(st.durable, sizeof(std::uint64_t));
}

template <lp::ChecksumKind CK, mem::Backend B, class Op>
[[nodiscard]] lp::ChecksumValue region_checksum(B& be, const Op& op, const double* out,
                                                std::size_t k) {
  lp::Accumulator<CK> acc;
  for (std::size_t e = op.region_begin(k); e < op.region_end(k); ++e) acc.add(be.load(out + e));
  return acc.value();
}

// Iteration t from `in` into a different buffer `out`. A non-uniform iteration (jacobi
// --mg-like) leaves some elements to a later loop that reads them first, so `out` is first
// filled from `in` and the iteration runs in place on it.
template <mem::Backend B, class Op, class Fold = NoFold>
void iterate_out_of_place(B& be, const Op& op, std::size_t t, const double* in, double* out,
                          Fold&& fold = Fold{}) {
  if (op.updates == scheme::IpvUpdates::kUniform)
    return iterate(
        be, op, t, in, out, [] {}, fold);
  be.parallel_for(0, op.regions(), [&](std::size_t k) {
    for (std::size_t e = op.region_begin(k); e < op.region_end(k); ++e)
      be.store(out + e, be.load(in + e));
  });
  iterate(
      be, op, t, static_cast<const double*>(out), out, [] {}, fold);
}

// The result ends in buffer 0: after the last iteration it is persisted, `durable` set to all,
// and copied (durably) into buffer 0 if it sits elsewhere; recovery redoes that copy.
template <mem::Backend B, class Op>
void lp_finish(B& be, const Op& op, const LpState& st) {
  const std::size_t last = op.iterations % op.lp_buffers();
  if (be.load(st.durable) < op.iterations) {
    be.persist(st.buf[last], op.state_bytes());
    be.store(st.durable, static_cast<std::uint64_t>(op.iterations));
    be.persist(st.durable, sizeof(std::uint64_t));
  }
  if (last != 0) scheme::copy_durable(be, st.buf[0], st.buf[last], op.elements);
}

// The checksum of each region is folded by the iteration's own loops from the values as they
// are stored (RegionFolds; no read-back pass), then committed per region with plain stores.
template <lp::ChecksumKind CK, mem::Backend B, class Op>
void run_lp(B& be, const Op& op, const LpState& st, std::size_t first) {
  const lp::ChecksumTable table = lp_table(op, st);
  const std::size_t nb = op.lp_buffers();
  for (std::size_t t = first; t < op.iterations; ++t) {
    lp_boundary(be, op, st, t);
    double* out = st.buf[(t + 1) % nb];
    RegionFolds<CK> folds(op.regions());
    iterate_out_of_place(be, op, t, st.buf[t % nb], out, folds);
    be.parallel_for(0, op.regions(), [&](std::size_t k) {
      // A marked region (the simulator's commit corners), committed with plain stores.
      const mem::RegionId id{static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(k)};
      be.region_begin(id);
      table.commit(be, op.slot(t, k), folds.value(k), t);
      be.region_end(id);
    });
    mem::outer_step_done(be);
  }
  lp_finish(be, op, st);
}

// Iterations before d = *durable are durable, so at most iterations d .. d + K have written
// (see "Why B = K + 2" above). They are validated in order, each against its own bank: an
// iteration whose every region matches is complete in memory (its input, the previous output,
// was right when it ran), so the next one can start from it. The run resumes at the first
// iteration that does not validate (its input is either iteration d - 1's durable output or a
// validated one), and run_lp redoes it and everything after; its regions are counted as
// recomputed. A torn region anywhere invalidates the whole iteration, since its reductions span
// the whole state. Recovery writes nothing, so a crash during it is a crash before it.
template <lp::ChecksumKind CK, mem::Backend B, class Op>
[[nodiscard]] std::size_t recover_lp(B& be, const Op& op, const LpState& st,
                                     lp::RecoveryStats& stats) {
  const auto d = static_cast<std::size_t>(be.load(st.durable));
  if (d >= op.iterations) {
    lp_finish(be, op, st);
    return op.iterations;
  }
  const lp::ChecksumTable table = lp_table(op, st);
  const std::size_t nb = op.lp_buffers();
  // True if every region of iteration t's output matches its slot.
  const auto validate = [&](std::size_t t) {
    const double* out = st.buf[(t + 1) % nb];
    bool all = true;
    for (std::size_t k = 0; k < op.regions(); ++k) {
      ++stats.regions_validated;
      switch (table.check(be, op.slot(t, k), region_checksum<CK>(be, op, out, k), t)) {
        case lp::SlotCheck::kMatch:
          break;
        case lp::SlotCheck::kMismatch:
          ++stats.regions_inconsistent;
          all = false;
          break;
        case lp::SlotCheck::kUnwritten:
          ++stats.regions_unwritten;
          all = false;
          break;
      }
    }
    return all;
  };
  std::size_t t = d;
  while (t < op.iterations && t <= d + op.lp_anchor && validate(t)) ++t;
  if (t < op.iterations) stats.regions_recomputed += op.regions();
  return t;
}

// --- EagerRecompute --------------------------------------------------------------------------
// A region is one whole iteration: its reductions span the whole state (see recover_lp), so no
// smaller piece of an iteration can be recomputed alone. Iteration t reads buf[t % 2] and writes
// buf[(t + 1) % 2], out of place, so a torn output never harms the input it is recomputed
// from; the output is made durable, then the one index record says t + 1 (thesis Fig. 3.1).

struct EpState {
  std::array<double*, 2> buf{};   // buf[0] is the kernel's state array
  scheme::IndexRecord<1> record;  // iterations [0, record) are durable
};

// The result ends in buffer 0: after an odd iteration count it is copied there durably from
// buffer 1 (idempotent: recovery of a finished run redoes it).
template <mem::Backend B, class Op>
void ep_finish(B& be, const Op& op, const EpState& st) {
  if (op.iterations % 2 != 0) scheme::copy_durable(be, st.buf[0], st.buf[1], op.elements);
}

template <mem::Backend B, class Op>
void run_ep(B& be, const Op& op, const EpState& st, std::size_t first) {
  for (std::size_t t = first; t < op.iterations; ++t) {
    double* out = st.buf[(t + 1) % 2];
    scheme::eager_region(
        be, mem::RegionId{static_cast<std::uint32_t>(t), 0}, st.record,
        {.done = static_cast<std::uint64_t>(t) + 1},
        [&] { iterate_out_of_place(be, op, t, st.buf[t % 2], out); },
        [&] { be.persist(out, op.state_bytes()); });
    mem::outer_step_done(be);
  }
  ep_finish(be, op, st);
}

// The record names the iterations that are durable; the one after them was in flight (it starts
// as soon as the record is set) and is redone whole by the resumed run from its durable input:
// counted as one region recomputed, as recover_lp counts an iteration it reruns.
template <mem::Backend B, class Op>
[[nodiscard]] std::size_t recover_ep(B& be, const Op& op, const EpState& st,
                                     lp::RecoveryStats& stats) {
  ++stats.regions_validated;
  const auto done = static_cast<std::size_t>(st.record.get(be, 0));
  if (done < op.iterations) {
    ++stats.regions_recomputed;
    return done;
  }
  ep_finish(be, op, st);
  return op.iterations;
}

// --- in-place versioning ---------------------------------------------------------------------

template <class Op>
[[nodiscard]] scheme::InPlaceVersions ipv_versions(const Op& op, double* v1,
                                                   scheme::IpvHeader* header) {
  return {.v = {op.s, v1},
          .elements = op.elements,
          .header = header,
          .iterations = op.iterations,
          .updates = op.updates};
}

template <mem::Backend B, class Op>
void run_ipv(B& be, const Op& op, const scheme::InPlaceVersions& st, scheme::IpvFlush how,
             std::size_t first) {
  scheme::run_in_place_versions(be, st, how, first,
                                [&](std::size_t t, const double* in, double* out, auto&& hook) {
                                  iterate(be, op, t, in, out, hook);
                                });
}

}  // namespace pmlab::kernels::iterative
