// The key-set check of the undo-log benchmarks (rbtree, sdg): what a structure holds against the
// sorted replay of every thread's ops, with the first difference named.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace pmlab::bep {

struct SetCheck {
  std::uint64_t keys = 0, bad = 0;  // keys the replay expects; differences found
  std::string first;                // the first difference (or invariant broken), for messages
};

// Counts the keys of `want` missing from `got` and those in `got` the replay has not; both
// sorted. `noun` names a key in the message ("key", "edge").
inline void compare_with_replay(SetCheck& c, const std::vector<std::uint64_t>& want,
                                const std::vector<std::uint64_t>& got, std::string_view noun) {
  std::vector<std::uint64_t> missing, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  c.bad = missing.size() + extra.size();
  if (!missing.empty())
    c.first = fmt::format("{} {} missing (the replay has it)", noun, missing.front());
  else if (!extra.empty())
    c.first = fmt::format("{} {} present (the replay has not)", noun, extra.front());
}

}  // namespace pmlab::bep
