// NVM row-buffer model (thesis Ch. 4, Table 4.1): banks with open rows behind a merging write
// queue drained FR-FCFS; counts "row writes" (a row holding modified data is closed). Untimed.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace pmlab::sim {

// Geometry and controller policy. Off by default: with `enabled = false` the hierarchy never
// calls the model and every other statistic is unchanged.
struct RowBufferParams {
  bool enabled = false;
  std::uint32_t channels = 1;
  std::uint32_t ranks = 2;         // per channel
  std::uint32_t banks = 8;         // per rank
  std::uint32_t row_bytes = 1024;  // row-buffer size
  std::uint32_t rq_entries = 32;   // read queue (recorded; the untimed model never fills it)
  std::uint32_t wq_entries = 64;   // write queue
  double wq_high = 0.85;           // drain starts when occupancy reaches ceil(high x entries)
  double wq_low = 0.50;            // and stops once at or below floor(low x entries) ...
  std::uint32_t min_writes_per_drain = 16;  // ... and at least this many writes were done
  bool merge = true;                        // a write to a queued line updates that entry
  // Device timing (ns), used only by the timed controller (nvm.write_queue = banks, timed_nvm.hpp):
  // a row hit's read is t_cl + t_burst; opening a row in a bank with another row open costs t_rp
  // first, and t_wr before that when the open row holds written data (the thesis' row write).
  // Defaults: thesis Table 3.1 (t_rcd, t_cl, t_wr; t_burst = 64 B on its 64-bit bus at 800 MHz
  // DDR); t_rp is not in the table: gem5's DDR3-1600 value, pmlab's choice.
  double t_rcd_ns = 55.0;   // activate: row to column
  double t_cl_ns = 12.5;    // column access
  double t_wr_ns = 150.0;   // write recovery: paid once when a dirty row closes
  double t_rp_ns = 13.75;   // precharge
  double t_burst_ns = 5.0;  // one 64-byte line on the data bus

  [[nodiscard]] std::uint32_t bank_count() const { return channels * ranks * banks; }
  [[nodiscard]] std::uint32_t high_mark() const;  // occupancy that starts a drain
  [[nodiscard]] std::uint32_t low_mark() const;   // occupancy a drain goes down to
  void validate() const;                          // throws pmlab::Error(kInvalidArgument)
};

// How a bank served one access (the timed controller charges by it).
enum class RowOutcome : std::uint8_t {
  kForwarded,   // a read served from the write queue: no bank access
  kHit,         // the row was open
  kClosed,      // no row was open: activate
  kConflict,    // another, clean row was open: precharge, activate
  kDirtyClose,  // another row holding written data was open: write recovery, precharge, activate
};

struct RowBufferStats {
  std::uint64_t row_writes = 0;         // dirty rows closed during the run (thesis' metric)
  std::uint64_t rows_dirty_at_end = 0;  // dirty rows still open at the snapshot
  std::uint64_t activations_read = 0;
  std::uint64_t activations_write = 0;
  std::uint64_t row_hits_read = 0;
  std::uint64_t row_hits_write = 0;
  std::uint64_t device_writes = 0;  // writes the banks performed (after merging)
  std::uint64_t wq_merges = 0;      // writes absorbed by a queued write to the same line
  std::uint64_t wq_read_hits = 0;   // reads served from the write queue
  std::uint64_t drains = 0;         // write-drain episodes
  std::uint64_t reads = 0;          // reads seen (bank accesses + write-queue hits)
  std::uint64_t writes = 0;         // writes seen (device writes + merges + still queued)
  // The timed controller's figures (timed_nvm.hpp); reported only when `timed`.
  bool timed = false;
  std::uint64_t read_cycles = 0;           // controller time of the bank reads (arrival to data)
  std::uint64_t wq_full_events = 0;        // writes that found the queue full
  std::uint64_t wq_full_cycles = 0;        // the time they waited for an entry
  std::uint64_t write_service_cycles = 0;  // arrival to completion, summed over device writes

  // The thesis' count for a whole run: every dirty row is closed eventually.
  [[nodiscard]] std::uint64_t row_writes_total() const { return row_writes + rows_dirty_at_end; }
};

// Where a 64-byte line lives: RoRaBaChCo (MSB→LSB row, rank, bank, channel, column).
struct RowAddress {
  std::uint64_t row = 0;
  std::uint32_t rank = 0;
  std::uint32_t bank = 0;  // within its rank
  std::uint32_t channel = 0;
  std::uint32_t column = 0;   // line index within the row
  std::uint32_t bank_id = 0;  // flat (channel, rank, bank) index
};

// Fed in simulation order by the hierarchy: on_read at an LLC miss, on_write at each line that
// reaches the memory controller. The open-adaptive page policy keeps a row open until a
// conflicting access (for counting, that is when a dirty row is written back).
class RowBufferModel {
 public:
  // A write the controller performed in a drain, in FR-FCFS order (for the timed controller).
  struct Served {
    std::uint64_t line;
    std::uint64_t arrival;  // the time on_write was given
    std::uint32_t bank;     // flat bank index
    RowOutcome outcome;
  };

  explicit RowBufferModel(const RowBufferParams& p = {});

  [[nodiscard]] RowAddress map(std::uint64_t line) const;
  RowOutcome on_read(std::uint64_t line);
  // `arrival` is carried to served() only; the untimed model ignores it. True if merged.
  bool on_write(std::uint64_t line, std::uint64_t arrival = 0);
  // The writes the last on_write drained (empty if it started no drain).
  [[nodiscard]] const std::vector<Served>& served() const { return served_; }
  void drain_all();  // serves every queued write (FR-FCFS); rows stay open
  // The statistics as if the run ended now: a copy drains its queue and counts its dirty rows.
  [[nodiscard]] RowBufferStats snapshot() const;
  [[nodiscard]] const RowBufferStats& counters() const { return st_; }
  [[nodiscard]] std::size_t queued() const { return wq_.size(); }
  void power_fail();  // ADR: queued writes are durable already; state is lost, counters kept
  void reset_stats() { st_ = RowBufferStats{}; }
  void restart_clock() {  // clocks are back at 0: queued writes arrived at 0
    for (Entry& e : wq_) e.arrival = 0;
  }

 private:
  struct Entry {
    std::uint64_t line;
    std::uint64_t row;
    std::uint64_t arrival;
    std::uint32_t bank;
  };
  struct Bank {
    std::uint64_t open_row = kNoRow;
    bool dirty = false;
  };
  static constexpr std::uint64_t kNoRow = ~std::uint64_t{0};

  // Opens `row` in `bank`. Closing a dirty row is a row write.
  RowOutcome open(std::uint32_t bank, std::uint64_t row);
  [[nodiscard]] std::size_t queued_index(std::uint64_t line) const;  // npos if not queued
  void drain(std::size_t stop_at, std::uint64_t min_writes);
  void serve_one();  // FR-FCFS: the oldest row-hit write, else the oldest write

  RowBufferParams p_;
  std::uint32_t col_bits_, ch_bits_, bank_bits_, rank_bits_;
  std::vector<Bank> banks_;
  std::vector<Entry> wq_;  // arrival order
  std::vector<Served> served_;
  RowBufferStats st_;
};

// Keys as in docs/simulator.md "Row buffer".
[[nodiscard]] nlohmann::json to_json(const RowBufferStats& s);
[[nodiscard]] nlohmann::json to_json(const RowBufferParams& p);

}  // namespace pmlab::sim
