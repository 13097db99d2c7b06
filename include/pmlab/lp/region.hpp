// The LP region API: begin, add each written value, commit the checksum with a plain store.
#pragma once

#include <cstddef>

#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::lp {

/// One LP region in flight: stores through the backend, folding each value into the region's
/// checksum; commit() writes the checksum to its slot with plain stores. Thread-private by
/// construction: each thread builds its own.
template <ChecksumKind K, mem::Backend B>
class Region {
 public:
  /// Begins region `id` whose checksum goes to slot `slot` of `table`.
  Region(B& backend, const ChecksumTable& table, std::size_t slot, mem::RegionId id)
      : backend_(backend), table_(table), slot_(slot), id_(id) {
    table_.prefetch(slot_);  // the commit's slot arrives while the region works
    backend_.region_begin(id_);
  }
  /// Stores v at p through the backend and folds it into the region checksum.
  void store(double* p, double v) {
    backend_.store(p, v);
    acc_.add(v);
  }
  /// Folds v into the checksum without storing it (a value the region wrote otherwise).
  void add(double v) { acc_.add(v); }
  /// Folds a block of values the region has just stored (Accumulator::add_block).
  void add_block(const StoredBlock& b) { acc_.add_block(b); }
  /// Folds words summed and XORed elsewhere (Accumulator::add_words; commutative kinds).
  void add_words(std::uint64_t sum, std::uint64_t x) { acc_.add_words(sum, x); }
  /// Ends the region: plain stores of checksum and tag, no flush, no fence (that is the point
  /// of LP).
  void commit() {
    table_.commit(backend_, slot_, acc_.value());
    backend_.region_end(id_);
  }
  /// The checksum of the values stored so far.
  [[nodiscard]] ChecksumValue value() const { return acc_.value(); }

 private:
  B& backend_;
  const ChecksumTable& table_;
  std::size_t slot_;
  mem::RegionId id_;
  Accumulator<K> acc_;
};

}  // namespace pmlab::lp
