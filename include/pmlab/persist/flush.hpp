// Cache-line flush and fence instructions (clflush, clflushopt, clwb, sfence) and persist_range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pmlab/core/strong_types.hpp"

namespace pmlab::persist {

enum class FlushKind { kClflush, kClflushopt, kClwb };

[[nodiscard]] std::string_view to_string(FlushKind k);
[[nodiscard]] FlushKind flush_kind_from_string(std::string_view s);  // throws pmlab::Error
[[nodiscard]] bool cpu_supports(FlushKind k);
/// The best flush instruction this CPU has, by CPUID: clwb, else clflushopt, else clflush. It is
/// every native default, so a scheme that flushes runs on any x86-64 host (x86-64 CPUs differ:
/// some AMD EPYC parts have clflushopt but no clwb).
[[nodiscard]] FlushKind best_flush_kind();

// Hand-written rather than libpmem2's flush function pointer: these are issued inside hot
// loops of the eager schemes, where an indirect call per line would distort the comparison.
// Inline asm keeps the instruction choice explicit and needs no -mclwb/-mclflushopt flags.
template <FlushKind K>
inline void flush_line(const void* p) {
  if constexpr (K == FlushKind::kClflush) {
    asm volatile("clflush %0" : "+m"(*static_cast<volatile char*>(const_cast<void*>(p))));
  } else if constexpr (K == FlushKind::kClflushopt) {
    asm volatile("clflushopt %0" : "+m"(*static_cast<volatile char*>(const_cast<void*>(p))));
  } else {
    asm volatile("clwb %0" : "+m"(*static_cast<volatile char*>(const_cast<void*>(p))));
  }
}

inline void sfence() {
  asm volatile("sfence" ::: "memory");
}

// Flushes every line overlapping [p, p+len) with K; no fence.
template <FlushKind K>
inline void flush_range(const void* p, std::size_t len) {
  if (len == 0) return;
  auto first = reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{kCacheLineBytes} - 1);
  auto end = reinterpret_cast<std::uintptr_t>(p) + len;
  for (auto a = first; a < end; a += kCacheLineBytes)
    flush_line<K>(reinterpret_cast<const void*>(a));
}

// Flushes every line of the range, then fences: the range is durable on return (ADR).
template <FlushKind K>
inline void persist_range(const void* p, std::size_t len) {
  flush_range<K>(p, len);
  sfence();
}

}  // namespace pmlab::persist
