// Crash images for batch children in a shared anonymous mapping (image_slots.hpp).
#include "image_slots.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::experiments {

ImageSlots::ImageSlots(std::size_t slot_bytes, std::size_t slots)
    : slot_bytes_(slot_bytes), bytes_(slot_bytes * slots) {
  if (bytes_ == 0) return;
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error(ErrorCode::kIo, fmt::format("cannot map {} bytes for a crash campaign's images: {}",
                                            bytes_, std::strerror(errno)));
  base_ = static_cast<std::byte*>(p);
  free_.reserve(slots);
  for (std::size_t i = slots; i-- > 0;) free_.push_back(i);  // slot 0 first
}

ImageSlots::~ImageSlots() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

std::size_t ImageSlots::acquire() {
  if (free_.empty()) throw std::logic_error("no free crash image slot");
  const std::size_t i = free_.back();
  free_.pop_back();
  return i;
}

void ImageSlots::release(std::size_t slot) {
  free_.push_back(slot);
}

}  // namespace pmlab::experiments
