// Undo log (thesis Fig. 2.6): log the ranges, flush, fence, set flag, update, flush, fence, clear
// flag.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "pmlab/core/error.hpp"
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

// The per-store log format: one record per element the transaction will update — where it is
// and what it held —, as general-purpose undo logs (PMDK's, the LP paper's WAL) keep it, instead
// of a raw copy of the block. For 8-byte elements it doubles the log's bytes; recovery writes
// each record back by its offset, so it needs the block's shape only to bound-check the offset.
struct LogEntry {
  std::uint64_t offset;  // element offset from the block's first element: row * ld + col
  std::uint64_t bits;    // the element's bytes before the transaction
};
static_assert(sizeof(LogEntry) == 16);

// Which of the two formats a scheme's undo log uses, and how its records are made durable.
enum class LogFormat {
  kBlock,        // a raw copy of each block (thesis Fig. 2.6's cLog), one fence per log
  kEntry,        // one {offset, old value} record per element (LogEntry), one fence per log
  kEntrySynced,  // kEntry's records, each log line flushed and fenced as soon as it is full
};

// True for the formats that keep one LogEntry per element.
[[nodiscard]] constexpr bool entry_format(LogFormat f) {
  return f == LogFormat::kEntry || f == LogFormat::kEntrySynced;
}

// A block logged in the per-store format: rows * cols records at `log`. With `sync_lines`, each
// line of records is made durable (flush + fence) once its 4 records are written, as a WAL that
// persists every record before the store it guards must: a log line is the finest grain that
// does not write a line to NVM more than once, so the fence count is one per 4 stores
// (docs/sim-reproduction.md, "A fence per log line").
template <class T>
struct EntryLogBlock {
  static_assert(sizeof(T) == sizeof(std::uint64_t), "a record holds one 8-byte element");
  T* data = nullptr;
  std::size_t rows = 1;
  std::size_t cols = 0;
  std::size_t ld = 0;
  LogEntry* log = nullptr;
  bool sync_lines = false;
};

// Either kind of logged block.
template <class Blk>
concept LoggedBlock = requires(const Blk& blk) {
  blk.data;
  blk.log;
  { blk.rows } -> std::convertible_to<std::size_t>;
  { blk.cols } -> std::convertible_to<std::size_t>;
  { blk.ld } -> std::convertible_to<std::size_t>;
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
  template <mem::Backend B, LoggedBlock... Blk>
  void begin(B& b, const Blk&... blocks) const {
    (copy<true>(b, blocks), ...);
    (flush_log(b, blocks), ...);
    b.fence();
    b.store(&h_->in_tx, std::uint64_t{1});
    b.persist(&h_->in_tx, sizeof(std::uint64_t));
  }

  // Steps 4-5: make the updated blocks durable, then durably clear the flag (the log is dead).
  template <mem::Backend B, LoggedBlock... Blk>
  void commit(B& b, const Blk&... blocks) const {
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
  template <mem::Backend B, LoggedBlock... Blk>
  bool recover(B& b, const Blk&... blocks) const {
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

  template <mem::Backend B, class T>
  static void flush_log(B& b, const LogBlock<T>& blk) {
    flush_lines(b, blk.log, blk.rows * blk.cols * sizeof(T));
  }
  template <mem::Backend B, class T>
  static void flush_log(B& b, const EntryLogBlock<T>& blk) {
    if (blk.sync_lines) return;  // every line was flushed (and fenced) as it filled
    flush_lines(b, blk.log, blk.rows * blk.cols * sizeof(LogEntry));
  }

  // Records are written in the block's row-major order and written back in any order (each
  // element has one record). An offset outside the block can only come from a damaged pool:
  // refuse it rather than write outside the block.
  template <bool ToLog, mem::Backend B, class T>
  static void copy(B& b, const EntryLogBlock<T>& blk) {
    LogEntry* e = blk.log;
    if constexpr (ToLog) {
      LogEntry* const end = blk.log + blk.rows * blk.cols;
      for (std::size_t r = 0; r < blk.rows; ++r)
        for (std::size_t c = 0; c < blk.cols; ++c, ++e) {
          const std::uint64_t offset = r * blk.ld + c;
          b.store(&e->offset, offset);
          b.store(&e->bits, std::bit_cast<std::uint64_t>(b.load(blk.data + offset)));
          if (blk.sync_lines && (ends_line(e + 1) || e + 1 == end)) {
            b.flush(e);
            b.fence();
          }
        }
    } else {
      for (std::size_t i = 0; i < blk.rows * blk.cols; ++i, ++e) {
        const std::uint64_t offset = b.load(&e->offset);
        if (offset / blk.ld >= blk.rows || offset % blk.ld >= blk.cols)
          throw Error(ErrorCode::kPoolCorrupt, "undo log record points outside its block (offset " +
                                                   std::to_string(offset) +
                                                   "): the pool is damaged");
        b.store(blk.data + offset, std::bit_cast<T>(b.load(&e->bits)));
      }
    }
  }

  static bool ends_line(const LogEntry* next) {
    return reinterpret_cast<std::uintptr_t>(next) % kCacheLineBytes == 0;
  }

  UndoHeader* h_;
};

}  // namespace pmlab::scheme
