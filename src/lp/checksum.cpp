// Names of the checksum kinds.
#include "pmlab/lp/checksum.hpp"

#include <string>

#include "pmlab/core/error.hpp"
#include "pmlab/lp/checksum_param.hpp"

namespace pmlab::lp {

std::string_view to_string(ChecksumKind k) {
  switch (k) {
    case ChecksumKind::kModular:
      return "modular";
    case ChecksumKind::kParity:
      return "parity";
    case ChecksumKind::kAdler32:
      return "adler32";
    case ChecksumKind::kModularParity:
      return "modular-parity";
    case ChecksumKind::kCrc32c:
      return "crc32c";
  }
  return "?";
}

ChecksumKind checksum_kind_from_string(std::string_view s) {
  for (auto k : kAllChecksumKinds)
    if (to_string(k) == s) return k;
  throw Error(ErrorCode::kInvalidArgument,
              "unknown checksum kind '" + std::string(s) +
                  "' (expected modular, parity, adler32, modular-parity or crc32c)");
}

ChecksumKind checksum_of(const pool::RunParams& p) {
  return checksum_kind_from_string(p.checksum);
}

void set_checksum(pool::RunParams& p, ChecksumKind k) {
  p.checksum = std::string(to_string(k));
}

bool is_valid_checksum_kind(std::uint32_t raw) {
  return raw >= 1 && raw <= 5;
}

}  // namespace pmlab::lp
