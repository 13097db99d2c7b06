// What a persist barrier does (seed 004's epoch persistency): a persistency concept the BEP
// building blocks (bep/) and the simulator's epoch engine (sim/) both name.
#pragma once

#include <cstdint>
#include <string_view>

namespace pmlab::persist {

// Seed 004 (Joshi et al., MICRO'15): what a persist barrier (SimBackend::persist_barrier) does.
//  kNone:      nothing; the barrier orders no persist (the negative control of the BEP benches).
//  kSoftware:  epoch persistency in software, as x86 runs it: the code writes back the epoch's
//              lines with its flush instruction and fences (bep::EpochTracked); the hardware
//              does nothing. The default, and what `pmlab run` does natively.
//  kLb:        the lazy barrier of BPFS (Condit et al.): per-line (core, epoch) tags, epochs
//              flushed in order on a conflict or a replacement (buffered epoch persistency).
//  kLbIdt:     LB + inter-thread dependence tracking instead of online flushes.
//  kLbPf:      LB + proactive flushing of completed epochs.
//  kLbPlusPlus: LB + IDT + PF (LB++). Epoch splitting avoids the deadlock of Fig. 5 in every LB
//  mode.
enum class Barrier : std::uint8_t { kNone, kSoftware, kLb, kLbIdt, kLbPf, kLbPlusPlus };
[[nodiscard]] std::string_view to_string(Barrier b);
[[nodiscard]] Barrier barrier_from_string(std::string_view s);  // throws pmlab::Error

}  // namespace pmlab::persist
