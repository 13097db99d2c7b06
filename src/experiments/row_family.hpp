// A results row's family and averaging role, read from the catalog's declaration of that row
// (scheme::RowFacts), so that no report reads them out of the scheme's name.
#pragma once

#include <string>

#include "pmlab/run/catalog.hpp"
#include "pmlab/scheme/family.hpp"

namespace pmlab::experiments {

// kOther for a row the catalog does not have (an older results file).
[[nodiscard]] inline scheme::Family family_of(const std::string& kernel,
                                              const std::string& scheme) {
  const scheme::RowFacts* row = run::catalog_row(kernel, scheme);
  return row != nullptr ? row->family : scheme::Family::kOther;
}

// Whether the row enters the averages over kernels of its family (Scheme::in_family_mean): not
// base, not a row the catalog does not have, not a variant that does not stand for its family.
[[nodiscard]] inline bool enters_family_mean(const std::string& kernel, const std::string& scheme) {
  const scheme::RowFacts* row = run::catalog_row(kernel, scheme);
  return row != nullptr && row->in_family_mean && row->family != scheme::Family::kBase;
}

}  // namespace pmlab::experiments
