// GEMM written once for the thesis' Ch. 4: naive (i,j,k) and the six GotoBLAS variants (GEPP1/2,
// GEPM1/2, GEMP1/2 over GEBP, GEPB, GEPDOT), packed or not, with base, Recompute (lazy/eager)
// and LP; every variant gives the same bits (per C element ascending k with fma).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "pmlab/core/strong_types.hpp"
#include "pmlab/kernels/gemm_micro.hpp"
#include "pmlab/kernels/pack_arena.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/lp/region.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/mem/matrix.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/partial_copy.hpp"

namespace pmlab::kernels::gemm {

// gepp1 first: a run without --variant is the thesis' GEPP1 (the parameter's value 0).
enum class Variant : std::uint8_t { kGepp1, kNaive, kGepp2, kGepm1, kGepm2, kGemp1, kGemp2 };
inline constexpr std::array<std::string_view, 7> kVariantNames{"gepp1", "naive", "gepp2", "gepm1",
                                                               "gepm2", "gemp1", "gemp2"};
// In the order of the thesis' Fig. 4.3 (naive first).
inline constexpr std::array<Variant, 7> kFigureOrder{
    Variant::kNaive, Variant::kGepp1, Variant::kGepp2, Variant::kGepm1,
    Variant::kGepm2, Variant::kGemp1, Variant::kGemp2};
[[nodiscard]] constexpr std::string_view to_string(Variant v) {
  return kVariantNames[static_cast<std::size_t>(v)];
}
[[nodiscard]] inline std::optional<Variant> variant_from_string(std::string_view s) {
  for (std::size_t i = 0; i < kVariantNames.size(); ++i)
    if (kVariantNames[i] == s) return static_cast<Variant>(i);
  return std::nullopt;
}

// Which micro-kernel runs GEBP (--micro; docs/gemm-fast.md). scalar (the default): run_unit's
// loop on every backend. The others (GEPP1 only, Ã and B̃ packed in 8x24 micro-panels): on the
// native backend the register-blocked micro-kernel of that ISA (auto: the best this CPU runs,
// from CPUID), on every other backend run_unit. Every choice gives the same bits.
enum class Micro : std::uint8_t { kScalar, kAuto, kAvx512, kAvx2, kPortable };
inline constexpr std::array<std::string_view, 5> kMicroNames{"scalar", "auto", "avx512", "avx2",
                                                             "portable"};
// The implementation a choice other than scalar runs on this CPU.
[[nodiscard]] inline micro::Isa isa_of(Micro m) {
  switch (m) {
    case Micro::kAvx512:
      return micro::Isa::kAvx512;
    case Micro::kAvx2:
      return micro::Isa::kAvx2;
    case Micro::kPortable:
      return micro::Isa::kPortable;
    default:
      return micro::best_isa();
  }
}

// The second-level kernel a variant calls (Goto & van de Geijn, TOMS 2008, Fig. 4).
enum class Inner : std::uint8_t {
  kGebp,    // C row panel (mc x n) += Ã (mc x kc) · B̃ (kc x n)
  kGepb,    // C column panel (m x nc) += A (m x kc) · B̃ (kc x nc)
  kGepdot,  // C block (mc x nc) += A (mc x k) · B (k x nc), all kc steps
  kRows,    // naive: C rows += A rows · B, i, j, k
};

// The gemm parameters beyond n and bs (declared as the kernel's own parameters --variant,
// --pack, --mr, --nr, --mc, --kc, --nc ... in src/kernels/gemm_kernel.cpp). Blocking: mc, kc and
// nc are each --bs unless given (the thesis uses a single S).
struct Config {
  Variant variant = Variant::kGepp1;
  bool pack = false;
  // Blocking (0 = the run's bs): C row panels and Ã blocks are mc rows, kc steps k, C column
  // panels and B̃ blocks are nc columns; a GEPDOT block is mc x nc.
  std::size_t mc = 0, kc = 0, nc = 0;
  std::uint32_t mr = 4;  // micro-tile rows
  std::uint32_t nr = 8;  // micro-tile columns: one 64-byte line of C per micro-row
  // Micro-tile order inside GEBP and GEPDOT. false: Goto/BLIS (nr-column slivers outer, mr rows
  // inner), so consecutive C stores go to different rows of C. true: row order (mr-row slivers
  // outer, nr columns inner), the order the thesis' §4.6.1 explanation ("a horizontal panel ...
  // subsequent writes experience row buffer hits") presumes. GEPB is row order in both.
  bool row_order = false;
  // Packing buffers in DRAM (--pack-mem dram): the simulator keeps their traffic out of the NVM
  // statistics. Default NVM, as on the thesis' all-PCM machine. Natively it changes nothing.
  bool pack_dram = false;
  // Packed blocks as GotoBLAS/BLIS micro-panels (--pack-layout panels: Ã in mr-row panels, B̃
  // in nr-column panels, so the micro-kernel walks k with unit stride) instead of row-major
  // copies (rows, the default, which every recorded figure uses). Same bits either way.
  bool pack_panels = false;
  Micro micro = Micro::kScalar;

  static constexpr std::uint32_t kMaxMicro = 255;
};

// C (n x n) += A (n x n) · B (n x n); C starts at zero.
struct Operands {
  mem::MatrixView<const double> a;
  mem::MatrixView<const double> b;
  mem::MatrixView<double> c;
  std::size_t n = 0;
  std::size_t bs = 1;  // mc, kc and nc where cfg does not set them
  Config cfg;

  // Whether a native GEBP runs the register-blocked micro-kernel: --micro other than scalar on
  // GEPP1 in Goto's order with Ã and B̃ in the micro-kernel's panels (gemm_kernel.cpp sets them
  // for --micro; any other configuration runs run_unit).
  [[nodiscard]] bool fast() const {
    return cfg.micro != Micro::kScalar && cfg.variant == Variant::kGepp1 && !cfg.row_order &&
           cfg.pack && cfg.pack_panels && cfg.mr == micro::kMr && cfg.nr == micro::kNr;
  }
  // The blocking in effect, never above n (so a block is never empty).
  [[nodiscard]] std::size_t mc() const { return std::min(cfg.mc != 0 ? cfg.mc : bs, n); }
  [[nodiscard]] std::size_t kc() const { return std::min(cfg.kc != 0 ? cfg.kc : bs, n); }
  [[nodiscard]] std::size_t nc() const { return std::min(cfg.nc != 0 ? cfg.nc : bs, n); }
  // Blocks of `size` along a dimension of n.
  [[nodiscard]] std::size_t count_of(std::size_t size) const { return (n + size - 1) / size; }
  [[nodiscard]] std::size_t row_tiles() const { return count_of(mc()); }
  [[nodiscard]] std::size_t col_tiles() const { return count_of(nc()); }
  [[nodiscard]] std::size_t k_tiles() const { return count_of(kc()); }
  [[nodiscard]] Inner inner() const {
    switch (cfg.variant) {
      case Variant::kNaive:
        return Inner::kRows;
      case Variant::kGepp1:
      case Variant::kGepm1:
        return Inner::kGebp;
      case Variant::kGepp2:
      case Variant::kGemp1:
        return Inner::kGepb;
      case Variant::kGepm2:
      case Variant::kGemp2:
        return Inner::kGepdot;
    }
    return Inner::kRows;
  }
  // GEPP variants loop over kc steps outermost (every step touches all of C); the others finish
  // one panel or block after another.
  [[nodiscard]] bool steps_outer() const {
    return cfg.variant == Variant::kGepp1 || cfg.variant == Variant::kGepp2;
  }
  // A "panel" is the C footprint a persisted index protects: a row panel (GEBP, naive), a
  // column panel (GEPB) or a block (GEPDOT; numbered in the variant's traversal order).
  [[nodiscard]] std::size_t panels() const {
    switch (inner()) {
      case Inner::kGepb:
        return col_tiles();
      case Inner::kGepdot:
        return row_tiles() * col_tiles();
      default:
        return row_tiles();
    }
  }
  // GEPDOT's outer blocks (gepm2: C's row blocks, gemp2: its column blocks), each a group of
  // panels() / gepdot_groups() blocks run in order by one thread.
  [[nodiscard]] std::size_t gepdot_groups() const {
    return cfg.variant == Variant::kGepm2 ? row_tiles() : col_tiles();
  }
  // kc steps per panel (naive does all of k at once).
  [[nodiscard]] std::size_t steps() const { return inner() == Inner::kRows ? 1 : k_tiles(); }
  // The kernel's outer iteration (what `first` and resume points count): kc steps of GEPP,
  // otherwise 0 (nothing done) or 1 (all done).
  [[nodiscard]] std::size_t outer_count() const { return steps_outer() ? steps() : 1; }
  [[nodiscard]] std::size_t table_slots() const { return panels() * steps(); }
  [[nodiscard]] std::size_t slot(std::size_t p, std::size_t s) const { return p * steps() + s; }

  struct Rect {
    std::size_t i0, i1, j0, j1;
  };
  // Block t of `size` along a dimension of n: [t * size, end_of(t, size)).
  [[nodiscard]] std::size_t end_of(std::size_t t, std::size_t size) const {
    return std::min((t + 1) * size, n);
  }
  [[nodiscard]] Rect panel_rect(std::size_t p) const {
    const std::size_t m = mc(), w = nc();
    switch (inner()) {
      case Inner::kGebp:
      case Inner::kRows:
        return {p * m, end_of(p, m), 0, n};
      case Inner::kGepb:
        return {0, n, p * w, end_of(p, w)};
      case Inner::kGepdot: {
        // gepm2: ii outer, jj inner; gemp2: jj outer, ii inner.
        const bool rows_outer = cfg.variant == Variant::kGepm2;
        const std::size_t inner_count = panels() / gepdot_groups();
        const std::size_t outer = p / inner_count, in = p % inner_count;
        const std::size_t it = rows_outer ? outer : in, jt = rows_outer ? in : outer;
        return {it * m, end_of(it, m), jt * w, end_of(jt, w)};
      }
    }
    return {0, 0, 0, 0};
  }
  [[nodiscard]] std::pair<std::size_t, std::size_t> k_range(std::size_t s) const {
    return inner() == Inner::kRows ? std::pair<std::size_t, std::size_t>{0, n}
                                   : std::pair<std::size_t, std::size_t>{s * kc(), end_of(s, kc())};
  }
};

// Where a micro-kernel reads an operand. Row-major (the matrix itself, or a block packed row by
// row, --pack-layout rows): element (r, c) at p[(r - r0) * ld + (c - c0)]. GotoBLAS/BLIS pack
// micro-panels instead (--pack-layout panels), so that the kernel's walk along k is unit-stride:
// B̃ as column panels of panel_cols (nr) columns, each rows x panel_cols contiguous, and Ã as row
// panels of panel_rows (mr) rows, each panel_rows x cols stored column by column. A row-major
// block's walk along k down a column strides by ld: with ld = n a power of two, every element of
// the walk falls into one L1 set (docs/gemm.md, point 7).
struct Src {
  const double* p;
  std::size_t ld, r0, c0;
  std::size_t panel_cols = 0;      // B̃ column panels: their width; 0 = not this layout
  std::size_t panel_rows = 0;      // Ã row panels: their height; 0 = not this layout
  std::size_t rows = 0, cols = 0;  // the packed block's shape (panel layouts only)
  // Element (r, c)'s index from p.
  [[nodiscard]] std::size_t offset(std::size_t r, std::size_t c) const {
    if (panel_cols != 0) {
      const std::size_t cc = c - c0;
      return (cc / panel_cols) * (rows * panel_cols) + (r - r0) * panel_cols + cc % panel_cols;
    }
    if (panel_rows != 0) {
      const std::size_t rr = r - r0;
      return (rr / panel_rows) * (panel_rows * cols) + (c - c0) * panel_rows + rr % panel_rows;
    }
    return (r - r0) * ld + (c - c0);
  }
  [[nodiscard]] const double* at(std::size_t r, std::size_t c) const { return p + offset(r, c); }
  // From (r, c) to (r + 1, c) within a panel: B's step along k.
  [[nodiscard]] std::size_t row_step() const {
    return panel_cols != 0 ? panel_cols : panel_rows != 0 ? 1 : ld;
  }
  // From (r, c) to (r, c + 1) within a panel: A's step along k.
  [[nodiscard]] std::size_t col_step() const { return panel_rows != 0 ? panel_rows : 1; }
};

// How a packed block is laid out (Src): `panel_cols` > 0 packs column panels (B̃), `panel_rows`
// > 0 row panels (Ã), neither row-major.
struct PackShape {
  std::size_t panel_cols = 0, panel_rows = 0;
};

// Visits a panel layout in address order: panels of `width` along one dimension [p0, p1), each
// walked along the other dimension [q0, q1) and, at each step, across the panel: visit(p, q).
template <class Visit>
void for_each_in_panels(std::size_t p0, std::size_t p1, std::size_t width, std::size_t q0,
                        std::size_t q1, Visit&& visit) {
  for (std::size_t pp = p0; pp < p1; pp += width)
    for (std::size_t q = q0; q < q1; ++q)
      for (std::size_t p = pp; p < std::min(pp + width, p1); ++p) visit(p, q);
}

// The doubles a packed block of h x w takes in `shape`'s layout (panels padded to full width).
[[nodiscard]] constexpr std::size_t packed_size(std::size_t h, std::size_t w, PackShape shape) {
  if (shape.panel_cols != 0) return round_up(w, shape.panel_cols) * h;
  if (shape.panel_rows != 0) return round_up(h, shape.panel_rows) * w;
  return h * w;
}

// Copies rows [r0, r1) x columns [c0, c1) of m into buf in `shape`'s layout, writing buf in
// address order, through the backend: the loads and stores of packing are simulated like the
// kernel's own.
template <mem::Backend B>
Src pack(B& be, const mem::MatrixView<const double>& m, std::size_t r0, std::size_t r1,
         std::size_t c0, std::size_t c1, std::span<double> buf, PackShape shape = {}) {
  const std::size_t h = r1 - r0, w = c1 - c0;
  if (packed_size(h, w, shape) > buf.size())
    throw std::logic_error("gemm: a packed block does not fit its packing buffer");
  // Natively, micro-panels are copied by plain loops (and padded with zeros, which the
  // micro-kernel reads): the same layout without an index division per element.
  if constexpr (mem::kIsNativeBackend<B>)
    if (shape.panel_cols != 0 || shape.panel_rows != 0) {
      if (shape.panel_cols != 0) {
        // B̃'s column panels are independent: GEPP1's shared B̃, packed by the master before
        // each kc step, is spread over the run's threads (inside a unit, OpenMP's nested
        // region has one thread).
        const std::size_t pw = shape.panel_cols, panels = (w + pw - 1) / pw;
        be.parallel_for(0, panels, [&](std::size_t q) {
          micro::pack_cols_panels(m.at(r0, c0 + q * pw), m.ld(), h, std::min(pw, w - q * pw), pw,
                                  buf.data() + q * h * pw);
        });
      } else {
        micro::pack_rows_panels(m.at(r0, c0), m.ld(), h, w, shape.panel_rows, buf.data());
      }
      return {buf.data(), w, r0, c0, shape.panel_cols, shape.panel_rows, h, w};
    }
  if (shape.panel_cols == 0 && shape.panel_rows == 0) {
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t c = c0; c < c1; ++c)
        be.store(&buf[(r - r0) * w + c - c0], be.load(m.at(r, c)));
    return {buf.data(), w, r0, c0};
  }
  Src src{nullptr, w, r0, c0, shape.panel_cols, shape.panel_rows, h, w};
  const auto copy = [&](std::size_t r, std::size_t c) {
    be.store(&buf[src.offset(r, c)], be.load(m.at(r, c)));
  };
  if (shape.panel_cols != 0) {  // B̃: nr-column panels, walked down the rows
    src.p = buf.data();
    for_each_in_panels(c0, c1, shape.panel_cols, r0, r1,
                       [&](std::size_t c, std::size_t r) { copy(r, c); });
  } else {  // Ã: mr-row panels, walked along the columns
    src.p = buf.data();
    for_each_in_panels(r0, r1, shape.panel_rows, c0, c1, copy);
  }
  return src;
}

// Room for the largest packed block: Ã is at most n rows x kc columns (GEPP2's shared Ã), B̃
// kc rows x n columns (GEBP's), and a panel layout pads Ã's rows to a multiple of mr and B̃'s
// columns to one of nr (packed_size; round_up: core/strong_types.hpp).
[[nodiscard]] inline std::size_t pack_capacity(const Operands& op) {
  if (!op.cfg.pack_panels) return op.n * op.kc();
  return std::max(round_up(op.n, op.cfg.mr), round_up(op.n, op.cfg.nr)) * op.kc();
}

// One packing buffer, a slot of the run's arena for the buffer's lifetime (an empty span
// without --pack): with --pack-mem dram the simulator's backend marks it volatile meanwhile.
template <mem::Backend B>
class PackBuffer {
 public:
  PackBuffer(B& be, const Operands& op, PackArena* arena) : be_(be), arena_(arena) {
    if (!op.cfg.pack || arena_ == nullptr) return;
    slot_ = arena_->take();
    dram_ = op.cfg.pack_dram;
    if constexpr (requires { be.mark_volatile(slot_.data(), slot_.size_bytes()); })
      if (dram_) be_.mark_volatile(slot_.data(), slot_.size_bytes());
  }
  ~PackBuffer() {
    if (slot_.empty()) return;
    if constexpr (requires { be_.unmark_volatile(slot_.data(), slot_.size_bytes()); })
      if (dram_) be_.unmark_volatile(slot_.data(), slot_.size_bytes());
    arena_->give_back(slot_);
  }
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  [[nodiscard]] std::span<double> space() const { return slot_; }

 private:
  B& be_;
  PackArena* arena_;
  std::span<double> slot_;
  bool dram_ = false;
};

// The operands one unit (panel p, step s) reads; packed blocks live in `bufs`.
struct UnitSrc {
  Src a, b;
};

// Visits unit (p, s)'s micro-tiles in its store order, calling tile(i0, i1, j0, j1) for each
// and sliver(i0, i1, j0, j1) after each iteration of the second-level kernel's outer loop
// (GEBP: a j sliver mc x nr; GEPB: an i sliver mr x nc; GEPDOT: the whole block at this step;
// naive: a row).
template <class Tile, class Sliver>
void walk_unit(const Operands& op, std::size_t p, std::size_t s, Tile&& tile, Sliver&& sliver) {
  const auto r = op.panel_rect(p);
  const std::size_t mr = op.cfg.mr, nr = op.cfg.nr;
  (void)s;
  switch (op.inner()) {
    case Inner::kRows:
      for (std::size_t i = r.i0; i < r.i1; ++i) {
        for (std::size_t j = r.j0; j < r.j1; ++j) tile(i, i + 1, j, j + 1);
        sliver(i, i + 1, r.j0, r.j1);
      }
      return;
    case Inner::kGebp:
      if (op.cfg.row_order) break;  // walked like GEPB below
      for (std::size_t j = r.j0; j < r.j1; j += nr) {
        const std::size_t je = std::min(j + nr, r.j1);
        for (std::size_t i = r.i0; i < r.i1; i += mr) tile(i, std::min(i + mr, r.i1), j, je);
        sliver(r.i0, r.i1, j, je);
      }
      return;
    case Inner::kGepb:
      for (std::size_t i = r.i0; i < r.i1; i += mr) {
        const std::size_t ie = std::min(i + mr, r.i1);
        for (std::size_t j = r.j0; j < r.j1; j += nr) tile(i, ie, j, std::min(j + nr, r.j1));
        sliver(i, ie, r.j0, r.j1);
      }
      return;
    case Inner::kGepdot:
      if (op.cfg.row_order)
        for (std::size_t i = r.i0; i < r.i1; i += mr)
          for (std::size_t j = r.j0; j < r.j1; j += nr)
            tile(i, std::min(i + mr, r.i1), j, std::min(j + nr, r.j1));
      else
        for (std::size_t j = r.j0; j < r.j1; j += nr)
          for (std::size_t i = r.i0; i < r.i1; i += mr)
            tile(i, std::min(i + mr, r.i1), j, std::min(j + nr, r.j1));
      sliver(r.i0, r.i1, r.j0, r.j1);
      return;
  }
  // GEBP in row order: mr-row slivers (the eager persist point is then an mr x nc sliver).
  for (std::size_t i = r.i0; i < r.i1; i += mr) {
    const std::size_t ie = std::min(i + mr, r.i1);
    for (std::size_t j = r.j0; j < r.j1; j += nr) tile(i, ie, j, std::min(j + nr, r.j1));
    sliver(i, ie, r.j0, r.j1);
  }
}

// One unit: C[tile] += A[tile rows, k range] · B[k range, tile cols], per element
// acc = C; acc = fma(a_ik, b_kj, acc) for ascending k; C = acc. on_store(v) sees every stored
// value in order; on_sliver(rect) runs after each sliver (the eager persist point).
template <mem::Backend B, class OnStore, class OnSliver>
[[gnu::noinline]] void run_unit(B& be, const Operands& op, std::size_t p, std::size_t s,
                                const UnitSrc& src, OnStore&& on_store, OnSliver&& on_sliver) {
  const auto [k0, k1] = op.k_range(s);
  double* const c = op.c.data();
  const std::size_t ldc = op.c.ld();
  const Src a = src.a, b = src.b;
  walk_unit(
      op, p, s,
      [&](std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) {
        const std::size_t a_step = a.col_step(), b_step = b.row_step();
        for (std::size_t i = i0; i < i1; ++i)
          for (std::size_t j = j0; j < j1; ++j) {
            double acc = be.load(c + i * ldc + j);
            const double* ap = a.at(i, k0);
            const double* bp = b.at(k0, j);
            for (std::size_t k = k0; k < k1; ++k, ap += a_step, bp += b_step)
              acc = std::fma(be.load(ap), be.load(bp), acc);
            be.store(c + i * ldc + j, acc);
            on_store(acc);
          }
      },
      on_sliver);
}

// Unit (p, s) of GEPP1 on the native micro-kernel (Operands::fast(): Ã and B̃ are in 8x24
// micro-panels), folding the stored values' checksum words `fold` from its accumulators.
[[nodiscard]] inline micro::Folded native_gebp(const Operands& op, std::size_t p, std::size_t s,
                                               const UnitSrc& src, micro::Fold fold) {
  const auto r = op.panel_rect(p);
  const auto [k0, k1] = op.k_range(s);
  return micro::gebp(isa_of(op.cfg.micro), fold, r.i1 - r.i0, r.j1 - r.j0, k1 - k0, src.a.p,
                     src.b.p, op.c.data() + r.i0 * op.c.ld() + r.j0, op.c.ld());
}

// One unit without per-value hooks: natively the micro-kernel under --micro, else run_unit.
template <mem::Backend B>
void run_unit_plain(B& be, const Operands& op, std::size_t p, std::size_t s, const UnitSrc& src) {
  if constexpr (mem::kIsNativeBackend<B>)
    if (op.fast()) {
      (void)native_gebp(op, p, s, src, micro::Fold::kNone);
      return;
    }
  run_unit(
      be, op, p, s, src, [](double) {}, [](auto...) {});
}

// Packing policy: which blocks a unit packs itself, and which a GEPP step packs once for all
// its units (GEPP1 shares B̃ = B[kk, :], GEPP2 shares Ã = A[:, kk]).
struct Packer {
  const Operands& op;
  Src shared_a{}, shared_b{};
  bool has_shared_a = false, has_shared_b = false;

  [[nodiscard]] static Src whole(const mem::MatrixView<const double>& m) {
    return {m.data(), m.ld(), 0, 0};
  }
  // Ã in mr-row panels and B̃ in nr-column panels under --pack-layout panels, else row-major.
  [[nodiscard]] PackShape a_shape() const {
    return op.cfg.pack_panels ? PackShape{0, op.cfg.mr} : PackShape{};
  }
  [[nodiscard]] PackShape b_shape() const {
    return op.cfg.pack_panels ? PackShape{op.cfg.nr, 0} : PackShape{};
  }
  // Before the units of GEPP step s (master thread).
  template <mem::Backend B>
  void pack_step(B& be, std::size_t s, std::span<double> buf) {
    has_shared_a = has_shared_b = false;
    if (!op.cfg.pack || !op.steps_outer()) return;
    const auto [k0, k1] = op.k_range(s);
    if (op.inner() == Inner::kGebp) {
      shared_b = pack(be, op.b, k0, k1, 0, op.n, buf, b_shape());
      has_shared_b = true;
    } else {
      shared_a = pack(be, op.a, 0, op.n, k0, k1, buf, a_shape());
      has_shared_a = true;
    }
  }
  // The operands of unit (p, s), packing what is not shared. Naive never packs.
  template <mem::Backend B>
  [[nodiscard]] UnitSrc unit(B& be, std::size_t p, std::size_t s, std::span<double> abuf,
                             std::span<double> bbuf) const {
    UnitSrc u{whole(op.a), whole(op.b)};
    if (!op.cfg.pack || op.inner() == Inner::kRows) return u;
    const auto r = op.panel_rect(p);
    const auto [k0, k1] = op.k_range(s);
    u.a = has_shared_a ? shared_a : pack(be, op.a, r.i0, r.i1, k0, k1, abuf, a_shape());
    u.b = has_shared_b ? shared_b : pack(be, op.b, k0, k1, r.j0, r.j1, bbuf, b_shape());
    return u;
  }
};

// The loop nest of the variant from kc step / outer iteration `first` on. unit_fn(be, p, s,
// src) runs one unit (the scheme wraps run_unit with its hooks). GEPP: steps outer, units of a
// step in parallel; GEPM1/GEMP1: panels in parallel, steps inside; GEPM2/GEMP2: the outer block
// index in parallel, the inner one and the steps inside; naive: row panels in parallel.
// after_step(s) runs on the master once every unit of GEPP step s is done (Hybrid Recompute's
// partial copy); the other variants have no global step boundary and never call it.
template <mem::Backend B, class UnitFn, class AfterStep>
void run_variant(B& be, const Operands& op, std::size_t first, UnitFn&& unit_fn,
                 AfterStep&& after_step) {
  if (first >= op.outer_count()) return;
  // One arena per run: its slots' reuse follows this run's own takes and gives only.
  std::optional<PackArena> arena;
  if (op.cfg.pack) arena.emplace(pack_capacity(op));
  PackArena* const slots = arena ? &*arena : nullptr;
  if (op.steps_outer()) {
    PackBuffer<B> shared(be, op, slots);
    for (std::size_t s = first; s < op.steps(); ++s) {
      Packer packer{op};
      packer.pack_step(be, s, shared.space());
      be.parallel_for(0, op.panels(), [&](std::size_t p) {
        PackBuffer<B> abuf(be, op, slots), bbuf(be, op, slots);
        unit_fn(be, p, s, packer.unit(be, p, s, abuf.space(), bbuf.space()));
      });
      after_step(s);
      mem::outer_step_done(be);
    }
    return;
  }
  const std::size_t groups = op.inner() == Inner::kGepdot ? op.gepdot_groups() : op.panels();
  const std::size_t per_group = op.panels() / groups;
  be.parallel_for(0, groups, [&](std::size_t g) {
    const Packer packer{op};
    PackBuffer<B> abuf(be, op, slots), bbuf(be, op, slots);
    for (std::size_t p = g * per_group; p < (g + 1) * per_group; ++p)
      for (std::size_t s = 0; s < op.steps(); ++s)
        unit_fn(be, p, s, packer.unit(be, p, s, abuf.space(), bbuf.space()));
  });
  mem::outer_step_done(be);  // the one outer unit of a variant without a global step
}

template <mem::Backend B, class UnitFn>
void run_variant(B& be, const Operands& op, std::size_t first, UnitFn&& unit_fn) {
  run_variant(be, op, first, std::forward<UnitFn>(unit_fn), [](std::size_t) {});
}

template <mem::Backend B>
void run_base(B& be, const Operands& op, std::size_t first = 0) {
  run_variant(be, op, first, [&](B& b, std::size_t p, std::size_t s, const UnitSrc& src) {
    run_unit_plain(b, op, p, s, src);
  });
}

// Persists a rectangle of C (one flush per line of each row segment, then one fence).
template <mem::Backend B>
void persist_rect(B& be, const Operands& op, const Operands::Rect& r) {
  for (std::size_t i = r.i0; i < r.i1; ++i)
    for (std::size_t j = r.j0; j < r.j1;) {
      const double* p = op.c.at(i, j);
      be.flush(p);
      const auto addr = reinterpret_cast<std::uintptr_t>(p);
      j += (64 - addr % 64) / sizeof(double);  // the first element of the next line
    }
  be.fence();
}

template <mem::Backend B>
void zero_rect(B& be, const Operands& op, const Operands::Rect& r) {
  for (std::size_t i = r.i0; i < r.i1; ++i)
    for (std::size_t j = r.j0; j < r.j1; ++j) be.store(op.c.at(i, j), 0.0);
}

// Base restart: C back to zero, durably.
template <mem::Backend B>
void restart(B& be, const Operands& op) {
  be.parallel_for(0, op.panels(), [&](std::size_t p) {
    zero_rect(be, op, op.panel_rect(p));
    persist_rect(be, op, op.panel_rect(p));
  });
}

// ---- Recompute (thesis Ch. 3 Fig. 3.1, Ch. 4 §4.4): one persisted counter per panel ----------
// Lazy: at the end of each second-level call (GEBP, GEPB; GEPDOT: the whole block), flush that
// call's C footprint, fence, persist the panel's count of durable units. Eager: the same after
// each sliver (the call's outer-loop iteration), counting durable slivers.

enum class Grain : std::uint8_t { kLazy, kEager };

// Slivers of one unit (walk_unit's sliver calls).
[[nodiscard]] inline std::size_t slivers_per_unit(const Operands& op, std::size_t p) {
  const auto r = op.panel_rect(p);
  switch (op.inner()) {
    case Inner::kRows:
      return r.i1 - r.i0;
    case Inner::kGebp:
      if (op.cfg.row_order) return (r.i1 - r.i0 + op.cfg.mr - 1) / op.cfg.mr;
      return (r.j1 - r.j0 + op.cfg.nr - 1) / op.cfg.nr;
    case Inner::kGepb:
      return (r.i1 - r.i0 + op.cfg.mr - 1) / op.cfg.mr;
    case Inner::kGepdot:
      return 1;
  }
  return 1;
}
// The counter value of a finished panel.
[[nodiscard]] inline std::uint64_t done_count(const Operands& op, std::size_t p, Grain g) {
  if (g == Grain::kEager) return op.steps() * slivers_per_unit(op, p);
  return op.inner() == Inner::kGepdot ? 1 : op.steps();
}

// `copier` (Hybrid Recompute, GEPP only): 1/parts of C copied durably after every kc step.
template <Grain G, mem::Backend B>
void run_ep(B& be, const Operands& op, const scheme::IndexRecordTable<1>& rec,
            std::size_t first = 0, const scheme::PartialCopier* copier = nullptr) {
  const auto after_step = [&](std::size_t s) {
    if (copier != nullptr) copier->save(be, s, s + 1);
  };
  run_variant(
      be, op, first,
      [&](B& b, std::size_t p, std::size_t s, const UnitSrc& src) {
        const auto r = rec[p];
        if constexpr (G == Grain::kEager) {
          std::uint64_t count = s * slivers_per_unit(op, p);
          run_unit(
              b, op, p, s, src, [](double) {},
              [&](std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) {
                persist_rect(b, op, {i0, i1, j0, j1});
                r.set(b, 0, ++count);
              });
        } else {
          run_unit_plain(b, op, p, s, src);
          if (op.inner() == Inner::kGepdot && s + 1 < op.steps()) return;  // block not finished
          persist_rect(b, op, op.panel_rect(p));
          r.set(b, 0, op.inner() == Inner::kGepdot ? 1 : s + 1);
        }
      },
      after_step);
}

// Recomputes panel p from zero through all its steps (unpacked: the bits are the same), then
// persists it and marks it done. Idempotent, so a crash inside recovery is recovered again.
template <mem::Backend B>
void recompute_panel(B& be, const Operands& op, std::size_t p, std::size_t from_step) {
  const UnitSrc src{Packer::whole(op.a), Packer::whole(op.b)};
  for (std::size_t s = from_step; s < op.steps(); ++s)
    run_unit(
        be, op, p, s, src, [](double) {}, [](auto...) {});
  persist_rect(be, op, op.panel_rect(p));
}

// Recovery (Fig. 3.4): every panel whose counter says unfinished may hold a partial update that
// cannot be undone in place, so it is zeroed and recomputed from kk = 0 (thesis §4.4.1); a
// finished panel was flushed before its counter was set. Recovery finishes the run.
// Hybrid Recompute (GEPP, lazy counters): an unfinished panel is rebuilt from the newest copy
// of each of its row segments' parts (C after `done` whole kc steps, done <= the panel's own
// count, so never ahead of what the panel has durably reached) or from zero, then recomputed
// from that step on. The FP order is unchanged (per element ascending k from a stored value).
template <mem::Backend B>
void rebuild_panel_from_copies(B& be, const Operands& op, std::size_t p, std::uint64_t limit,
                               const scheme::PartialCopier& copier) {
  const auto r = op.panel_rect(p);
  double* const c = op.c.data();
  const std::size_t ldc = op.c.ld();
  for (std::size_t i = r.i0; i < r.i1; ++i)
    copier.restore(be, i * ldc + r.j0, i * ldc + r.j1, limit,
                   [&](std::size_t lo, std::size_t hi, std::uint64_t done) {
                     const std::size_t k0 = std::min<std::size_t>(done * op.kc(), op.n);
                     for (std::size_t e = lo; e < hi; ++e) {
                       const std::size_t j = e - i * ldc;
                       double acc = be.load(c + e);
                       for (std::size_t k = k0; k < op.n; ++k)
                         acc = std::fma(be.load(op.a.at(i, k)), be.load(op.b.at(k, j)), acc);
                       be.store(c + e, acc);
                     }
                   });
  persist_rect(be, op, r);
}

template <Grain G, mem::Backend B>
[[nodiscard]] std::size_t recover_ep(B& be, const Operands& op,
                                     const scheme::IndexRecordTable<1>& rec,
                                     lp::RecoveryStats& stats,
                                     const scheme::PartialCopier* copier = nullptr) {
  std::vector<std::uint8_t> redo(op.panels(), 0);
  be.parallel_for(0, op.panels(), [&](std::size_t p) {
    const std::uint64_t count = rec[p].get(be, 0);
    if (count >= done_count(op, p, G)) return;
    redo[p] = 1;
    if (copier != nullptr) {
      rebuild_panel_from_copies(be, op, p, count, *copier);
    } else {
      zero_rect(be, op, op.panel_rect(p));
      recompute_panel(be, op, p, 0);
    }
    rec[p].set(be, 0, done_count(op, p, G));
  });
  for (auto r : redo) {
    ++stats.regions_validated;
    if (r) ++stats.regions_recomputed;
  }
  return op.outer_count();
}

// ---- LP: region = one second-level call's C footprint at one kc step --------------------------

// The checksum words the micro-kernel folds from its registers for kind K; Adler-32 and CRC32C
// depend on order, so they are folded from C after the call, in run_unit's store order.
template <lp::ChecksumKind K>
inline constexpr micro::Fold kFoldOf =
    K == lp::ChecksumKind::kModular         ? micro::Fold::kSum
    : K == lp::ChecksumKind::kParity        ? micro::Fold::kXor
    : K == lp::ChecksumKind::kModularParity ? micro::Fold::kSumXor
                                            : micro::Fold::kNone;

// LP on the native micro-kernel: the region's checksum comes from the accumulators just before
// they are stored (no re-read of C); commit() is plain stores, no flush, no fence.
template <lp::ChecksumKind K, mem::Backend B>
void native_lp_unit(const Operands& op, std::size_t p, std::size_t s, const UnitSrc& src,
                    lp::Region<K, B>& region) {
  const micro::Folded f = native_gebp(op, p, s, src, kFoldOf<K>);
  if constexpr (kFoldOf<K> != micro::Fold::kNone) {
    region.add_words(f.sum, f.x);
  } else {
    walk_unit(
        op, p, s,
        [&](std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) {
          for (std::size_t i = i0; i < i1; ++i)
            for (std::size_t j = j0; j < j1; ++j) region.add(*op.c.at(i, j));
        },
        [](auto...) {});
  }
}

template <lp::ChecksumKind K, mem::Backend B>
void run_lp(B& be, const Operands& op, const lp::ChecksumTable& table, std::size_t first = 0) {
  run_variant(be, op, first, [&](B& b, std::size_t p, std::size_t s, const UnitSrc& src) {
    lp::Region<K, B> region(b, table, op.slot(p, s),
                            {static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(p)});
    if constexpr (mem::kIsNativeBackend<B>)
      if (op.fast()) {
        native_lp_unit<K>(op, p, s, src, region);
        region.commit();
        return;
      }
    run_unit(
        b, op, p, s, src, [&](double v) { region.add(v); }, [](auto...) {});
    region.commit();
  });
}

// Panel p's current values folded in a unit's store order (what its region's checksum saw).
template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] lp::ChecksumValue panel_checksum(B& be, const Operands& op, std::size_t p) {
  lp::Accumulator<K> acc;
  walk_unit(
      op, p, 0,
      [&](std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) {
        for (std::size_t i = i0; i < i1; ++i)
          for (std::size_t j = j0; j < j1; ++j) acc.add(be.load(op.c.at(i, j)));
      },
      [](auto...) {});
  return acc.value();
}

// LP recovery: a panel is in the state after the latest step whose region checksum matches its
// current values; it is recomputed from there (from zero if none matches), then persisted with a
// durable checksum for its last step. Recovery finishes the run.
template <lp::ChecksumKind K, mem::Backend B>
[[nodiscard]] std::size_t recover_lp(B& be, const Operands& op, const lp::ChecksumTable& table,
                                     lp::RecoveryStats& stats) {
  std::vector<lp::RecoveryStats> per(op.panels());
  be.parallel_for(0, op.panels(), [&](std::size_t p) {
    const lp::ChecksumValue cur = panel_checksum<K>(be, op, p);
    std::size_t from = 0;
    bool matched = false;
    for (std::size_t s = op.steps(); s-- > 0;) {
      const auto v = table.check(be, op.slot(p, s), cur);
      if (v == lp::SlotCheck::kUnwritten) {
        ++per[p].regions_unwritten;
        continue;
      }
      ++per[p].regions_validated;
      if (v == lp::SlotCheck::kMatch) {
        from = s + 1;
        matched = true;
        break;
      }
      ++per[p].regions_inconsistent;
    }
    if (matched && from == op.steps()) return;  // finished and consistent
    if (!matched) zero_rect(be, op, op.panel_rect(p));
    per[p].regions_recomputed += op.steps() - from;
    recompute_panel(be, op, p, from);
    table.commit_durable(be, op.slot(p, op.steps() - 1), panel_checksum<K>(be, op, p));
  });
  for (const auto& s : per) stats += s;
  return op.outer_count();
}

}  // namespace pmlab::kernels::gemm
