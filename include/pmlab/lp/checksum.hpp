// LP checksum kinds (modular, parity, Adler-32, modular+parity, CRC32C) as compile-time
// accumulators.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace pmlab::lp {

/// How a region's values are folded into its checksum.
enum class ChecksumKind : std::uint32_t {
  kModular = 1,        ///< 64-bit wrapping sum of the values' bit patterns (LP paper default)
  kParity = 2,         ///< XOR of the bit patterns
  kAdler32 = 3,        ///< Adler-32 over the values' bytes
  kModularParity = 4,  ///< modular and parity side by side
  kCrc32c = 5,         ///< CRC32C (SSE4.2 instruction), the strong option
};

/// Every checksum kind.
inline constexpr ChecksumKind kAllChecksumKinds[] = {
    ChecksumKind::kModular, ChecksumKind::kParity, ChecksumKind::kAdler32,
    ChecksumKind::kModularParity, ChecksumKind::kCrc32c};

/// The kind's name: modular, parity, adler32, modular-parity, crc32c.
[[nodiscard]] std::string_view to_string(ChecksumKind k);
/// The kind named `s`; throws pmlab::Error (kInvalidArgument) for an unknown name.
[[nodiscard]] ChecksumKind checksum_kind_from_string(std::string_view s);
/// Whether `raw` is the value of a ChecksumKind (pool headers store it as a number).
[[nodiscard]] bool is_valid_checksum_kind(std::uint32_t raw);

/// A checksum value; kinds with one word leave `secondary` zero.
struct ChecksumValue {
  std::uint64_t primary = 0;    ///< the checksum (modular sum, parity, Adler-32 or CRC32C)
  std::uint64_t secondary = 0;  ///< the parity of kModularParity, else 0
  /// Both words equal.
  friend bool operator==(const ChecksumValue&, const ChecksumValue&) = default;
};

namespace detail {
__attribute__((target("sse4.2"))) inline std::uint64_t crc32c_u64(std::uint64_t crc,
                                                                  std::uint64_t v) {
  return __builtin_ia32_crc32di(crc, v);
}
}  // namespace detail

/// Accumulates values of one region in program order; value() is the region's checksum.
template <ChecksumKind K>
class Accumulator {
 public:
  /// Folds in a double by its bit pattern (so -0.0 and 0.0, or two NaNs, differ).
  void add(double v) { add_bits(std::bit_cast<std::uint64_t>(v)); }
  /// Folds in a 64-bit word.
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
  /// The checksum of everything added so far.
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

/// Calls fn(std::integral_constant<ChecksumKind, K>{}) for the runtime kind k: the kind is
/// chosen once per run, and every hot loop is compiled for exactly one kind.
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
