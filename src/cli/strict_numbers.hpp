// Strict unsigned integers on the command line: no sign, no octal, no silent capping at 2^64-1.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace pmlab::cli {

// Checks one unsigned-integer argument: decimal digits only, at most 2^64 - 1. Returns the
// canonical decimal text (leading zeros dropped, so that CLI11 never reads "010" as octal 8),
// or throws CLI::ValidationError naming what is wrong ("-5 is negative", "... is larger than").
[[nodiscard]] std::string strict_unsigned(const std::string& text);

// Puts strict_unsigned in front of every unsigned-integer option of `app` and its subcommands
// (CLI11 2.1 reads them with strtoull, which wraps "-5" around and caps overflow at 2^64 - 1).
void harden_unsigned_options(CLI::App& app);

// pmlab's own message for CLI11's generic "Could not convert: --threads = 99999999999" (a value
// that passed strict_unsigned but does not fit the option's type, e.g. 32 bits, or a signed
// option out of range): "--threads: 99999999999 is out of range for this option ...". Returns
// the exception's own text for any other error.
[[nodiscard]] std::string explain_parse_error(const CLI::ParseError& e);

}  // namespace pmlab::cli
