// Machine: the public face of the model; forwards the slow path to the Hierarchy.
#include "pmlab/sim/machine.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "hierarchy.hpp"
#include "hierarchy_hot.hpp"
#include "pmlab/core/error.hpp"

namespace pmlab::sim {

std::string_view to_string(FlushMode m) {
  switch (m) {
    case FlushMode::kNone:
      return "none";
    case FlushMode::kClflush:
      return "clflush";
    case FlushMode::kClflushopt:
      return "clflushopt";
    case FlushMode::kClwb:
      return "clwb";
  }
  return "?";
}

FlushMode flush_mode_from_string(std::string_view s) {
  for (FlushMode m :
       {FlushMode::kNone, FlushMode::kClflush, FlushMode::kClflushopt, FlushMode::kClwb})
    if (s == to_string(m)) return m;
  throw Error(ErrorCode::kInvalidArgument, "unknown flush mode '" + std::string(s) +
                                               "' (expected none, clflush, clflushopt or clwb)");
}

namespace {
SimParams validated(SimParams p) {
  p.validate();
  return p;
}
}  // namespace

Machine::Machine(SimParams params)
    : impl_(std::make_unique<Hierarchy>(validated(std::move(params)))),
      cores_(impl_->core_states()),
      served_step_(impl_->interval() ? impl_->params().core.insts_per_access
                                     : impl_->params().l1.hit_latency.value()),
      issue_(impl_->dispatch_width()),
      cross_core_(impl_->params().persistency.hardware()),
      cleaning_(impl_->params().periodic_flush_cycles.value() != 0),
      filter_on_(impl_->params().same_line_filter),
      preflush_(impl_->params().preflush.enabled) {}

Machine::~Machine() = default;
Machine::Machine(Machine&&) noexcept = default;
Machine& Machine::operator=(Machine&&) noexcept = default;

// Lazy dispatch (CoreState::dispatched_insts): the Hierarchy only ever reads clocks with their
// pending instructions dispatched. Its miss paths dispatch their own core's (Hierarchy::access,
// dispatch); every other operation is wrapped here. The CoreStates are the Hierarchy's
// (heap), so the const queries below may dispatch: it changes no observable value.

inline void Machine::before_op(int core) const {
  if (cross_core_) [[unlikely]] {
    before_global();
    return;
  }
  detail::dispatch_pending(cores_[core], issue_);
}
inline void Machine::after_op(int core) const {
  if (cross_core_) [[unlikely]] {
    after_global();
    return;
  }
  detail::refresh_deadline_stop(cores_[core], issue_);
}
void Machine::before_global() const {
  for (int c = 0; c < cores(); ++c) detail::dispatch_pending(cores_[c], issue_);
}
void Machine::after_global() const {
  for (int c = 0; c < cores(); ++c) detail::refresh_deadline_stop(cores_[c], issue_);
}

void Machine::settle(int core, bool is_store) {
  detail::CoreState& c = cores_[core];
  detail::dispatch_pending(c, issue_);
  if (c.insts >= c.rob_limit) impl_->rob_stall(core);
  if (is_store && c.clock >= c.deadline) impl_->periodic_tick(core);
  detail::refresh_deadline_stop(c, issue_);  // a stall moves the clock
}

void Machine::access_slow(int core, LineAddr line, bool is_store, std::uint64_t l1_slot) {
  // Hierarchy::access and the lean load miss dispatch this core's pending instructions
  // themselves, the latter together with the miss's own (no extra work per miss).
  if (cross_core_) [[unlikely]]
    before_global();
  // A searched slot comes from the inline L1 path, which a hardware persist barrier turns off:
  // only unsearched accesses can need the epoch engine (Hierarchy::access_unsearched).
  if (l1_slot == kUnsearched)
    impl_->access_unsearched(core, line.value(), is_store);
  else  // a store the inline path searched L1 for (its loads that miss take load_miss)
    impl_->access(core, line.value(), is_store, static_cast<std::size_t>(l1_slot));
  // Without periodic cleaning every deadline_stop stays kNever: nothing to refresh per miss.
  if (cleaning_ || cross_core_) [[unlikely]]
    after_op(core);
}
void Machine::load_miss(int core, LineAddr line) {
  // The inline path exists only without a hardware persist barrier (Hierarchy's constructor),
  // so none of access_slow's cross-core steps apply; the lean miss is inlined here.
  impl_->load_miss(core, line.value());
  if (cleaning_) [[unlikely]]
    after_op(core);
}
void Machine::store_preflush(int core, LineAddr line, std::uint32_t pc) {
  before_op(core);
  impl_->access_unsearched(core, line.value(), true, pc);
  after_op(core);
}

void Machine::flush(int core, LineAddr line, FlushMode mode) {
  if (mode == FlushMode::kNone || functional_) return;
  before_op(core);
  impl_->flush(core, line.value(), mode);
  after_op(core);
}
void Machine::store_nt(int core, LineAddr line, unsigned off, unsigned size) {
  if (functional_) return;
  before_op(core);
  impl_->store_nt(core, line.value(), off, size);
  after_op(core);
}
void Machine::wbinvd(int core, std::size_t lo, std::size_t hi, bool last) {
  if (functional_) return;
  before_op(core);
  impl_->wbinvd(core, lo, hi, last);
  after_op(core);
}
std::size_t Machine::llc_slots() const {
  return impl_->llc_slots();
}
void Machine::epoch_barrier(int core, bool bsp) {
  if (functional_) return;
  before_op(core);
  impl_->epoch_barrier(core, bsp);
  after_op(core);
}
void Machine::write_through(int core, LineAddr line) {
  if (functional_) return;
  before_op(core);
  impl_->epoch_write_through(core, line.value());
  after_op(core);
}
void Machine::fence(int core) {
  if (functional_) return;
  before_op(core);
  impl_->fence(core);
  after_op(core);
}
void Machine::stop_modelling() {
  before_global();
  functional_ = true;
  impl_->stop_modelling();
  after_global();
}
void Machine::fork_clocks(int from_core, int active_cores) {
  before_global();
  impl_->fork_clocks(from_core, active_cores > 0 ? active_cores : cores());
  after_global();
}
void Machine::join_clocks() {
  before_global();
  impl_->join_clocks();
  after_global();
}
void Machine::set_clock(int core, Cycles t) {
  before_op(core);
  cores_[core].clock = t.value();
  after_op(core);
}
Cycles Machine::clock(int core) const {
  before_op(core);
  return Cycles(cores_[core].clock);
}
void Machine::write_back_all(WriteCause cause) {
  before_global();
  impl_->write_back_all(cause);
  after_global();
}
void Machine::power_fail() {
  before_global();
  impl_->power_fail();
  after_global();
}
void Machine::reset_stats() {
  before_global();
  impl_->reset_stats();
  after_global();
}
void Machine::add_volatile(LineAddr first, LineAddr last) {
  impl_->add_volatile(first.value(), last.value());
}
void Machine::remove_volatile(LineAddr first, LineAddr last) {
  impl_->remove_volatile(first.value(), last.value());
}
void Machine::dram_cache_place(LineAddr first, LineAddr last) {
  impl_->dram_cache_place(first.value(), last.value());
}
void Machine::dram_cache_flush(int core, LineAddr first, LineAddr last) {
  // Off: not even the pending instructions' dispatch, so that every figure stays as it was.
  if (functional_ || !impl_->params().dram_cache.enabled) return;
  before_op(core);
  impl_->dram_cache_flush(core, first.value(), last.value());
  after_op(core);
}
CrashImage& Machine::image() {
  return impl_->image();
}
const CrashImage& Machine::image() const {
  return impl_->image();
}
const SimParams& Machine::params() const {
  return impl_->params();
}
int Machine::cores() const {
  return impl_->params().cores;
}
LineState Machine::probe(int core, LineAddr line) const {
  return impl_->probe(core, line.value());
}
SimStats Machine::stats() const {
  before_global();
  return impl_->stats();
}

}  // namespace pmlab::sim
