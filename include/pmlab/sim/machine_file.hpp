// Machine description files: every field of SimParams as JSON, written and read back exactly.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "pmlab/sim/params.hpp"

namespace pmlab::sim {

// The version of the file format; a file of another version is refused.
inline constexpr int kMachineFileVersion = 1;

// Every field of `p` (caches, NVM and row buffer, core model, periodic flush, non-temporal
// stores, flush round trip, PreFlush, persistency) under the keys of docs/cli.md "Machine
// files". The negative-control switches of persistency.debug are tests-only and not written.
// Unlike to_json (a report, with derived figures), this is an input: from_machine_file reads it
// back to the same machine.
[[nodiscard]] nlohmann::json to_machine_file(const SimParams& p);

// A machine from such a document. Keys left out keep SimParams' defaults; an unknown key, a
// value of the wrong type or out of its type's range, and an impossible machine
// (SimParams::validate) throw Error(kInvalidArgument) naming `source` and the key
// (e.g. "l1.ways").
[[nodiscard]] SimParams from_machine_file(const nlohmann::json& doc, const std::string& source);

// Reads and parses the file at `path` (from_machine_file); a missing file or invalid JSON is
// kInvalidArgument too, naming the path.
[[nodiscard]] SimParams load_machine_file(const std::filesystem::path& path);

}  // namespace pmlab::sim
