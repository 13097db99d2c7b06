// pmlab's --help layout: CLI11's formatter with wrapped descriptions and one-line verb summaries,
// and the per-kernel scheme lists the verbs print under their options.
#include "help_format.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/run/catalog.hpp"

namespace pmlab::cli {
namespace {

// Where descriptions start: wide enough for most "--option TYPE=default" names, which CLI11
// otherwise puts on a line of their own.
constexpr std::size_t kHelpNameColumn = 30;

// One line (no '\n') wrapped between words; `out` gets the lines joined by "\n" + indent. The
// spaces between words that stay on a line are kept as typed (the scheme lists align with them).
void wrap_line(const std::string& line, std::size_t width, const std::string& indent,
               std::string& out) {
  std::size_t pos = 0, used = 0;
  bool line_start = true;
  while (pos < line.size()) {
    const std::size_t word_at = std::min(line.find_first_not_of(' ', pos), line.size());
    if (word_at == line.size()) break;  // trailing spaces
    const std::size_t word_end = std::min(line.find(' ', word_at), line.size());
    const std::size_t spaces = word_at - pos, length = word_end - word_at;
    if (!line_start && used + spaces + length > width) {
      out += "\n" + indent;
      used = indent.size();
    } else {
      out.append(spaces, ' ');  // leading spaces of the line included: a hanging list item
      used += spaces;
    }
    out.append(line, word_at, length);
    used += length;
    line_start = false;
    pos = word_end;
  }
}

// A verb's description up to its first ": " or ". " outside parentheses: what `pmlab --help`
// lists beside the verb (its own --help has the rest).
std::string verb_summary(const std::string& description) {
  int depth = 0;
  for (std::size_t i = 0; i + 1 < description.size(); ++i) {
    const char c = description[i];
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (depth == 0 && (c == '.' || c == ':') && description[i + 1] == ' ')
      return description.substr(0, i);
  }
  if (!description.empty() && description.back() == '.')
    return description.substr(0, description.size() - 1);
  return description;
}

class HelpFormatter : public CLI::Formatter {
 public:
  explicit HelpFormatter(std::size_t width) : width_(width) { column_width(kHelpNameColumn); }

  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap_text(opt->get_description(), description_width());
  }

  // A blank line between the description and "Usage:".
  std::string make_description(const CLI::App* app) const override {
    const std::string d = CLI::Formatter::make_description(app);
    return d.empty() ? d : wrap_text(d, width_) + "\n";
  }

  // CLI11 puts two blank lines between option groups; one is enough.
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    std::string out = CLI::Formatter::make_help(app, std::move(name), mode);
    for (std::size_t at = out.find("\n\n\n"); at != std::string::npos; at = out.find("\n\n\n", at))
      out.erase(at, 1);
    return out;
  }

  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             wrap_text(verb_summary(sub->get_description()), description_width()),
                             get_column_width());
    return out.str();
  }

 private:
  // An option group's lines are indented two more columns; its descriptions must fit too.
  [[nodiscard]] std::size_t description_width() const {
    return std::max<std::size_t>(width_ - get_column_width() - 2, 30);
  }

  std::size_t width_;
};

}  // namespace

std::size_t help_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return std::clamp<std::size_t>(ws.ws_col, 60, 120);
  return 80;
}

std::string wrap_text(const std::string& text, std::size_t width, const std::string& indent) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const std::size_t nl = text.find('\n', start);
    wrap_line(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start), width,
              indent, out);
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

std::shared_ptr<CLI::Formatter> make_help_formatter() {
  return std::make_shared<HelpFormatter>(help_width());
}

std::string schemes_by_kernel(bool crash_safe_only) {
  std::size_t name_width = 0;
  for (const auto& k : run::kernel_drivers()) name_width = std::max(name_width, k.name.size());
  const std::string indent(2 + name_width + 2, ' ');
  // A heading of one line, which scripts/man-page reads as a heading.
  std::string out = crash_safe_only ? "Schemes per kernel (--scheme; crash-safe rows only):"
                                    : "Schemes per kernel (--scheme):";
  for (const auto& k : run::kernel_drivers()) {
    std::vector<std::string> schemes;
    for (const auto& s : k.schemes)
      if (!crash_safe_only || k.crash_safe(s)) schemes.push_back(s);
    out +=
        "\n" + wrap_text(fmt::format("  {:<{}}  {}", k.name, name_width, fmt::join(schemes, ", ")),
                         help_width(), indent);
  }
  return out;
}

}  // namespace pmlab::cli
