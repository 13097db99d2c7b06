// Complex four-step FFT (radix-2 sub-FFTs, two out-of-place passes): base, LP, recovery.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <vector>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/lp/region.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/eager_region.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/lines.hpp"

namespace pmlab::kernels::fft {

// Complex numbers are stored as interleaved (re, im) doubles.
inline void fill_input(double* x, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < 2 * n; ++i) x[i] = input_value(seed, 0, i);
}

// tw[t] = exp(-2πi·t/n), t in [0, n): a read-only input like x, so every run, recovery and
// reference uses the very same bits.
inline void fill_twiddles(double* tw, std::size_t n) {
  for (std::size_t t = 0; t < n; ++t) {
    const double angle = -2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(n);
    tw[2 * t] = std::cos(angle);
    tw[2 * t + 1] = std::sin(angle);
  }
}

// Four-step FFT (Bailey; SPLASH-2's FFT is its six-step form) for n = n1·n2 = 2^m points,
// n1 = 2^ceil(m/2), n2 = 2^floor(m/2). With j = j1·n2 + j2 and k = k1 + n1·k2:
//   pass 0: for each column j2, a length-n1 FFT over j1 of x[j1·n2 + j2], times ω_n^(j2·k1),
//           stored to y[j2·n1 + k1] (y is the transposed intermediate);
//   pass 1: for each k1, a length-n2 FFT over j2 of y[j2·n1 + k1], stored to z[k1 + n1·k2].
// Sub-FFTs are iterative radix-2 in a private scratch. Each pass writes a fresh array that is
// never overwritten, and reads only the previous pass's array (or the input): so the regions of
// one pass are independent of each other, and the ones of pass 1 can always be recomputed from
// y. Region = a group of bs consecutive sub-FFTs (fewer at the end).
struct Operands {
  const double* x = nullptr;   // input, read-only
  const double* tw = nullptr;  // twiddles, read-only
  double* y = nullptr;         // pass 0 output
  double* z = nullptr;         // result
  std::size_t n = 1, bs = 1;

  [[nodiscard]] std::size_t log2n() const { return static_cast<std::size_t>(std::countr_zero(n)); }
  [[nodiscard]] std::size_t n1() const { return std::size_t{1} << ((log2n() + 1) / 2); }
  [[nodiscard]] std::size_t n2() const { return std::size_t{1} << (log2n() / 2); }
  // Sub-FFTs per pass, their length, and regions per pass.
  [[nodiscard]] std::size_t count(int pass) const { return pass == 0 ? n2() : n1(); }
  [[nodiscard]] std::size_t length(int pass) const { return pass == 0 ? n1() : n2(); }
  [[nodiscard]] std::size_t regions(int pass) const { return (count(pass) + bs - 1) / bs; }
  [[nodiscard]] std::size_t first(std::size_t r) const { return r * bs; }
  [[nodiscard]] std::size_t end(int pass, std::size_t r) const {
    return std::min(count(pass), r * bs + bs);
  }
  [[nodiscard]] std::size_t slot(int pass, std::size_t r) const {
    return pass == 0 ? r : regions(0) + r;
  }
  [[nodiscard]] std::size_t table_slots() const { return regions(0) + regions(1); }
};

inline constexpr int kPasses = 2;

// The pass an outer iteration `first` resumes at (first >= kPasses: the run is complete).
[[nodiscard]] inline int first_pass(std::size_t first) {
  return static_cast<int>(std::min<std::size_t>(first, kPasses));
}

// One EagerRecompute index record per region (pass, group), as LP's table.
[[nodiscard]] inline std::size_t ep_records(const Operands& op) {
  return op.table_slots();
}

[[nodiscard]] inline std::size_t reverse_bits(std::size_t i, int bits) {
  std::size_t r = 0;
  for (int b = 0; b < bits; ++b, i >>= 1) r = (r << 1) | (i & 1);
  return r;
}

// In-place iterative radix-2 FFT of a[0, len) (complex, interleaved); twiddles ω_len^t =
// tw[t·n/len].
template <mem::Backend B>
void radix2(B& be, const Operands& op, double* a, std::size_t len) {
  const int bits = std::countr_zero(len);
  for (std::size_t i = 0; i < len; ++i) {
    const std::size_t j = reverse_bits(i, bits);
    if (i < j) {
      std::swap(a[2 * i], a[2 * j]);
      std::swap(a[2 * i + 1], a[2 * j + 1]);
    }
  }
  for (std::size_t span = 2; span <= len; span <<= 1) {
    const std::size_t half = span / 2, step = op.n / span;
    for (std::size_t t = 0; t < half; ++t) {
      const double wr = be.load(op.tw + 2 * t * step), wi = be.load(op.tw + 2 * t * step + 1);
      for (std::size_t i = t; i < len; i += span) {
        double* u = a + 2 * i;
        double* v = a + 2 * (i + half);
        const double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
        const double ur = u[0], ui = u[1];
        u[0] = ur + vr;
        u[1] = ui + vi;
        v[0] = ur - vr;
        v[1] = ui - vi;
      }
    }
  }
}

// Region r of a pass; `on_store(v)` sees every stored double in store order: pass 0 stores
// y row by row (j2, then k1), pass 1 stores z in chunks of the group's k1 for each k2.
template <mem::Backend B, class OnStore>
[[gnu::noinline]] void pass_region(B& be, const Operands& op, int pass, std::size_t r,
                                   OnStore&& on_store) {
  const std::size_t n1 = op.n1(), n2 = op.n2(), len = op.length(pass);
  const std::size_t s0 = op.first(r), g = op.end(pass, r) - s0;
  std::vector<double> a(2 * g * len);  // sub-FFT s of the group at a[2·s·len]
  if (pass == 0) {
    for (std::size_t j1 = 0; j1 < n1; ++j1)
      for (std::size_t s = 0; s < g; ++s) {
        const double* src = op.x + 2 * (j1 * n2 + s0 + s);
        a[2 * (s * len + j1)] = be.load(src);
        a[2 * (s * len + j1) + 1] = be.load(src + 1);
      }
    for (std::size_t s = 0; s < g; ++s) {
      double* sub = a.data() + 2 * s * len;
      radix2(be, op, sub, len);
      const std::size_t j2 = s0 + s;
      for (std::size_t k1 = 0; k1 < n1; ++k1) {
        const double* w = op.tw + 2 * (j2 * k1);
        const double wr = be.load(w), wi = be.load(w + 1);
        const double re = sub[2 * k1] * wr - sub[2 * k1 + 1] * wi,
                     im = sub[2 * k1] * wi + sub[2 * k1 + 1] * wr;
        double* dst = op.y + 2 * (j2 * n1 + k1);
        be.store(dst, re);
        on_store(re);
        be.store(dst + 1, im);
        on_store(im);
      }
    }
    return;
  }
  for (std::size_t j2 = 0; j2 < n2; ++j2)
    for (std::size_t s = 0; s < g; ++s) {
      const double* src = op.y + 2 * (j2 * n1 + s0 + s);
      a[2 * (s * len + j2)] = be.load(src);
      a[2 * (s * len + j2) + 1] = be.load(src + 1);
    }
  for (std::size_t s = 0; s < g; ++s) radix2(be, op, a.data() + 2 * s * len, len);
  for (std::size_t k2 = 0; k2 < n2; ++k2)
    for (std::size_t s = 0; s < g; ++s) {
      double* dst = op.z + 2 * (s0 + s + n1 * k2);
      const double re = a[2 * (s * len + k2)], im = a[2 * (s * len + k2) + 1];
      be.store(dst, re);
      on_store(re);
      be.store(dst + 1, im);
      on_store(im);
    }
}

// The values region r of a pass stored, read back in the same order.
template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] lp::ChecksumValue region_checksum(B& be, const Operands& op, int pass,
                                                std::size_t r) {
  lp::Accumulator<K> acc;
  const std::size_t s0 = op.first(r), s1 = op.end(pass, r), n1 = op.n1();
  if (pass == 0) {
    for (std::size_t i = 2 * s0 * n1; i < 2 * s1 * n1; ++i) acc.add(be.load(op.y + i));
  } else {
    for (std::size_t k2 = 0; k2 < op.n2(); ++k2)
      for (std::size_t i = 2 * (s0 + n1 * k2); i < 2 * (s1 + n1 * k2); ++i)
        acc.add(be.load(op.z + i));
  }
  return acc.value();
}

template <mem::Backend B>
void persist_region(B& be, const Operands& op, int pass, std::size_t r) {
  const std::size_t s0 = op.first(r), g = op.end(pass, r) - s0, n1 = op.n1();
  if (pass == 0)
    scheme::flush_lines(be, op.y + 2 * s0 * n1, 2 * g * n1 * sizeof(double));
  else
    scheme::flush_block(be, op.z + 2 * s0, op.n2(), 2 * g, 2 * n1);
  be.fence();
}

template <mem::Backend B>
void run_base(B& be, const Operands& op, std::size_t first = 0) {
  for (int pass = first_pass(first); pass < kPasses; ++pass) {
    be.parallel_for(0, op.regions(pass),
                    [&](std::size_t r) { pass_region(be, op, pass, r, [](double) {}); });
    mem::outer_step_done(be);
  }
}

// LP: each group of sub-FFTs is a region; its checksum goes to slot (pass, group).
template <lp::ChecksumKind K, mem::Backend B>
void run_lp(B& be, const Operands& op, const lp::ChecksumTable& table, std::size_t first = 0) {
  for (int pass = first_pass(first); pass < kPasses; ++pass) {
    be.parallel_for(0, op.regions(pass), [&](std::size_t r) {
      lp::Region<K, B> region(be, table, op.slot(pass, r),
                              {static_cast<std::uint32_t>(pass), static_cast<std::uint32_t>(r)});
      pass_region(be, op, pass, r, [&](double v) { region.add(v); });
      region.commit();
    });
    mem::outer_step_done(be);
  }
}

namespace detail {

// Makes every region of `pass` match its slot; the ones that don't are recomputed — after the
// previous pass has been made consistent the same way, since they read its output.
template <lp::ChecksumKind K, mem::Backend B>
void settle_pass(B& be, const Operands& op, const lp::ChecksumTable& table, int pass,
                 lp::RecoveryStats& stats) {
  const std::size_t nr = op.regions(pass);
  std::vector<char> bad(nr, 0);
  std::vector<lp::RecoveryStats> per(nr);
  be.parallel_for(0, nr, [&](std::size_t r) {
    const std::size_t slot = op.slot(pass, r);
    if (!table.written(be, slot)) {
      ++per[r].regions_unwritten;
      bad[r] = 1;
      return;
    }
    ++per[r].regions_validated;
    if (table.check(be, slot, region_checksum<K>(be, op, pass, r)) == lp::SlotCheck::kMatch) return;
    ++per[r].regions_inconsistent;
    bad[r] = 1;
  });
  for (const auto& s : per) stats += s;
  if (std::find(bad.begin(), bad.end(), 1) == bad.end()) return;
  if (pass > 0) settle_pass<K>(be, op, table, pass - 1, stats);
  std::vector<lp::RecoveryStats> fixed(nr);
  be.parallel_for(0, nr, [&](std::size_t r) {
    if (!bad[r]) return;
    lp::Accumulator<K> acc;
    pass_region(be, op, pass, r, [&](double v) { acc.add(v); });
    persist_region(be, op, pass, r);
    table.commit_durable(be, op.slot(pass, r), acc.value());
    ++fixed[r].regions_recomputed;
  });
  for (const auto& s : fixed) stats += s;
}

}  // namespace detail

// Recovery: the newest pass with any written slot is completed (its regions validated, the bad
// or missing ones recomputed, pulling in the previous pass if needed); execution resumes at the
// next pass. With no slot written at all, it restarts at pass 0 (which rewrites everything).
template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] std::size_t recover_lp(B& be, const Operands& op, const lp::ChecksumTable& table,
                                     lp::RecoveryStats& stats) {
  for (int pass = kPasses; pass-- > 0;) {
    bool any = false;
    for (std::size_t r = 0; r < op.regions(pass) && !any; ++r)
      any = table.written(be, op.slot(pass, r));
    if (!any) continue;
    detail::settle_pass<K>(be, op, table, pass, stats);
    return static_cast<std::size_t>(pass) + 1;
  }
  return 0;
}

// EagerRecompute: a region's output is flushed, then its record (index slot(pass, r)) set to 1
// durably. Regions write fresh arrays from data that is never overwritten, so recomputing one is
// idempotent: no in-flight mark is needed.
template <mem::Backend B>
void ep_region(B& be, const Operands& op, const scheme::IndexRecordTable<1>& rec, int pass,
               std::size_t r) {
  const mem::RegionId id{static_cast<std::uint32_t>(pass), static_cast<std::uint32_t>(r)};
  // Out of place (reads one buffer, writes the other): recomputing a torn region is harmless,
  // so no in-flight mark.
  scheme::eager_region(
      be, id, rec[op.slot(pass, r)], {.done = 1},
      [&] { pass_region(be, op, pass, r, [](double) {}); },
      [&] { persist_region(be, op, pass, r); });
}

template <mem::Backend B>
void run_ep(B& be, const Operands& op, const scheme::IndexRecordTable<1>& rec,
            std::size_t first = 0) {
  for (int pass = first_pass(first); pass < kPasses; ++pass) {
    be.parallel_for(0, op.regions(pass), [&](std::size_t r) { ep_region(be, op, rec, pass, r); });
    mem::outer_step_done(be);
  }
}

// A pass starts only once every region of the previous one is recorded, so the newest pass with
// any record is the one in flight: its unrecorded regions are recomputed, and execution resumes
// at the next pass (or at pass 0 when nothing is recorded).
template <mem::Backend B>
[[nodiscard]] std::size_t recover_ep(B& be, const Operands& op,
                                     const scheme::IndexRecordTable<1>& rec,
                                     lp::RecoveryStats& stats) {
  for (int pass = kPasses; pass-- > 0;) {
    bool any = false;
    for (std::size_t r = 0; r < op.regions(pass) && !any; ++r)
      any = rec[op.slot(pass, r)].get(be, 0) != 0;
    if (!any) continue;
    std::vector<lp::RecoveryStats> per(op.regions(pass));
    be.parallel_for(0, op.regions(pass), [&](std::size_t r) {
      ++per[r].regions_validated;
      if (rec[op.slot(pass, r)].get(be, 0) != 0) return;
      ep_region(be, op, rec, pass, r);
      ++per[r].regions_recomputed;
    });
    for (const auto& s : per) stats += s;
    return static_cast<std::size_t>(pass) + 1;
  }
  return 0;
}

}  // namespace pmlab::kernels::fft
