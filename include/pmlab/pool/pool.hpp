// Persistent pool on a file mapped with libpmem2: header, named 64-byte-aligned arrays, lock,
// state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmlab/pool/params.hpp"

struct pmem2_map;

namespace pmlab::pool {

// 2: named kernel parameters; 3: layout tag; 4: a self-checked state word, zero unused bytes.
inline constexpr std::uint32_t kFormatVersion = 4;
inline constexpr std::size_t kMaxArrays = 32;
inline constexpr std::size_t kMaxArrayName = 24;

enum class RunState : std::uint32_t {
  kInitialized = 1,  // inputs persisted, computation not started
  kRunning = 2,      // computation started; a crash leaves this state
  kDone = 3,         // outputs persisted, run complete
};
[[nodiscard]] std::string_view to_string(RunState s);

// Removes the temporary files of the pools this process is creating right now (at most a few
// at once). Async-signal-safe (atomics and unlink only): for a signal handler that ends the
// process, so that an interrupted creation leaves nothing behind (src/cli/interrupt.cpp).
void remove_temporaries_for_exit() noexcept;

struct ArraySpec {
  std::string name;
  std::uint64_t bytes = 0;

  ArraySpec() = default;
  // Implicit from a name constant (e.g. scheme::kWalLogArray), so tables read `{kName, bytes}`.
  ArraySpec(std::string_view array_name, std::uint64_t array_bytes)
      : name(array_name), bytes(array_bytes) {}
  friend bool operator==(const ArraySpec&, const ArraySpec&) = default;
};

struct ArrayInfo {
  std::string name;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

// The largest pool file the format accepts (64 TiB: anything larger is a typo).
inline constexpr std::uint64_t kMaxPoolBytes = 1ull << 46;
// Size of the file of a pool holding `arrays` (header + 64-byte aligned arrays); throws
// pmlab::Error(kInvalidArgument) beyond kMaxPoolBytes or kMaxArrays (no sum can wrap around).
[[nodiscard]] std::uint64_t pool_file_bytes(const std::vector<ArraySpec>& arrays);
// Throws pmlab::Error(kInvalidArgument) — impossible parameters, a usage error — when a pool
// file of `bytes` cannot fit in the space free on the file system that would hold PATH, so
// that an impossible size is refused before anything is created instead of failing with ENOSPC.
void require_room_for_pool(const std::string& path, std::uint64_t bytes);
// The same for scratch arrays (the simulator's, on /dev/shm): `file_bytes` must fit in the free
// space of `dir`, and `memory_bytes` in MemAvailable (/proc/meminfo). Checks that cannot be
// made (no statvfs, no /proc) are skipped: creation then names the real error.
void require_room_for_scratch(const std::string& dir, std::uint64_t file_bytes,
                              std::uint64_t memory_bytes);
// Free bytes for an unprivileged user on the file system holding `dir` (statvfs), and
// MemAvailable; nullopt when they cannot be read.
[[nodiscard]] std::optional<std::uint64_t> free_bytes_in(const std::string& dir);
[[nodiscard]] std::optional<std::uint64_t> available_memory_bytes();

// An open, locked, mapped pool. Move-only; unmaps and unlocks on destruction.
class Pool {
 public:
  using Initializer = std::function<void(Pool&)>;

  // Creates PATH atomically: the pool is built in a temporary of its own next to PATH (created
  // with O_EXCL and locked at once), initialized by `init` (which writes inputs), persisted, and
  // only then published at PATH with link(2), which never replaces an existing file; the lock
  // is taken before publishing, so no other process can open the pool until it is returned.
  // Concurrent creators of one PATH: exactly one wins. A pool already at PATH (published
  // earlier, or by a creator that won the race) is never touched: this throws kPoolBusy ("being
  // created/used by another process"). Other failures throw pmlab::Error as before.
  static Pool create(const std::string& path, const RunParams& params,
                     const std::vector<ArraySpec>& arrays, const Initializer& init);
  // Like create, but returns std::nullopt instead of throwing when a pool already exists at
  // PATH, so that a caller that lost a creation race can open the winner's pool instead.
  static std::optional<Pool> try_create(const std::string& path, const RunParams& params,
                                        const std::vector<ArraySpec>& arrays,
                                        const Initializer& init);
  // Opens PATH (checking `params`, like open) if a pool is there, else creates it (like
  // create). Safe when several processes do this at once: one of them creates the pool and the
  // others open that very pool — they get kPoolBusy while its creator (or anyone) holds it, and
  // a pool with other parameters is refused with kPoolMismatch, never replaced. `created`, if
  // given, tells which of the two happened.
  static Pool open_or_create(const std::string& path, const RunParams& params,
                             const std::vector<ArraySpec>& arrays, const Initializer& init,
                             bool* created = nullptr);
  // Opens and locks an existing pool. With `expected`, fails (kPoolMismatch) if the stored
  // parameters differ. The file is only read until every check has passed.
  static Pool open(const std::string& path,
                   const std::optional<RunParams>& expected = std::nullopt);
  // Opens an existing pool only to read it (`pmlab info`): O_RDONLY, a shared lock (kPoolBusy
  // while a run holds it), a read-only mapping, so it works on a read-only file or mount. Its
  // state cannot be changed (set_state and count_start throw kIo).
  static Pool open_read_only(const std::string& path);
  // Reads and validates the header without locking or mapping (for `pmlab info`-like uses).
  static RunParams read_params(const std::string& path);

  Pool(Pool&&) noexcept;
  Pool& operator=(Pool&&) noexcept;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool();

  [[nodiscard]] const RunParams& params() const { return params_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] RunState state() const;
  // Durably records a new state (one 8-byte store + persist of the self-checked state word).
  void set_state(RunState s);
  // How many times a run has been started on this pool (1 = never resumed); the count stops at
  // 2^24 - 1.
  [[nodiscard]] std::uint64_t starts() const;
  void count_start();
  [[nodiscard]] bool read_only() const { return read_only_; }

  // Throws kPoolCorrupt unless the pool holds exactly `expected` (names and sizes, in order):
  // what a kernel computes from the stored parameters, so that no access can leave an array.
  void require_layout(const std::vector<ArraySpec>& expected) const;
  [[nodiscard]] bool has_array(std::string_view name) const;
  [[nodiscard]] const ArrayInfo& array_info(std::string_view name) const;  // throws if absent
  template <class T>
  [[nodiscard]] T* array(std::string_view name) const {
    return reinterpret_cast<T*>(base_ + array_info(name).offset);
  }
  [[nodiscard]] const std::vector<ArrayInfo>& arrays() const { return arrays_; }
  [[nodiscard]] std::byte* base() const { return base_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] pmem2_map* map() const { return map_; }
  // Makes [p, p+len) durable with libpmem2's persist function for this mapping.
  void persist(const void* p, std::size_t len) const;
  void persist_all() const;

 private:
  Pool() = default;
  void map_fd(int fd);
  void release() noexcept;

  std::string path_;
  int fd_ = -1;
  bool read_only_ = false;
  pmem2_map* map_ = nullptr;
  std::byte* base_ = nullptr;
  std::uint64_t size_ = 0;
  RunParams params_;
  std::vector<ArrayInfo> arrays_;
};

}  // namespace pmlab::pool
