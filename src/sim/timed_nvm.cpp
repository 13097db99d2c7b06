// The NVM controller timed by banks, rows and a data bus: reads, write acceptance, drains.
#include "timed_nvm.hpp"

#include <algorithm>

namespace pmlab::sim {

namespace {
// Drained writes remembered for the queue's occupancy: enough to cover every entry twice.
constexpr std::size_t kDrainedKept = 2;
}  // namespace

TimedNvm::TimedNvm(const RowBufferParams& geometry, const NvmTiming& cycles)
    : rows_(geometry),
      c_(cycles),
      entries_(geometry.wq_entries),
      banks_(geometry.bank_count()),
      last_write_(geometry.bank_count(), 0) {}

std::uint64_t TimedNvm::bank_cycles(RowOutcome o) const {
  switch (o) {
    case RowOutcome::kForwarded:
    case RowOutcome::kHit:
      return 0;
    case RowOutcome::kClosed:
      return c_.rcd;
    case RowOutcome::kConflict:
      return c_.rp + c_.rcd;
    case RowOutcome::kDirtyClose:  // plus write recovery, which serve() times
      return c_.rp + c_.rcd;
  }
  return 0;
}

// The bank is held from the first free time at or after `t` through its row work, the column
// access and the burst; the burst takes the bus at the first free time after the column access.
// Write recovery (gem5 DRAMCtrl's tWR): a bank precharges no sooner than t_wr after the last
// write burst into its open row, so a dirty row closed long after its writes costs nothing
// more. A last write later than `t` belongs to a core whose clock is ahead: in time order it
// has not happened yet, and delays nothing.
std::uint64_t TimedNvm::serve(std::uint32_t bank, RowOutcome o, std::uint64_t t,
                              std::uint64_t column) {
  if (o == RowOutcome::kDirtyClose && last_write_[bank] <= t)
    t = std::max(t, last_write_[bank] + c_.wr);
  const std::uint64_t before_bus = bank_cycles(o) + column;
  const std::uint64_t start = banks_[bank].book(t, before_bus + c_.burst);
  return bus_.book(start + before_bus, c_.burst) + c_.burst;
}

std::uint64_t TimedNvm::read(std::uint64_t line, std::uint64_t t) {
  const RowOutcome o = rows_.on_read(line);
  const std::uint64_t done = o == RowOutcome::kForwarded
                                 ? bus_.book(t, c_.burst) + c_.burst
                                 : serve(rows_.map(line).bank_id, o, t, c_.cl);
  read_cycles_ += done - t;
  return done;
}

// The first time at or after `t` at which fewer than entries_ writes occupy the queue. Only
// writes accepted by `t` count: one accepted later arrived later (or belongs to a core whose
// clock is ahead) and does not take an entry before this one. With `held` entries busy at `t`,
// the write waits for the (held - entries_ + 1)-th of them to complete.
std::uint64_t TimedNvm::first_free_entry(std::uint64_t t) {
  busy_done_.clear();
  for (const Occupant& o : occupants_)
    if (o.accepted <= t && o.done > t) busy_done_.push_back(o.done);  // kQueued: not yet served
  if (busy_done_.size() < entries_) return t;
  const auto k = busy_done_.begin() + static_cast<std::ptrdiff_t>(busy_done_.size() - entries_);
  std::nth_element(busy_done_.begin(), k, busy_done_.end());
  return *k == kQueued ? t : *k;  // every busy entry unserved cannot happen (drains at the mark)
}

std::uint64_t TimedNvm::write(std::uint64_t line, std::uint64_t t) {
  const std::uint64_t accepted = first_free_entry(t);
  if (accepted > t) {
    ++wq_full_events_;
    wq_full_cycles_ += accepted - t;
  }
  if (rows_.on_write(line, accepted)) return t;  // merged into the queued write of this line
  occupants_.push_back({line, accepted, kQueued});
  if (!rows_.served().empty()) complete_served(accepted);
  return accepted;
}

// A drain started at `drain_start` served rows_.served() in FR-FCFS order: each write waits
// for its bank and the bus, and frees its queue entry when its burst ends. Drained writes older
// than the latest kDrainedKept x entries are forgotten.
void TimedNvm::complete_served(std::uint64_t drain_start) {
  for (const RowBufferModel::Served& s : rows_.served()) {
    const std::uint64_t done =
        serve(s.bank, s.outcome, std::max(drain_start, s.arrival), /*column=*/0);
    last_write_[s.bank] = done;
    write_service_cycles_ += done - s.arrival;
    const auto q = std::find_if(occupants_.begin(), occupants_.end(), [&](const Occupant& o) {
      return o.done == kQueued && o.line == s.line;
    });
    if (q != occupants_.end()) q->done = done;  // always found: the model served a queued line
  }
  std::size_t drained = static_cast<std::size_t>(std::count_if(
      occupants_.begin(), occupants_.end(), [](const Occupant& o) { return o.done != kQueued; }));
  const std::size_t keep = kDrainedKept * entries_;
  std::erase_if(occupants_, [&](const Occupant& o) {  // occupants_ is in arrival order
    if (drained <= keep || o.done == kQueued) return false;
    --drained;
    return true;
  });
}

RowBufferStats TimedNvm::snapshot() const {
  RowBufferStats s = rows_.snapshot();
  s.timed = true;
  s.read_cycles = read_cycles_;
  s.wq_full_events = wq_full_events_;
  s.wq_full_cycles = wq_full_cycles_;
  s.write_service_cycles = write_service_cycles_;
  return s;
}

void TimedNvm::power_fail() {
  rows_.power_fail();
  for (auto& b : banks_) b.clear();
  std::fill(last_write_.begin(), last_write_.end(), 0);
  bus_.clear();
  occupants_.clear();
}

void TimedNvm::reset_stats() {
  rows_.reset_stats();
  rows_.restart_clock();
  for (auto& b : banks_) b.clear();
  std::fill(last_write_.begin(), last_write_.end(), 0);
  bus_.clear();
  // The queued writes stay queued; their times belonged to the old clocks.
  for (Occupant& o : occupants_) o = {o.line, 0, o.done == kQueued ? kQueued : 0};
  read_cycles_ = wq_full_events_ = wq_full_cycles_ = write_service_cycles_ = 0;
}

}  // namespace pmlab::sim
