// Undo log (thesis Fig. 2.6): log the ranges, flush, fence, set flag, update, flush, fence, clear
// flag.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/mutation.hpp"
#include "pmlab/scheme/lines.hpp"

namespace pmlab::scheme {

// A rows x cols block of T with leading dimension ld, and where its undo copy lives (rows*cols
// contiguous elements). Blocks are positional: the same block list is passed to begin, commit
// and recover, so the log holds no pointers (a pool may map at another address after a crash).
template <class T>
struct LogBlock {
  T* data = nullptr;
  std::size_t rows = 1;
  std::size_t cols = 0;
  std::size_t ld = 0;
  T* log = nullptr;
};

// One transaction slot's flag, on its own line.
struct alignas(64) UndoHeader {
  std::uint64_t in_tx;
  std::uint64_t reserved[7];
};
static_assert(sizeof(UndoHeader) == 64);

class UndoLog {
 public:
  explicit UndoLog(UndoHeader* h) : h_(h) {}

  // Steps 1-3 of Fig. 2.6: copy every block to its log, make the logs durable, then durably
  // set the flag. From here on the blocks may be updated in place.
  template <mem::Backend B, class... T>
  void begin(B& b, const LogBlock<T>&... blocks) const {
    (copy<true>(b, blocks), ...);
    (flush_block(b, blocks.log, 1, blocks.rows * blocks.cols, blocks.rows * blocks.cols), ...);
    b.fence();
    b.store(&h_->in_tx, std::uint64_t{1});
    b.persist(&h_->in_tx, sizeof(std::uint64_t));
  }

  // Steps 4-5: make the updated blocks durable, then durably clear the flag (the log is dead).
  template <mem::Backend B, class... T>
  void commit(B& b, const LogBlock<T>&... blocks) const {
    if (mem::mutated(b, mem::Mutation::kCommitEarly)) {  // negative control: flag first
      b.store(&h_->in_tx, std::uint64_t{0});
      b.persist(&h_->in_tx, sizeof(std::uint64_t));
    }
    (flush_block(b, blocks.data, blocks.rows, blocks.cols, blocks.ld), ...);
    b.fence();
    b.store(&h_->in_tx, std::uint64_t{0});
    b.persist(&h_->in_tx, sizeof(std::uint64_t));
  }

  // If a transaction was interrupted, copies the logs back over the blocks (durably), then
  // clears the flag; true if it rolled back. Idempotent: a crash inside it is recovered again.
  template <mem::Backend B, class... T>
  bool recover(B& b, const LogBlock<T>&... blocks) const {
    if (!in_tx(b)) return false;
    (copy<false>(b, blocks), ...);
    (flush_block(b, blocks.data, blocks.rows, blocks.cols, blocks.ld), ...);
    b.fence();
    b.store(&h_->in_tx, std::uint64_t{0});
    b.persist(&h_->in_tx, sizeof(std::uint64_t));
    return true;
  }

  template <mem::Backend B>
  [[nodiscard]] bool in_tx(B& b) const {
    return b.load(&h_->in_tx) != 0;
  }

 private:
  template <bool ToLog, mem::Backend B, class T>
  static void copy(B& b, const LogBlock<T>& blk) {
    for (std::size_t r = 0; r < blk.rows; ++r) {
      T* d = blk.data + r * blk.ld;
      T* l = blk.log + r * blk.cols;
      for (std::size_t c = 0; c < blk.cols; ++c) {
        if constexpr (ToLog)
          b.store(l + c, b.load(d + c));
        else
          b.store(d + c, b.load(l + c));
      }
    }
  }

  UndoHeader* h_;
};

}  // namespace pmlab::scheme
