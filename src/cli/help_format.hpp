// pmlab's --help layout: text wrapped to the terminal, verbs summarised, schemes listed per kernel.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace pmlab::cli {

// Columns the help is wrapped to: the terminal's width (within [60, 120]) when stdout is one,
// else 80, so that a pipe, help2man and the man page see the same layout on every host.
[[nodiscard]] std::size_t help_width();

// `text` wrapped at `width` columns between words, its own line breaks kept; each line after
// the first starts with `indent` (counted in the width).
[[nodiscard]] std::string wrap_text(const std::string& text, std::size_t width,
                                    const std::string& indent = "");

// The formatter of the app; set it before adding the verbs, which copy it from their parent.
[[nodiscard]] std::shared_ptr<CLI::Formatter> make_help_formatter();

// A verb's help footer: every kernel with its schemes (what --scheme accepts), wrapped. With
// `crash_safe_only`, the rows a crash campaign refuses (measurement rows such as ipv-nf) are
// left out.
[[nodiscard]] std::string schemes_by_kernel(bool crash_safe_only);

}  // namespace pmlab::cli
