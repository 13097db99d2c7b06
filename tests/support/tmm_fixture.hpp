// Heap-allocated tmm operands (64-byte aligned, like a pool's arrays) plus a fault-free reference.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::testing {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

template <class T>
std::unique_ptr<T[], FreeDeleter> aligned_zeroed(std::size_t count) {
  std::size_t bytes = round_up(std::max<std::size_t>(count * sizeof(T), 64), 64);
  void* p = std::aligned_alloc(64, bytes);
  std::memset(p, 0, bytes);
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(p));
}

struct TmmFixture {
  std::size_t n, bs;
  std::unique_ptr<double[], FreeDeleter> a, b, c;
  std::unique_ptr<lp::ChecksumSlot[], FreeDeleter> slots;
  kernels::tmm::Operands op;
  lp::ChecksumTable table;

  TmmFixture(std::size_t n_, std::size_t bs_, std::uint64_t seed = 7)
      : n(n_),
        bs(bs_),
        a(aligned_zeroed<double>(n * n)),
        b(aligned_zeroed<double>(n * n)),
        c(aligned_zeroed<double>(n * n)) {
    for (std::size_t i = 0; i < n * n; ++i) {
      a[i] = kernels::input_value(seed, 0, i);
      b[i] = kernels::input_value(seed, 1, i);
    }
    op = kernels::tmm::Operands{{a.get(), n, n}, {b.get(), n, n}, {c.get(), n, n}, n, bs};
    slots = aligned_zeroed<lp::ChecksumSlot>(op.table_slots());
    table = lp::ChecksumTable(slots.get(), op.table_slots());
  }
  [[nodiscard]] std::vector<double> result() const { return {c.get(), c.get() + n * n}; }
  [[nodiscard]] std::vector<double> reference() const {
    std::vector<double> out(n * n, 0.0);
    kernels::tmm::Operands op2{{a.get(), n, n}, {b.get(), n, n}, {out.data(), n, n}, n, bs};
    mem::PlainBackend be;
    kernels::tmm::run_base(be, op2);
    return out;
  }
};

// Bitwise equality of two double vectors (NaN-safe, -0.0 distinct from 0.0).
inline bool bit_equal(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

}  // namespace pmlab::testing
