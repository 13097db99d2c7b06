// Pool creation (exclusive temporary, published with link(2): concurrent creators cannot
// overwrite each other), validation on open, libpmem2 mapping, flock, state word.
#include "pmlab/pool/pool.hpp"

#include <fcntl.h>
#include <libpmem2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "disk_format.hpp"
#include "pmlab/core/crc32c.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/core/strong_types.hpp"

namespace pmlab::pool {
namespace {

[[noreturn]] void io_error(const std::string& what, const std::string& path, int err) {
  std::string hint;
  if (err == ENOSPC) hint = " (the file system is full)";
  if (err == EACCES || err == EPERM || err == EROFS) hint = " (the path is not writable)";
  throw Error(ErrorCode::kIo, fmt::format("{} '{}': {}{}", what, path, std::strerror(err), hint));
}

[[noreturn]] void pmem2_error(const std::string& what, const std::string& path) {
  throw Error(ErrorCode::kIo, fmt::format("{} '{}': libpmem2: {}", what, path, pmem2_errormsg()));
}

void copy_name(char* dst, std::size_t cap, const std::string& src, const char* field) {
  if (src.size() >= cap)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} name '{}' is longer than {} characters", field, src, cap - 1));
  std::memset(dst, 0, cap);
  std::memcpy(dst, src.data(), src.size());
}

std::string read_name(const char* src, std::size_t cap) {
  return std::string(src, strnlen(src, cap));
}

std::uint64_t header_crc(const disk::Header& h) {
  return crc32c(&h, offsetof(disk::Header, header_crc));
}

// `kind`: LOCK_EX for a pool that will be written, LOCK_SH for one only read (several readers
// may look at once; a run's exclusive lock keeps them all out, and theirs keeps a run out).
void lock_or_throw(int fd, const std::string& path, int kind) {
  if (flock(fd, kind | LOCK_NB) != 0) {
    int err = errno;
    if (err == EWOULDBLOCK)
      throw Error(
          ErrorCode::kPoolBusy,
          fmt::format("pool '{}' is in use by another process (it holds the pool's lock)", path));
    io_error("cannot lock pool", path, err);
  }
}

// --- Creating and publishing without races -------------------------------------------------
//
// Each creation builds its pool in a temporary of its own, PATH.creating.PID.RANDOM, created with
// O_EXCL and locked (flock) by its creator, who keeps the lock until it has removed that name
// itself: after publishing (the pool stays locked at PATH), after losing the race, or on error.
// Publishing links the temporary to PATH, which fails with EEXIST if anything is there, so a
// published pool is never replaced and exactly one of several concurrent creators wins. A
// creator that dies leaves its temporary unlocked; the next creation of PATH removes it (and
// the fixed-name PATH.creating of older pmlab versions), taking its lock first, so a temporary
// whose creator is alive is never removed by anybody else.

[[noreturn]] void busy_error(const std::string& path) {
  throw Error(ErrorCode::kPoolBusy,
              fmt::format("pool '{}' is being created/used by another process: a pool already "
                          "exists at that path and was left untouched (open it to resume it, or "
                          "use another path)",
                          path));
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// True when PATH names the file open as FD (and not, e.g., a file that replaced it).
bool still_named(int fd, const std::string& path) {
  struct stat a {};
  struct stat b {};
  return fstat(fd, &a) == 0 && ::lstat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

constexpr std::string_view kTempTag = ".creating";

// BASE.creating (older pmlab) or BASE.creating.PID.HEX16 (this one): never a user's pool name
// that merely starts like one.
bool is_temporary_of(std::string_view name, std::string_view base) {
  if (name.size() < base.size() + kTempTag.size() || name.substr(0, base.size()) != base ||
      name.substr(base.size(), kTempTag.size()) != kTempTag)
    return false;
  auto rest = name.substr(base.size() + kTempTag.size());
  if (rest.empty()) return true;
  auto digits = [](std::string_view s, std::string_view set) {
    return !s.empty() && s.find_first_not_of(set) == std::string_view::npos;
  };
  auto dot = rest.find('.', 1);
  return rest[0] == '.' && dot != std::string_view::npos &&
         digits(rest.substr(1, dot - 1), "0123456789") && rest.size() - dot - 1 == 16 &&
         digits(rest.substr(dot + 1), "0123456789abcdef");
}

std::string temporary_name(const std::string& path) {
  // Random bits (not only pid + counter) so that a name is never reused, even by a process that
  // got the pid of a dead creator whose temporary is being removed at that very moment.
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  const std::uint64_t r = (std::uint64_t{rd()} << 32 | rd()) ^ counter.fetch_add(1);
  return fmt::format("{}{}.{}.{:016x}", path, kTempTag, ::getpid(), r);
}

// Removes the temporaries of PATH whose creator died before publishing (best effort: whatever
// cannot be listed, opened or unlinked is left for a later creation). A creator that died just
// after publishing leaves a second name of the published pool: only that name goes.
void remove_abandoned_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string base = p.filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_temporary_of(it->path().filename().native(), base)) continue;
    const std::string tmp = it->path().string();
    int fd = ::open(tmp.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    // Holding the lock proves that no creator holds it: the creator died, or has just created
    // the file and not locked it yet — that one notices the name is gone and takes another.
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        still_named(fd, tmp))
      ::unlink(tmp.c_str());
    close(fd);  // releases the lock
  }
}

// The temporaries being created, in fixed buffers that a signal handler may read at any time:
// a slot is claimed (free -> writing), filled, then published (ready); cleared the other way.
class TemporaryRegistry {
 public:
  static constexpr std::size_t kSlots = 8;
  static constexpr std::size_t kNameBytes = 4096;
  enum : int { kFree = 0, kWriting = 1, kReady = 2 };

  // Returns the slot holding `name`, or kSlots if every slot is taken (then the name is not
  // removed on a signal: the same as after kill -9, and the next creation removes it).
  std::size_t add(const std::string& name) noexcept {
    if (name.size() >= kNameBytes) return kSlots;
    for (std::size_t i = 0; i < kSlots; ++i) {
      int expected = kFree;
      if (!state_[i].compare_exchange_strong(expected, kWriting)) continue;
      std::memcpy(names_[i], name.c_str(), name.size() + 1);
      state_[i].store(kReady);
      return i;
    }
    return kSlots;
  }
  void remove(std::size_t slot) noexcept {
    if (slot < kSlots) state_[slot].store(kFree);
  }
  void unlink_all() noexcept {
    for (std::size_t i = 0; i < kSlots; ++i)
      if (state_[i].load() == kReady) ::unlink(names_[i]);
  }

 private:
  std::atomic<int> state_[kSlots]{};
  char names_[kSlots][kNameBytes]{};
};
static_assert(std::atomic<int>::is_always_lock_free);  // async-signal-safe

// Constant-initialized: no construction guard that a handler could find half done.
constinit TemporaryRegistry g_temporaries;

TemporaryRegistry& temporaries() {
  return g_temporaries;
}

// Registers a temporary for removal on a fatal signal while it exists under its name.
class RegisteredTemporary {
 public:
  explicit RegisteredTemporary(const std::string& name) : slot_(temporaries().add(name)) {}
  ~RegisteredTemporary() { temporaries().remove(slot_); }
  RegisteredTemporary(const RegisteredTemporary&) = delete;
  RegisteredTemporary& operator=(const RegisteredTemporary&) = delete;

 private:
  std::size_t slot_;
};

// Creates and locks a fresh temporary for PATH; returns its descriptor and sets `tmp`. The name
// is registered for removal on a signal *before* the file exists, so no instant leaves an
// unregistered temporary behind (a name holds this PID and 64 random bits: registering one that
// turns out to exist already cannot name another process's file).
int create_locked_temporary(const std::string& path, std::string& tmp,
                            std::optional<RegisteredTemporary>& registered) {
  constexpr int kAttempts = 16;
  for (int attempt = 1;; ++attempt) {
    tmp = temporary_name(path);
    registered.reset();
    registered.emplace(tmp);
    int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST && attempt < kAttempts) continue;
      io_error("cannot create pool", tmp, errno);
    }
    // Blocking: only a remover probing whether the file is abandoned can hold this lock, and
    // only for a stat and an unlink.
    int rc = 0;
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      close(fd);
      io_error("cannot lock pool", tmp, err);
    }
    // A remover may have taken the file for abandoned between open and flock and unlinked it.
    if (still_named(fd, tmp)) return fd;
    close(fd);
    if (attempt >= kAttempts)
      throw Error(
          ErrorCode::kIo,
          fmt::format("cannot create pool '{}': its temporary file keeps disappearing", path));
  }
}

// Gives the (locked, complete) temporary the name PATH unless something already has it; false
// then. link(2) fails with EEXIST instead of replacing, like renameat2(RENAME_NOREPLACE), which
// serves file systems without hard links. The lock is on the open file, so it holds at PATH.
bool publish_without_replacing(const std::string& tmp, const std::string& path) {
  if (::link(tmp.c_str(), path.c_str()) == 0) {
    ::unlink(tmp.c_str());  // if this is lost in a crash, the next creation removes the name
    return true;
  }
  int err = errno;
  if (err == EEXIST) return false;
  if (err == EPERM || err == EOPNOTSUPP || err == ENOSYS) {  // no hard links here
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0)
      return true;
    int err2 = errno;
    if (err2 == EEXIST) return false;
    if (err2 != EINVAL) err = err2;
    io_error("cannot publish pool (no hard link, no rename without replacing)", path, err);
  }
  io_error("cannot publish pool", path, err);
}

// Places the arrays one after the other behind the header, each 64-byte aligned, filling `out`
// (when given); returns the file size. Every sum is checked before it is made, so no size can
// wrap around.
std::uint64_t layout(const std::vector<ArraySpec>& arrays, disk::Array* out) {
  if (arrays.size() > kMaxArrays)
    throw Error(ErrorCode::kInvalidArgument, "too many arrays for one pool");
  std::uint64_t offset = disk::kHeaderBytes;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].bytes > kMaxPoolBytes - offset)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("the pool would exceed {} TiB (array '{}' alone is {} bytes): the "
                              "parameters are too large",
                              kMaxPoolBytes >> 40, arrays[i].name, arrays[i].bytes));
    if (out != nullptr) {
      copy_name(out[i].name, sizeof out[i].name, arrays[i].name, "array");
      out[i].offset = offset;
      out[i].bytes = arrays[i].bytes;
    }
    offset = round_up(offset + arrays[i].bytes, disk::kArrayAlign);
  }
  return round_up(offset, 4096);
}

std::string gib(std::uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / static_cast<double>(1ull << 30));
}

// The 4096 bytes of a pool's header as read from disk (or about to be written).
struct HeaderBlock {
  unsigned char bytes[disk::kHeaderBytes];

  [[nodiscard]] disk::Header header() const {
    disk::Header h;
    std::memcpy(&h, bytes, sizeof h);
    return h;
  }
  [[nodiscard]] std::uint64_t state_word() const {
    std::uint64_t w = 0;
    std::memcpy(&w, bytes + disk::kStateOffset, sizeof w);
    return w;
  }
  // The first byte of the header that no field covers and that is not zero (disk_format.hpp).
  [[nodiscard]] std::optional<std::uint64_t> nonzero_unused_byte() const {
    for (std::uint64_t i = sizeof(disk::Header); i < disk::kHeaderBytes; ++i) {
      if (i >= disk::kStateOffset && i < disk::kStateOffset + sizeof(std::uint64_t)) continue;
      if (bytes[i] != 0) return i;
    }
    return std::nullopt;
  }
};

// Checks the format version first, so that an older pool is named as such rather than as
// damaged; a version field that is no known format and fails the CRC is a damaged one.
void check_version(const disk::Header& h, const std::string& path) {
  if (h.version == kFormatVersion) return;
  if (h.version >= 1 && h.version < kFormatVersion)
    throw Error(ErrorCode::kPoolVersion,
                fmt::format("pool '{}' has format version {}, written by an older pmlab; this "
                            "pmlab reads version {} only (its run-state word carries check bits): "
                            "finish the run with the pmlab that created it, or start a new pool",
                            path, h.version, kFormatVersion));
  if (h.header_crc != header_crc(h))
    throw Error(ErrorCode::kPoolCorrupt,
                fmt::format("pool '{}' is corrupt: header checksum mismatch (its format version "
                            "field reads {}, which no pmlab wrote)",
                            path, h.version));
  throw Error(ErrorCode::kPoolVersion,
              fmt::format("pool '{}' has format version {}, this pmlab reads version {}", path,
                          h.version, kFormatVersion));
}

// Every check on a header read from disk; the pool file is not modified by any of them.
RunParams validate_header(const HeaderBlock& block, std::uint64_t file_size,
                          const std::string& path, std::vector<ArrayInfo>& arrays) {
  const disk::Header h = block.header();
  auto corrupt = [&](const std::string& why) {
    return Error(ErrorCode::kPoolCorrupt, fmt::format("pool '{}' is corrupt: {}", path, why));
  };
  if (std::memcmp(h.magic, disk::kMagic, sizeof h.magic) != 0)
    throw Error(ErrorCode::kPoolCorrupt,
                fmt::format("'{}' is not a pmlab pool (bad magic number)", path));
  check_version(h, path);
  if (h.header_crc != header_crc(h)) throw corrupt("header checksum mismatch");
  if (h.header_bytes != disk::kHeaderBytes) throw corrupt("unexpected header size");
  if (h.file_bytes != file_size)
    throw corrupt(fmt::format("file is {} bytes, header says {}", file_size, h.file_bytes));
  if (h.array_count > kMaxArrays) throw corrupt("too many arrays");
  if (h.param_count > kMaxKernelParams) throw corrupt("too many kernel parameters");
  const auto state = disk::decode_state_word(block.state_word());
  if (!state)
    throw corrupt(fmt::format("invalid run-state word {:#018x} (its check bits disagree with it)",
                              block.state_word()));
  if (state->state < static_cast<std::uint8_t>(RunState::kInitialized) ||
      state->state > static_cast<std::uint8_t>(RunState::kDone))
    throw corrupt(fmt::format("invalid run-state word: state {}", state->state));
  if (const auto at = block.nonzero_unused_byte())
    throw corrupt(fmt::format("header byte {}, which no field uses, is not zero", *at));
  arrays.clear();
  std::uint64_t previous_end = disk::kHeaderBytes;
  for (std::uint32_t i = 0; i < h.array_count; ++i) {
    const auto& a = h.arrays[i];
    if (a.offset < disk::kHeaderBytes || a.offset % disk::kArrayAlign != 0 || a.bytes > file_size ||
        a.offset > file_size - a.bytes)
      throw corrupt(fmt::format("array #{} lies outside the file", i));
    // Pools are laid out in order (layout()): an array starting inside the one before would
    // make a write to one corrupt the other.
    if (a.offset < previous_end) throw corrupt(fmt::format("array #{} overlaps the one before", i));
    previous_end = a.offset + a.bytes;
    std::string name = read_name(a.name, sizeof a.name);
    for (const auto& other : arrays)
      if (other.name == name) throw corrupt(fmt::format("two arrays are named '{}'", name));
    arrays.push_back({std::move(name), a.offset, a.bytes});
  }
  RunParams p;
  p.kernel = read_name(h.kernel, sizeof h.kernel);
  p.scheme = read_name(h.scheme, sizeof h.scheme);
  p.checksum = read_name(h.checksum, sizeof h.checksum);
  p.threads = h.threads;
  p.n = h.n;
  p.bs = h.bs;
  p.seed = h.seed;
  p.layout_tag = h.layout_tag;
  for (std::uint32_t i = 0; i < h.param_count; ++i) {
    std::string name = read_name(h.params[i].name, sizeof h.params[i].name);
    if (name.empty()) throw corrupt(fmt::format("kernel parameter #{} has no name", i));
    p.kernel_params.push_back({std::move(name), h.params[i].value});
  }
  return p;
}

struct RawHeader {
  HeaderBlock block;
  std::uint64_t file_size;
};

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

[[noreturn]] void not_a_regular_file(const std::string& path, mode_t mode) {
  throw Error(ErrorCode::kPoolCorrupt,
              fmt::format("'{}' is {}, not a pmlab pool (a pool is a regular file)", path,
                          file_kind(mode)));
}

// Opens the pool file PATH with `access` (O_RDONLY or O_RDWR). Anything but a regular file is
// refused before it is opened, so that a FIFO cannot block the open and a device is never
// touched; O_NONBLOCK covers a FIFO put in its place between the stat and the open.
int open_pool_file(const std::string& path, int access) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) io_error("cannot open pool", path, errno);
  if (!S_ISREG(st.st_mode)) not_a_regular_file(path, st.st_mode);
  const int fd = ::open(path.c_str(), access | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) io_error("cannot open pool", path, errno);
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    close(fd);
    if (!S_ISREG(st.st_mode)) not_a_regular_file(path, st.st_mode);
    io_error("cannot stat pool", path, err);
  }
  return fd;
}

RawHeader read_raw_header(int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) io_error("cannot stat pool", path, errno);
  if (!S_ISREG(st.st_mode)) not_a_regular_file(path, st.st_mode);
  RawHeader raw{};
  raw.file_size = static_cast<std::uint64_t>(st.st_size);
  if (raw.file_size < disk::kHeaderBytes)
    throw Error(ErrorCode::kPoolCorrupt,
                fmt::format("'{}' is not a pmlab pool (only {} bytes long)", path, raw.file_size));
  errno = 0;
  if (pread(fd, raw.block.bytes, sizeof raw.block.bytes, 0) !=
      static_cast<ssize_t>(sizeof raw.block.bytes))
    io_error("cannot read pool header", path, errno ? errno : EIO);
  return raw;
}

std::uint64_t* state_word_in(std::byte* base) {
  return reinterpret_cast<std::uint64_t*>(base + disk::kStateOffset);
}

// The mapped state word, decoded. It was checked when the pool was opened, and only this process
// (holding the lock) has written it since; a failing check here means memory was overwritten.
disk::StateWord load_state_word(std::byte* base, const std::string& path) {
  const std::uint64_t w = std::atomic_ref<std::uint64_t>(*state_word_in(base)).load();
  const auto s = disk::decode_state_word(w);
  if (!s)
    throw Error(ErrorCode::kPoolCorrupt,
                fmt::format("pool '{}' is corrupt: invalid run-state word {:#018x}", path, w));
  return *s;
}

// One aligned 8-byte store, then a persist: the crash-consistency rule of disk_format.hpp.
void store_state_word(const Pool& pool, bool read_only, disk::StateWord s) {
  if (read_only)
    throw Error(
        ErrorCode::kIo,
        fmt::format("pool '{}' was opened read-only: its state cannot change", pool.path()));
  std::uint64_t* word = state_word_in(pool.base());
  std::atomic_ref<std::uint64_t>(*word).store(disk::encode_state_word(s));
  pool.persist(word, sizeof *word);
}

}  // namespace

void remove_temporaries_for_exit() noexcept {
  temporaries().unlink_all();
}

std::uint64_t pool_file_bytes(const std::vector<ArraySpec>& arrays) {
  return layout(arrays, nullptr);
}

std::optional<std::uint64_t> free_bytes_in(const std::string& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

std::optional<std::uint64_t> available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return std::nullopt;
}

void require_room_for_pool(const std::string& path, std::uint64_t bytes) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  // A directory that cannot be examined is left to creation, which names the real error.
  const auto room = free_bytes_in(dir.string());
  if (room && bytes > *room)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("the pool '{}' would need {} ({} bytes) but the file system holding "
                            "'{}' has {} free: choose a smaller --n (or a larger --bs, which "
                            "shrinks per-tile tables), or a --pool path on a larger file system",
                            path, gib(bytes), bytes, dir.string(), gib(*room)));
}

void require_room_for_scratch(const std::string& dir, std::uint64_t file_bytes,
                              std::uint64_t memory_bytes) {
  constexpr const char* kRemedy =
      "choose a smaller --n (or a larger --bs, which shrinks per-tile "
      "tables)";
  if (const auto room = free_bytes_in(dir); room && file_bytes > *room)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("the simulator's scratch arrays would need {} ({} bytes) in '{}', "
                            "which has {} free: {}",
                            gib(file_bytes), file_bytes, dir, gib(*room), kRemedy));
  if (const auto mem = available_memory_bytes(); mem && memory_bytes > *mem)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("the simulation would need {} ({} bytes) of memory (its arrays and "
                            "the simulator's copy of their durable image) but {} is available "
                            "(MemAvailable): {}",
                            gib(memory_bytes), memory_bytes, gib(*mem), kRemedy));
}

std::string_view to_string(RunState s) {
  switch (s) {
    case RunState::kInitialized:
      return "initialized";
    case RunState::kRunning:
      return "running";
    case RunState::kDone:
      return "done";
  }
  return "?";
}

Pool::Pool(Pool&& o) noexcept {
  *this = std::move(o);
}
Pool& Pool::operator=(Pool&& o) noexcept {
  if (this != &o) {
    release();
    read_only_ = o.read_only_;
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
    map_ = std::exchange(o.map_, nullptr);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    params_ = std::move(o.params_);
    arrays_ = std::move(o.arrays_);
  }
  return *this;
}
Pool::~Pool() {
  release();
}

void Pool::release() noexcept {
  if (map_ != nullptr) pmem2_map_delete(&map_);
  if (fd_ >= 0) close(fd_);  // also releases the flock
  map_ = nullptr;
  fd_ = -1;
  base_ = nullptr;
}

void Pool::map_fd(int fd) {
  pmem2_config* cfg = nullptr;
  pmem2_source* src = nullptr;
  if (pmem2_config_new(&cfg) != 0) pmem2_error("cannot configure mapping of", path_);
  pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE);
  if (read_only_ && pmem2_config_set_protection(cfg, PMEM2_PROT_READ) != 0) {
    pmem2_config_delete(&cfg);
    pmem2_error("cannot configure a read-only mapping of", path_);
  }
  if (pmem2_source_from_fd(&src, fd) != 0) {
    pmem2_config_delete(&cfg);
    pmem2_error("cannot use as a mapping source", path_);
  }
  int rc = pmem2_map_new(&map_, cfg, src);
  pmem2_source_delete(&src);
  pmem2_config_delete(&cfg);
  if (rc != 0) pmem2_error("cannot map pool", path_);
  base_ = static_cast<std::byte*>(pmem2_map_get_address(map_));
  size_ = pmem2_map_get_size(map_);
}

Pool Pool::create(const std::string& path, const RunParams& params,
                  const std::vector<ArraySpec>& arrays, const Initializer& init) {
  // A process asked for a fresh pool and one is there already (maybe completed, maybe being
  // created right now): refuse rather than destroy it.
  auto pool = try_create(path, params, arrays, init);
  if (!pool) busy_error(path);
  return std::move(*pool);
}

std::optional<Pool> Pool::try_create(const std::string& path, const RunParams& params,
                                     const std::vector<ArraySpec>& arrays,
                                     const Initializer& init) {
  if (arrays.size() > kMaxArrays)
    throw Error(ErrorCode::kInvalidArgument, "too many arrays for one pool");
  disk::Header h{};
  std::memcpy(h.magic, disk::kMagic, sizeof h.magic);
  h.version = kFormatVersion;
  h.header_bytes = disk::kHeaderBytes;
  copy_name(h.kernel, sizeof h.kernel, params.kernel, "kernel");
  copy_name(h.scheme, sizeof h.scheme, params.scheme, "scheme");
  copy_name(h.checksum, sizeof h.checksum, params.checksum, "checksum kind");
  h.threads = params.threads;
  h.n = params.n;
  h.bs = params.bs;
  h.seed = params.seed;
  if (params.kernel_params.size() > kMaxKernelParams)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("too many kernel parameters for one pool: {} given, at most {} (leave "
                            "out those at their defaults)",
                            params.kernel_params.size(), kMaxKernelParams));
  h.param_count = static_cast<std::uint32_t>(params.kernel_params.size());
  for (std::size_t i = 0; i < params.kernel_params.size(); ++i) {
    copy_name(h.params[i].name, sizeof h.params[i].name, params.kernel_params[i].name,
              "kernel parameter");
    h.params[i].value = params.kernel_params[i].value;
  }
  h.array_count = static_cast<std::uint32_t>(arrays.size());
  h.file_bytes = layout(arrays, h.arrays);
  h.layout_tag = params.layout_tag;
  h.header_crc = header_crc(h);

  // Cheap early answer; the race with a concurrent creator is settled by publishing below.
  if (exists(path)) return std::nullopt;
  remove_abandoned_temporaries(path);
  std::string tmp;
  std::optional<RegisteredTemporary> removed_if_interrupted;
  const int fd = create_locked_temporary(path, tmp, removed_if_interrupted);
  Pool pool;
  pool.path_ = path;
  pool.fd_ = fd;
  bool published = false;
  try {
    if (int err = posix_fallocate(fd, 0, static_cast<off_t>(h.file_bytes)); err != 0)
      throw Error(ErrorCode::kIo,
                  fmt::format("cannot allocate {} bytes for pool '{}': {}{}", h.file_bytes, path,
                              std::strerror(err),
                              err == ENOSPC ? " (not enough space on the device)" : ""));
    pool.map_fd(fd);
    HeaderBlock block{};
    std::memcpy(block.bytes, &h, sizeof h);
    const std::uint64_t initialized =
        disk::encode_state_word({static_cast<std::uint8_t>(RunState::kInitialized), 0});
    std::memcpy(block.bytes + disk::kStateOffset, &initialized, sizeof initialized);
    std::memcpy(pool.base_, block.bytes, sizeof block.bytes);
    std::vector<ArrayInfo> infos;
    pool.params_ = validate_header(block, h.file_bytes, path, infos);
    pool.arrays_ = std::move(infos);
    if (init) init(pool);
    pool.persist_all();
    if (fsync(fd) != 0) io_error("cannot sync pool", tmp, errno);
    published = publish_without_replacing(tmp, path);
    if (!published) {
      // Lost the race: another creator published first. Its pool is left alone; ours goes.
      ::unlink(tmp.c_str());
      pool.release();
      return std::nullopt;
    }
    auto dir = std::filesystem::absolute(path).parent_path();
    if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
      fsync(dfd);
      close(dfd);
    }
  } catch (...) {
    // Unlinked while still locked, so that nobody else can have taken the name meanwhile.
    if (!published) ::unlink(tmp.c_str());
    pool.release();
    throw;
  }
  return pool;
}

Pool Pool::open_or_create(const std::string& path, const RunParams& params,
                          const std::vector<ArraySpec>& arrays, const Initializer& init,
                          bool* created) {
  // Each turn either opens, creates, or finds that the pool it saw has just vanished (removed
  // by someone) or appeared (published by a concurrent creator); only a process that keeps
  // creating and removing PATH can make it go round more than twice.
  constexpr int kTurns = 8;
  for (int turn = 0; turn < kTurns; ++turn) {
    if (!exists(path)) {
      if (auto pool = try_create(path, params, arrays, init)) {
        if (created != nullptr) *created = true;
        return std::move(*pool);
      }
    }
    try {
      auto pool = open(path, params);
      if (created != nullptr) *created = false;
      return pool;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kIo || exists(path)) throw;
    }
  }
  throw Error(ErrorCode::kPoolBusy,
              fmt::format("pool '{}' is being created/used by another process: it keeps "
                          "appearing and disappearing",
                          path));
}

Pool Pool::open(const std::string& path, const std::optional<RunParams>& expected) {
  const int fd = open_pool_file(path, O_RDWR);
  Pool pool;
  pool.path_ = path;
  pool.fd_ = fd;
  lock_or_throw(fd, path, LOCK_EX);
  RawHeader raw = read_raw_header(fd, path);
  pool.params_ = validate_header(raw.block, raw.file_size, path, pool.arrays_);
  if (expected) {
    auto diffs = describe_differences(pool.params_, *expected);
    if (!diffs.empty()) {
      std::string msg = fmt::format("pool '{}' holds a different run: ", path);
      for (std::size_t i = 0; i < diffs.size(); ++i) msg += (i ? "; " : "") + diffs[i];
      msg += " (use another --pool, or resume with `pmlab run --pool PATH` alone)";
      throw Error(ErrorCode::kPoolMismatch, msg);
    }
  }
  pool.map_fd(fd);
  return pool;
}

Pool Pool::open_read_only(const std::string& path) {
  const int fd = open_pool_file(path, O_RDONLY);
  Pool pool;
  pool.path_ = path;
  pool.fd_ = fd;
  pool.read_only_ = true;
  lock_or_throw(fd, path, LOCK_SH);
  RawHeader raw = read_raw_header(fd, path);
  pool.params_ = validate_header(raw.block, raw.file_size, path, pool.arrays_);
  pool.map_fd(fd);
  return pool;
}

RunParams Pool::read_params(const std::string& path) {
  const int fd = open_pool_file(path, O_RDONLY);
  try {
    RawHeader raw = read_raw_header(fd, path);
    std::vector<ArrayInfo> arrays;
    auto p = validate_header(raw.block, raw.file_size, path, arrays);
    close(fd);
    return p;
  } catch (...) {
    close(fd);
    throw;
  }
}

RunState Pool::state() const {
  return static_cast<RunState>(load_state_word(base_, path_).state);
}

void Pool::set_state(RunState s) {
  disk::StateWord w = load_state_word(base_, path_);
  w.state = static_cast<std::uint8_t>(s);
  store_state_word(*this, read_only_, w);
}

std::uint64_t Pool::starts() const {
  return load_state_word(base_, path_).starts;
}

void Pool::count_start() {
  disk::StateWord w = load_state_word(base_, path_);
  w.starts = std::min(w.starts + 1, disk::kMaxStarts);
  store_state_word(*this, read_only_, w);
}

void Pool::require_layout(const std::vector<ArraySpec>& expected) const {
  bool same = expected.size() == arrays_.size();
  for (std::size_t i = 0; same && i < expected.size(); ++i)
    same = expected[i].name == arrays_[i].name && expected[i].bytes == arrays_[i].bytes;
  if (!same)
    throw Error(ErrorCode::kPoolCorrupt,
                fmt::format("pool '{}' is corrupt: its arrays are not those of the parameters it "
                            "stores ({} {} n={} bs={})",
                            path_, params_.kernel, params_.scheme, params_.n, params_.bs));
}

bool Pool::has_array(std::string_view name) const {
  return std::any_of(arrays_.begin(), arrays_.end(),
                     [&](const ArrayInfo& a) { return a.name == name; });
}

const ArrayInfo& Pool::array_info(std::string_view name) const {
  for (const auto& a : arrays_)
    if (a.name == name) return a;
  throw Error(ErrorCode::kPoolCorrupt, fmt::format("pool '{}' has no array '{}'", path_, name));
}

void Pool::persist(const void* p, std::size_t len) const {
  pmem2_get_persist_fn(map_)(const_cast<void*>(p), len);
}

void Pool::persist_all() const {
  persist(base_, size_);
}

}  // namespace pmlab::pool
