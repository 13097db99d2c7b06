// A block of values a kernel has just stored, and the wrapping sum and XOR of its bit patterns
// in wide vectors: the commutative checksums' fold of a finished tile (docs/lp-native-cost.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pmlab::lp {

/// `rows` rows of `cols` doubles, row r at p + r * ld, stored row after row; with `lower`, row
/// r holds only its first min(r + 1, cols) values (a diagonal tile's lower triangle).
struct StoredBlock {
  const double* p = nullptr;  ///< the tile's first value
  std::size_t rows = 0;       ///< rows in the tile
  std::size_t cols = 0;       ///< values per full row
  std::size_t ld = 0;         ///< doubles from one row's start to the next's
  bool lower = false;         ///< only the lower triangle (row r: min(r + 1, cols) values)
  /// How many values row r holds.
  [[nodiscard]] std::size_t row_len(std::size_t r) const {
    return lower && r + 1 < cols ? r + 1 : cols;
  }
};

namespace detail {
/// Sum mod 2^64 of the bit patterns of the block's values.
[[nodiscard]] std::uint64_t sum_bits(const StoredBlock& b);
/// XOR of the bit patterns of the block's values.
[[nodiscard]] std::uint64_t xor_bits(const StoredBlock& b);
}  // namespace detail

}  // namespace pmlab::lp
