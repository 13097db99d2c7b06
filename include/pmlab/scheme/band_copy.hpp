// Hybrid Recompute's partial copies for in-place kernels: 1/X of the working array's row bands
// (tile rows, row blocks) saved per outer step, round robin, two slots per part.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/partial_copy.hpp"

namespace pmlab::scheme {

// Thesis §3.2.1 for kernels whose unit of consistency is a tile or a row block, not an element:
// PartialCopier cuts C at arbitrary element boundaries, which is fine for tmm (every C element
// can be recomputed alone) but would split a tile between copies of different ages. Here the
// working array (`elements` doubles, same layout in each copy slot) is cut into `bands` bands
// (a tile row or row block each), grouped into `parts` contiguous runs of bands; outer step t
// saves part t mod parts into slot (t / parts) mod 2, with PartialCopier's protocol
// (invalidate the slot's word, copy durably, publish the steps it holds). A band's copy is
// therefore one consistent state, and the other slot keeps the previous cycle's copy while one
// is rewritten.
//
// The kernel says which elements a band holds: band_segments(band, fn) calls fn(offset, count).
class BandCopier {
 public:
  BandCopier() = default;
  BandCopier(double* work, double* copies, PartState* states, std::size_t elements,
             std::size_t bands, std::size_t parts)
      : work_(work),
        copies_(copies),
        states_(states),
        elements_(elements),
        bands_(bands),
        parts_(parts < 1 ? 1 : parts) {}

  [[nodiscard]] static constexpr std::size_t copy_bytes(std::size_t elements) {
    return 2 * elements * sizeof(double);
  }
  [[nodiscard]] static constexpr std::size_t state_bytes(std::size_t parts) {
    return (parts < 1 ? 1 : parts) * sizeof(PartState);
  }
  [[nodiscard]] std::size_t parts() const { return parts_; }
  [[nodiscard]] std::size_t first_band(std::size_t p) const { return bands_ * p / parts_; }
  [[nodiscard]] std::size_t part_of(std::size_t band) const {
    std::size_t p = band * parts_ / (bands_ == 0 ? 1 : bands_);
    while (p > 0 && first_band(p) > band) --p;
    while (p + 1 < parts_ && first_band(p + 1) <= band) ++p;
    return p;
  }
  // Slot s's copy of the working array (same layout: element e at slot_data(s)[e]).
  [[nodiscard]] const double* slot_data(std::size_t slot) const {
    return copies_ + slot * elements_;
  }

  // Saves part (outer mod parts), whose bands hold `done` outer steps, durably. Parts without
  // bands (more parts than bands) are skipped.
  template <mem::Backend B, class BandSegments>
  void save(B& b, std::size_t outer, std::uint64_t done, BandSegments&& band_segments) const {
    const std::size_t p = outer % parts_, slot = (outer / parts_) % 2;
    if (first_band(p) == first_band(p + 1)) return;
    std::vector<CopyJob> jobs;
    for (std::size_t u = first_band(p); u < first_band(p + 1); ++u)
      band_segments(u, [&](std::size_t off, std::size_t count) {
        jobs.push_back({copies_ + slot * elements_ + off, work_ + off, count});
      });
    std::uint64_t* word = &states_[p].done[slot];
    b.store(word, std::uint64_t{0});
    b.persist(word, sizeof(std::uint64_t));
    copy_jobs_durable(b, jobs);
    b.store(word, done);
    b.persist(word, sizeof(std::uint64_t));
  }

  // Outer steps held by each slot's copy of `band` (0: none, or being rewritten).
  template <mem::Backend B>
  [[nodiscard]] std::array<std::uint64_t, 2> held(B& b, std::size_t band) const {
    const PartState& s = states_[part_of(band)];
    return {b.load(&s.done[0]), b.load(&s.done[1])};
  }

 private:
  double* work_ = nullptr;
  double* copies_ = nullptr;
  PartState* states_ = nullptr;
  std::size_t elements_ = 0, bands_ = 0, parts_ = 1;
};

}  // namespace pmlab::scheme
