// The LP checksum kinds as a run parameter: the enum and its names, without the accumulators,
// so that the pool (which stores the kind) and the CLI need nothing else of LP.
#pragma once

#include <cstdint>
#include <string_view>

namespace pmlab::lp {

enum class ChecksumKind : std::uint32_t {
  kModular = 1,        // 64-bit wrapping sum of the values' bit patterns (LP paper default)
  kParity = 2,         // XOR of the bit patterns
  kAdler32 = 3,        // Adler-32 over the values' bytes
  kModularParity = 4,  // modular and parity side by side
  kCrc32c = 5,         // CRC32C (SSE4.2 instruction), the strong option
};

inline constexpr ChecksumKind kAllChecksumKinds[] = {
    ChecksumKind::kModular, ChecksumKind::kParity, ChecksumKind::kAdler32,
    ChecksumKind::kModularParity, ChecksumKind::kCrc32c};

[[nodiscard]] std::string_view to_string(ChecksumKind k);
[[nodiscard]] ChecksumKind checksum_kind_from_string(std::string_view s);  // throws pmlab::Error
[[nodiscard]] bool is_valid_checksum_kind(std::uint32_t raw);

}  // namespace pmlab::lp
