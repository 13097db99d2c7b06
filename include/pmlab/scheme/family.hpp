// The protocol family of a scheme row: what `pmlab info`, the reports and eval group rows by, so
// that no consumer reads a family out of a scheme's name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pmlab::scheme {

// The reference row every kernel's table has: no persistency at all, what every overhead is
// measured against (pmlab bench, eval).
inline constexpr std::string_view kBaseScheme = "base";

enum class Family : std::uint8_t {
  kOther,    // a family pmlab does not name (a user's kernel); every catalog row names its own
  kBase,     // no persistency: the reference every overhead is measured against
  kLp,       // Lazy Persistency: checksums, validated and recomputed at recovery
  kEp,       // EagerRecompute: a flushed index record per region
  kWal,      // undo logging
  kCp,       // checkpoints by copy
  kHr,       // Hybrid Recompute: EagerRecompute plus a partial copy per step
  kIpv,      // in-place versioning (seed 002)
  kTx,       // epoch-separated undo-log transactions of the BEP benchmarks (seed 004)
  kPmemobj,  // libpmemobj's transactions
};

// The family's name as the reports print it ("lp", "wal", ...).
[[nodiscard]] constexpr std::string_view to_string(Family f) {
  switch (f) {
    case Family::kOther:
      return "other";
    case Family::kBase:
      return "base";
    case Family::kLp:
      return "lp";
    case Family::kEp:
      return "ep";
    case Family::kWal:
      return "wal";
    case Family::kCp:
      return "cp";
    case Family::kHr:
      return "hr";
    case Family::kIpv:
      return "ipv";
    case Family::kTx:
      return "tx";
    case Family::kPmemobj:
      return "pmemobj";
  }
  return "?";
}

// What a consumer needs to know of a row without running it (run::KernelDriver::rows; filled
// from the row by scheme::row_facts).
struct RowFacts {
  std::string name;
  Family family = Family::kOther;
  bool crash_safe = true;
  bool in_family_mean = true;  // Scheme::in_family_mean
};

}  // namespace pmlab::scheme
