// "Did you mean": the known name closest to a mistyped one (options, kernels, schemes, presets).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pmlab {

namespace detail {
[[nodiscard]] constexpr char suggest_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
}  // namespace detail

/// Edit distance between `a` and `b` ignoring ASCII case: insertions, deletions, substitutions
/// and swaps of two adjacent characters each cost 1 (optimal string alignment), so that the
/// commonest typo, two keys struck in the wrong order ("shceme"), is one edit and not two.
[[nodiscard]] inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  // Three rows of the dynamic-programming table: a swap looks two rows back.
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const char ai = detail::suggest_lower(a[i - 1]), bj = detail::suggest_lower(b[j - 1]);
      const std::size_t cost = ai == bj ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && ai == detail::suggest_lower(b[j - 2]) &&
          detail::suggest_lower(a[i - 2]) == bj)
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

/// The candidate `word` was most likely meant to be, or "" when none is close enough to be
/// worth suggesting. Close enough: within max(1, |word| / 3) edits (beyond a third of the word
/// a suggestion is a guess, and a wrong one misleads more than none), or the only candidate
/// that starts with `word` when `word` has 3 or more characters (an abbreviation: "--check").
/// Ties go to the earlier candidate, so callers list names in their usual order.
template <class Range>
[[nodiscard]] std::string closest_name(std::string_view word, const Range& candidates) {
  if (word.empty()) return {};
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::string best;
  std::size_t best_distance = limit + 1;
  std::string prefixed;
  std::size_t prefix_matches = 0;
  for (const auto& c : candidates) {
    const std::string_view name(c);
    if (name.empty()) continue;
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(name);
    }
    if (word.size() >= 3 && name.size() > word.size() &&
        edit_distance(word, name.substr(0, word.size())) == 0) {
      ++prefix_matches;
      prefixed = std::string(name);
    }
  }
  if (!best.empty()) return best;
  return prefix_matches == 1 ? prefixed : std::string();
}

/// "; did you mean NAME?" for an error message about `word`, or "" when closest_name finds none.
template <class Range>
[[nodiscard]] std::string did_you_mean(std::string_view word, const Range& candidates) {
  const std::string name = closest_name(word, candidates);
  return name.empty() ? std::string() : "; did you mean " + name + "?";
}

}  // namespace pmlab
