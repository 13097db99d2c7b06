// Strict unsigned-integer options: "-5", "1e3", "0x10" and 2^64 are refused with a clear message.
#include "strict_numbers.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>

#include <fmt/format.h>

namespace pmlab::cli {

std::string strict_unsigned(const std::string& text) {
  const char* const first = text.data();
  const char* const last = first + text.size();
  if (!text.empty() && text[0] == '-' && text.size() > 1)
    throw CLI::ValidationError(
        fmt::format("{} is negative: a non-negative integer is expected", text));
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(first, last, v, 10);
  if (ec == std::errc::result_out_of_range)
    throw CLI::ValidationError(
        fmt::format("{} is larger than the largest accepted value, {} "
                    "(2^64 - 1)",
                    text, std::numeric_limits<std::uint64_t>::max()));
  if (text.empty() || ec != std::errc{} || end != last)
    throw CLI::ValidationError(fmt::format("'{}' is not a non-negative decimal integer", text));
  return std::to_string(v);
}

void harden_unsigned_options(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    // "UINT", or "UINT:<validator descriptions>" once checks are attached.
    const std::string type = o->get_type_name();
    if (type.rfind("UINT", 0) != 0 || (type.size() > 4 && type[4] != ':')) continue;

    o->transform(CLI::Validator(
        [](std::string& value) {
          try {
            value = strict_unsigned(value);
            return std::string();
          } catch (const CLI::ValidationError& e) {
            return std::string(e.what());
          }
        },
        "", "unsigned"));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    harden_unsigned_options(*sub);
}

std::string explain_parse_error(const CLI::ParseError& e) {
  const std::string text = e.what();
  constexpr std::string_view kPrefix = "Could not convert: ";
  const std::size_t eq = text.find(" = ");
  if (dynamic_cast<const CLI::ConversionError*>(&e) == nullptr || text.rfind(kPrefix, 0) != 0 ||
      eq == std::string::npos)
    return text;
  const std::string name = text.substr(kPrefix.size(), eq - kPrefix.size());
  const std::string value = text.substr(eq + 3);
  const bool integer =
      !value.empty() &&
      value.find_first_not_of("0123456789", value[0] == '-' ? 1 : 0) == std::string::npos &&
      value != "-";
  if (integer)
    return fmt::format(
        "{}: {} is out of range for this option (too {} for its type; see --help for the "
        "values it takes)",
        name, value, value[0] == '-' ? "small" : "large");
  return fmt::format("{}: '{}' is not a valid value for this option (see --help)", name, value);
}

}  // namespace pmlab::cli
