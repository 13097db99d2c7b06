// The BEP undo-log transaction (spec §3.6): four epochs per transaction in a per-thread log.
//
//   E1  copy the old value of every line the transaction will write into the log, and the
//       lines' positions (offsets from the heap base: a pool may map elsewhere after a crash);
//   E2  state := ACTIVE;                     E3  the in-place updates (the caller's stores);
//   E4  state := IDLE with done + 1.
// A barrier ends each epoch. The state word holds the flag and the thread's done count together
// (done << 1 | active), so "idle and one more op done" persists atomically: were they two words,
// a crash could keep one without the other and either lose or repeat the transaction. Recovery
// copies an ACTIVE log back over its lines, then durably marks it IDLE with done unchanged, so
// the interrupted op is replayed from its old state; a crash inside recovery repeats it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "pmlab/bep/entry.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/core/error.hpp"

namespace pmlab::bep {

inline constexpr std::size_t kTxMaxLines = 64;  // an SPS swap logs 16, an rbtree fix-up fewer

// One thread's log area (the pool array "txlog" holds one per thread).
struct alignas(64) TxLog {
  std::uint64_t state;  // done << 1 | active
  std::uint64_t reserved0[7];
  std::uint64_t count;  // lines logged by the current (or last) transaction
  std::uint64_t reserved1[7];
  std::uint64_t offsets[kTxMaxLines];  // byte offset of each logged line from the heap base
  std::uint64_t lines[kTxMaxLines][kLineWords];
};

// The thread's finished transactions (its durable progress).
template <mem::Backend B>
[[nodiscard]] std::uint64_t tx_done(B& b, const TxLog& log) {
  return b.load(&log.state) >> 1;
}

template <EpochBackend B>
class Tx {
 public:
  // heap: the base every logged line lies in (the benchmark's pool array).
  Tx(B& b, TxLog& log, std::byte* heap) : b_(b), log_(log), heap_(heap) {}

  // Adds the lines of [p, p + bytes) to the transaction (before begin()).
  void add(const void* p, std::size_t bytes) {
    const auto base = reinterpret_cast<std::uintptr_t>(heap_);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    for (std::uintptr_t l = a / 64 * 64; l < a + bytes; l += 64) {
      const std::uint64_t off = l - base;
      if (std::find(offs_, offs_ + n_, off) != offs_ + n_) continue;
      if (n_ == kTxMaxLines)
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("a BEP transaction logs at most {} lines", kTxMaxLines));
      offs_[n_++] = off;
    }
  }

  // E1 and E2: the old values are durable in the log, then the log is ACTIVE.
  void begin() {
    done_ = tx_done(b_, log_);
    for (std::size_t i = 0; i < n_; ++i) {
      const auto* src = reinterpret_cast<const std::uint64_t*>(heap_ + offs_[i]);
      for (std::size_t k = 0; k < kLineWords; ++k) b_.store(&log_.lines[i][k], b_.load(src + k));
      b_.store(&log_.offsets[i], offs_[i]);
    }
    b_.store(&log_.count, std::uint64_t{n_});
    b_.barrier();
    b_.store(&log_.state, done_ << 1 | 1);
    b_.barrier();
  }

  // Ends E3 (the caller's in-place stores), then E4: IDLE and one more op done.
  void commit() {
    b_.barrier();
    b_.store(&log_.state, (done_ + 1) << 1);
    b_.barrier();
  }

 private:
  B& b_;
  TxLog& log_;
  std::byte* heap_;
  std::uint64_t offs_[kTxMaxLines] = {};
  std::size_t n_ = 0;
  std::uint64_t done_ = 0;
};

// In the simulator, a critical section that runs a transaction reads the previous holder's
// commit (its state word) on entry, so that under a hardware barrier it persists after it:
// EpochTracked::order_critical_sections_after.
template <EpochBackend B>
void order_sections_after_commits(B& b, const TxLog* logs) {
  if constexpr (requires { b.order_critical_sections_after(&logs[0].state, sizeof(TxLog)); })
    b.order_critical_sections_after(&logs[0].state, sizeof(TxLog));
}

// Rolls back an interrupted transaction of this log; true if there was one. Idempotent.
template <EpochBackend B>
bool tx_recover(B& b, TxLog& log, std::byte* heap) {
  const std::uint64_t state = b.load(&log.state);
  if ((state & 1) == 0) return false;
  const std::uint64_t count = std::min<std::uint64_t>(b.load(&log.count), kTxMaxLines);
  for (std::uint64_t i = 0; i < count; ++i) {
    auto* dst = reinterpret_cast<std::uint64_t*>(heap + b.load(&log.offsets[i]));
    for (std::size_t k = 0; k < kLineWords; ++k) b.store(dst + k, b.load(&log.lines[i][k]));
  }
  b.barrier();
  b.store(&log.state, state & ~std::uint64_t{1});
  b.barrier();
  return true;
}

}  // namespace pmlab::bep
