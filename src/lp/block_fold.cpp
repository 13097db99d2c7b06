// Wrapping sum and XOR of a block of doubles' bit patterns, with AVX2 where the CPU has it.
#include "pmlab/lp/block_fold.hpp"

#include <cstring>

// The helpers below pass 32-byte vectors by value; GCC warns that this changes the ABI without
// AVX. They are always inlined into the clones, so no call crosses that ABI.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace pmlab::lp::detail {
namespace {

// Four lanes of 64 bits: one AVX2 register, two SSE2 ones in the default clone.
using Lanes = std::uint64_t __attribute__((vector_size(32)));

[[gnu::always_inline]] inline Lanes load_lanes(const double* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

[[gnu::always_inline]] inline std::uint64_t bits(const double* p) {
  std::uint64_t b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

// Sixteen values per step into four independent accumulators: a tmm or Cholesky tile row is
// 16 wide, so its fold is one step with no loop-carried dependence between the adds. Written
// by hand because GCC vectorises the plain reduction 2 lanes at a time, one step per 2 values,
// with a horizontal reduction after every row: more instructions than folding each value as
// it is stored, which is what this replaces.
// Inlined into each clone so that each is compiled for its own instruction set.
template <class Op>
[[gnu::always_inline]] inline std::uint64_t fold(const StoredBlock& blk, Op op) {
  Lanes a{}, b{}, c{}, d{};
  std::uint64_t tail = 0;
  if (blk.cols == 16 && !blk.lower) {  // the common tile: 7 instructions per row (AVX2)
    for (const double* row = blk.p; row != blk.p + blk.rows * blk.ld; row += blk.ld) {
      a = op(a, load_lanes(row));
      b = op(b, load_lanes(row + 4));
      c = op(c, load_lanes(row + 8));
      d = op(d, load_lanes(row + 12));
    }
  } else {
    for (std::size_t r = 0; r < blk.rows; ++r) {
      const double* row = blk.p + r * blk.ld;
      const std::size_t cols = blk.row_len(r);
      std::size_t j = 0;
      for (; j + 16 <= cols; j += 16) {
        a = op(a, load_lanes(row + j));
        b = op(b, load_lanes(row + j + 4));
        c = op(c, load_lanes(row + j + 8));
        d = op(d, load_lanes(row + j + 12));
      }
      for (; j + 4 <= cols; j += 4) a = op(a, load_lanes(row + j));
      for (; j < cols; ++j) tail = op(tail, bits(row + j));
    }
  }
  const Lanes all = op(op(a, b), op(c, d));
  return op(op(op(all[0], all[1]), op(all[2], all[3])), tail);
}

}  // namespace

__attribute__((target_clones("avx2", "default"))) std::uint64_t sum_bits(const StoredBlock& b) {
  return fold(b, [](auto x, auto y) { return x + y; });
}

__attribute__((target_clones("avx2", "default"))) std::uint64_t xor_bits(const StoredBlock& b) {
  return fold(b, [](auto x, auto y) { return x ^ y; });
}

}  // namespace pmlab::lp::detail
