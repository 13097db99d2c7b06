// Property-test trial counts scaled by PMLAB_TEST_SCALE (the sanitizer run uses fewer trials).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace pmlab::test {

// PMLAB_TEST_SCALE: 1 unless set to a positive number. `make test-sanitize` sets it below 1:
// ASan/UBSan make each trial ~10x slower but find the same bugs in fewer trials.
[[nodiscard]] inline double test_scale() {
  const char* s = std::getenv("PMLAB_TEST_SCALE");
  const double scale = s != nullptr ? std::strtod(s, nullptr) : 1.0;
  return scale > 0 ? scale : 1.0;
}

// A property test's trial count times test_scale(); at least `floor` trials always run so the
// non-vacuity checks keep their meaning.
[[nodiscard]] inline std::uint64_t scaled_trials(std::uint64_t trials, std::uint64_t floor = 100) {
  const auto scaled = static_cast<std::uint64_t>(static_cast<double>(trials) * test_scale());
  return std::max(std::min(trials, floor), scaled);
}

// A campaign count for tests whose campaigns are seeded by index: `full`, or as scaled (at least a
// fifth of it), i.e. the first of the same campaigns.
[[nodiscard]] inline int scaled_campaigns(int full) {
  const auto n = static_cast<std::uint64_t>(full);
  return static_cast<int>(scaled_trials(n, n / 5));
}

// True when property tests run their full trial counts (PMLAB_TEST_SCALE unset or at least 1).
// A lower bound on a count (at least 150 of 200 campaigns resolve) is calibrated for the full
// count and asserted only then. Upper bounds (at most 10 confidently wrong) still hold on the
// scaled run when its trials are the first of the same seeded ones, a subset.
[[nodiscard]] inline bool full_scale() {
  return test_scale() >= 1.0;
}

}  // namespace pmlab::test
