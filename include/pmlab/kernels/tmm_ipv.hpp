// In-place versioning on tmm (seed 002 §4.1/§4.2): C and a second version alternate by kk-tile
// parity, on the shared building block scheme/in_place_versions.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pmlab/kernels/tmm.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/in_place_versions.hpp"

namespace pmlab::kernels::tmm {

using IpvFlush = scheme::IpvFlush;

struct IpvState {
  double* v1 = nullptr;  // the second version of C (rows * ld doubles); version 0 is C itself
  scheme::IpvHeader* header = nullptr;
};

// panel_step reading C's old values from c_in and storing the new ones into c_out: the paper's
// basic rule (every element is read once, before its only update, and the sum stays in a
// register). A copy of panel_step rather than a parameter of it, so that the hot loop every
// other tmm scheme runs stays exactly as measured (docs/backend-overhead.md).
template <mem::Backend B>
[[gnu::noinline]] void panel_step_versioned(B& be, const Operands& op, const double* c_in,
                                            double* c_out, std::size_t kt, std::size_t it) {
  const std::size_t n = op.n, bs = op.bs;
  const double* const a = op.a.data();
  const double* const b = op.b.data();
  const std::size_t lda = op.a.ld(), ldb = op.b.ld(), ldc = op.c.ld();
  const std::size_t kk = kt * bs, ii = it * bs;
  const std::size_t k_end = std::min(kk + bs, n), i_end = std::min(ii + bs, n);
  for (std::size_t jj = 0; jj < n; jj += bs) {
    const std::size_t j_end = std::min(jj + bs, n);
    for (std::size_t i = ii; i < i_end; ++i) {
      for (std::size_t j = jj; j < j_end; ++j) {
        double sum = be.load(c_in + i * ldc + j);
        for (std::size_t k = kk; k < k_end; ++k)
          sum += be.load(a + i * lda + k) * be.load(b + k * ldb + j);
        be.store(c_out + i * ldc + j, sum);
      }
    }
  }
}

// tmm's target is C, updated by the basic rule: every element of C once per kk tile, so the
// updates are uniform.
[[nodiscard]] inline scheme::InPlaceVersions ipv_versions(const Operands& op, const IpvState& st) {
  return {.v = {op.c.data(), st.v1},
          .elements = op.c.rows() * op.c.ld(),
          .header = st.header,
          .iterations = op.tiles(),
          .updates = scheme::IpvUpdates::kUniform};
}

// The iteration is the kk tile; its panels run in parallel once the last tile's version is
// committed (scheme/in_place_versions.hpp holds the protocol).
template <mem::Backend B>
void run_ipv(B& be, const Operands& op, const IpvState& st, IpvFlush how,
             std::size_t first_kt = 0) {
  const std::size_t nt = op.tiles();
  scheme::run_in_place_versions(
      be, ipv_versions(op, st), how, first_kt,
      [&](std::size_t kt, const double* in, double* out, auto&& before_first_write) {
        before_first_write();
        be.parallel_for(0, nt,
                        [&](std::size_t it) { panel_step_versioned(be, op, in, out, kt, it); });
      });
}

// O(1): version done % 2 holds C after `done` tiles; the run resumes there, recomputing at most
// the one tile that was in flight.
template <mem::Backend B>
[[nodiscard]] std::size_t recover_ipv(B& be, const Operands& op, const IpvState& st,
                                      lp::RecoveryStats& stats) {
  ++stats.regions_validated;
  return scheme::recover_in_place_versions(be, ipv_versions(op, st));
}

}  // namespace pmlab::kernels::tmm
