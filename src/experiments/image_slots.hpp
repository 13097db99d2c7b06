// Crash images a forked crash campaign hands to its batches' children: fixed-size slots in one
// shared anonymous mapping.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace pmlab::experiments {

// Why shared: fork() makes a private buffer's pages copy-on-write, so the campaign's parent
// took a page fault for every page of every image it wrote after forking the previous batch
// (69,000 of a tmm campaign's 92,000 faults; docs/crash-campaigns.md, "Trials cut again join the batches too"). A shared
// mapping is not copied at fork(): the parent writes the slots in place, and a child maps the
// pages of its batch's slots as it reads them. So a slot must not be written again before the
// child that reads it has ended: its owner releases it then.
class ImageSlots {
 public:
  ImageSlots(std::size_t slot_bytes, std::size_t slots);  // throws pmlab::Error(kIo)
  ~ImageSlots();
  ImageSlots(const ImageSlots&) = delete;
  ImageSlots& operator=(const ImageSlots&) = delete;

  [[nodiscard]] bool any_free() const { return !free_.empty(); }
  [[nodiscard]] std::size_t acquire();  // a free slot; throws std::logic_error if none
  void release(std::size_t slot);
  [[nodiscard]] std::span<std::byte> slot(std::size_t i) const {
    return {base_ + i * slot_bytes_, slot_bytes_};
  }

 private:
  std::byte* base_ = nullptr;
  std::size_t slot_bytes_ = 0, bytes_ = 0;
  std::vector<std::size_t> free_;
};

}  // namespace pmlab::experiments
