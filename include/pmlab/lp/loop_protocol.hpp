// lp::Loop's protocol over any backend (regions, commits, phase boundaries, recovery): what
// Loop::run runs natively and the loop crash test (experiments/loop_crash_test.hpp) simulates.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_kind.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/loop.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::lp::loop_protocol {

/// pmlab's own arrays in a loop's pool, beside the user's and pool::kUserParamsArray.
inline constexpr std::string_view kProgressArray = "lp_progress";   ///< phases [0, value) durable
inline constexpr std::string_view kLayoutArray = "lp_layout";       ///< a LayoutRecord
inline constexpr std::string_view kLoopScheme = "lp-loop";          ///< the header's scheme name
inline constexpr std::uint64_t kLayoutMagic = 0x706f6f6c2d706cull;  ///< "lp-loop"
inline constexpr std::size_t kMaxOutputs = 8;
inline constexpr std::size_t kNameBytes = pool::kMaxArrayName;

/// The layout as the pool stores it, so that a tool without the user's code (pmlab pool check)
/// can find every region's output and validate it.
struct LayoutRecord {
  std::uint64_t magic = kLayoutMagic;
  std::uint64_t phases = 0, first = 0, last = 0, chunk = 0, regions = 0;
  std::uint32_t checksum = 0;
  std::uint32_t outputs = 0;
  char output[kMaxOutputs][kNameBytes] = {};
};

/// Checks a loop's arrays and layout, fills `layout.last` when 0; returns regions per phase.
/// Throws kInvalidArgument.
std::uint64_t resolve(const std::vector<LoopArray>& arrays, LoopLayout& layout);

/// The record of a resolved layout.
[[nodiscard]] LayoutRecord make_record(const LoopLayout& layout, std::uint64_t regions,
                                       ChecksumKind checksum);

/// The pool arrays of a loop: the user's, then the checksum table, progress and layout record.
[[nodiscard]] std::vector<pool::ArraySpec> pool_arrays(const std::vector<LoopArray>& arrays,
                                                       std::uint64_t regions);

/// A pool's layout record, checked enough that view_of cannot leave an array (kPoolCorrupt).
[[nodiscard]] LayoutRecord read_record(const pool::Pool& pool);

/// The loop's view of a pool: outputs, checksum table, progress.
struct View {
  std::vector<double*> outputs;
  std::uint64_t phases = 0, first = 0, last = 0, chunk = 0, regions = 0;
  ChecksumTable table;
  std::uint64_t* progress = nullptr;

  [[nodiscard]] double* begin(std::uint64_t t, std::uint64_t k) const {
    return outputs[t % outputs.size()] + first + k * chunk;
  }
  [[nodiscard]] std::uint64_t length(std::uint64_t k) const {
    return std::min(chunk, last - first - k * chunk);
  }
  /// The checksum of region (t, k)'s output as memory holds it.
  template <ChecksumKind K>
  [[nodiscard]] ChecksumValue fold(std::uint64_t t, std::uint64_t k) const {
    Accumulator<K> acc;
    const std::size_t n = length(k);
    acc.add_block(StoredBlock{begin(t, k), 1, n, n});
    return acc.value();
  }
  /// The slot of phase t's region k holds this use (0: never written).
  [[nodiscard]] static std::uint64_t use_of(std::uint64_t t) { return t + 1; }
};

[[nodiscard]] View view_of(const pool::Pool& pool, const LayoutRecord& rec);

/// One run of the protocol on backend B with checksum kind K. `point` is called at every
/// protocol point (Loop's PMLAB_LOOP_KILL_AT). With `store_outputs`, each region's output range
/// is stored again through the backend once the body returns (the value memory holds): the
/// body writes memory directly, and a backend that models caches (the simulator) sees the
/// region's stores only this way. A write outside the declared range is then never seen, so it
/// never reaches the simulated NVM: the crash test's way of catching an undeclared write.
template <ChecksumKind K, mem::Backend B, class Point>
class Protocol {
 public:
  Protocol(B& be, const View& v, const Loop::Body& body, Point point, bool store_outputs)
      : be_(be), v_(v), body_(body), point_(point), store_outputs_(store_outputs) {}

  /// Region (t, k): the body, then LP's commit (plain stores, no flush, no fence).
  void region(std::uint64_t t, std::uint64_t k) {
    be_.region_begin(id(t, k));
    compute(t, k);
    v_.table.commit(be_, k, v_.template fold<K>(t, k), View::use_of(t));
    be_.region_end(id(t, k));
    point_();
  }
  /// Phases < *progress are durable; phase p = *progress may have run in part. Its regions are
  /// validated against the bank (cleared before p was recorded, so a written slot stamped p is
  /// p's), the others redone and made durable. Returns the phase normal execution resumes at.
  std::uint64_t recover(RecoveryStats& stats) {
    const std::uint64_t p = be_.load(v_.progress);
    if (p >= v_.phases) return v_.phases;
    for (std::uint64_t k = 0; k < v_.regions; ++k) {
      const SlotCheck c = v_.table.check(be_, k, v_.template fold<K>(p, k), View::use_of(p));
      if (c == SlotCheck::kUnwritten) {
        ++stats.regions_unwritten;
      } else {
        ++stats.regions_validated;
        if (c == SlotCheck::kMatch) continue;
        ++stats.regions_inconsistent;
      }
      repair(p, k);
      ++stats.regions_recomputed;
    }
    return p + 1;
  }
  /// Before phase t: phase t - 1's output durable (phase t may overwrite its input), the bank
  /// cleared durably, and only then t recorded. With the record first, a crash while clearing
  /// would leave phase t - 1's checksums to be read as phase t's (rule 2 of the guide).
  void boundary(std::uint64_t t) {
    be_.persist(v_.begin(t - 1, 0), (v_.last - v_.first) * sizeof(double));
    point_();
    ChecksumSlot* slots = v_.table.slot(0);
    for (std::uint64_t k = 0; k < v_.regions; ++k) {
      be_.store(&slots[k].primary, std::uint64_t{0});
      be_.store(&slots[k].secondary, std::uint64_t{0});
      be_.store(&slots[k].tag, std::uint64_t{0});
      be_.store(&slots[k].use, std::uint64_t{0});
    }
    be_.persist(slots, ChecksumTable::bytes_for(v_.regions));
    point_();
    be_.store(v_.progress, t);
    be_.persist(v_.progress, sizeof(std::uint64_t));
    point_();
  }
  /// "done" only once the last phase's output is durable.
  void finish() {
    be_.persist(v_.begin(v_.phases - 1, 0), (v_.last - v_.first) * sizeof(double));
    point_();
  }
  /// Phases [first, phases) and finish(), each phase's regions by the backend's parallel_for.
  void run_from(std::uint64_t first) {
    for (std::uint64_t t = first; t < v_.phases; ++t) {
      if (t > 0) boundary(t);
      be_.parallel_for(0, v_.regions, [&](std::size_t k) { region(t, k); });
      mem::outer_step_done(be_);
    }
    finish();
  }

 private:
  static mem::RegionId id(std::uint64_t t, std::uint64_t k) {
    return {static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(k)};
  }
  void compute(std::uint64_t t, std::uint64_t k) {
    body_(t, k);
    point_();
    if (!store_outputs_) return;
    double* out = v_.begin(t, k);
    for (std::uint64_t i = 0, n = v_.length(k); i < n; ++i) be_.store(out + i, out[i]);
  }
  // Redoes region (p, k) and leaves it durable, its slot committed durably: a crash during
  // recovery is then recovered the same way.
  void repair(std::uint64_t p, std::uint64_t k) {
    be_.region_begin(id(p, k));
    compute(p, k);
    be_.persist(v_.begin(p, k), v_.length(k) * sizeof(double));
    v_.table.commit(be_, k, v_.template fold<K>(p, k), View::use_of(p));
    be_.persist(v_.table.slot(k), sizeof(ChecksumSlot));
    be_.region_end(id(p, k));
    point_();
  }

  B& be_;
  const View& v_;
  const Loop::Body& body_;
  Point point_;
  bool store_outputs_;
};

}  // namespace pmlab::lp::loop_protocol
