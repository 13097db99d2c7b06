// Machine: the public face of the model; forwards the slow path to the Hierarchy.
#include "pmlab/sim/machine.hpp"

#include <string>

#include "hierarchy.hpp"
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
      l1_latency_(impl_->params().l1.hit_latency.value()),
      insts_per_access_(impl_->params().core.insts_per_access),
      issue_width_(impl_->params().core.issue_width),
      cycles_per_access_(insts_per_access_ / issue_width_),
      slots_per_access_(insts_per_access_ % issue_width_),
      interval_(impl_->params().core.model == CoreModel::kInterval),
      filter_on_(impl_->params().same_line_filter),
      preflush_(impl_->params().preflush.enabled) {}

Machine::~Machine() = default;
Machine::Machine(Machine&&) noexcept = default;
Machine& Machine::operator=(Machine&&) noexcept = default;

void Machine::access_slow(int core, LineAddr line, bool is_store, std::uint64_t l1_slot) {
  // A searched slot comes from the inline L1 path, which a hardware persist barrier turns off:
  // only unsearched accesses can need the epoch engine (Hierarchy::access_unsearched).
  if (l1_slot == kUnsearched)
    impl_->access_unsearched(core, line.value(), is_store);
  else if (!is_store)  // the inline path searched L1 and missed
    impl_->load_miss(core, line.value());
  else
    impl_->access(core, line.value(), is_store, static_cast<std::size_t>(l1_slot));
}
void Machine::store_preflush(int core, LineAddr line, std::uint32_t pc) {
  impl_->access_unsearched(core, line.value(), true, pc);
}
void Machine::rob_stall(int core) {
  impl_->rob_stall(core);
}
void Machine::periodic_tick(int core) {
  impl_->periodic_tick(core);
}

void Machine::flush(int core, LineAddr line, FlushMode mode) {
  if (mode == FlushMode::kNone || functional_) return;
  impl_->flush(core, line.value(), mode);
}
void Machine::store_nt(int core, LineAddr line, unsigned off, unsigned size) {
  if (functional_) return;
  impl_->store_nt(core, line.value(), off, size);
}
void Machine::wbinvd(int core, std::size_t lo, std::size_t hi, bool last) {
  if (functional_) return;
  impl_->wbinvd(core, lo, hi, last);
}
std::size_t Machine::llc_slots() const {
  return impl_->llc_slots();
}
void Machine::epoch_barrier(int core, bool bsp) {
  if (functional_) return;
  impl_->epoch_barrier(core, bsp);
}
void Machine::write_through(int core, LineAddr line) {
  if (functional_) return;
  impl_->epoch_write_through(core, line.value());
}
void Machine::fence(int core) {
  if (functional_) return;
  impl_->fence(core);
}
void Machine::stop_modelling() {
  functional_ = true;
  impl_->stop_modelling();
}
void Machine::fork_clocks(int from_core, int active_cores) {
  impl_->fork_clocks(from_core, active_cores > 0 ? active_cores : cores());
}
void Machine::join_clocks() {
  impl_->join_clocks();
}
void Machine::write_back_all(WriteCause cause) {
  impl_->write_back_all(cause);
}
void Machine::power_fail() {
  impl_->power_fail();
}
void Machine::reset_stats() {
  impl_->reset_stats();
}
void Machine::add_volatile(LineAddr first, LineAddr last) {
  impl_->add_volatile(first.value(), last.value());
}
void Machine::remove_volatile(LineAddr first, LineAddr last) {
  impl_->remove_volatile(first.value(), last.value());
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
  return impl_->stats();
}

}  // namespace pmlab::sim
