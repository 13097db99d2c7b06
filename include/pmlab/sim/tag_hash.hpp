// Set lookup by tag hashes: one byte per way, eight ways compared at once in a 64-bit word.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pmlab::sim::detail {

// Each way keeps a 7-bit hash of its tag beside the tag; invalid ways hold kNoHash, which no
// hash equals. A lookup XORs the set's hash bytes with the wanted hash and finds the zero
// bytes with the SWAR "has zero byte" test (8 ways in ~6 instructions), then compares only
// those ways' full tags: about one tag load per lookup, against 8 compares of 64-bit tags
// (37 instructions per lookup before, measured with callgrind; docs/sim-reproduction.md).
// Written by hand because no library offers it for a cache model's flat arrays; the same
// technique as the control bytes of Abseil's SwissTable and folly's F14.
inline constexpr std::uint8_t kNoHash = 0xFF;
// A valid line hidden from hashed lookups (Cache::hide, the stream prefetcher's unused lines):
// like kNoHash it has its high bit set, so it is never a candidate, not even by a borrow.
inline constexpr std::uint8_t kHiddenHash = 0xFE;

[[nodiscard]] constexpr std::uint8_t tag_hash(std::uint64_t line) {
  // Fibonacci hashing: the top 7 bits of the product depend on every bit of the line, so
  // lines of one set (equal low bits) still spread over the 128 values.
  return static_cast<std::uint8_t>((line * 0x9e3779b97f4a7c15ull) >> 57);
}

// The slot of `line` among the eight ways from `base`, or ~0.
[[gnu::always_inline]] [[nodiscard]] inline std::size_t find_hashed8(const std::uint64_t* tags,
                                                                     const std::uint8_t* hashes,
                                                                     std::size_t base,
                                                                     std::uint64_t line) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kHighs = 0x8080808080808080ull;
  std::uint64_t word;
  std::memcpy(&word, hashes + base, sizeof word);
  const std::uint64_t x = word ^ (kOnes * tag_hash(line));
  // A zero byte always sets its high bit here; a borrow can also set the bit of a byte above
  // a zero one, so every candidate is confirmed by its full tag.
  for (std::uint64_t m = (x - kOnes) & ~x & kHighs; m != 0; m &= m - 1) {
    // Unsigned before the division: the way's index is then zero-extended for free, where the
    // int division took a sign extension too (one instruction per candidate, commit 4a14bb5).
    const std::size_t s = base + static_cast<std::uint32_t>(std::countr_zero(m)) / 8;
    if (tags[s] == line) return s;
  }
  return ~std::size_t{0};
}

// The slot of `line` in the set starting at `base` (ways a multiple of 8), or ~0.
[[nodiscard]] inline std::size_t find_hashed(const std::uint64_t* tags, const std::uint8_t* hashes,
                                             std::size_t base, std::size_t ways,
                                             std::uint64_t line) {
  // Eight ways (most presets' levels) without the loop over groups.
  if (ways == 8) [[likely]]
    return find_hashed8(tags, hashes, base, line);
  for (std::size_t group = base; group < base + ways; group += 8)
    if (const std::size_t s = find_hashed8(tags, hashes, group, line); s != ~std::size_t{0})
      return s;
  return ~std::size_t{0};
}

}  // namespace pmlab::sim::detail
