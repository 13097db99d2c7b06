// The NVM row-buffer model: address mapping, open rows per bank, merging write queue, FR-FCFS
// drains between the high and low marks, row-write counting.
#include "pmlab/sim/row_buffer.hpp"

#include <bit>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/core/strong_types.hpp"

namespace pmlab::sim {

namespace {
[[noreturn]] void bad(const std::string& msg) {
  throw Error(ErrorCode::kInvalidArgument, msg);
}
std::uint32_t log2u(std::uint32_t v) {
  return static_cast<std::uint32_t>(std::countr_zero(v));
}
constexpr std::size_t kNpos = ~std::size_t{0};
}  // namespace

std::uint32_t RowBufferParams::high_mark() const {
  const auto m = static_cast<std::uint32_t>(std::ceil(wq_high * wq_entries - 1e-9));
  return m < 1 ? 1 : m;
}
std::uint32_t RowBufferParams::low_mark() const {
  return static_cast<std::uint32_t>(std::floor(wq_low * wq_entries + 1e-9));
}

void RowBufferParams::validate() const {
  for (const auto& [what, v] :
       {std::pair{"channels", channels}, std::pair{"ranks", ranks}, std::pair{"banks", banks}})
    if (v == 0 || !std::has_single_bit(v) || v > 1024)
      bad(fmt::format("row buffer: {} must be a power of two in [1, 1024] (got {})", what, v));
  if (row_bytes < kCacheLineBytes || !std::has_single_bit(row_bytes) || row_bytes > (1u << 20))
    bad(fmt::format(
        "row buffer: row_bytes must be a power of two in [{}, 1 MiB] (whole lines), got {}",
        kCacheLineBytes, row_bytes));
  if (wq_entries == 0 || wq_entries > 4096)
    bad(fmt::format("row buffer: write-queue entries must be in [1, 4096] (got {})", wq_entries));
  if (rq_entries == 0) bad("row buffer: read-queue entries must be at least 1");
  if (!(wq_low > 0.0 && wq_low < wq_high && wq_high <= 1.0))
    bad(
        fmt::format("row buffer: write-queue thresholds need 0 < low < high <= 1 (got low {}, "
                    "high {})",
                    wq_low, wq_high));
  if (min_writes_per_drain == 0)
    bad("row buffer: min writes per drain must be at least 1 (a drain must make progress)");
}

RowBufferModel::RowBufferModel(const RowBufferParams& p)
    : p_(p),
      col_bits_(log2u(p.row_bytes / static_cast<std::uint32_t>(kCacheLineBytes))),
      ch_bits_(log2u(p.channels)),
      bank_bits_(log2u(p.banks)),
      rank_bits_(log2u(p.ranks)),
      banks_(p.bank_count()) {
  wq_.reserve(p.wq_entries);
}

RowAddress RowBufferModel::map(std::uint64_t line) const {
  RowAddress a;
  std::uint64_t x = line;
  const auto take = [&x](std::uint32_t bits) {
    const auto v = static_cast<std::uint32_t>(x & ((std::uint64_t{1} << bits) - 1));
    x >>= bits;
    return v;
  };
  a.column = take(col_bits_);
  a.channel = take(ch_bits_);
  a.bank = take(bank_bits_);
  a.rank = take(rank_bits_);
  a.row = x;
  a.bank_id = (a.channel * p_.ranks + a.rank) * p_.banks + a.bank;
  return a;
}

RowOutcome RowBufferModel::open(std::uint32_t bank, std::uint64_t row) {
  Bank& b = banks_[bank];
  if (b.open_row == row) return RowOutcome::kHit;
  const RowOutcome o = b.open_row == kNoRow ? RowOutcome::kClosed
                       : b.dirty            ? RowOutcome::kDirtyClose
                                            : RowOutcome::kConflict;
  if (b.dirty) ++st_.row_writes;  // closing a row that holds modified data
  b.open_row = row;
  b.dirty = false;
  return o;
}

std::size_t RowBufferModel::queued_index(std::uint64_t line) const {
  for (std::size_t i = 0; i < wq_.size(); ++i)
    if (wq_[i].line == line) return i;
  return kNpos;
}

RowOutcome RowBufferModel::on_read(std::uint64_t line) {
  ++st_.reads;
  if (queued_index(line) != kNpos) {
    ++st_.wq_read_hits;  // forwarded from the write queue: no bank access
    return RowOutcome::kForwarded;
  }
  const RowAddress a = map(line);
  const RowOutcome o = open(a.bank_id, a.row);
  if (o == RowOutcome::kHit)
    ++st_.row_hits_read;
  else
    ++st_.activations_read;
  return o;
}

bool RowBufferModel::on_write(std::uint64_t line, std::uint64_t arrival) {
  ++st_.writes;
  served_.clear();
  if (p_.merge && queued_index(line) != kNpos) {
    ++st_.wq_merges;
    return true;
  }
  const RowAddress a = map(line);
  wq_.push_back({line, a.row, arrival, a.bank_id});
  if (wq_.size() >= p_.high_mark()) drain(p_.low_mark(), p_.min_writes_per_drain);
  return false;
}

void RowBufferModel::serve_one() {
  std::size_t pick = 0;  // first ready (row hit), else first come
  for (std::size_t i = 0; i < wq_.size(); ++i)
    if (banks_[wq_[i].bank].open_row == wq_[i].row) {
      pick = i;
      break;
    }
  const Entry e = wq_[pick];
  wq_.erase(wq_.begin() + static_cast<std::ptrdiff_t>(pick));
  const RowOutcome o = open(e.bank, e.row);
  if (o == RowOutcome::kHit)
    ++st_.row_hits_write;
  else
    ++st_.activations_write;
  served_.push_back({e.line, e.arrival, e.bank, o});
  banks_[e.bank].dirty = true;
  ++st_.device_writes;
}

void RowBufferModel::drain(std::size_t stop_at, std::uint64_t min_writes) {
  if (wq_.empty()) return;
  ++st_.drains;
  std::uint64_t done = 0;
  while (!wq_.empty() && (done < min_writes || wq_.size() > stop_at)) {
    serve_one();
    ++done;
  }
}

void RowBufferModel::drain_all() {
  served_.clear();
  drain(0, 0);
}

RowBufferStats RowBufferModel::snapshot() const {
  RowBufferModel copy = *this;
  copy.drain_all();
  RowBufferStats s = copy.st_;
  for (const Bank& b : copy.banks_)
    if (b.dirty) ++s.rows_dirty_at_end;
  return s;
}

void RowBufferModel::power_fail() {
  wq_.clear();
  for (Bank& b : banks_) b = Bank{};
}

nlohmann::json to_json(const RowBufferStats& s) {
  nlohmann::json j = {{"row_writes", s.row_writes},
                      {"rows_dirty_at_end", s.rows_dirty_at_end},
                      {"row_writes_total", s.row_writes_total()},
                      {"activations_read", s.activations_read},
                      {"activations_write", s.activations_write},
                      {"row_hits_read", s.row_hits_read},
                      {"row_hits_write", s.row_hits_write},
                      {"device_writes", s.device_writes},
                      {"wq_merges", s.wq_merges},
                      {"wq_read_hits", s.wq_read_hits},
                      {"drains", s.drains},
                      {"reads", s.reads},
                      {"writes", s.writes}};
  if (!s.timed) return j;  // the untimed model's JSON stays as it was
  j["read_cycles"] = s.read_cycles;
  j["wq_full_events"] = s.wq_full_events;
  j["wq_full_cycles"] = s.wq_full_cycles;
  j["write_service_cycles"] = s.write_service_cycles;
  return j;
}

nlohmann::json to_json(const RowBufferParams& p) {
  return {{"enabled", p.enabled},
          {"channels", p.channels},
          {"ranks", p.ranks},
          {"banks", p.banks},
          {"row_bytes", p.row_bytes},
          {"mapping", "RoRaBaChCo"},
          {"page_policy", "open-adaptive"},
          {"scheduler", "FR-FCFS"},
          {"rq_entries", p.rq_entries},
          {"wq_entries", p.wq_entries},
          {"wq_high", p.wq_high},
          {"wq_low", p.wq_low},
          {"min_writes_per_drain", p.min_writes_per_drain},
          {"merge", p.merge}};
}

}  // namespace pmlab::sim
