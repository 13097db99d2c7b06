// Names of the persist barriers (`--barrier`, machine files, eval's barrier study).
#include "pmlab/persist/barrier.hpp"

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::persist {

std::string_view to_string(Barrier b) {
  switch (b) {
    case Barrier::kNone:
      return "none";
    case Barrier::kSoftware:
      return "sw";
    case Barrier::kLb:
      return "lb";
    case Barrier::kLbIdt:
      return "lb-idt";
    case Barrier::kLbPf:
      return "lb-pf";
    case Barrier::kLbPlusPlus:
      return "lb++";
  }
  return "?";
}

Barrier barrier_from_string(std::string_view s) {
  for (Barrier b : {Barrier::kNone, Barrier::kSoftware, Barrier::kLb, Barrier::kLbIdt,
                    Barrier::kLbPf, Barrier::kLbPlusPlus})
    if (to_string(b) == s) return b;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown persist barrier '{}' (none, sw, lb, lb-idt, lb-pf, lb++)", s));
}

}  // namespace pmlab::persist
