// Undo-logged regions over independent units (tiles, row blocks, output groups): per unit an
// undo flag and a progress word logged in the same transaction as the unit's data (Fig. 2.6).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/undo_log.hpp"

namespace pmlab::scheme {

// The names of a WAL scheme's pool arrays (spelled here only).
inline constexpr std::string_view kWalHeaderArray = "wal_header";
inline constexpr std::string_view kWalIndexArray = "wal_index";
inline constexpr std::string_view kWalLogArray = "wal_log";

// A unit's progress (what its last committed transaction reached), and its value before the
// transaction in flight. Own line: units of concurrent regions never share one.
struct alignas(64) WalProgress {
  std::uint64_t value;
  std::uint64_t log;
  std::uint64_t reserved[6];
};
static_assert(sizeof(WalProgress) == 64);

// The three pool arrays of a WAL scheme: `wal_header` (one UndoHeader per unit), `wal_index`
// (one WalProgress per unit) and `wal_log`, whose layout the kernel fixes (each unit's log at a
// fixed place, so that no pointer is stored in PM and concurrent units never share log space).
//
// The kernel lays its blocks' logs out in doubles from `log`, whatever the format. In the
// per-store format (LogFormat::kEntry, thesis Fig. 2.6's address/value entries) element i of
// that layout is LogEntry i of the same array, which is therefore twice as large
// (entry_log_bytes); `log` then only numbers the elements and is never read or written.
struct WalUnits {
  UndoHeader* headers = nullptr;
  WalProgress* progress = nullptr;
  double* log = nullptr;
  LogFormat format = LogFormat::kBlock;

  [[nodiscard]] static constexpr std::size_t header_bytes(std::size_t units) {
    return units * sizeof(UndoHeader);
  }
  [[nodiscard]] static constexpr std::size_t progress_bytes(std::size_t units) {
    return units * sizeof(WalProgress);
  }
  // The log array's bytes in the per-store format, for a block-format layout of `block_bytes`.
  [[nodiscard]] static constexpr std::size_t entry_log_bytes(std::size_t block_bytes) {
    return block_bytes / sizeof(double) * sizeof(LogEntry);
  }

  template <mem::Backend B>
  [[nodiscard]] std::uint64_t progress_of(B& b, std::size_t u) const {
    return b.load(&progress[u].value);
  }
  template <mem::Backend B>
  [[nodiscard]] bool in_tx(B& b, std::size_t u) const {
    return UndoLog(&headers[u]).in_tx(b);
  }
  // The progress before the open transaction of unit u: it names the region in flight. Valid
  // whenever in_tx(u), because the log is durable before the flag is set.
  template <mem::Backend B>
  [[nodiscard]] std::uint64_t logged_progress(B& b, std::size_t u) const {
    return b.load(&progress[u].log);
  }

  // One region as a transaction on unit u: log `blocks` and the progress word, persist the log,
  // set the flag (UndoLog::begin); body() updates the blocks in place; progress = next; flush the
  // blocks and the progress line, clear the flag (UndoLog::commit).
  template <mem::Backend B, class Body, class... T>
  void transact(B& b, std::size_t u, std::uint64_t next, Body&& body,
                const LogBlock<T>&... blocks) const {
    const UndoLog tx(&headers[u]);
    const auto idx = progress_block(u);
    const auto run = [&](const auto&... logged) {
      tx.begin(b, logged..., idx);
      body();
      b.store(&progress[u].value, next);
      tx.commit(b, logged..., idx);
    };
    if (format == LogFormat::kEntry)
      run(as_entries(blocks)...);
    else
      run(blocks...);
  }

  // Rolls an open transaction of unit u back (blocks and progress); true if it had to.
  template <mem::Backend B, class... T>
  bool roll_back(B& b, std::size_t u, const LogBlock<T>&... blocks) const {
    const UndoLog tx(&headers[u]);
    if (format == LogFormat::kEntry) return tx.recover(b, as_entries(blocks)..., progress_block(u));
    return tx.recover(b, blocks..., progress_block(u));
  }

 private:
  // A block's log in the per-store format: its records start at the record numbered like the
  // block's first log element.
  template <class T>
  [[nodiscard]] EntryLogBlock<T> as_entries(const LogBlock<T>& blk) const {
    return {blk.data, blk.rows, blk.cols, blk.ld,
            reinterpret_cast<LogEntry*>(log) + (reinterpret_cast<const double*>(blk.log) - log)};
  }

  [[nodiscard]] LogBlock<std::uint64_t> progress_block(std::size_t u) const {
    return {&progress[u].value, 1, 1, 1, &progress[u].log};
  }
};

}  // namespace pmlab::scheme
