// The library-boundary error type: a code for programs plus a readable message for people.
#pragma once

#include <stdexcept>
#include <string>

namespace pmlab {

enum class ErrorCode {
  kInvalidArgument,  // impossible sizes, unknown names
  kPoolCorrupt,      // bad magic, header checksum mismatch, truncated file
  kPoolVersion,      // unknown format version
  kPoolMismatch,     // stored run parameters differ from the requested ones
  kPoolBusy,         // another process holds the pool's lock
  kIo,               // open/create/map failures, ENOSPC, permissions
  kUnsupported,      // CPU lacks an instruction the mode requires
  kInterrupted,      // the user stopped a long job (Ctrl-C / SIGTERM); cleaned up
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace pmlab
