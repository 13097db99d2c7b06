// libFuzzer target: any bytes as a pool file. Opening must either refuse it with pmlab::Error or
// yield arrays that lie inside the mapping (touched first and last byte) — never crash.
// Input: one control byte, then the file. Control bit 0 re-seals the header CRC and bit 1 makes
// the state word valid, so that mutations reach the checks behind them instead of stopping at
// "checksum mismatch".
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../src/pool/disk_format.hpp"
#include "pmlab/core/crc32c.hpp"

#include "pmlab/core/error.hpp"
#include "pmlab/pool/pool.hpp"

namespace {

// One in-memory file reused for every input: the real open path (fstat, pread, libpmem2
// mapping) runs on it through /proc/self/fd.
int pool_fd() {
  static const int fd = ::memfd_create("pmlab-fuzz-pool", 0);
  if (fd < 0) std::abort();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  std::vector<std::uint8_t> file(data + 1, data + size);
  namespace disk = pmlab::pool::disk;
  if ((control & 2) != 0 && file.size() >= disk::kStateOffset + sizeof(std::uint64_t)) {
    std::uint64_t word = 0;
    std::memcpy(&word, file.data() + disk::kStateOffset, sizeof word);
    word = disk::encode_state_word({static_cast<std::uint8_t>(1 + (word & 0xff) % 3),
                                    static_cast<std::uint32_t>(word >> 8) & disk::kMaxStarts});
    std::memcpy(file.data() + disk::kStateOffset, &word, sizeof word);
  }
  if ((control & 1) != 0 && file.size() >= sizeof(disk::Header)) {
    const std::uint64_t crc = pmlab::crc32c(file.data(), offsetof(disk::Header, header_crc));
    std::memcpy(file.data() + offsetof(disk::Header, header_crc), &crc, sizeof crc);
  }
  const int fd = pool_fd();
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, file.data(), file.size(), 0) != static_cast<ssize_t>(file.size()))
    std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const pmlab::pool::RunParams p = pmlab::pool::Pool::read_params(path);
    (void)p;
  } catch (const pmlab::Error&) {
    return 0;
  }
  // The header was accepted: the full open must agree, and every array must be addressable.
  try {
    pmlab::pool::Pool pool = pmlab::pool::Pool::open(path);
    volatile std::uint8_t sink = 0;
    for (const auto& a : pool.arrays()) {
      if (a.bytes == 0) continue;
      const auto* first = reinterpret_cast<const volatile std::uint8_t*>(pool.base() + a.offset);
      sink = sink + first[0] + first[a.bytes - 1];
      if (a.offset + a.bytes > pool.size()) std::abort();  // validation let an array escape
    }
    (void)pool.state();
    (void)pool.starts();
  } catch (const pmlab::Error&) {
    // A mapping failure is an I/O error, not a parser bug.
  }
  return 0;
}
