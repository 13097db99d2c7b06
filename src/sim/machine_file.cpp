// Machine description files (JSON): every declared machine parameter written, and read back
// strictly.
#include "pmlab/sim/machine_file.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/core/suggest.hpp"
#include "pmlab/sim/machine_params.hpp"

namespace pmlab::sim {
namespace {

using nlohmann::json;

// The JSON value at a dotted key path of `doc`, or nullptr.
const json* at_path(const json& doc, std::string_view key) {
  const json* j = &doc;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = key.find('.', start);
    const std::string part(
        key.substr(start, dot == std::string_view::npos ? key.npos : dot - start));
    if (!j->is_object()) return nullptr;
    auto it = j->find(part);
    if (it == j->end()) return nullptr;
    j = &*it;
    if (dot == std::string_view::npos) return j;
    start = dot + 1;
  }
}

json& make_path(json& doc, std::string_view key) {
  json* j = &doc;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = key.find('.', start);
    j = &(
        *j)[std::string(key.substr(start, dot == std::string_view::npos ? key.npos : dot - start))];
    if (dot == std::string_view::npos) return *j;
    start = dot + 1;
  }
}

json to_file_value(const ParamValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

// One declared parameter's value from the file: the JSON type its kind needs, within the
// field's C++ type (its declared range is SimParams::validate's: an "impossible machine").
ParamValue from_file_value(const MachineParam& m, const json& v, const std::string& source) {
  const auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: '{}' {}", source, m.key, what));
  };
  switch (m.kind) {
    case ParamKind::kBool:
      if (!v.is_boolean()) fail("must be true or false");
      return v.get<bool>();
    case ParamKind::kChoice: {
      if (!v.is_string()) fail("must be a string");
      const std::string s = v.get<std::string>();
      if (!m.spellings.empty() &&
          std::find(m.spellings.begin(), m.spellings.end(), s) == m.spellings.end()) {
        std::string all;
        for (auto x : m.spellings) all += (all.empty() ? "" : ", ") + std::string(x);
        fail(fmt::format("is '{}': expected one of {}", s, all));
      }
      return s;
    }
    case ParamKind::kDouble:
      if (!v.is_number()) fail("must be a number");
      return v.get<double>();
    case ParamKind::kInt:
    case ParamKind::kSize:
      break;
  }
  if (!v.is_number_integer()) fail(fmt::format("must be an integer, got {}", v.dump()));
  // A literal may be stored signed even when it is not negative.
  if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0)
    fail(fmt::format("is {}, below the smallest accepted value 0", v.get<std::int64_t>()));
  const auto u = v.get<std::uint64_t>();
  if (static_cast<double>(u) > m.type_max)
    fail(fmt::format("is {}, above the largest accepted value {}", u,
                     static_cast<std::uint64_t>(m.type_max)));
  return u;
}

// Every key of `doc` that no declared parameter (nor the version) takes is an error, so a typo
// is not a silently ignored setting.
void refuse_unknown_keys(const json& doc, const std::string& prefix, const std::string& source) {
  if (!doc.is_object())
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: '{}' must be an object", source,
                            prefix.empty() ? "the document" : prefix));
  for (const auto& [key, v] : doc.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (path == "pmlab_machine") continue;
    bool leaf = false, branch = false;
    for (const auto& m : machine_params()) {
      if (!m.in_machine_file()) continue;
      leaf = leaf || m.key == path;
      branch = branch || (m.key.size() > path.size() && m.key.starts_with(path + "."));
    }
    if (leaf) continue;
    if (branch && v.is_null() && path == "l2") continue;  // no private L2
    if (branch) {
      refuse_unknown_keys(v, path, source);
      continue;
    }
    std::vector<std::string_view> keys;
    for (const auto& m : machine_params())
      if (m.in_machine_file()) keys.push_back(m.key);
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: '{}' is not a known key here{} (see docs/cli.md)",
                            source, path, did_you_mean(path, keys)));
  }
}

}  // namespace

json to_machine_file(const SimParams& p) {
  json doc = {{"pmlab_machine", kMachineFileVersion}};
  for (const auto& m : machine_params()) {
    if (!m.in_machine_file()) continue;
    if (const auto v = m.get(p)) {
      make_path(doc, m.key) = to_file_value(*v);
    } else {
      // A level that does not exist on this machine (no private L2) is written as null.
      make_path(doc, m.key.substr(0, m.key.find('.'))) = nullptr;
    }
  }
  return doc;
}

SimParams from_machine_file(const json& doc, const std::string& source) {
  SimParams p;
  refuse_unknown_keys(doc, "", source);
  if (const json* version = at_path(doc, "pmlab_machine")) {
    if (!version->is_number_integer() || version->get<std::int64_t>() != kMachineFileVersion)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("machine file {}: 'pmlab_machine' is {}: this pmlab reads version {}",
                              source, version->dump(), kMachineFileVersion));
  }
  if (const json* l2 = at_path(doc, "l2")) {
    if (l2->is_null())
      p.l2.reset();
    else if (!p.l2)
      p.l2 = LevelParams{"L2", 256 * 1024, 8, Cycles{6}, Replacement::kLru};
  }
  for (const auto& m : machine_params()) {
    if (!m.in_machine_file()) continue;
    const json* v = at_path(doc, m.key);
    if (v == nullptr || (!p.l2 && m.key.starts_with("l2."))) continue;
    m.set(p, from_file_value(m, *v, source));
  }
  try {
    p.validate();
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: impossible machine: {}", source, e.what()));
  }
  return p;
}

SimParams load_machine_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: cannot be read (no such file?)", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: not valid JSON: {}", path.string(), e.what()));
  }
  return from_machine_file(doc, path.string());
}

}  // namespace pmlab::sim
