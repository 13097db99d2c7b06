// Every declared machine parameter: its flag parses, the machine file round-trips it, and a value
// outside its range is refused naming it (in-process and as `pmlab sim` exit 2).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../support/process.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine_file.hpp"
#include "pmlab/sim/machine_params.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::sim {
namespace {

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "(accepted)";
}

// A value of `m` other than its value on `p` that the machine accepts, as command-line text:
// the other spelling of a switch, the other choice, or a nearby number in range.
std::optional<std::string> another_value(const MachineParam& m, const SimParams& p) {
  const auto now = m.get(p);
  switch (m.kind) {
    case ParamKind::kBool:
      if (!now) return std::nullopt;
      return m.to_text(ParamValue{!std::get<bool>(*now)});
    case ParamKind::kChoice:
      for (auto s : m.spellings)
        if (!now || std::get<std::string>(*now) != s) return std::string(s);
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

TEST(MachineParams, NamesAreUniqueAndEveryParameterIsReachable) {
  std::set<std::string_view> flags, keys;
  for (const auto& m : machine_params()) {
    EXPECT_TRUE(m.on_command_line() || m.in_machine_file()) << m.display_name();
    if (m.on_command_line()) {
      EXPECT_TRUE(flags.insert(m.flag).second) << m.flag;
    }
    if (m.in_machine_file()) {
      EXPECT_TRUE(keys.insert(m.key).second) << m.key;
    }
    EXPECT_FALSE(m.help.empty()) << m.display_name();
    EXPECT_TRUE(m.get && m.set) << m.display_name();
    if (m.ranged) {
      EXPECT_LE(m.min, m.max) << m.display_name();
    }
  }
  // Every key the machine file writes is declared (nothing is written by hand).
  const json file = to_machine_file(lp_isca18());
  std::function<void(const json&, const std::string&)> walk = [&](const json& j,
                                                                  const std::string& prefix) {
    for (const auto& [k, v] : j.items()) {
      const std::string path = prefix.empty() ? k : prefix + "." + k;
      if (v.is_object())
        walk(v, path);
      else if (path != "pmlab_machine" && path != "l2")
        EXPECT_TRUE(keys.contains(path)) << path;
    }
  };
  walk(file, "");
}

TEST(MachineParams, EveryFlagParsesItsPresetValueAndAppliesIt) {
  for (const auto preset_name : preset_names()) {
    const SimParams base = preset(preset_name);
    for (const auto& m : machine_params()) {
      if (!m.on_command_line()) continue;
      const auto v = m.get(base);
      if (!v) continue;  // not on this machine (no private L2), or a pure control
      const std::string text = m.to_text(*v);
      SCOPED_TRACE(std::string(preset_name) + " --" + std::string(m.flag) + " " + text);
      const ParamValue parsed = m.parse_text(text);
      if (m.kind == ParamKind::kDouble)
        EXPECT_DOUBLE_EQ(std::get<double>(parsed), std::get<double>(*v));
      else
        EXPECT_EQ(parsed, *v);
      // The setting gives the machine the value it already has (a derived control, e.g.
      // --wq-entries, may also set other fields).
      if (m.kind == ParamKind::kBool && m.spellings.empty() && !std::get<bool>(*v)) continue;
      const SimParams again =
          machine_from(std::string(preset_name), MachineSettings{{std::string(m.flag), text}});
      EXPECT_EQ(m.get(again), m.get(base));
    }
  }
}

TEST(MachineParams, EveryFileKeyRoundTripsAChangedValue) {
  // A machine where every optional part exists, so every key has a value to change.
  SimParams base = thesis_ch4();
  base.l2 = LevelParams{"L2", 256 * 1024, 8, Cycles{6}, Replacement::kLru};
  base.llc.name = "L3";
  int changed = 0;
  for (const auto& m : machine_params()) {
    if (!m.in_machine_file()) continue;
    SCOPED_TRACE(std::string(m.key));
    SimParams p = base;
    const auto now = m.get(p);
    ASSERT_TRUE(now.has_value());
    std::optional<ParamValue> other;
    if (m.kind == ParamKind::kInt || m.kind == ParamKind::kSize) {
      const auto u = std::get<std::uint64_t>(*now);
      // Powers of two stay powers of two; sizes stay multiples of ways x lines.
      const std::uint64_t cand = u * 2 <= m.max ? u * 2 : u / 2;
      if (cand >= m.min && cand != u) other = cand;
    } else if (m.kind == ParamKind::kDouble) {
      const double d = std::get<double>(*now);
      const double cand = m.key.find("wq_low") != std::string_view::npos ? d * 0.9 : d * 0.95;
      if (cand > m.min) other = cand;
    } else if (m.kind == ParamKind::kChoice && m.spellings.empty()) {
      other = std::string("renamed");
    } else if (const auto text = another_value(m, p)) {
      other = m.parse_text(*text);
    }
    if (!other) continue;
    try {
      m.set(p, *other);
      p.validate();
    } catch (const Error&) {
      continue;  // a combination the machine refuses (checked by the range test below)
    }
    const json file = to_machine_file(p);
    const SimParams back = from_machine_file(file, "test");
    EXPECT_EQ(to_machine_file(back), file);
    EXPECT_EQ(m.get(back), m.get(p));
    EXPECT_NE(m.get(back), now);
    ++changed;
  }
  EXPECT_GT(changed, 50);
}

TEST(MachineParams, OutOfRangeValuesAreRefusedNamingTheParameter) {
  for (const auto& m : machine_params()) {
    if (!m.ranged) continue;
    SCOPED_TRACE(m.display_name());
    const std::string above = m.kind == ParamKind::kDouble
                                  ? fmt::format("{}", m.max * 2 + 1)
                                  : fmt::format("{}", static_cast<std::uint64_t>(m.max) + 1);
    if (m.on_command_line()) {
      const std::string e = error_of([&] { (void)m.parse_text(above); });
      EXPECT_NE(e.find("--" + std::string(m.flag)), std::string::npos) << e;
      EXPECT_NE(e.find("range"), std::string::npos) << e;
    }
    if (m.in_machine_file() && m.max < m.type_max) {
      SimParams p = lp_isca18();
      if (m.key.starts_with("l2.")) continue;
      m.set(p, m.kind == ParamKind::kDouble ? ParamValue{m.max * 2 + 1}
                                            : ParamValue{static_cast<std::uint64_t>(m.max) + 1});
      const std::string e = error_of([&] { p.validate(); });
      EXPECT_NE(e.find(std::string(m.key)), std::string::npos) << e;
    }
  }
}

TEST(MachineParams, SizesTakeSuffixesAndOneParserReadsThem) {
  EXPECT_EQ(parse_bytes("--x", "64K"), 65536u);
  EXPECT_EQ(parse_bytes("--x", "512KiB"), 512u * 1024);
  EXPECT_EQ(parse_bytes("--x", "8M"), 8u << 20);
  EXPECT_NE(error_of([] { (void)parse_bytes("--x", "-1"); }).find("--x"), std::string::npos);
  EXPECT_NE(error_of([] { (void)parse_bytes("--x", "5Q"); }).find("not a size"), std::string::npos);
  const MachineParam* llc = find_machine_param("llc-size");
  ASSERT_NE(llc, nullptr);
  EXPECT_EQ(std::get<std::uint64_t>(llc->parse_text("1M")), 1u << 20);
  EXPECT_EQ(find_machine_param("llc.size_bytes"), llc);
}

TEST(MachineParams, UnknownSettingsAreRefused) {
  MachineSettings s;
  EXPECT_NE(error_of([&] { s.set("l1-sise", "4K"); }).find("l1-sise"), std::string::npos);
}

// The CLI side of the same declarations: each ranged flag's out-of-range value exits 2 naming
// the flag (one process per flag, so only the ranged command-line flags).
TEST(MachineParamsCli, OutOfRangeFlagsExitTwoNamingThem) {
  for (const auto& m : machine_params()) {
    if (!m.ranged || !m.on_command_line() || m.kind == ParamKind::kDouble) continue;
    const std::string flag = "--" + std::string(m.flag);
    const std::string above = fmt::format("{}", static_cast<std::uint64_t>(m.max) + 1);
    const auto r = pmlab::testing::run_process(
        {PMLAB_BINARY, "sim", "tmm", "--n", "16", "--bs", "4", flag, above, "--dump-config"},
        "/tmp/pmlab-machine-params-test.log");
    EXPECT_EQ(r.exit_code, 2) << flag << " " << above << ": " << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
  }
}

// The bound rule of machine_params.cpp: every latency the simulator adds to a clock is declared
// with a range ending at 1e6 (cycles, or ns at --freq-ghz <= 100), so that one is at most 1e8
// cycles and a 64-bit clock holds 1.8e11 events at the largest. Catches a latency declared
// without a bound (2^64 - 1 cycles in a machine file overflows the clock at its first use).
TEST(MachineParams, EveryLatencyIsBoundedSoThatNoClockOverflows) {
  const MachineParam* freq = find_machine_param("freq-ghz");
  ASSERT_NE(freq, nullptr);
  ASSERT_TRUE(freq->ranged);
  ASSERT_LE(freq->max, 100.0);
  int latencies = 0;
  for (const auto& m : machine_params()) {
    if (m.unit != "cycles" && m.unit != "ns") continue;
    if (m.flag == "periodic-flush") continue;  // a period compared with the clock, in 128 bits
    SCOPED_TRACE(m.display_name());
    ++latencies;
    EXPECT_TRUE(m.ranged);
    EXPECT_LE(m.max, 1e6);
    const double worst_cycles = m.max * (m.unit == "ns" ? freq->max : 1.0);
    EXPECT_GE(18446744073709551615.0 / worst_cycles, 1.8e11);
  }
  EXPECT_GE(latencies, 15);
}

// A machine file's latency of 2^64 - 1 cycles is refused, naming the key and its range.
TEST(MachineParams, AHugeLatencyInAMachineFileIsRefusedNamingItsRange) {
  for (const char* level : {"l1", "llc"}) {
    json file = to_machine_file(lp_isca18());
    file[level]["hit_latency"] = 18446744073709551615ull;
    const std::string e = error_of([&] { (void)from_machine_file(file, "test"); });
    EXPECT_NE(e.find(std::string(level) + ".hit_latency"), std::string::npos) << e;
    EXPECT_NE(e.find("[0, 1000000]"), std::string::npos) << e;
  }
  for (const char* key : {"flush_issue_latency", "fence_latency"}) {
    json file = to_machine_file(lp_isca18());
    file[key] = 18446744073709551615ull;
    const std::string e = error_of([&] { (void)from_machine_file(file, "test"); });
    EXPECT_NE(e.find(key), std::string::npos) << e;
    EXPECT_NE(e.find("[0, 1000000]"), std::string::npos) << e;
  }
}

// How a message spells a parameter's upper bound (machine_params.cpp's bound_text).
std::string max_text(const MachineParam& m) {
  if (m.kind == ParamKind::kDouble) {
    std::ostringstream s;
    s.precision(17);
    s << m.max;
    return s.str();
  }
  if (m.max >= 18446744073709551615.0) return "18446744073709551615";
  return fmt::format("{}", static_cast<std::uint64_t>(m.max));
}

// `--nvm-read-ns 1e308` and every other numeric flag at a huge value (1e308, 2^64) exit 2,
// naming the flag and its upper bound; nothing is simulated (--dump-config).
TEST(MachineParamsCli, HugeValuesOfEveryNumericFlagExitTwoNamingTheBound) {
  int flags = 0;
  for (const auto& m : machine_params()) {
    if (!m.on_command_line() ||
        (m.kind != ParamKind::kInt && m.kind != ParamKind::kSize && m.kind != ParamKind::kDouble))
      continue;
    const std::string flag = "--" + std::string(m.flag);
    const std::string huge = m.kind == ParamKind::kDouble ? "1e308" : "18446744073709551616";
    const auto r = pmlab::testing::run_process(
        {PMLAB_BINARY, "sim", "tmm", "--n", "16", "--bs", "4", flag, huge, "--dump-config"},
        "/tmp/pmlab-machine-params-huge-test.log");
    ++flags;
    EXPECT_EQ(r.exit_code, 2) << flag << " " << huge << ": " << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
    // --periodic-flush also takes "P%": its own parser names both forms instead of a range.
    if (m.flag != "periodic-flush") {
      EXPECT_NE(r.err.find(max_text(m) + "]"), std::string::npos) << flag << ": " << r.err;
    }
  }
  EXPECT_GE(flags, 30);
}

}  // namespace
}  // namespace pmlab::sim
