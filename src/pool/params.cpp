// Field-by-field comparison of run parameters for clear mismatch messages.
#include "pmlab/pool/params.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace pmlab::pool {

namespace {

// Appends the layout-tag line of describe_differences.
void describe_layout_difference(const RunParams& stored, const RunParams& requested,
                                std::vector<std::string>& out) {
  // Another kernel, scheme or size lays the pool out differently anyway: the tag is news only
  // when everything else agrees (and 0 means "not declared" on either side).
  if (out.empty() && stored.layout_tag != requested.layout_tag && stored.layout_tag != 0 &&
      requested.layout_tag != 0)
    out.push_back(fmt::format(
        "layout: the pool's arrays are laid out as {:#010x}, this pmlab lays {}/{} out as {:#010x} "
        "(written by another version: start a new pool)",
        stored.layout_tag, requested.kernel, requested.scheme, requested.layout_tag));
}

}  // namespace

std::vector<std::string> describe_differences(const RunParams& stored, const RunParams& requested) {
  std::vector<std::string> out;
  auto cmp = [&](const char* field, const auto& s, const auto& r) {
    if (s != r) out.push_back(fmt::format("{}: pool has {}, asked for {}", field, s, r));
  };
  cmp("kernel", stored.kernel, requested.kernel);
  cmp("scheme", stored.scheme, requested.scheme);
  cmp("checksum", stored.checksum, requested.checksum);
  cmp("threads", stored.threads, requested.threads);
  cmp("n", stored.n, requested.n);
  cmp("bs", stored.bs, requested.bs);
  cmp("seed", stored.seed, requested.seed);
  // A kernel parameter missing on one side reads as "(default)".
  auto value_in = [](const RunParams& p, const std::string& name) -> std::string {
    for (const auto& kp : p.kernel_params)
      if (kp.name == name) return fmt::format("{}", kp.value);
    return "(default)";
  };
  std::vector<std::string> names;
  for (const auto* p : {&stored, &requested})
    for (const auto& kp : p->kernel_params)
      if (std::find(names.begin(), names.end(), kp.name) == names.end()) names.push_back(kp.name);
  for (const auto& name : names)
    cmp(name.c_str(), value_in(stored, name), value_in(requested, name));
  describe_layout_difference(stored, requested, out);
  return out;
}

}  // namespace pmlab::pool
