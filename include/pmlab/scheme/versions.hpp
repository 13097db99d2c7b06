// In-place versioning (seed 002 §4.1): the commit record of two versions of a target array, and
// the test-only protocol mutants the crash campaigns must catch.
#pragma once

#include <cstdint>

namespace pmlab::scheme {

// One line; each word is one aligned 8-byte store, so each is failure-atomic. Version d % 2
// holds the result of the first `done` iterations once `done` is durable (the paper leaves the
// commit record unspecified: seed 002 spec A.7(3)); `complete` is set once the result is in the
// kernel's own array (version 0).
struct alignas(64) IpvHeader {
  std::uint64_t done;
  std::uint64_t complete;
  std::uint64_t reserved[6];
};
static_assert(sizeof(IpvHeader) == 64);

// From PMLAB_IPV_MUTANT (read once per process; tests may override).
enum class IpvMutant {
  kNone,
  kCommitBeforeFlush,       // "commit-before-flush": done = it + 1 persisted before the flush
  kBarrierAfterFirstWrite,  // "barrier-after-write": barrier + commit after the first panel
  kSkipFlush,               // "skip-flush": the working version's last panel is never flushed
};
[[nodiscard]] IpvMutant ipv_mutant();  // src/scheme/versions.cpp
void set_ipv_mutant(IpvMutant m);

}  // namespace pmlab::scheme
