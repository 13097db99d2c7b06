// A user's own run parameters kept in a pool beside the fixed header fields, checked on every
// open so that a resume can't mix two different runs.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/pool/pool.hpp"

namespace pmlab::pool {

/// Parameters a pool can store for its user: trivially copyable. They are compared byte for
/// byte (a double by its bits), so give T no padding, or value-initialize it (`T{...}`).
template <class T>
concept UserParamsType = std::is_trivially_copyable_v<T> && std::is_standard_layout_v<T>;

/// Name of the pool array that holds the user's parameters.
inline constexpr const char* kUserParamsArray = "user_params";

/// Opens the pool at `path`, or creates it with `arrays` plus the user's parameters, the
/// `bytes` bytes at `user` (written and persisted before `init` runs and before the pool is
/// published), like Pool::open_or_create. `identity` holds the header's fields (kernel name,
/// scheme, ...). A pool whose stored user parameters differ from these bytes is refused with
/// kPoolMismatch, as is one created without user parameters. (The C API's door; C++ callers
/// pass their struct to the overload below.)
[[nodiscard]] inline Pool open_or_create_with_bytes(
    const std::string& path, const RunParams& identity, const void* user, std::size_t bytes,
    std::vector<ArraySpec> arrays, const Pool::Initializer& init, bool* created = nullptr) {
  arrays.push_back({kUserParamsArray, bytes});
  Pool pool = Pool::open_or_create(
      path, identity, arrays,
      [&](Pool& p) {
        if (bytes != 0) {
          std::memcpy(p.array<std::byte>(kUserParamsArray), user, bytes);
          p.persist(p.array<std::byte>(kUserParamsArray), bytes);
        }
        if (init) init(p);
      },
      created);
  if (!pool.has_array(kUserParamsArray) || pool.array_info(kUserParamsArray).bytes != bytes ||
      (bytes != 0 && std::memcmp(pool.array<const std::byte>(kUserParamsArray), user, bytes) != 0))
    throw Error(ErrorCode::kPoolMismatch,
                "pool '" + path + "' was created with other user parameters; use another pool " +
                    "path or the parameters it was created with");
  return pool;
}

/// The same for a struct of the user's own (compared byte for byte).
template <UserParamsType T>
[[nodiscard]] Pool open_or_create_with(const std::string& path, const RunParams& identity,
                                       const T& user, std::vector<ArraySpec> arrays,
                                       const Pool::Initializer& init, bool* created = nullptr) {
  return open_or_create_with_bytes(path, identity, &user, sizeof(T), std::move(arrays), init,
                                   created);
}

/// The user parameters stored in `pool` (kPoolMismatch if it holds none of this size).
template <UserParamsType T>
[[nodiscard]] T user_params(const Pool& pool) {
  if (!pool.has_array(kUserParamsArray) || pool.array_info(kUserParamsArray).bytes != sizeof(T))
    throw Error(ErrorCode::kPoolMismatch,
                "pool '" + pool.path() + "' holds no user parameters of this type");
  T v;
  std::memcpy(&v, pool.array<const T>(kUserParamsArray), sizeof(T));
  return v;
}

}  // namespace pmlab::pool
