// Deliberate protocol bugs (crash-campaign negative controls) that backends can carry.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace pmlab::mem {

// A test aid: a crash campaign run with a mutation must fail, or it could not have seen that
// bug. Only the simulator's backend (SimBackend::set_mutation) and the scheme tests' crash
// backend carry one; the building blocks ask through mutated(), which is constant false for
// every other backend, so native code pays nothing. Which mutations break which scheme is
// declared by the scheme's row (Scheme::mutants, include/pmlab/scheme/scheme.hpp).
enum class Mutation : std::uint8_t {
  kNone,
  kNoFlush,      // the backend drops every flush (persist() keeps only its fence)
  kNoFence,      // the backend drops every fence
  kNoValidate,   // LP recovery trusts every written checksum slot without recomputing it
  kCommitEarly,  // commit records (undo-log flag clear, checkpoint publish) are made durable
                 // before the data they commit
  // Seed 002's checkpoint-by-copy rows (cp-clflush, cp-par-clflush, cp-nt):
  kCpNoFlush,   // the copy's stores are never flushed (the fence alone is no persist)
  kCpNoSfence,  // the copy is never fenced before the checkpoint is published
  // cp-nt-async: the barrier and publish only after the next iteration wrote the state the
  // helper is still copying
  kCpBarrierAfterWrite,
  // Seed 002's in-place versioning (ipv, ipv-sync):
  kIpvCommitBeforeFlush,  // done = kt + 1 persisted before the working version is flushed
  kIpvBarrierAfterWrite,  // barrier + commit after the next iteration wrote the other version
  kIpvSkipFlush,          // version 1 (the scheme's own array) is never flushed
  // Seed 004's epoch engine under a hardware barrier (lb*), each breaking one rule of
  // docs/simulator.md "Persist barriers" (sim::PersistencyParams::Debug):
  kLbNoIntraFlush,        // an intra-thread conflict just retags the line
  kLbNoReplacementOrder,  // an LLC victim is written before its older epochs
  kLbNoSplit,             // a conflict on an ongoing epoch does not split it
  kLbPerBankNoArbiter,    // Fig. 7a: 2 LLC banks flush their lines independently
  kIdtIgnoreDeps,         // lb-idt, lb++: dependences are recorded but never enforced
  kIdtDepOnlyWaw,         // lb-idt, lb++: a WAW conflict only records a dependence
  // PreFlush (thesis Ch. 5, simulator hardware; applicable when --preflush on):
  kPreflushNoOwnStore,  // an own store to a PreFlushed line is not seen as a misprediction
  kPreflushNoNack,      // the directory never NACKs a PreFlush on another core's store
  // Seed 002's DRAM cache (simulator, applicable when --dram-cache on): the rows that persist
  // through it (ipv, cp) never write its dirty lines to NVM (SimBackend::dram_cache_flush)
  kDramCacheNoFlush,
};

[[nodiscard]] constexpr std::string_view to_string(Mutation m) {
  switch (m) {
    case Mutation::kNone:
      return "none";
    case Mutation::kNoFlush:
      return "no-flush";
    case Mutation::kNoFence:
      return "no-fence";
    case Mutation::kNoValidate:
      return "no-validate";
    case Mutation::kCommitEarly:
      return "commit-early";
    case Mutation::kCpNoFlush:
      return "cp-no-flush";
    case Mutation::kCpNoSfence:
      return "cp-no-sfence";
    case Mutation::kCpBarrierAfterWrite:
      return "cp-barrier-after-write";
    case Mutation::kIpvCommitBeforeFlush:
      return "ipv-commit-before-flush";
    case Mutation::kIpvBarrierAfterWrite:
      return "ipv-barrier-after-write";
    case Mutation::kIpvSkipFlush:
      return "ipv-skip-flush";
    case Mutation::kLbNoIntraFlush:
      return "lb-no-intra-flush";
    case Mutation::kLbNoReplacementOrder:
      return "lb-no-replacement-order";
    case Mutation::kLbNoSplit:
      return "lb-no-split";
    case Mutation::kLbPerBankNoArbiter:
      return "lb-per-bank-no-arbiter";
    case Mutation::kIdtIgnoreDeps:
      return "idt-ignore-deps";
    case Mutation::kIdtDepOnlyWaw:
      return "idt-dep-only-waw";
    case Mutation::kPreflushNoOwnStore:
      return "preflush-no-own-store";
    case Mutation::kPreflushNoNack:
      return "preflush-no-nack";
    case Mutation::kDramCacheNoFlush:
      return "dram-cache-no-flush";
  }
  return "?";
}

inline constexpr Mutation kAllMutations[] = {Mutation::kNoFlush,
                                             Mutation::kNoFence,
                                             Mutation::kNoValidate,
                                             Mutation::kCommitEarly,
                                             Mutation::kCpNoFlush,
                                             Mutation::kCpNoSfence,
                                             Mutation::kCpBarrierAfterWrite,
                                             Mutation::kIpvCommitBeforeFlush,
                                             Mutation::kIpvBarrierAfterWrite,
                                             Mutation::kIpvSkipFlush,
                                             Mutation::kLbNoIntraFlush,
                                             Mutation::kLbNoReplacementOrder,
                                             Mutation::kLbNoSplit,
                                             Mutation::kLbPerBankNoArbiter,
                                             Mutation::kIdtIgnoreDeps,
                                             Mutation::kIdtDepOnlyWaw,
                                             Mutation::kPreflushNoOwnStore,
                                             Mutation::kPreflushNoNack,
                                             Mutation::kDramCacheNoFlush};

// The epoch engine's mutations (hardware barriers only); the idt- ones need IDT (lb-idt, lb++).
[[nodiscard]] constexpr bool epoch_engine_mutation(Mutation m) {
  return m >= Mutation::kLbNoIntraFlush && m <= Mutation::kIdtDepOnlyWaw;
}
[[nodiscard]] constexpr bool idt_mutation(Mutation m) {
  return m == Mutation::kIdtIgnoreDeps || m == Mutation::kIdtDepOnlyWaw;
}

// The machine a crash campaign needs for a mutant to be visible, declared with the mutant: a
// negative control of `pmlab crash` runs on the first machine of its class's ladder on which its
// campaign fails a trial (experiments::exposing_ladder; docs/crash-campaigns.md "Each control
// on the machine that exposes it"). No consumer looks at a mutant's name for it.
enum class ExposingMachine : std::uint8_t {
  kCampaign,  // the campaign's own machine
  // The preset's caches: behind small ones cp-nt-async's helper copy always ends first, so its
  // barrier mutant could never fail (docs/seed002.md, "cp-nt-async"). A row that declares such
  // a mutant runs its whole campaign on them (experiments::keeps_preset_caches).
  kPreset,
  // The epoch engine's rules act on LLC victims that carry an epoch while older ones are still
  // cached, and on conflicts between epochs of two threads, which a run of the default size on
  // the campaign's 32 KiB LLC and 2 threads seldom has: the campaign's machine, then smaller
  // caches (a 4, 2 and 1 KiB LLC), then 4 cores and 4 threads.
  kEvictionsOrConflicts,
};
[[nodiscard]] constexpr ExposingMachine exposing_machine(Mutation m) {
  if (m == Mutation::kCpBarrierAfterWrite) return ExposingMachine::kPreset;
  if (epoch_engine_mutation(m)) return ExposingMachine::kEvictionsOrConflicts;
  return ExposingMachine::kCampaign;
}

// The mutations a scheme row declares it must be broken by: a constexpr set, so that scheme
// tables (constexpr tuples) can carry one per row. Empty = no negative control applies.
class MutationSet {
 public:
  constexpr MutationSet() = default;
  constexpr MutationSet(std::initializer_list<Mutation> ms) {
    for (const Mutation m : ms) bits_ |= bit(m);
  }
  [[nodiscard]] constexpr bool contains(Mutation m) const { return (bits_ & bit(m)) != 0; }
  [[nodiscard]] constexpr bool empty() const { return bits_ == 0; }
  [[nodiscard]] constexpr MutationSet operator|(MutationSet o) const {
    MutationSet s;
    s.bits_ = bits_ | o.bits_;
    return s;
  }
  // In kAllMutations order.
  [[nodiscard]] std::vector<Mutation> list() const {
    std::vector<Mutation> out;
    for (const Mutation m : kAllMutations)
      if (contains(m)) out.push_back(m);
    return out;
  }
  friend constexpr bool operator==(MutationSet, MutationSet) = default;

 private:
  // kNone is never a member: it is the absence of a mutation.
  static constexpr std::uint32_t bit(Mutation m) {
    return m == Mutation::kNone ? 0u : 1u << static_cast<unsigned>(m);
  }
  std::uint32_t bits_ = 0;
};

// True if backend `b` carries mutation `m`.
template <class B>
[[nodiscard]] constexpr bool mutated(const B& b, Mutation m) {
  if constexpr (requires { b.mutation(); })
    return b.mutation() == m;
  else
    return false;
}

}  // namespace pmlab::mem
