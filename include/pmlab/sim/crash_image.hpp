// The crash image: for each registered persistent range, exactly the bytes that reached NVM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "pmlab/core/strong_types.hpp"

namespace pmlab::sim {

// Thrown by SimBackend when an armed crash point is reached; unwinds the kernel by design.
class PowerFailure : public std::exception {
 public:
  explicit PowerFailure(std::uint64_t op)
      : op_(op), what_("simulated power failure before op " + std::to_string(op)) {}
  [[nodiscard]] std::uint64_t op() const { return op_; }  // the op that did not happen
  [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::uint64_t op_;
  std::string what_;
};

// Thrown by the persist-order oracle (SimBackend::check_order) when a line reaches NVM out of
// epoch order: a verification failure of the machine (exit 1), not a usage or pool error.
class OrderViolation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PersistOracle;  // src/sim/persist_oracle.hpp

// Shadow copies of registered ranges. Registration copies the live bytes (the range counts as
// persisted at setup); capture_line copies one line's live bytes when it is written to NVM;
// restore_to_live copies the shadow back, which is what memory holds after a power failure.
class CrashImage {
 public:
  // Throws kInvalidArgument for an empty or null range or one overlapping a registered range.
  void add_range(const void* base, std::size_t len);
  void clear() {
    ranges_.clear();
    unfenced_.clear();
    preflushes_.clear();
  }

  // Copies the live bytes of `line` that lie inside registered ranges into the shadow, and
  // tells the persist-order oracle when one is attached (it may throw OrderViolation).
  void capture_line(LineAddr line);
  // The same with the line's 64 bytes taken from `bytes` instead of live memory (seed 002's DRAM
  // cache hands NVM the copy it held, src/sim/dram_cache.hpp).
  void capture_line_from(LineAddr line, const std::byte* bytes);
  // Attaches (or with nullptr detaches) the oracle every capture of a registered line reports to.
  void set_oracle(PersistOracle* o) { oracle_ = o; }
  // Whether any byte of `line` lies in a registered range (only those lines have a persist order).
  [[nodiscard]] bool covers_line(LineAddr line) const;
  // Whether the registered bytes of `line` hold their live values (true outside every range).
  [[nodiscard]] bool line_durable(LineAddr line) const;
  // Copies every shadow back into live memory.
  void restore_to_live() const;
  // What restore_to_live does to memory, done to `dst`, a copy of the live bytes from
  // `live_base` on: each shadow goes to its range's offset from live_base. False, with nothing
  // written, if a range lies outside [live_base, live_base + dst.size()).
  [[nodiscard]] bool restore_into(std::span<std::byte> dst, const void* live_base) const;
  // The reverse: every shadow := its range's bytes in `image`, a copy of memory from `live_base`
  // on (what restore_into made); a crash campaign's batched trial puts its crash image back so.
  // False, with nothing written, if a range lies outside [live_base, live_base + image.size()).
  [[nodiscard]] bool load_from(std::span<const std::byte> image, const void* live_base);

  // --- adversarial images (crash campaigns' "any-dirty" model) ---
  // The simulator writes a flushed line to the image at once; on real hardware it may still be
  // in flight until the flushing core's fence. note_flush (before the flush reaches the
  // machine) remembers the line's durable bytes, note_fence forgets every line that core
  // flushed: what is left at a crash are flushes that may not have completed.
  void note_flush(LineAddr line, int core);
  void note_fence(int core);
  void forget_unfenced() {
    unfenced_.clear();
    preflushes_.clear();
  }
  // PreFlush (thesis Ch. 5) writes a line back behind a store, and no fence waits for it until
  // the real flush it ACKs early is fenced. With tracking on (track_preflushes, set with
  // SimBackend::track_unfenced), note_preflush (before the write) remembers the line's durable
  // bytes and preflush_done when the write completes; note_preflush_fence(core, t), at a fence
  // of `core` completing at t, forgets its PreFlushes done by then; a fenced real flush of the
  // line forgets them too (the controller keeps one line's writes in order). What is left at a
  // crash may not have landed: perturb undoes each as it undoes an unfenced flush.
  void track_preflushes(bool on) { track_preflushes_ = on; }
  void note_preflush(LineAddr line, int core);
  void preflush_done(LineAddr line, std::uint64_t done);
  void note_preflush_fence(int core, std::uint64_t t);
  [[nodiscard]] std::size_t unfenced_lines() const { return unfenced_.size(); }
  // How likely each pending line is to have reached NVM when perturb draws an image.
  enum class ReachOdds : std::uint8_t {
    kHalf,    // probability 1/2 for every line (the any-dirty model)
    kSkewed,  // one probability p per image, drawn uniformly from [0, 1) first (the skewed model)
  };
  // Turns the image into another legal one, as the property tests' any-legal-image backend
  // does: each unfenced flush is undone (its write did not reach NVM) with probability 1 - p,
  // then each line whose live bytes differ from the image (dirty in some cache) reaches NVM
  // with its current bytes with probability p, independently; p = 1/2 (kHalf) or drawn per
  // image (kSkewed: most images lie near "almost every line" or "almost none", the corners where
  // a commit record or every checksum reached NVM and a few data lines did not). Every line
  // then holds a version it had, never older than a completed flush + fence made durable.
  // Clears the unfenced set.
  void perturb(std::mt19937_64& rng, ReachOdds odds = ReachOdds::kHalf);
  // What perturb(rng, odds) would make of the image, written to `dst` as restore_into writes it
  // (a copy of memory from `live_base` on), with the same draws in the same order; the image
  // itself does not change. False, with nothing written or drawn, if a range lies outside dst.
  [[nodiscard]] bool perturbed_into(std::span<std::byte> dst, const void* live_base,
                                    std::mt19937_64& rng, ReachOdds odds = ReachOdds::kHalf) const;
  // Every shadow, for putting the image back after a measuring run (crash campaigns measure a
  // recovery's length before cutting it).
  [[nodiscard]] std::vector<std::vector<std::byte>> save() const;
  void load(const std::vector<std::vector<std::byte>>& saved);  // from save(); clears unfenced

  [[nodiscard]] std::size_t range_count() const { return ranges_.size(); }
  [[nodiscard]] bool covers(const void* p) const {
    return find(reinterpret_cast<std::uintptr_t>(p)) != nullptr;
  }
  [[nodiscard]] std::span<const std::byte> shadow_of(const void* base) const;  // empty if unknown
  // The durable value at live address p (p inside a registered range; else kInvalidArgument).
  template <class T>
  requires std::is_trivially_copyable_v<T>
  [[nodiscard]] T durable(const T* p) const {
    T v;
    std::memcpy(&v, durable_bytes(p, sizeof(T)), sizeof(T));
    return v;
  }

 private:
  struct Range {
    std::uintptr_t base = 0;
    std::size_t len = 0;
    std::vector<std::byte> shadow;
  };
  [[nodiscard]] const Range* find(std::uintptr_t addr) const;
  [[nodiscard]] const std::byte* durable_bytes(const void* p, std::size_t n) const;
  // Copies one line's durable bytes (its shadow, inside registered ranges) into `buf` (64
  // bytes). False if the line is in no range.
  bool durable_line(LineAddr line, std::byte* buf) const;

  struct Unfenced {
    std::byte prior[kCacheLineBytes];  // the line's durable bytes before its first flush
    std::uint64_t cores = 0;           // bit c: core c flushed it since its last fence
  };
  std::vector<Range> ranges_;  // sorted by base, disjoint
  PersistOracle* oracle_ = nullptr;
  std::unordered_map<std::uint64_t, Unfenced> unfenced_;
  struct PendingPreflush {
    std::byte prior[kCacheLineBytes];  // the line's durable bytes before its first PreFlush
    int core = 0;
    std::uint64_t done = ~std::uint64_t{0};
  };
  bool track_preflushes_ = false;
  std::unordered_map<std::uint64_t, PendingPreflush> preflushes_;
};

}  // namespace pmlab::sim
