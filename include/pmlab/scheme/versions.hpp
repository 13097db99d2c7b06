// In-place versioning (seed 002 §4.1): the commit record of two versions of a target array (its
// negative controls are mem::Mutation's kIpv* values).
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

}  // namespace pmlab::scheme
