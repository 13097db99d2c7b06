// Machine options: a flag per declared machine parameter, preset + settings, replay flags, periodic
// flush.
#include "machine_options.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine_file.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::cli {
namespace {

[[noreturn]] void bad(const std::string& msg) {
  throw Error(ErrorCode::kInvalidArgument, msg);
}

// cachegrind's --D1/--LL syntax: size,assoc,line_size.
sim::CacheGeometry parse_geometry(const std::string& flag, const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == ',') {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  if (parts.size() != 3)
    bad(fmt::format(
        "{} expects size,assoc,line_size as cachegrind does (e.g. 65536,8,64), got '{}'", flag,
        text));
  const std::uint64_t assoc = parse_size(flag, parts[1]), line = parse_size(flag, parts[2]);
  if (assoc < 1 || assoc > 1024)
    bad(fmt::format("{}: associativity must be in [1, 1024], got {}", flag, assoc));
  return {parse_size(flag, parts[0]), static_cast<std::uint32_t>(assoc),
          static_cast<std::uint32_t>(line)};
}

}  // namespace

std::uint64_t parse_size(const std::string& flag, const std::string& text) {
  return sim::parse_bytes(flag, text);
}

void dump_machine(const sim::SimParams& p) {
  fmt::print("{}\n", sim::to_machine_file(p).dump(2));
}

void add_machine_options(CLI::App& cmd, MachineArgs& a) {
  std::string presets;
  for (auto p : sim::preset_names()) presets += (presets.empty() ? "" : ", ") + std::string(p);
  cmd.add_option("--config", a.config,
                 "Machine: a preset (" + presets +
                     ") or a machine file (a path with '/' or ending in .json; the presets' own "
                     "files are in configs/ and share/pmlab/configs; docs/cli.md)")
      ->capture_default_str();
  cmd.add_flag("--dump-config", a.dump_config,
               "Print the effective machine (--config with every override applied) as a machine "
               "file and exit, running nothing");
  auto& m = *cmd.add_option_group("machine overrides", "Changes to the preset");
  for (const sim::MachineParam& param : sim::machine_params()) {
    if (!param.on_command_line()) continue;
    const std::string name = "--" + std::string(param.flag);
    const std::string flag(param.flag);
    CLI::Option* o = nullptr;
    if (param.kind == sim::ParamKind::kBool && param.spellings.empty()) {
      o = m.add_flag_callback(
          name, [&a, flag] { a.settings.set(flag, "true"); }, param.full_help());
    } else {
      o = m.add_option_function<std::string>(
          name,
          [&a, &param, flag](const std::string& text) {
            // --periodic-flush also takes "P%", resolved against the run (apply_periodic_flush).
            try {
              if (flag == "periodic-flush")
                (void)parse_periodic_flush(text);
              else
                (void)param.parse_text(text);
            } catch (const Error& e) {
              throw CLI::ValidationError(e.what());
            }
            a.settings.set(flag, text);
          },
          param.full_help());
      if (param.kind == sim::ParamKind::kChoice || param.kind == sim::ParamKind::kBool) {
        std::string names;
        for (auto s : param.spellings) names += (names.empty() ? "" : "|") + std::string(s);
        o->type_name(names.empty() ? "TEXT" : "{" + names + "}");
      } else {
        // Not "UINT": strict_numbers' hardening is for CLI11-parsed integers; these are
        // parsed by their declaration.
        o->type_name(param.kind == sim::ParamKind::kSize     ? "SIZE"
                     : param.kind == sim::ParamKind::kDouble ? "NUMBER"
                     : flag == "periodic-flush"              ? "CYCLES|P%"
                                                             : "COUNT");
      }
      // The command's own default, else the value on its default machine.
      if (const std::string* given = a.settings.find(flag)) {
        o->default_str(*given);
      } else if (!sim::is_machine_file_path(a.config)) {
        if (const auto v = param.get(sim::preset(a.config))) o->default_str(param.to_text(*v));
      }
    }
    if (param.hidden) o->group("");
  }
  m.add_option("--D1", a.d1,
               "With --config cachegrind: D1 as size,assoc,line (cachegrind's syntax)");
  m.add_option("--LL", a.ll, "With --config cachegrind: LL as size,assoc,line");
}

sim::SimParams build_machine(const MachineArgs& a) {
  if ((a.d1 || a.ll) && a.config != "cachegrind")
    bad("--D1 and --LL describe cachegrind's caches: use them with --config cachegrind");
  // A percentage of the run is resolved later (apply_periodic_flush); a cycle count is a setting.
  sim::MachineSettings s = a.settings;
  if (const std::string* pf = s.find("periodic-flush")) {
    const PeriodicFlushArg arg = parse_periodic_flush(*pf);
    if (arg.percent)
      s.erase("periodic-flush");
    else
      s.set("periodic-flush", arg.cycles);
  }
  sim::SimParams p = sim::machine_from(a.config, s);
  if (a.config == "cachegrind" && (a.d1 || a.ll)) {
    // Rebuild from the geometries, on top of the settings.
    const sim::SimParams cg = sim::cachegrind_like(
        a.d1 ? parse_geometry("--D1", *a.d1) : sim::CacheGeometry{p.l1.size_bytes, p.l1.ways, 64},
        a.ll ? parse_geometry("--LL", *a.ll)
             : sim::CacheGeometry{p.llc.size_bytes, p.llc.ways, 64});
    p.l1.size_bytes = cg.l1.size_bytes;
    p.l1.ways = cg.l1.ways;
    p.llc.size_bytes = cg.llc.size_bytes;
    p.llc.ways = cg.llc.ways;
    p.validate();
  }
  return p;
}

std::string machine_flags(const MachineArgs& a) {
  sim::MachineSettings s = a.settings;
  s.erase("periodic-flush");  // the caller repeats the resolved period in cycles
  std::string flags = "--config " + a.config + s.flags();
  if (a.d1) flags += " --D1 " + *a.d1;
  if (a.ll) flags += " --LL " + *a.ll;
  return flags;
}

PeriodicFlushArg parse_periodic_flush(const std::string& text) {
  const auto fail = [&] {
    bad(fmt::format(
        "--periodic-flush: '{}' is neither a cycle count nor a percentage of the run (e.g. "
        "100000, 0.08%, 33%; 0 = off)",
        text));
  };
  PeriodicFlushArg r;
  std::size_t pos = 0;
  try {
    if (!text.empty() && text.back() == '%') {
      const double p = std::stod(text.substr(0, text.size() - 1), &pos);
      if (pos != text.size() - 1 || !(p > 0) || !std::isfinite(p)) fail();
      // A period longer than the run would never clean anything: certainly a typo.
      if (p > 100)
        bad(
            fmt::format("--periodic-flush: {}% is more than the whole run; a percentage must "
                        "be in (0, 100]",
                        text.substr(0, text.size() - 1)));
      r.percent = p;
    } else {
      if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) fail();
      r.cycles = std::stoull(text, &pos);
      if (pos != text.size()) fail();
    }
  } catch (const Error&) {
    throw;
  } catch (const std::out_of_range&) {
    bad(
        fmt::format("--periodic-flush: '{}' is out of range: a cycle count is at most {}, a "
                    "percentage in (0, 100]",
                    text, std::numeric_limits<std::uint64_t>::max()));
  } catch (const std::exception&) {
    fail();
  }
  return r;
}

PeriodicFlushArg apply_periodic_flush(const MachineArgs& a, run::SimRunSpec& spec) {
  const std::string* text = a.settings.find("periodic-flush");
  if (text == nullptr) return {spec.machine.periodic_flush_cycles.value(), std::nullopt};
  PeriodicFlushArg pf = parse_periodic_flush(*text);
  if (pf.percent) {
    run::SimRunSpec probe = spec;
    probe.machine.periodic_flush_cycles = Cycles{0};
    probe.verify = false;
    probe.drain = false;
    const double run = static_cast<double>(run::simulate(probe).stats.cycles.value());
    pf.cycles = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::llround(run * *pf.percent / 100.0)));
  }
  spec.machine.periodic_flush_cycles = Cycles{pf.cycles};
  return pf;
}

}  // namespace pmlab::cli
