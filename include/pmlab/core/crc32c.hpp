// CRC32C over a byte buffer with the SSE4.2 instruction (pool header checksums).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pmlab {

__attribute__((target("sse4.2"))) inline std::uint32_t crc32c(const void* data, std::size_t len,
                                                              std::uint32_t crc = 0) {
  auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  for (std::size_t i = 0; i < len; ++i) c = __builtin_ia32_crc32qi(c, p[i]);
  return ~c;
}

}  // namespace pmlab
