// On-disk layout of a pool header (docs/pool-format.md describes it field by field).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pmlab::pool::disk {

inline constexpr char kMagic[8] = {'P', 'M', 'L', 'A', 'B', 'P', 'L', '\0'};
inline constexpr std::uint64_t kHeaderBytes = 4096;
inline constexpr std::uint64_t kStateOffset = 2048;  // own cache line, outside the CRC
inline constexpr std::uint64_t kStateMagic = 0x5354'4154'0000'0000ull;  // "STAT" in the top half
inline constexpr std::uint64_t kArrayAlign = 64;

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
              offsetof(Header, header_crc) == 1600);  // as docs/pool-format.md lists them
static_assert(offsetof(Header, header_crc) % 8 == 0);

struct StateLine {
  std::uint64_t state_word;  // kStateMagic | RunState
  std::uint64_t starts;      // times a run was started on this pool
};

}  // namespace pmlab::pool::disk
