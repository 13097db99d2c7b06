// Build and machine metadata for --json documents; libpmem2's view of a pool's persistence.
#include "build_info.hpp"

#include <libpmem2.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>

#include <fmt/format.h>

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

std::string store_granularity(const pool::Pool& pool) {
  if (pool.map() == nullptr) return "unknown";
  switch (pmem2_map_get_store_granularity(pool.map())) {
    case PMEM2_GRANULARITY_BYTE:
      return "byte";
    case PMEM2_GRANULARITY_CACHE_LINE:
      return "cache-line";
    case PMEM2_GRANULARITY_PAGE:
      return "page";
  }
  return "unknown";
}

bool persistence_emulated(const pool::Pool& pool) {
  return store_granularity(pool) == "page";
}

void warn_if_emulated(const pool::Pool& pool) {
  if (!persistence_emulated(pool)) return;
  fmt::print(stderr,
             "pmlab: warning: '{}' is not on persistent memory (no DAX: libpmem2 reports page "
             "granularity), so persistence is only emulated: flushes reach the page cache, a "
             "process kill is survived but a power failure may not be\n",
             pool.path());
}

}  // namespace pmlab::cli
