// The NVM controller timed by banks, rows and a data bus (nvm.write_queue = banks).
#pragma once

#include <cstdint>
#include <vector>

#include "busy_calendar.hpp"
#include "pmlab/sim/row_buffer.hpp"

namespace pmlab::sim {

// Device timing in core cycles (RowBufferParams' ns at the core clock).
struct NvmTiming {
  std::uint64_t rcd = 0, cl = 0, wr = 0, rp = 0, burst = 0;
};

// A gem5-DRAMCtrl-style controller in front of the row-buffer model:
// - Row state, FR-FCFS order, merging and the drain marks are RowBufferModel's, applied in
//   simulation order, so its row-write count is the untimed model's exactly.
// - A read that reaches a bank costs, on that bank, [t_rp if another row is open] + [t_rcd
//   unless the row is open] + t_cl, then t_burst on the bus; closing a row that was written
//   waits until t_wr after its last write burst (write recovery, as gem5's DRAMCtrl). A read the
//   write queue holds is forwarded in one t_burst on the bus.
// - A write is durable (ADR) when the queue accepts it: at once while fewer than wq_entries
//   writes occupy it, else when the earliest of them completes. It occupies its entry until the
//   drain that serves it completes it: the drain starts when the write that reached the high mark
//   arrives; each served write waits for its bank (recovery, t_rp and t_rcd on a row miss) and
//   then t_burst on the bus.
// - Banks and the bus are booked by time (busy_calendar.hpp), never in simulation order.
class TimedNvm {
 public:
  TimedNvm(const RowBufferParams& geometry, const NvmTiming& cycles);

  // The time the data of `line` is back at the controller, for a read arriving at `t`.
  std::uint64_t read(std::uint64_t line, std::uint64_t t);
  // The time the controller accepts (makes durable) a write of `line` arriving at `t`.
  std::uint64_t write(std::uint64_t line, std::uint64_t t);

  // The row model's statistics with the controller's times (RowBufferStats::timed).
  [[nodiscard]] RowBufferStats snapshot() const;
  void power_fail();   // ADR drained the queue; banks and bus are idle
  void reset_stats();  // clocks restart at 0: bookings and queue times are forgotten

 private:
  // A queued or draining write: it holds an entry from `accepted` until `done` (kQueued while
  // no drain has served it yet).
  struct Occupant {
    std::uint64_t line;
    std::uint64_t accepted;
    std::uint64_t done;
  };
  static constexpr std::uint64_t kQueued = ~std::uint64_t{0};

  [[nodiscard]] std::uint64_t bank_cycles(RowOutcome o) const;  // before the column access
  std::uint64_t serve(std::uint32_t bank, RowOutcome o, std::uint64_t t, std::uint64_t column);
  [[nodiscard]] std::uint64_t first_free_entry(std::uint64_t t);
  void complete_served(std::uint64_t drain_start);

  RowBufferModel rows_;
  NvmTiming c_;
  std::uint32_t entries_;
  std::vector<BusyCalendar> banks_;
  std::vector<std::uint64_t> last_write_;  // per bank: the end of its last write burst
  BusyCalendar bus_;
  std::vector<Occupant> occupants_;          // queued writes and the latest drained ones
  std::vector<std::uint64_t> busy_done_;     // first_free_entry's scratch
  std::uint64_t read_cycles_ = 0, wq_full_events_ = 0, wq_full_cycles_ = 0;
  std::uint64_t write_service_cycles_ = 0;
};

}  // namespace pmlab::sim
