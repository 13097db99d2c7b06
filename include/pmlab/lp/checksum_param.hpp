// LP's checksum kind as a run parameter: the pool stores it by name, LP parses and sets it here.
#pragma once

#include "pmlab/lp/checksum_kind.hpp"
#include "pmlab/pool/params.hpp"

namespace pmlab::lp {

/// The checksum kind a run asks for (pool::RunParams::checksum parsed); throws pmlab::Error
/// (kInvalidArgument) naming the known kinds for any other name.
[[nodiscard]] ChecksumKind checksum_of(const pool::RunParams& p);
/// Stores `k` in `p`, by its name.
void set_checksum(pool::RunParams& p, ChecksumKind k);

}  // namespace pmlab::lp
