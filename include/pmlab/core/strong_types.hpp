// Strong types for bytes, cycles and cache-line addresses so units never mix silently.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace pmlab {

inline constexpr std::size_t kCacheLineBytes = 64;

// A value of `T` tagged with a unit; arithmetic only within the same unit.
template <class Tag, class T>
class Strong {
 public:
  using value_type = T;
  constexpr Strong() = default;
  constexpr explicit Strong(T v) : value_(v) {}
  [[nodiscard]] constexpr T value() const { return value_; }
  constexpr auto operator<=>(const Strong&) const = default;
  constexpr Strong& operator+=(Strong o) {
    value_ += o.value_;
    return *this;
  }
  constexpr Strong& operator-=(Strong o) {
    value_ -= o.value_;
    return *this;
  }
  friend constexpr Strong operator+(Strong a, Strong b) { return Strong(a.value_ + b.value_); }
  friend constexpr Strong operator-(Strong a, Strong b) { return Strong(a.value_ - b.value_); }

 private:
  T value_{};
};

using Bytes = Strong<struct BytesTag, std::uint64_t>;
using Cycles = Strong<struct CyclesTag, std::uint64_t>;
// Address of a 64-byte line: byte address >> 6.
using LineAddr = Strong<struct LineAddrTag, std::uint64_t>;

[[nodiscard]] inline LineAddr line_of(const void* p) {
  return LineAddr(reinterpret_cast<std::uintptr_t>(p) / kCacheLineBytes);
}
[[nodiscard]] constexpr LineAddr line_of_addr(std::uint64_t byte_addr) {
  return LineAddr(byte_addr / kCacheLineBytes);
}
[[nodiscard]] constexpr std::uint64_t round_up(std::uint64_t v, std::uint64_t to) {
  return (v + to - 1) / to * to;
}

}  // namespace pmlab

template <class Tag, class T>
struct std::hash<pmlab::Strong<Tag, T>> {
  std::size_t operator()(pmlab::Strong<Tag, T> s) const noexcept {
    return std::hash<T>{}(s.value());
  }
};
