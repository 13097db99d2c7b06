// Damped 2-D Jacobi (5-point stencil) with a residual-norm tail, and its --mg-like variant (NAS
// MG's interior-then-whole second loop); every scheme via iterative.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/iterative.hpp"
#include "pmlab/mem/backend.hpp"

namespace pmlab::kernels::jacobi {

// Odd: the result then ends in IPV's version 1, so a campaign can see a version left unflushed
// (with an LLC smaller than `res`, the residual loop writes every version back before each
// commit; only the end of the run exposes it). docs/seed002.md.
inline constexpr std::size_t kDefaultIterations = 11;
inline constexpr std::size_t kScalars = 2;  // ||res||², iterations done
// u += kOmega4 · res, the damped Jacobi step (omega = 0.8 over the diagonal 4).
inline constexpr double kOmega4 = 0.2;
// --mg-like's whole-grid second loop scales u by this (exact in binary).
inline constexpr double kDamp = 0.96875;

// f and the starting u, both in [-1, 1).
inline void fill_inputs(double* f, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < n * n; ++i) f[i] = input_value(seed, 5, i);
}
[[nodiscard]] inline double u0_value(std::uint64_t seed, std::size_t i) {
  return input_value(seed, 6, i);
}

// State = [ u (n·n) | ||res||², iterations done ]. res = f - L·u (L the 5-point Laplacian with
// zero outside the grid) is a temporary, fully rewritten from u before it is read. Uniform
// (basic rule): every u element is read once, before its only update. --mg-like: the first loop
// updates the interior only and a second loop scales the whole grid (interior after its update,
// the border before any): non-uniform, so IPV falls back to a non-temporal copy. LP regions:
// bs rows of u.
struct Operands : iterative::State {
  const double* f = nullptr;
  double* res = nullptr;
  std::size_t n = 0, bs = 1;
  bool mg_like = false;
  std::uint64_t seed = 0;

  [[nodiscard]] std::size_t blocks() const { return (n + bs - 1) / bs; }
  [[nodiscard]] std::size_t first_row(std::size_t k) const { return k * bs; }
  [[nodiscard]] std::size_t end_row(std::size_t k) const { return std::min(n, (k + 1) * bs); }
  [[nodiscard]] static constexpr std::size_t state_elements(std::size_t n) {
    return n * n + kScalars;
  }
};

inline void set_shape(Operands& op, std::size_t iterations) {
  op.elements = Operands::state_elements(op.n);
  op.iterations = iterations;
  op.vectors = 1;  // u; then the scalars
  op.vector_elements = op.n * op.n;
  op.region_elements = op.bs * op.n;
  op.updates = op.mg_like ? scheme::IpvUpdates::kNonUniform : scheme::IpvUpdates::kUniform;
}

template <mem::Backend B>
void initial_state(B& be, const Operands& op) {
  const std::size_t nn = op.n * op.n;
  be.parallel_for(0, op.blocks(), [&](std::size_t k) {
    for (std::size_t i = op.first_row(k) * op.n; i < op.end_row(k) * op.n; ++i)
      be.store(op.s + i, u0_value(op.seed, i));
  });
  for (std::size_t e = 0; e < kScalars; ++e) be.store(op.s + nn + e, 0.0);
}

// res = f - (4u - north - south - west - east), terms outside the grid skipped, in that order.
template <mem::Backend B>
void residual_rows(B& be, const Operands& op, const double* u, std::size_t k) {
  const std::size_t n = op.n;
  for (std::size_t i = op.first_row(k); i < op.end_row(k); ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const double* c = u + i * n + j;
      double lu = 4.0 * be.load(c);
      if (i > 0) lu -= be.load(c - n);
      if (i + 1 < n) lu -= be.load(c + n);
      if (j > 0) lu -= be.load(c - 1);
      if (j + 1 < n) lu -= be.load(c + 1);
      be.store(op.res + i * n + j, be.load(op.f + i * n + j) - lu);
    }
}

// One iteration: the residual (reads only `in`; overlaps the IPV helper's flush), then the
// update u += omega/4 · res with the residual norm as its tail. In place (in == out) gives the
// same bits: the update reads each u element only at its own place.
template <mem::Backend B, class Hook, class Fold = iterative::NoFold>
void iterate(B& be, const Operands& op, std::size_t t, const double* in, double* out,
             Hook&& before_first_write, Fold&& fold = Fold{}) {
  const std::size_t n = op.n, nb = op.blocks();
  be.parallel_for(0, nb, [&](std::size_t k) { residual_rows(be, op, in, k); });
  before_first_write();
  std::vector<double> part(nb);
  be.parallel_for(0, nb, [&](std::size_t k) {
    double rr = 0.0;
    // Uniform: this loop stores u's final values, folded as they are stored.
    auto fu = fold.local(op.region_of(0, k));
    for (std::size_t i = op.first_row(k); i < op.end_row(k); ++i) {
      const bool border_row = i == 0 || i + 1 == n;
      for (std::size_t j = 0; j < n; ++j) {
        const double r = be.load(op.res + i * n + j);
        rr += r * r;
        if (op.mg_like && (border_row || j == 0 || j + 1 == n)) continue;  // interior only
        const double u = be.load(in + i * n + j) + kOmega4 * r;
        be.store(out + i * n + j, u);
        if (!op.mg_like) fu.add(u);
      }
    }
    if (!op.mg_like) fold.put(op.region_of(0, k), fu);
    part[k] = rr;
  });
  if (op.mg_like)  // the whole grid: the interior after its update, the border before any
    be.parallel_for(0, nb, [&](std::size_t k) {
      auto fu = fold.local(op.region_of(0, k));  // --mg-like: the final values are these
      for (std::size_t i = op.first_row(k) * n; i < op.end_row(k) * n; ++i) {
        const double u = kDamp * be.load(out + i);
        be.store(out + i, u);
        fu.add(u);
      }
      fold.put(op.region_of(0, k), fu);
    });
  const double norm = iterative::ordered_sum(part), done = static_cast<double>(t + 1);
  be.store(out + n * n, norm);
  be.store(out + n * n + 1, done);
  auto ft = fold.local(op.tail_region());
  ft.add(norm);
  ft.add(done);
  fold.put(op.tail_region(), ft);
}

}  // namespace pmlab::kernels::jacobi
