// Deliberate protocol bugs (crash-campaign negative controls) that backends can carry.
#pragma once

#include <cstdint>
#include <string_view>

namespace pmlab::mem {

// A test aid: a crash campaign run with a mutation must fail, or it could not have seen that
// bug. Only the simulator's backend carries one (SimBackend::set_mutation); the building blocks
// ask through mutated(), which is constant false for every other backend, so native code pays
// nothing.
enum class Mutation : std::uint8_t {
  kNone,
  kNoFlush,      // the backend drops every flush (persist() keeps only its fence)
  kNoFence,      // the backend drops every fence
  kNoValidate,   // LP recovery trusts every written checksum slot without recomputing it
  kCommitEarly,  // commit records (undo-log flag clear, checkpoint publish) are made durable
                 // before the data they commit
};

[[nodiscard]] constexpr std::string_view to_string(Mutation m) {
  switch (m) {
    case Mutation::kNone:
      return "none";
    case Mutation::kNoFlush:
      return "no-flush";
    case Mutation::kNoFence:
      return "no-fence";
    case Mutation::kNoValidate:
      return "no-validate";
    case Mutation::kCommitEarly:
      return "commit-early";
  }
  return "?";
}

inline constexpr Mutation kAllMutations[] = {Mutation::kNoFlush, Mutation::kNoFence,
                                             Mutation::kNoValidate, Mutation::kCommitEarly};

// True if backend `b` carries mutation `m`.
template <class B>
[[nodiscard]] constexpr bool mutated(const B& b, Mutation m) {
  if constexpr (requires { b.mutation(); })
    return b.mutation() == m;
  else
    return false;
}

}  // namespace pmlab::mem
