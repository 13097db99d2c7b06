// Seed 002 §4.2's helper core in the simulator: flush_async and copy_async requests run on their
// own clock, interleaved with the main thread's ops by simulated time, each op a crash point.
#include "helper_core.hpp"

#include <algorithm>
#include <cstring>

#include "pmlab/sim/sim_backend.hpp"

namespace pmlab::sim {

namespace {
// LLC slots one WBINVD op walks: a crash can land between two such stretches, as between two
// helper flushes (real WBINVD is one instruction, but its write-backs reach the controller one
// by one, so a power cut inside it leaves a prefix of them durable).
constexpr std::uint64_t kWbinvdStretch = 64;
// The paper's rule (§4.2): WBINVD once the data to flush is at least 10 x the LLC.
constexpr std::uint64_t kWbinvdLlcFactor = 10;
}  // namespace

void SimBackend::rearm_switch() {
  switch_at_ = (helper_ && helper_->busy()) ? 0 : turn_end_;
  update_special_at();
}

void SimBackend::switch_point() {
  if (helper_ && helper_->busy()) helper_catch_up(false);
  if (ops_ >= turn_end_) yield_turn();  // fine-grained interleaving: the quantum is used up
  rearm_switch();
}

bool SimBackend::helper_count_op() {
  return count_op_at_switch_point();
}

void SimBackend::helper_abandon(bool finish_copies) {
  detail::HelperCore& h = *helper_;
  if (finish_copies)
    for (const detail::HelperRequest& r : h.queue_) {
      if (!r.copy) continue;
      // The front request's lines before the cursor are copied already; redoing them is the same.
      std::memmove(reinterpret_cast<void*>(r.dst), reinterpret_cast<const void*>(r.src),
                   r.dst_end - r.dst);
    }
  h.queue_.clear();
  h.started_ = h.flushed_ = false;
  h.clock_ = 0;  // power_fail keeps the clocks; the helper restarts with the next request
  rearm_switch();
}

void SimBackend::helper_flush_async(const void* p, std::size_t len) {
  if (flush_ == FlushMode::kNone || len == 0) return;
  if (!modelling_) {  // its ops would have been paced by the clocks: the op count now differs
    ++async_skipped_;
    return;
  }
  const SimParams& mp = machine_.params();
  // Under --core-model interval the helper uses its core's reorder buffer and MSHRs too
  // (exact when that core is idle, as on lp-isca18; shared with its worker otherwise).
  if (!helper_) helper_ = std::make_unique<detail::HelperCore>(cores_ - 1);
  detail::HelperCore& h = *helper_;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  detail::HelperRequest r;
  r.first = a / kCacheLineBytes;
  r.end = (a + len - 1) / kCacheLineBytes + 1;
  // Under a hardware persist barrier the epoch engine owns write-back order: no WBINVD there.
  r.wbinvd = !hardware_barrier_ && (mp.whole_cache_flush == WholeCacheFlush::kAlways ||
                                    (mp.whole_cache_flush == WholeCacheFlush::kAuto &&
                                     len >= kWbinvdLlcFactor * mp.llc.size_bytes));
  r.issued = machine_.clock(core()).value();
  h.queue_.push_back(r);
  ++h.stats_.requests;
  if (r.wbinvd) ++h.stats_.wbinvd_requests;
  rearm_switch();
}

void SimBackend::helper_copy_async(double* dst, const double* src, std::size_t count) {
  if (count == 0) return;
  const std::size_t bytes = count * sizeof(double);
  if (!modelling_) {  // as helper_flush_async: unpaced, so the op count now differs
    ++async_skipped_;
    std::memmove(dst, src, bytes);
    return;
  }
  if (!helper_) helper_ = std::make_unique<detail::HelperCore>(cores_ - 1);
  detail::HelperCore& h = *helper_;
  detail::HelperRequest r;
  r.copy = true;
  r.dst = reinterpret_cast<std::uintptr_t>(dst);
  r.dst_end = r.dst + bytes;
  r.src = reinterpret_cast<std::uintptr_t>(src);
  r.first = r.dst / kCacheLineBytes;
  r.end = (r.dst_end - 1) / kCacheLineBytes + 1;
  r.issued = machine_.clock(core()).value();
  h.queue_.push_back(r);
  ++h.stats_.requests;
  ++h.stats_.copy_requests;
  rearm_switch();
}

// One destination line of a copy request on the helper's core, charged as copy_unfenced charges
// it on a main core: per double a load of its source and a store of it (non-temporal under the
// NT model), then the line's flush (none under the NT model; cp-no-flush: none). Only the crash
// points are coarser: one per line.
void SimBackend::helper_copy_line(int core, const detail::HelperRequest& r, std::uint64_t line) {
  const std::uintptr_t lo = std::max<std::uintptr_t>(line * kCacheLineBytes, r.dst);
  const std::uintptr_t hi = std::min<std::uintptr_t>((line + 1) * kCacheLineBytes, r.dst_end);
  const std::uintptr_t shift = r.src - r.dst;
  // Before the model's stores: a write-back they cause carries the new bytes.
  std::memmove(reinterpret_cast<void*>(lo), reinterpret_cast<const void*>(lo + shift), hi - lo);
  const LineAddr d(line);
  const bool nt = nt_stores() && mutation_ != mem::Mutation::kCpNoFlush;
  for (std::uintptr_t a = lo; a < hi; a += sizeof(double)) {
    const std::uintptr_t s = a + shift;
    machine_.load(core, LineAddr(s / kCacheLineBytes));
    if ((s + sizeof(double) - 1) / kCacheLineBytes != s / kCacheLineBytes) [[unlikely]]
      machine_.load(core, LineAddr(s / kCacheLineBytes + 1));
    if (nt)
      machine_.store_nt(core, d, static_cast<unsigned>(a % kCacheLineBytes), sizeof(double));
    else
      machine_.store(core, d);
  }
  if (nt || mutation_ == mem::Mutation::kCpNoFlush || mutation_ == mem::Mutation::kNoFlush ||
      flush_ == FlushMode::kNone)
    return;
  if (track_unfenced_) [[unlikely]]
    machine_.image().note_flush(d, core);
  machine_.flush(core, d, flush_);
}

void SimBackend::helper_catch_up(bool drain) {
  detail::HelperCore& h = *helper_;
  if (crashed_ || !modelling_) {
    helper_abandon(!crashed_);
    return;
  }
  const std::uint64_t now = machine_.clock(core()).value();
  const int hc = h.core();
  while (h.busy()) {
    const detail::HelperRequest& r = h.queue_.front();
    const bool fresh = !h.started_;
    if (fresh) {
      const std::uint64_t start = std::max(h.clock_, r.issued);
      if (!drain && start > now) break;
      h.clock_ = start;
      h.started_ = true;
      h.flushed_ = false;
      h.cursor_ = r.wbinvd ? 0 : r.first;
    } else if (!drain && h.clock_ > now) {
      break;
    }
    if (!helper_count_op()) {
      helper_abandon(!crashed_);
      return;
    }
    if (record_fences_) {
      if (fresh)
        h.spans_.emplace_back(ops_, ops_);
      else
        h.spans_.back().second = ops_;
    }
    // The helper's own clock stands in for its core's during the op; that core's worker (if
    // threads >= cores) keeps its time.
    const Cycles saved = machine_.clock(hc);
    machine_.set_clock(hc, Cycles(h.clock_));
    if (!h.flushed_) {
      if (r.copy) {
        helper_copy_line(hc, r, h.cursor_);
        ++h.stats_.copy_ops;
        h.flushed_ = ++h.cursor_ >= r.end;
      } else if (r.wbinvd) {
        const std::uint64_t slots = machine_.llc_slots();
        const std::uint64_t hi = std::min<std::uint64_t>(slots, h.cursor_ + kWbinvdStretch);
        machine_.wbinvd(hc, h.cursor_, hi, hi == slots);
        ++h.stats_.wbinvd_ops;
        h.cursor_ = hi;
        h.flushed_ = hi == slots;
      } else {
        if (mutation_ != mem::Mutation::kNoFlush) {
          if (track_unfenced_) [[unlikely]]
            machine_.image().note_flush(LineAddr(h.cursor_), hc);
          machine_.flush(hc, LineAddr(h.cursor_), flush_);
        }
        ++h.stats_.flush_ops;
        h.flushed_ = ++h.cursor_ >= r.end;
      }
    } else {
      // A copy's fence is its own sfence (cp-no-sfence drops it); under --flush none there is
      // no fence to issue, as on a main core, but the op still ends the request.
      const bool fenced =
          mutation_ != mem::Mutation::kNoFence &&
          !(r.copy && (mutation_ == mem::Mutation::kCpNoSfence || flush_ == FlushMode::kNone));
      if (fenced) {
        if (record_fences_) fence_ops_.push_back(ops_);
        if (track_unfenced_) [[unlikely]]
          machine_.image().note_fence(hc);
        machine_.fence(hc);
      }
      ++h.stats_.fences;
      h.queue_.pop_front();
      h.started_ = false;
    }
    const std::uint64_t after = machine_.clock(hc).value();
    h.stats_.busy_cycles += after - h.clock_;
    h.clock_ = after;
    machine_.set_clock(hc, saved);
  }
}

void SimBackend::helper_barrier() {
  if (!helper_) return;
  detail::HelperCore& h = *helper_;
  ++h.stats_.barriers;
  if (h.busy()) helper_catch_up(true);
  const std::uint64_t now = machine_.clock(core()).value();
  if (modelling_ && h.clock_ > now) {
    h.stats_.exposed_cycles += h.clock_ - now;
    machine_.set_clock(core(), Cycles(h.clock_));
  }
  rearm_switch();
}

SimStats SimBackend::stats() const {
  SimStats s = machine_.stats();
  if (helper_) s.helper = helper_->stats();
  return s;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> SimBackend::helper_spans() const {
  return helper_ ? helper_->spans() : std::vector<std::pair<std::uint64_t, std::uint64_t>>{};
}

}  // namespace pmlab::sim
