// LP checksum kinds (modular, parity, Adler-32, modular+parity, CRC32C) as compile-time
// accumulators.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "pmlab/lp/checksum_kind.hpp"

namespace pmlab::lp {

// A checksum value; kinds with one word leave `secondary` zero.
struct ChecksumValue {
  std::uint64_t primary = 0;
  std::uint64_t secondary = 0;
  friend bool operator==(const ChecksumValue&, const ChecksumValue&) = default;
};

namespace detail {
__attribute__((target("sse4.2"))) inline std::uint64_t crc32c_u64(std::uint64_t crc,
                                                                  std::uint64_t v) {
  return __builtin_ia32_crc32di(crc, v);
}
}  // namespace detail

// Accumulates values of one region in program order; value() is the region's checksum.
template <ChecksumKind K>
class Accumulator {
 public:
  void add(double v) { add_bits(std::bit_cast<std::uint64_t>(v)); }
  void add_bits(std::uint64_t bits) {
    if constexpr (K == ChecksumKind::kModular) {
      sum_ += bits;
    } else if constexpr (K == ChecksumKind::kParity) {
      xor_ ^= bits;
    } else if constexpr (K == ChecksumKind::kModularParity) {
      sum_ += bits;
      xor_ ^= bits;
    } else if constexpr (K == ChecksumKind::kCrc32c) {
      sum_ = detail::crc32c_u64(sum_, bits);
    } else {
      // Adler-32 over the 8 little-endian bytes; the modulo is deferred (as zlib does) and
      // taken every kAdlerBlock values, well before the 64-bit sums could overflow.
      for (int i = 0; i < 8; ++i) {
        sum_ += (bits >> (8 * i)) & 0xffu;  // a
        xor_ += sum_;                       // b
      }
      if (++pending_ == kAdlerBlock) reduce();
    }
  }
  [[nodiscard]] ChecksumValue value() const {
    if constexpr (K == ChecksumKind::kModular) return {sum_, 0};
    if constexpr (K == ChecksumKind::kParity) return {xor_, 0};
    if constexpr (K == ChecksumKind::kModularParity) return {sum_, xor_};
    if constexpr (K == ChecksumKind::kCrc32c) return {sum_ ^ 0xffffffffu, 0};
    if constexpr (K == ChecksumKind::kAdler32) {
      Accumulator copy = *this;
      copy.reduce();
      return {(copy.xor_ << 16) | copy.sum_, 0};
    }
  }

 private:
  static constexpr std::uint64_t kAdlerMod = 65521;
  static constexpr int kAdlerBlock = 512;
  void reduce() {
    sum_ %= kAdlerMod;
    xor_ %= kAdlerMod;
    pending_ = 0;
  }
  // Adler-32 starts with a = 1; CRC32C with all ones.
  std::uint64_t sum_ =
      K == ChecksumKind::kAdler32 ? 1u : (K == ChecksumKind::kCrc32c ? 0xffffffffu : 0u);
  std::uint64_t xor_ = 0;
  int pending_ = 0;
};

// Calls fn(std::integral_constant<ChecksumKind, K>{}) for the runtime kind k: the kind is
// chosen once per run, and every hot loop is compiled for exactly one kind.
template <class Fn>
decltype(auto) with_checksum_kind(ChecksumKind k, Fn&& fn) {
  switch (k) {
    case ChecksumKind::kParity:
      return fn(std::integral_constant<ChecksumKind, ChecksumKind::kParity>{});
    case ChecksumKind::kAdler32:
      return fn(std::integral_constant<ChecksumKind, ChecksumKind::kAdler32>{});
    case ChecksumKind::kModularParity:
      return fn(std::integral_constant<ChecksumKind, ChecksumKind::kModularParity>{});
    case ChecksumKind::kCrc32c:
      return fn(std::integral_constant<ChecksumKind, ChecksumKind::kCrc32c>{});
    case ChecksumKind::kModular:
      break;
  }
  return fn(std::integral_constant<ChecksumKind, ChecksumKind::kModular>{});
}

}  // namespace pmlab::lp
