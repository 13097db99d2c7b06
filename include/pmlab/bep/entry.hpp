// The BEP benchmarks' 512 B data entry (seed Table 2) with a checksum word, and their PRNG.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "pmlab/mem/backend.hpp"

namespace pmlab::bep {

inline constexpr std::size_t kEntryWords = 64;  // 512 B: the seed's data entry
inline constexpr std::size_t kLineWords = 8;

// Word 0 identifies the entry (benchmark-defined: a key, producer and sequence number, an id),
// word 1 is a link the structure may rewrite in place (a chain's next), words 2..62 are payload
// derived from the identity, and word 63 checks words 0 and 2..62, so an entry whose lines
// persisted from different writes (a torn entry) is detected.
struct alignas(64) Entry {
  std::array<std::uint64_t, kEntryWords> w;
};
static_assert(sizeof(Entry) == 512);

// splitmix64: the benchmarks' stateless PRNG, so op j of thread t draws the same numbers
// whether it runs first or is replayed after a crash.
[[nodiscard]] constexpr std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// The random word of op j of thread t under seed s.
[[nodiscard]] constexpr std::uint64_t op_random(std::uint64_t s, std::uint64_t t, std::uint64_t j) {
  return mix(mix(mix(s) ^ t) ^ j);
}

[[nodiscard]] constexpr std::uint64_t payload_word(std::uint64_t id, std::size_t k) {
  return mix(id * 131 + k);
}
// Checksum of words 0 and 2..62 (position-dependent, so swapped words are caught too).
template <class Word>
[[nodiscard]] constexpr std::uint64_t entry_checksum(Word&& word) {
  std::uint64_t h = 0x243f6a8885a308d3ull;
  for (std::size_t k = 0; k + 1 < kEntryWords; ++k)
    if (k != 1) h = mix(h ^ word(k)) + k;
  return h;
}

// Writes a whole entry (identity word a, link w1, payload of `id`, checksum) through backend b.
template <class B>
void write_entry(B& b, Entry& e, std::uint64_t a, std::uint64_t w1, std::uint64_t id) {
  std::array<std::uint64_t, kEntryWords> v{};
  v[0] = a;
  v[1] = w1;
  for (std::size_t k = 2; k + 1 < kEntryWords; ++k) v[k] = payload_word(id, k);
  v[kEntryWords - 1] = entry_checksum([&](std::size_t k) { return v[k]; });
  for (std::size_t k = 0; k < kEntryWords; ++k) b.store(&e.w[k], v[k]);
}
// Plain loads and stores outside any backend: the initial fill of a pool (which the pool makes
// durable) shares its code with a restart, which writes through the backend.
struct DirectStores {
  template <class T>
  [[nodiscard]] T load(const T* p) const {
    return *p;
  }
  template <class T>
  void store(T* p, T v) const {
    *p = v;
  }
};

// The same entry written directly (initial fill and references, outside any backend).
inline void fill_entry(Entry& e, std::uint64_t a, std::uint64_t w1, std::uint64_t id) {
  DirectStores d;
  write_entry(d, e, a, w1, id);
}
// True if e is whole: checksum matches and the payload is the one of `id`.
[[nodiscard]] inline bool entry_intact(const Entry& e, std::uint64_t id) {
  if (e.w[kEntryWords - 1] != entry_checksum([&](std::size_t k) { return e.w[k]; })) return false;
  for (std::size_t k = 2; k + 1 < kEntryWords; ++k)
    if (e.w[k] != payload_word(id, k)) return false;
  return true;
}

// Copies a whole entry through the backend (loads then stores; used by swaps and dequeues).
template <mem::Backend B>
void copy_entry(B& b, Entry& dst, const Entry& src) {
  for (std::size_t k = 0; k < kEntryWords; ++k) b.store(&dst.w[k], b.load(&src.w[k]));
}

}  // namespace pmlab::bep
