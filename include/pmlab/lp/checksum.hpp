// LP checksum kinds (modular, parity, Adler-32, modular+parity, CRC32C) as compile-time
// accumulators.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "pmlab/lp/block_fold.hpp"
#include "pmlab/lp/checksum_kind.hpp"

namespace pmlab::lp {

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
  /// Folds in body(j) for j = begin .. end-1, called in that order (each call typically stores
  /// one value and returns it). Equal to add(body(j)) for each j in turn. For the kinds whose
  /// fold is commutative and associative (modular, parity, modular-parity), the values go into
  /// kLanes independent partial sums combined at the end: the same checksum (wrapping addition
  /// and XOR do not care about order), but no loop-carried dependence through one register, so
  /// the loop vectorises and runs at the speed of the loop without the checksum
  /// (docs/lp-native-cost.md). Adler-32 and CRC32C depend on order and fold one by one.
  template <class Body>
  void add_each(std::size_t begin, std::size_t end, Body&& body) {
    if constexpr (kCommutative) {
      std::uint64_t sum[kLanes] = {}, x[kLanes] = {};
      // A count of whole groups, not `j + kLanes <= end`: with the latter GCC 12 also keeps a
      // vector of the indices j in the loop (two more instructions per iteration) for the tail.
      // Unrolled by 4 groups; gauss::fold_row gives base's loop the same shape.
      const std::size_t groups = end > begin ? (end - begin) / kLanes : 0;
      std::size_t j = begin;
#pragma GCC unroll 4
      for (std::size_t g = 0; g < groups; ++g, j += kLanes)
        for (std::size_t l = 0; l < kLanes; ++l) {
          const auto bits = std::bit_cast<std::uint64_t>(body(j + l));
          if constexpr (K != ChecksumKind::kParity) sum[l] += bits;
          if constexpr (K != ChecksumKind::kModular) x[l] ^= bits;
        }
      for (; j < end; ++j) add(body(j));
      for (std::size_t l = 0; l < kLanes; ++l) {
        sum_ += sum[l];
        xor_ ^= x[l];
      }
    } else {
      for (std::size_t j = begin; j < end; ++j) add(body(j));
    }
  }
  /// Folds in a block the caller has just stored, row after row: equal to add() of each of its
  /// values in that order. The values are read back with plain loads (from L1), which is
  /// cheaper than folding each as it is stored because the commutative kinds fold 16 values per
  /// step in wide vectors (docs/lp-native-cost.md). A simulator does not see these loads, as it
  /// would not see a fold of values held in registers.
  void add_block(const StoredBlock& b) {
    if constexpr (K == ChecksumKind::kModular || K == ChecksumKind::kModularParity)
      sum_ += detail::sum_bits(b);
    if constexpr (K == ChecksumKind::kParity || K == ChecksumKind::kModularParity)
      xor_ ^= detail::xor_bits(b);
    if constexpr (!kCommutative)
      for (std::size_t r = 0; r < b.rows; ++r)
        for (std::size_t c = 0; c < b.row_len(r); ++c) add(b.p[r * b.ld + c]);
  }
  /// Folds in the wrapping sum and the XOR of some values' bit patterns, computed elsewhere (a
  /// kernel's vector registers): equal to add() of each value. Commutative kinds only.
  void add_words(std::uint64_t sum, std::uint64_t x) {
    static_assert(kCommutative, "Adler-32 and CRC32C depend on the order of the values");
    sum_ += sum;
    xor_ ^= x;
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
  // Whether the fold is commutative and associative, so that partial sums may be combined.
  static constexpr bool kCommutative = K == ChecksumKind::kModular || K == ChecksumKind::kParity ||
                                       K == ChecksumKind::kModularParity;
  // Four 64-bit partial sums: two SSE2 registers, enough independent chains to hide the
  // latency of the integer add behind the loop's loads and stores (measured in
  // docs/lp-native-cost.md: one chain costs gauss +40%, four cost nothing measurable).
  static constexpr std::size_t kLanes = 4;
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

/// The hook by which a kernel reports each block it has just stored: `on_stored(StoredBlock)`.
/// LP folds the block into its region's checksum (fold_stored_into); base and every scheme
/// without a checksum pass kIgnoreStored, so their loop is LP's minus the fold.
inline constexpr auto kIgnoreStored = [](const StoredBlock&) {};

/// A hook that folds each reported block into `sink` (an Accumulator or a Region).
template <class Sink>
[[nodiscard]] auto fold_stored_into(Sink& sink) {
  return [&sink](const StoredBlock& b) { sink.add_block(b); };
}

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
