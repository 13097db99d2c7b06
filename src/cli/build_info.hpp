// What produced a result: pmlab version, git revision, compiler, CPU, date — put into every
// `--json` document — and what the pool's mapping really persists to (DAX or emulated).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "pmlab/pool/pool.hpp"

namespace pmlab::cli {

// {"pmlab_version", "git_revision", "compiler", "cpu", "date" (UTC, ISO 8601)}.
[[nodiscard]] nlohmann::json build_meta();
// Adds build_meta() to a JSON document under "meta" and returns it (for one-line call sites).
nlohmann::json& with_meta(nlohmann::json& doc);

// How stores to the pool's mapping become durable, as libpmem2 reports it
// (pmem2_map_get_store_granularity): "byte" (eADR: the caches are persistent), "cache-line"
// (DAX persistent memory: flush + fence), "page" (not persistent memory: the page cache and
// msync; persistence is only emulated).
[[nodiscard]] std::string store_granularity(const pool::Pool& pool);
[[nodiscard]] bool persistence_emulated(const pool::Pool& pool);
// Prints a warning on stderr when persistence is only emulated (nothing when on DAX).
void warn_if_emulated(const pool::Pool& pool);

}  // namespace pmlab::cli
