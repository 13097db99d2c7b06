// Persisted loop-index record: N indices advanced atomically by the log + in-transaction-flag
// protocol of thesis Fig. 3.1 lines 24-37 (log, flush, fence; flag; update; clear flag).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pmlab/mem/backend.hpp"

namespace pmlab::scheme {

// The name of EagerRecompute's (and Hybrid Recompute's) pool array of index records.
inline constexpr std::string_view kEpIndexArray = "ep_index";

// One record on its own cache line(s): records of different panels/threads never share a line,
// so concurrent writers never collide and a flush of one record never drags another along.
template <std::size_t N>
struct alignas(64) IndexRecordLayout {
  std::uint64_t value[N];  // the live indices
  std::uint64_t log[N];    // their values before the update in flight
  std::uint64_t in_tx;     // nonzero while value[] may be partially updated
};
static_assert(sizeof(IndexRecordLayout<3>) == 64);

// A view of one persistent record. A zero-filled record holds all-zero indices, not in a tx.
// Only 8-byte atomicity and fence ordering are assumed, never line atomicity.
template <std::size_t N>
class IndexRecord {
 public:
  using Values = std::array<std::uint64_t, N>;

  explicit IndexRecord(IndexRecordLayout<N>* r) : r_(r) {}

  template <mem::Backend B>
  [[nodiscard]] std::uint64_t get(B& b, std::size_t i) const {
    return b.load(&r_->value[i]);
  }
  template <mem::Backend B>
  [[nodiscard]] Values values(B& b) const {
    Values v{};
    for (std::size_t i = 0; i < N; ++i) v[i] = b.load(&r_->value[i]);
    return v;
  }
  template <mem::Backend B>
  [[nodiscard]] bool in_tx(B& b) const {
    return b.load(&r_->in_tx) != 0;
  }

  // One index, durably: an aligned 8-byte store is failure-atomic, so no log is needed
  // (Fig. 3.1 lines 19-22: store, flush, fence).
  template <mem::Backend B>
  void set(B& b, std::size_t i, std::uint64_t v) const {
    b.store(&r_->value[i], v);
    b.persist(&r_->value[i], sizeof(std::uint64_t));
  }

  // All N indices at once: after a crash at any point, recover() yields either the old or the
  // new values, never a mix.
  template <mem::Backend B>
  void update(B& b, const Values& next) const {
    for (std::size_t i = 0; i < N; ++i) b.store(&r_->log[i], b.load(&r_->value[i]));
    b.persist(r_->log, sizeof(r_->log));
    b.store(&r_->in_tx, std::uint64_t{1});
    b.persist(&r_->in_tx, sizeof(std::uint64_t));
    for (std::size_t i = 0; i < N; ++i) b.store(&r_->value[i], next[i]);
    b.persist(r_->value, sizeof(r_->value));
    b.store(&r_->in_tx, std::uint64_t{0});
    b.persist(&r_->in_tx, sizeof(std::uint64_t));
  }

  // Rolls an interrupted update back to the logged values; true if it had to. Idempotent and
  // durable step by step, so a crash inside recover() is handled by the next recover().
  template <mem::Backend B>
  bool recover(B& b) const {
    if (!in_tx(b)) return false;
    for (std::size_t i = 0; i < N; ++i) b.store(&r_->value[i], b.load(&r_->log[i]));
    b.persist(r_->value, sizeof(r_->value));
    b.store(&r_->in_tx, std::uint64_t{0});
    b.persist(&r_->in_tx, sizeof(std::uint64_t));
    return true;
  }

 private:
  IndexRecordLayout<N>* r_;
};

// A collision-free array of records, one per key (panel, thread, ...).
template <std::size_t N>
class IndexRecordTable {
 public:
  IndexRecordTable() = default;
  IndexRecordTable(IndexRecordLayout<N>* base, std::size_t count) : base_(base), count_(count) {}
  [[nodiscard]] static constexpr std::size_t bytes_for(std::size_t count) {
    return count * sizeof(IndexRecordLayout<N>);
  }
  [[nodiscard]] IndexRecord<N> operator[](std::size_t i) const { return IndexRecord<N>(base_ + i); }
  [[nodiscard]] std::size_t size() const { return count_; }

 private:
  IndexRecordLayout<N>* base_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace pmlab::scheme
