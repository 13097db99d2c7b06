// GEMM packing buffers at addresses the simulator sees alike in every run: one aligned workspace.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <vector>

#include "pmlab/core/strong_types.hpp"

namespace pmlab::kernels::gemm {

// The simulator models caches and NVM rows by address, so a packing buffer's address must not
// depend on the heap's state. A std::vector's did: glibc placed it by address-space layout
// randomisation and by every earlier allocation (16 bytes past a line boundary, too), so `pmlab
// sim gemm --pack` gave different misses and row writes from run to run (docs/gemm.md, "Packing
// buffers"). Here the buffers are slots of one workspace, as in OpenBLAS (level3.c: sa at the
// start of a thread's buffer, sb after it at the next GEMM_ALIGN = 16 KiB boundary): slot i
// starts i strides into a 2 MiB-aligned chunk of kSlotsPerChunk slots, the stride being the
// slot's size rounded up to 16 KiB. Every address bit the L1 and LLC set indices and the row
// buffer's column, bank and rank use is then the same in every run (PMDK maps the pool with the
// same 2 MiB alignment, which is why the pool's arrays never had the problem). Slots are handed
// out last-given-back first, so the simulator's deterministic order of takes and gives reuses
// them the same way every time. Written here rather than with std::pmr: no standard resource
// guarantees both the placement and a reuse order that depends only on the calls.
class PackArena {
 public:
  static constexpr std::size_t kChunkAlignment = std::size_t{2} << 20;
  static constexpr std::size_t kSlotAlignment = std::size_t{16} << 10;
  static constexpr std::size_t kSlotsPerChunk = 8;

  explicit PackArena(std::size_t doubles_per_slot)
      : doubles_(doubles_per_slot),
        stride_(
            round_up(std::max<std::size_t>(doubles_per_slot, 1) * sizeof(double), kSlotAlignment)),
        chunk_bytes_(round_up(stride_ * kSlotsPerChunk, kChunkAlignment)) {}
  PackArena(const PackArena&) = delete;
  PackArena& operator=(const PackArena&) = delete;

  // A slot of doubles_per_slot doubles, zero the first time it is handed out (a panel layout's
  // padding is never written by packing, as with the zero-filled vectors before).
  [[nodiscard]] std::span<double> take() {
    const std::lock_guard lock(mutex_);  // native runs pack from several OpenMP threads
    if (free_.empty()) {
      void* p = std::aligned_alloc(kChunkAlignment, chunk_bytes_);
      if (p == nullptr) throw std::bad_alloc();
      std::memset(p, 0, chunk_bytes_);
      owned_.emplace_back(static_cast<char*>(p));
      // Pushed last slot first, so the chunk's slots are taken in address order.
      for (std::size_t i = kSlotsPerChunk; i-- > 0;)
        free_.push_back(reinterpret_cast<double*>(owned_.back().get() + i * stride_));
    }
    double* slot = free_.back();
    free_.pop_back();
    return {slot, doubles_};
  }
  void give_back(std::span<double> slot) {
    const std::lock_guard lock(mutex_);
    free_.push_back(slot.data());
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::size_t doubles_, stride_, chunk_bytes_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<char, Free>> owned_;
  std::vector<double*> free_;
};

}  // namespace pmlab::kernels::gemm
