// On-disk layout of a pool header (docs/pool-format.md describes it field by field).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "pmlab/core/crc32c.hpp"

namespace pmlab::pool::disk {

// What protects each byte of the 4096-byte header, so that one flipped bit anywhere in it is
// refused (kPoolCorrupt or kPoolVersion, exit 3) before anything is written:
//  - [0, 1608): the immutable Header, written once at creation; header_crc (CRC32C) covers every
//    byte before it, and a CRC detects every single-bit error, the CRC field's own included.
//  - [2048, 2056): the state word, the only mutable field. It is rewritten during a run
//    (initialized -> running -> done, one start counted per run), so a checksum kept elsewhere
//    would need a second store, and a crash between the two would look like damage. The word
//    therefore carries its own check: the low 32 bits are the payload (run state in bits 0-7,
//    starts in bits 8-31), the high 32 bits the CRC32C of those four payload bytes. Every update
//    is one aligned 8-byte store followed by a persist, which is failure-atomic (x86, and a page
//    write-back never tears one aligned word): after a crash the word is the old one or the new
//    one, both self-consistent, never a mix.
//  - every other byte ([1608, 2048) and [2056, 4096)) is zero at creation and must stay zero.
// Pools of formats 1-3 are refused with their version named (kPoolVersion, exit 3), not read:
// their state word had no check bits (a magic upper half over a bare state number, so running
// and done were one bit apart) and their start count none at all.
inline constexpr char kMagic[8] = {'P', 'M', 'L', 'A', 'B', 'P', 'L', '\0'};
inline constexpr std::uint64_t kHeaderBytes = 4096;
inline constexpr std::uint64_t kStateOffset = 2048;  // own cache line, outside the header CRC
inline constexpr std::uint64_t kArrayAlign = 64;
// Starts are counted up to this and then stay there (24 bits of the state word).
inline constexpr std::uint32_t kMaxStarts = (1u << 24) - 1;

struct Array {
  char name[24];
  std::uint64_t offset;
  std::uint64_t bytes;
};

struct Param {
  char name[16];
  std::uint64_t value;
};

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_bytes;
  std::uint64_t file_bytes;
  char kernel[16];
  char scheme[24];
  std::uint32_t reserved0;  // format 2 stored the checksum kind's number here
  std::uint32_t threads;
  std::uint64_t n, bs, seed;
  std::uint32_t array_count;
  std::uint32_t param_count;  // kernel parameters (format 2; format 1 had one `extra` word here)
  Param params[8];
  Array arrays[32];
  std::uint32_t layout_tag;  // format 3: RunParams::layout_tag
  std::uint32_t reserved1;
  char checksum[16];         // format 3: the checksum kind by name (NUL-padded)
  std::uint64_t header_crc;  // CRC32C of every byte before this field
};
static_assert(sizeof(Header) < kStateOffset);
static_assert(offsetof(Header, params) == 104 && offsetof(Header, arrays) == 296 &&
              offsetof(Header, layout_tag) == 1576 && offsetof(Header, checksum) == 1584 &&
              offsetof(Header, header_crc) == 1600 && sizeof(Header) == 1608);  // pool-format.md
static_assert(offsetof(Header, header_crc) % 8 == 0 && kStateOffset % 64 == 0);

// The run state and start count as one self-checked word (the rule above).
struct StateWord {
  std::uint8_t state = 0;    // RunState's value
  std::uint32_t starts = 0;  // <= kMaxStarts
};

[[nodiscard]] inline std::uint64_t encode_state_word(StateWord s) {
  const std::uint32_t payload = s.state | (s.starts << 8);
  const unsigned char bytes[4] = {
      static_cast<unsigned char>(payload), static_cast<unsigned char>(payload >> 8),
      static_cast<unsigned char>(payload >> 16), static_cast<unsigned char>(payload >> 24)};
  return payload | (std::uint64_t{crc32c(bytes, sizeof bytes)} << 32);
}

// The word's payload, or nullopt when its check bits disagree with it (the word was damaged).
[[nodiscard]] inline std::optional<StateWord> decode_state_word(std::uint64_t word) {
  const auto payload = static_cast<std::uint32_t>(word);
  const StateWord s{static_cast<std::uint8_t>(payload & 0xff), payload >> 8};
  if (encode_state_word(s) != word) return std::nullopt;
  return s;
}

}  // namespace pmlab::pool::disk
