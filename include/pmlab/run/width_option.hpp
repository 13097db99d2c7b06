// conv2d's kernel width as a CLI option (--width → RunParams.extra): help text and the check
// that the kernel has a width, shared by `pmlab run`, `bench`, `sim` and `crash`.
#pragma once

#include <string_view>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::run {

inline constexpr const char* kWidthHelp =
    "conv2d only: width of the convolution kernel, odd and <= --n (default 5, narrowed to the "
    "largest odd width <= n for n < 5)";

// Throws kInvalidArgument unless `kernel` takes --width.
inline void require_width_applies(std::string_view kernel) {
  if (kernel != "conv2d")
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--width applies to conv2d only (the convolution kernel's width); "
                            "{} has no width parameter",
                            kernel));
}

}  // namespace pmlab::run
