// Hybrid partial copier (thesis §3.2.1): 1/X of the output saved per outer iteration, round robin,
// so recovery recomputes from the latest copy (at most 2X outer iterations old) instead of zero.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"

namespace pmlab::scheme {

// The names of Hybrid Recompute's copy arrays (PartialCopier's and BandCopier's).
inline constexpr std::string_view kHrCopyArray = "hr_copy";
inline constexpr std::string_view kHrPartsArray = "hr_parts";

// Per part, per copy slot: how many outer iterations the copy holds; 0 = none, or being written.
struct alignas(64) PartState {
  std::uint64_t done[2];
  std::uint64_t reserved[6];
};
static_assert(sizeof(PartState) == 64);

// The output (`elements` doubles) is cut into `parts` contiguous element ranges; outer iteration
// t saves part t % parts. Each part has two copy slots used alternately (cycle t / parts), so a
// crash while a slot is rewritten still leaves the previous cycle's copy intact.
class PartialCopier {
 public:
  PartialCopier() = default;
  PartialCopier(double* out, double* copies, PartState* states, std::size_t elements,
                std::size_t parts)
      : out_(out),
        copies_(copies),
        states_(states),
        elements_(elements),
        parts_(parts < 1 ? 1 : parts) {}

  [[nodiscard]] static constexpr std::size_t copy_bytes(std::size_t elements) {
    return 2 * elements * sizeof(double);
  }
  [[nodiscard]] static constexpr std::size_t state_bytes(std::size_t parts) {
    return parts * sizeof(PartState);
  }
  [[nodiscard]] std::size_t parts() const { return parts_; }
  [[nodiscard]] std::size_t part_begin(std::size_t p) const { return elements_ * p / parts_; }
  [[nodiscard]] std::size_t part_of(std::size_t e) const {
    std::size_t p = std::min(parts_ - 1, e * parts_ / elements_);
    while (p > 0 && part_begin(p) > e) --p;
    while (p + 1 < parts_ && part_begin(p + 1) <= e) ++p;
    return p;
  }

  // Saves part (outer % parts) of the output, which holds `done` outer iterations, durably:
  // invalidate the slot, copy, publish. Runs the copy over the backend's threads.
  template <mem::Backend B>
  void save(B& b, std::size_t outer, std::uint64_t done) const {
    const std::size_t p = outer % parts_, slot = (outer / parts_) % 2;
    const std::size_t lo = part_begin(p), hi = part_begin(p + 1);
    std::uint64_t* word = &states_[p].done[slot];
    b.store(word, std::uint64_t{0});
    b.persist(word, sizeof(std::uint64_t));
    copy_durable_parallel(b, {{slot_base(slot) + lo, out_ + lo, hi - lo}});
    b.store(word, done);
    b.persist(word, sizeof(std::uint64_t));
  }

  struct Latest {
    int slot = -1;           // -1: no usable copy, start from the initial value (zero)
    std::uint64_t done = 0;  // outer iterations the copy holds
  };
  // The newest valid copy of part p holding at most `limit` outer iterations.
  template <mem::Backend B>
  [[nodiscard]] Latest latest(B& b, std::size_t p, std::uint64_t limit) const {
    Latest best;
    for (int s = 0; s < 2; ++s) {
      const std::uint64_t d = b.load(&states_[p].done[s]);
      if (d != 0 && d <= limit && (best.slot < 0 || d > best.done)) best = {s, d};
    }
    return best;
  }

  // Rewrites out[e0, e1) from the latest copies (or zero) holding at most `limit` iterations and
  // calls recompute(lo, hi, done) for each piece so the caller can bring it forward. Not
  // persisted: the caller persists once the pieces are recomputed.
  template <mem::Backend B, class Fn>
  void restore(B& b, std::size_t e0, std::size_t e1, std::uint64_t limit, Fn&& recompute) const {
    while (e0 < e1) {
      const std::size_t p = part_of(e0);
      const std::size_t hi = std::min(e1, part_begin(p + 1));
      const Latest l = latest(b, p, limit);
      for (std::size_t e = e0; e < hi; ++e)
        b.store(out_ + e,
                l.slot < 0 ? 0.0 : b.load(slot_base(static_cast<std::size_t>(l.slot)) + e));
      recompute(e0, hi, l.done);
      e0 = hi;
    }
  }

 private:
  [[nodiscard]] double* slot_base(std::size_t slot) const { return copies_ + slot * elements_; }

  double* out_ = nullptr;
  double* copies_ = nullptr;
  PartState* states_ = nullptr;
  std::size_t elements_ = 0;
  std::size_t parts_ = 1;
};

}  // namespace pmlab::scheme
