// EagerRecompute's region protocol, written once for every kernel: an optional durable
// "in flight" mark, the region's computation, its output made durable, its progress recorded.
#pragma once

#include <cstdint>
#include <optional>

#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/index_record.hpp"

namespace pmlab::scheme {

// The words an EagerRecompute region writes to its index record. `in_flight` is set (durably)
// before a region whose update is in place and not idempotent, so that recovery can tell a
// torn output from an untouched one; regions writing an output they never read leave it empty.
struct EagerMarks {
  std::optional<std::uint64_t> in_flight = std::nullopt;
  std::uint64_t done = 0;
};

// Thesis Fig. 3.1: compute, persist the output (flushes + fence, by `persist_output`), then the
// progress word — IndexRecord::set is itself durable, so the record never runs ahead of the
// data it describes. `id` marks the region for the simulator's statistics and crash points.
template <mem::Backend B, std::size_t N, class Compute, class PersistOutput>
void eager_region(B& be, std::optional<mem::RegionId> id, const IndexRecord<N>& rec,
                  const EagerMarks& marks, Compute&& compute, PersistOutput&& persist_output) {
  if (id) be.region_begin(*id);
  // The payload is read only when the optional holds one, but GCC's -Wmaybe-uninitialized
  // flags the read in the sanitizer build: a known false positive (GCC bug 80635).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  if (marks.in_flight) rec.set(be, 0, *marks.in_flight);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  compute();
  persist_output();
  rec.set(be, 0, marks.done);
  if (id) be.region_end(*id);
}

}  // namespace pmlab::scheme
