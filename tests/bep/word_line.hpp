// A cache line of words, aligned as pool arrays are, for the BEP tests' heaps in plain memory.
#pragma once

#include <array>
#include <cstdint>

#include "pmlab/bep/entry.hpp"

namespace pmlab::bep::test {

// Line-aligned words, as pool arrays are (Deferred::lines reads line boundaries off addresses).
struct alignas(64) WordLine {
  std::array<std::uint64_t, kLineWords> w{};
  bool operator==(const WordLine&) const = default;
};

}  // namespace pmlab::bep::test
