// Build and machine metadata for --json documents; libpmem2's view of a pool's persistence.
#include "build_info.hpp"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "pmlab/persist/choice.hpp"

#ifndef PMLAB_GIT_REVISION
#define PMLAB_GIT_REVISION "unknown"
#endif

namespace pmlab::cli {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(' '));
        return v;
      }
    }
  return "unknown";
}

std::string compiler() {
#if defined(__clang__)
  return fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

nlohmann::json build_meta() {
  return {{"pmlab_version", PMLAB_VERSION},
          {"git_revision", PMLAB_GIT_REVISION},
          {"compiler", compiler()},
          {"cpu", cpu_model()},
          {"date", utc_now()}};
}

nlohmann::json& with_meta(nlohmann::json& doc) {
  doc["meta"] = build_meta();
  return doc;
}

// The library's reading (persist/choice.hpp), so the CLI and lp::Loop say the same.
std::string store_granularity(const pool::Pool& pool) {
  return persist::store_granularity(pool.map());
}

bool persistence_emulated(const pool::Pool& pool) {
  return store_granularity(pool) == "page";
}

void warn_if_emulated(const pool::Pool& pool) {
  const std::string w = persist::emulation_warning(pool.map(), pool.path());
  if (!w.empty()) fmt::print(stderr, "pmlab: warning: {}\n", w);
}

}  // namespace pmlab::cli
