// The machine's parameters, each declared once: flag, machine-file key, kind, unit, range, help.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "pmlab/sim/params.hpp"

namespace pmlab::sim {

// How a parameter's value is spelled and checked.
//  kBool:   true/false in a machine file; on the command line a flag without a value, or one of
//           two spellings (`spellings[0]` = false, `spellings[1]` = true: "off"/"on",
//           "optimised"/"trace", ...).
//  kInt:    a non-negative integer (unit cycles, entries, ...).
//  kSize:   bytes; the command line also takes K/M/G suffixes (powers of 1024).
//  kDouble: a finite number (ns, GHz, a fraction).
//  kChoice: one of `spellings`, a string in the machine file too.
enum class ParamKind : std::uint8_t { kBool, kInt, kSize, kDouble, kChoice };

// A value of any kind: kBool bool, kInt/kSize uint64, kDouble double, kChoice string.
using ParamValue = std::variant<bool, std::uint64_t, double, std::string>;

// One machine parameter. Its declaration (src/sim/machine_params.cpp, one line for a plain field)
// is all that the CLI (`pmlab sim|crash|eval` flags and their help), the machine-file reader and
// writer, the range check of SimParams::validate and MachineSettings need.
struct MachineParam {
  // The command-line flag without "--" and the name in MachineSettings; empty = machine file only.
  std::string_view flag;
  // Dotted machine-file key ("nvm.write_units"); empty = a command-line control that sets fields
  // whose own keys are declared separately (e.g. --replacement sets every level's).
  std::string_view key;
  ParamKind kind = ParamKind::kInt;
  std::string_view unit;  // "cycles", "bytes", "ns", "GHz", ... ("" = a count or a switch)
  // Accepted range of a kInt/kSize/kDouble value, both ends included (min_open: min excluded).
  double min = 0, max = 0;
  bool min_open = false;
  double type_max = 0;  // the largest value the field's C++ type holds (a machine file's bound)
  std::vector<std::string_view> spellings;  // kChoice: every value; kBool: {false, true} or none
  std::string_view help;
  // The effective value; nullopt when the parameter does not exist on this machine (the fields of
  // an absent private L2).
  std::function<std::optional<ParamValue>(const SimParams&)> get;
  // Sets it (already parsed and range-checked); may set related fields (a derived control) and
  // throws pmlab::Error(kInvalidArgument) when the machine cannot take it.
  std::function<void(SimParams&, const ParamValue&)> set;
  bool ranged = false;  // min/max apply
  bool hidden = false;  // an old spelling kept for scripts, not shown in --help

  [[nodiscard]] bool on_command_line() const { return !flag.empty(); }
  [[nodiscard]] bool in_machine_file() const { return !key.empty(); }
  // "--flag", or the key for a file-only parameter: how messages name it.
  [[nodiscard]] std::string display_name() const;
  // The help text with the unit, the range or the choices appended.
  [[nodiscard]] std::string full_help() const;
  // Text of a value as the command line would spell it.
  [[nodiscard]] std::string to_text(const ParamValue& v) const;
  // Parses command-line text: strict digits, size suffixes, spellings, range; throws
  // pmlab::Error(kInvalidArgument) naming the flag and the accepted range.
  [[nodiscard]] ParamValue parse_text(const std::string& text) const;
  // Throws pmlab::Error(kInvalidArgument) "<key> must be in [min, max] (got v)" when out of range.
  void check_range(const ParamValue& v, std::string_view who) const;
};

// Every declared parameter, in the order they are applied (a control before the fields it
// derives from, e.g. --l2-size before --l2-ways).
[[nodiscard]] const std::vector<MachineParam>& machine_params();
// By flag ("llc-size") or by machine-file key ("llc.size_bytes"); nullptr when unknown.
[[nodiscard]] const MachineParam* find_machine_param(std::string_view flag_or_key);

// Changes to a machine by parameter name (the flag without "--"), as text the command line would
// accept: the one way the CLI, eval's sweeps, crash campaigns' control machines and tests
// describe a machine that differs from a preset or a file.
class MachineSettings {
 public:
  MachineSettings() = default;
  MachineSettings(std::initializer_list<std::pair<std::string, std::string>> items);
  // Throws pmlab::Error(kInvalidArgument) for an unknown name.
  MachineSettings& set(std::string_view flag, std::string text);
  MachineSettings& set(std::string_view flag, const char* text) {
    return set(flag, std::string(text));
  }
  MachineSettings& set(std::string_view flag, std::uint64_t v) {
    return set(flag, std::to_string(v));
  }
  MachineSettings& set(std::string_view flag, int v) { return set(flag, std::to_string(v)); }
  MachineSettings& set(std::string_view flag, unsigned v) { return set(flag, std::to_string(v)); }
  MachineSettings& set(std::string_view flag, double v);
  MachineSettings& set(std::string_view flag, bool v);
  void erase(std::string_view flag);
  [[nodiscard]] const std::string* find(std::string_view flag) const;
  [[nodiscard]] bool empty() const { return items_.empty(); }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& items() const {
    return items_;
  }
  // Each setting applied in declaration order, each parsed as its flag is; the result
  // validated. Throws pmlab::Error(kInvalidArgument) naming the flag.
  void apply_to(SimParams& p) const;
  // " --flag value ..." in declaration order (replay commands).
  [[nodiscard]] std::string flags() const;

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

// The machine a preset name or a machine file path (a path holding '/' or ending in .json)
// names, with `s` applied. pact17 scales its shared L2 with --cores (1 MiB per core), as its
// preset does; a file's caches never rescale.
[[nodiscard]] bool is_machine_file_path(std::string_view config);
[[nodiscard]] SimParams machine_from(std::string_view config, const MachineSettings& s = {});
[[nodiscard]] SimParams machine_from(SimParams base, const MachineSettings& s);

// "65536", "64K", "64KiB", "8M", "1G" (every suffix a power of 1024), at most 1 TiB: the one
// parser of byte counts. Throws pmlab::Error(kInvalidArgument) naming `who`.
[[nodiscard]] std::uint64_t parse_bytes(std::string_view who, const std::string& text);

// Every ranged parameter of `p` checked against its declared range (SimParams::validate calls it).
void check_declared_ranges(const SimParams& p);

}  // namespace pmlab::sim
