// Deterministic input generation: the same seed gives the same matrices on every run and machine.
#pragma once

#include <cstdint>

namespace pmlab::kernels {

// splitmix64 finalizer: a well-mixed 64-bit hash of (seed, stream, index).
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A double in [-1, 1) with 53 random mantissa bits.
[[nodiscard]] constexpr double input_value(std::uint64_t seed, std::uint64_t stream,
                                           std::uint64_t index) {
  std::uint64_t h = mix64(mix64(seed * 0x100000001b3ull + stream) ^ index);
  return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;
}

// The two n x n operands of a matrix product (tmm, gemm): A from stream 0, B from stream 1.
inline void fill_product_inputs(double* a, double* b, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = 0; i < n * n; ++i) {
    a[i] = input_value(seed, 0, i);
    b[i] = input_value(seed, 1, i);
  }
}

}  // namespace pmlab::kernels
