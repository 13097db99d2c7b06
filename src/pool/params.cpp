// Field-by-field comparison of run parameters for clear mismatch messages.
#include "pmlab/pool/params.hpp"

#include <fmt/format.h>

namespace pmlab::pool {

std::vector<std::string> describe_differences(const RunParams& stored, const RunParams& requested) {
  std::vector<std::string> out;
  auto cmp = [&](const char* field, const auto& s, const auto& r) {
    if (s != r) out.push_back(fmt::format("{}: pool has {}, asked for {}", field, s, r));
  };
  cmp("kernel", stored.kernel, requested.kernel);
  cmp("scheme", stored.scheme, requested.scheme);
  cmp("checksum", lp::to_string(stored.checksum), lp::to_string(requested.checksum));
  cmp("threads", stored.threads, requested.threads);
  cmp("n", stored.n, requested.n);
  cmp("bs", stored.bs, requested.bs);
  cmp("seed", stored.seed, requested.seed);
  cmp("extra", stored.extra, requested.extra);
  return out;
}

}  // namespace pmlab::pool
