// The crash image: for each registered persistent range, exactly the bytes that reached NVM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "pmlab/core/strong_types.hpp"

namespace pmlab::sim {

// Thrown by SimBackend when an armed crash point is reached; unwinds the kernel by design.
class PowerFailure : public std::exception {
 public:
  explicit PowerFailure(std::uint64_t op)
      : op_(op), what_("simulated power failure before op " + std::to_string(op)) {}
  [[nodiscard]] std::uint64_t op() const { return op_; }  // the op that did not happen
  [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::uint64_t op_;
  std::string what_;
};

// Shadow copies of registered ranges. Registration copies the live bytes (the range counts as
// persisted at setup); capture_line copies one line's live bytes when it is written to NVM;
// restore_to_live copies the shadow back, which is what memory holds after a power failure.
class CrashImage {
 public:
  // Throws kInvalidArgument for an empty or null range or one overlapping a registered range.
  void add_range(const void* base, std::size_t len);
  void clear() { ranges_.clear(); }

  // Copies the live bytes of `line` that lie inside registered ranges into the shadow.
  void capture_line(LineAddr line);
  // Whether the registered bytes of `line` hold their live values (true outside every range).
  [[nodiscard]] bool line_durable(LineAddr line) const;
  // Copies every shadow back into live memory.
  void restore_to_live() const;

  [[nodiscard]] std::size_t range_count() const { return ranges_.size(); }
  [[nodiscard]] bool covers(const void* p) const {
    return find(reinterpret_cast<std::uintptr_t>(p)) != nullptr;
  }
  [[nodiscard]] std::span<const std::byte> shadow_of(const void* base) const;  // empty if unknown
  // The durable value at live address p (p inside a registered range; else kInvalidArgument).
  template <class T>
  requires std::is_trivially_copyable_v<T>
  [[nodiscard]] T durable(const T* p) const {
    T v;
    std::memcpy(&v, durable_bytes(p, sizeof(T)), sizeof(T));
    return v;
  }

 private:
  struct Range {
    std::uintptr_t base = 0;
    std::size_t len = 0;
    std::vector<std::byte> shadow;
  };
  [[nodiscard]] const Range* find(std::uintptr_t addr) const;
  [[nodiscard]] const std::byte* durable_bytes(const void* p, std::size_t n) const;

  std::vector<Range> ranges_;  // sorted by base, disjoint
};

}  // namespace pmlab::sim
