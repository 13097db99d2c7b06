// Cache-line helpers over a Backend: flush every line of a range or of a strided 2-D block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::scheme {

// Flushes every line overlapping [p, p + bytes); no fence (callers batch ranges under one fence).
template <mem::Backend B>
void flush_lines(B& b, const void* p, std::size_t bytes) {
  if (bytes == 0) return;
  const auto first = reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{kCacheLineBytes} - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  for (auto a = first; a < end; a += kCacheLineBytes) b.flush(reinterpret_cast<const void*>(a));
}

// Flushes the lines of a rows x cols block with leading dimension ld (elements of T).
template <mem::Backend B, class T>
void flush_block(B& b, const T* p, std::size_t rows, std::size_t cols, std::size_t ld) {
  if (cols == ld) {  // contiguous: one range, no line flushed twice
    flush_lines(b, p, rows * cols * sizeof(T));
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) flush_lines(b, p + r * ld, cols * sizeof(T));
}

}  // namespace pmlab::scheme
