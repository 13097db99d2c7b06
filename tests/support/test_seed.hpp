// The seed of a randomized test: fixed by default (reproducible CI), PMLAB_TEST_SEED to replay
// or explore; always printed when the test fails.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>

namespace pmlab::test {

// PMLAB_TEST_SEED unset: a fixed seed per test, derived from its full name (FNV-1a), so every
// run draws the same cases and tests draw different ones. PMLAB_TEST_SEED=N: N for every test
// (to replay a failure). PMLAB_TEST_SEED=random: a fresh seed each run (to explore).
[[nodiscard]] inline std::uint64_t test_seed() {
  if (const char* s = std::getenv("PMLAB_TEST_SEED"); s != nullptr && *s != '\0') {
    if (std::string_view(s) == "random") {
      std::random_device rd;
      return (static_cast<std::uint64_t>(rd()) << 32) | rd();
    }
    return std::strtoull(s, nullptr, 0);
  }
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info == nullptr ? "pmlab" : info->test_suite_name();
  if (info != nullptr) name += std::string(".") + info->name();
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// What a failing test prints (via SCOPED_TRACE): the seed and how to replay it.
[[nodiscard]] inline std::string seed_trace(std::uint64_t seed) {
  return "seed " + std::to_string(seed) + " (replay: PMLAB_TEST_SEED=" + std::to_string(seed) + ")";
}

}  // namespace pmlab::test
