// Checkpoint of a kernel's working array every K outer steps: incremental, crash-safe copies
// (double-buffered for in-place kernels, append-only for write-once outputs) and restore.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/copy_mode.hpp"

namespace pmlab::scheme {

// The names of a checkpoint scheme's pool arrays (spelled here only).
inline constexpr std::string_view kCpHeaderArray = "cp_header";
inline constexpr std::string_view kCpAreaArray = "cp_area";

// The checkpoint's persistent header, one line. Every field is one aligned 8-byte word, so each
// store is failure-atomic; no field ever depends on two words being written together.
struct alignas(64) StepCheckpointHeader {
  std::uint64_t newest;   // 0: none yet; else done << 2 | complete << 1 | slot
  std::uint64_t base[2];  // double-buffered: steps slot s is known to hold outside changed(base)
  std::uint64_t reserved[5];
};
static_assert(sizeof(StepCheckpointHeader) == 64);

enum class CheckpointMode {
  // In-place kernels: steps rewrite what earlier steps wrote. Two slots alternate; a crash while
  // one is rewritten leaves the other, the newest complete checkpoint, intact.
  kDoubleBuffered,
  // Write-once outputs (out-of-place kernels): steps never rewrite what earlier steps wrote, so
  // one slot suffices: a checkpoint only appends the elements of the new steps, and a crash
  // while appending cannot touch the part the published checkpoint covers.
  kAppendOnly,
};

// The working state is `elements` doubles at `work` (one contiguous array). A kernel describes
// it to the checkpoint with a segment function
//   segments(from, to, fn)  calls fn(offset, count) for element ranges of the state that cover
//                           every element steps [from, to) may write (a superset is fine),
// with two properties: elements outside segments(0, steps) are never written (they keep their
// durable initial values), and for kDoubleBuffered the ranges of a later `from` lie inside
// those of an earlier one (what step s may write, steps before s may write too: a shrinking
// trailing matrix), for kAppendOnly ranges of disjoint step ranges are disjoint.
//
// Slot s holds element e at area[s * elements + e]. The run calls after_step(done) after each
// outer step; a checkpoint is taken when done is a multiple of `every`; when done == steps the
// result is persisted in place instead of copied (no recovery needs a copy of a finished run)
// and published as complete.
class StepCheckpoint {
 public:
  StepCheckpoint() = default;
  StepCheckpoint(StepCheckpointHeader* header, double* area, double* work, std::size_t elements,
                 std::size_t steps, std::size_t every, CheckpointMode mode)
      : h_(header),
        area_(area),
        work_(work),
        elements_(elements),
        steps_(steps),
        every_(every < 1 ? 1 : every),
        mode_(mode) {}

  [[nodiscard]] static constexpr std::size_t header_bytes() { return sizeof(StepCheckpointHeader); }
  [[nodiscard]] static constexpr std::size_t area_bytes(std::size_t elements, CheckpointMode m) {
    return (m == CheckpointMode::kDoubleBuffered ? 2 : 1) * elements * sizeof(double);
  }
  // The same checkpoint with its copies made by `mode` (seed 002's variants; default kNt).
  [[nodiscard]] StepCheckpoint with_copy(CopyMode mode) const {
    StepCheckpoint c = *this;
    c.copy_ = mode;
    return c;
  }
  [[nodiscard]] std::size_t steps() const { return steps_; }
  [[nodiscard]] std::size_t every() const { return every_; }
  // The first step after `s` at which a checkpoint (or completion) is due.
  [[nodiscard]] std::size_t next_stop(std::size_t s) const {
    return std::min(steps_, (s / every_ + 1) * every_);
  }

  struct Newest {
    bool any = false, complete = false;
    std::size_t done = 0, slot = 0;
  };
  template <mem::Backend B>
  [[nodiscard]] Newest newest(B& b) const {
    const std::uint64_t w = b.load(&h_->newest);
    if (w == 0) return {};
    return {true, (w & 2u) != 0, static_cast<std::size_t>(w >> 2),
            static_cast<std::size_t>(w & 1u)};
  }

  // Called by the run after outer step done-1: checkpoint if due; at the end, persist the result
  // in place (persist_result()) and publish completion.
  template <mem::Backend B, class Segments, class PersistResult>
  void after_step(B& b, std::size_t done, Segments&& segments,
                  PersistResult&& persist_result) const {
    if (done >= steps_) {
      const bool early = mem::mutated(b, mem::Mutation::kCommitEarly);  // negative control
      if (early) publish_word(b, (static_cast<std::uint64_t>(steps_) << 2) | 2u);
      persist_result();
      flush_dram_cache(b);
      if (!early) publish_word(b, (static_cast<std::uint64_t>(steps_) << 2) | 2u);
    } else if (done % every_ == 0) {
      save(b, done, segments);
    }
  }

  // save() in two halves around an asynchronous copy (cp-nt-async, double-buffered only): the
  // free slot is prepared and its copies handed to copy(std::span<const CopyJob>), which must
  // make them durable by the time publish(b, in_flight) is called. Meanwhile the caller must
  // not store into the working state (the copy may still be reading it).
  struct InFlight {
    bool pending = false;
    std::size_t done = 0, slot = 0;
  };
  template <mem::Backend B, class Segments, class Copy>
  [[nodiscard]] InFlight save_async(B& b, std::size_t done, Segments&& segments,
                                    Copy&& copy) const {
    if (mode_ != CheckpointMode::kDoubleBuffered)
      throw Error(ErrorCode::kUnsupported, "an asynchronous checkpoint must be double-buffered");
    const auto [slot, jobs] = prepare_slot(b, done, segments);
    if (mem::mutated(b, mem::Mutation::kCommitEarly))  // negative control: publish first
      publish_word(b, (static_cast<std::uint64_t>(done) << 2) | slot);
    copy(std::span<const CopyJob>(jobs));
    return {true, done, slot};
  }
  template <mem::Backend B>
  void publish(B& b, InFlight& f) const {
    if (!f.pending) return;
    flush_dram_cache(b);
    publish_slot(b, f.done, f.slot);
    f.pending = false;
  }

  // Brings the working state back to the newest complete checkpoint, durably, and returns the
  // steps it holds (the run resumes there). No checkpoint: initial() restores the starting state
  // (in-place kernels; nothing for write-once outputs) and 0 is returned; complete: nothing to
  // do, returns steps. Checkpoints are only read, so a crash inside restore() is harmless.
  template <mem::Backend B, class Segments, class Initial>
  [[nodiscard]] std::size_t restore(B& b, Segments&& segments, Initial&& initial) const {
    const Newest nw = newest(b);
    if (nw.complete) return steps_;
    if (!nw.any) {
      initial();
      return 0;
    }
    // Double-buffered: the whole state, since steps after the checkpoint may have written any
    // of it. Append-only: what the checkpoint covers; the rest is rewritten before it is read.
    std::vector<CopyJob> jobs;
    const double* slot = area_ + nw.slot * elements_;
    segments(std::size_t{0}, mode_ == CheckpointMode::kDoubleBuffered ? steps_ : nw.done,
             [&](std::size_t off, std::size_t count) {
               jobs.push_back({work_ + off, slot + off, count});
             });
    copy_jobs_durable_mode(b, jobs, copy_);
    return nw.done;
  }

 private:
  // Seed 002 §3 (simulator, --dram-cache on; a no-op elsewhere): at each persistence point the
  // working state's lines still in the DRAM cache go to NVM (the kernel's output is placed
  // there). A checkpoint needs it for its Fig. 7 cost only, as the copy reads the live state;
  // the result persisted in place at the end needs it to be durable before it is published.
  template <mem::Backend B>
  void flush_dram_cache(B& b) const {
    mem::dram_cache_flush(b, work_, elements_ * sizeof(double));
  }
  template <mem::Backend B>
  void publish_word(B& b, std::uint64_t word) const {
    b.store(&h_->newest, word);
    b.persist(&h_->newest, sizeof(std::uint64_t));
  }

  template <mem::Backend B, class Segments>
  void save(B& b, std::size_t done, Segments& segments) const {
    if (mode_ == CheckpointMode::kAppendOnly) {
      // Only the new steps' elements; the published part is never a target.
      const Newest nw = newest(b);
      std::vector<CopyJob> jobs;
      segments(nw.any ? std::min(nw.done, done) : std::size_t{0}, done,
               [&](std::size_t off, std::size_t count) {
                 jobs.push_back({area_ + off, work_ + off, count});
               });
      const bool early = mem::mutated(b, mem::Mutation::kCommitEarly);  // negative control
      if (early) publish_word(b, static_cast<std::uint64_t>(done) << 2);
      copy_jobs_durable_mode(b, jobs, copy_);
      flush_dram_cache(b);
      if (!early) publish_word(b, static_cast<std::uint64_t>(done) << 2);
      return;
    }
    const auto [slot, slot_jobs] = prepare_slot(b, done, segments);
    if (mem::mutated(b, mem::Mutation::kCommitEarly))  // negative control: publish first
      publish_word(b, (static_cast<std::uint64_t>(done) << 2) | slot);
    copy_jobs_durable_mode(b, slot_jobs, copy_);
    flush_dram_cache(b);
    publish_slot(b, done, slot);
  }

  // The slot not holding the newest checkpoint, and the copies that bring it to state `done`.
  // Invariant: on segments(0, steps) minus segments(base, steps) the slot holds every element's
  // final value (only steps < base write those). Lowering base first keeps that true while the
  // copies overwrite segments(done, steps); a crash mid-copy leaves the next copy into this
  // slot to redo it.
  template <mem::Backend B, class Segments>
  [[nodiscard]] std::pair<std::size_t, std::vector<CopyJob>> prepare_slot(
      B& b, std::size_t done, Segments& segments) const {
    const Newest nw = newest(b);
    const std::size_t slot = nw.any ? 1 - nw.slot : 0;
    const std::size_t base = static_cast<std::size_t>(b.load(&h_->base[slot]));
    if (base > done) {
      b.store(&h_->base[slot], static_cast<std::uint64_t>(done));
      b.persist(&h_->base[slot], sizeof(std::uint64_t));
    }
    std::vector<CopyJob> jobs;
    segments(std::min(base, done), steps_, [&](std::size_t off, std::size_t count) {
      jobs.push_back({area_ + slot * elements_ + off, work_ + off, count});
    });
    return {slot, std::move(jobs)};
  }

  // The slot now holds state `done` entirely. Either of these two words may reach NVM first: a
  // new base with the old `newest` is true of the slot, and an old (lower) base only makes the
  // next copy into this slot larger.
  template <mem::Backend B>
  void publish_slot(B& b, std::size_t done, std::size_t slot) const {
    b.store(&h_->base[slot], static_cast<std::uint64_t>(done));
    b.store(&h_->newest, (static_cast<std::uint64_t>(done) << 2) | slot);
    b.persist(h_, sizeof(StepCheckpointHeader));
  }

  StepCheckpointHeader* h_ = nullptr;
  double* area_ = nullptr;
  double* work_ = nullptr;
  std::size_t elements_ = 0, steps_ = 0, every_ = 1;
  CheckpointMode mode_ = CheckpointMode::kDoubleBuffered;
  CopyMode copy_ = CopyMode::kNt;
};

}  // namespace pmlab::scheme
