// gemm's Recompute and LP recoveries under random power cuts on the test crash backend (every
// legal NVM image), for every variant; and the negative controls: recoveries that skip zeroing an
// unfinished panel must be caught by the same trials.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "../scheme/crash_backend.hpp"
#include "pmlab/kernels/gemm.hpp"
#include "pmlab/kernels/inputs.hpp"

namespace pmlab::kernels::gemm {
namespace {

using scheme_test::Crash;
using scheme_test::CrashBackend;

enum class Kind { kLazy, kEager, kLp, kLazyNoZero, kLpNoZero, kHr, kHrNoRestore };
constexpr std::size_t kHrParts = 3;  // few parts, so that small runs have copies to restore

// Mutants of the recoveries: recompute an unfinished panel on top of what NVM holds.
std::size_t recover_ep_no_zero(CrashBackend& be, const Operands& op,
                               const scheme::IndexRecordTable<1>& rec) {
  for (std::size_t p = 0; p < op.panels(); ++p)
    if (rec[p].get(be, 0) < done_count(op, p, Grain::kLazy)) {
      recompute_panel(be, op, p, 0);
      rec[p].set(be, 0, done_count(op, p, Grain::kLazy));
    }
  return op.outer_count();
}

// Mutant of Hybrid Recompute's recovery: continue an unfinished panel from its counter on top
// of what NVM holds, without restoring the copy.
std::size_t recover_hr_no_restore(CrashBackend& be, const Operands& op,
                                  const scheme::IndexRecordTable<1>& rec) {
  for (std::size_t p = 0; p < op.panels(); ++p) {
    const std::uint64_t count = rec[p].get(be, 0);
    if (count < done_count(op, p, Grain::kLazy)) {
      recompute_panel(be, op, p, count);
      rec[p].set(be, 0, done_count(op, p, Grain::kLazy));
    }
  }
  return op.outer_count();
}

struct Fixture {
  std::size_t n, bs;
  Variant v;
  Kind kind;
  std::vector<double> a, b;
  // C and the persistent state on whole, aligned lines: the backend restores lines whole.
  std::unique_ptr<double[], scheme_test::FreeDeleter> c;
  std::unique_ptr<scheme::IndexRecordLayout<1>[], scheme_test::FreeDeleter> recs;
  std::unique_ptr<std::byte[], scheme_test::FreeDeleter> slots;
  std::unique_ptr<double[], scheme_test::FreeDeleter> copies;
  std::unique_ptr<scheme::PartState[], scheme_test::FreeDeleter> parts;
  bool rows = false;    // Config::row_order
  bool uneven = false;  // mc, kc, nc = bs + 1, bs + 3, bs + 2 instead of bs

  Fixture(std::size_t n_, std::size_t bs_, Variant v_, Kind k, bool rows_ = false,
          bool uneven_ = false)
      : n(n_),
        bs(bs_),
        v(v_),
        kind(k),
        a(n * n),
        b(n * n),
        c(scheme_test::zeroed<double>(n * n)),
        copies(scheme_test::zeroed<double>(2 * n * n)),
        parts(scheme_test::zeroed<scheme::PartState>(kHrParts)),
        rows(rows_),
        uneven(uneven_) {
    for (std::size_t i = 0; i < n * n; ++i) {
      a[i] = input_value(3, 0, i);
      b[i] = input_value(3, 1, i);
    }
    recs = scheme_test::zeroed<scheme::IndexRecordLayout<1>>(op().panels());
    slots = scheme_test::zeroed<std::byte>(lp::ChecksumTable::bytes_for(op().table_slots()));
  }
  // Unpacked: the crash backend would roll freed packing buffers back into the heap.
  Operands op() {
    Config cfg{v, false, 4, 8};
    cfg.row_order = rows;
    if (uneven) {
      cfg.mc = bs + 1;
      cfg.kc = bs + 3;
      cfg.nc = bs + 2;
    }
    return {{a.data(), n, n}, {b.data(), n, n}, {c.get(), n, n}, n, bs, cfg};
  }
  scheme::PartialCopier copier() { return {c.get(), copies.get(), parts.get(), n * n, kHrParts}; }
  scheme::IndexRecordTable<1> rec() { return {recs.get(), op().panels()}; }
  lp::ChecksumTable table() {
    return {reinterpret_cast<lp::ChecksumSlot*>(slots.get()), op().table_slots()};
  }
  void run(CrashBackend& be, std::size_t first) {
    switch (kind) {
      case Kind::kLazy:
      case Kind::kLazyNoZero:
        return run_ep<Grain::kLazy>(be, op(), rec(), first);
      case Kind::kEager:
        return run_ep<Grain::kEager>(be, op(), rec(), first);
      case Kind::kLp:
      case Kind::kLpNoZero:
        return run_lp<lp::ChecksumKind::kModular>(be, op(), table(), first);
      case Kind::kHr:
      case Kind::kHrNoRestore: {
        const auto cp = copier();
        return run_ep<Grain::kLazy>(be, op(), rec(), first, &cp);
      }
    }
  }
  std::size_t recover(CrashBackend& be) {
    lp::RecoveryStats st;
    switch (kind) {
      case Kind::kLazy:
        return recover_ep<Grain::kLazy>(be, op(), rec(), st);
      case Kind::kEager:
        return recover_ep<Grain::kEager>(be, op(), rec(), st);
      case Kind::kLazyNoZero:
        return recover_ep_no_zero(be, op(), rec());
      case Kind::kHr: {
        const auto cp = copier();
        return recover_ep<Grain::kLazy>(be, op(), rec(), st, &cp);
      }
      case Kind::kHrNoRestore:
        return recover_hr_no_restore(be, op(), rec());
      case Kind::kLp:
        return recover_lp<lp::ChecksumKind::kModular>(be, op(), table(), st);
      case Kind::kLpNoZero: {
        // Mutant: every panel is recomputed from its latest matching step or, if none, from
        // step 0 without zeroing.
        const Operands o = op();
        const auto t = table();
        for (std::size_t p = 0; p < o.panels(); ++p) {
          const auto cur = panel_checksum<lp::ChecksumKind::kModular>(be, o, p);
          std::size_t from = 0;
          for (std::size_t s = o.steps(); s-- > 0;)
            if (t.check(be, o.slot(p, s), cur) == lp::SlotCheck::kMatch) {
              from = s + 1;
              break;
            }
          if (from < o.steps()) recompute_panel(be, o, p, from);
        }
        return o.outer_count();
      }
    }
    return 0;
  }
  std::vector<double> reference() const {
    std::vector<double> r(n * n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (std::size_t k = 0; k < n; ++k) acc = std::fma(a[i * n + k], b[k * n + j], acc);
        r[i * n + j] = acc;
      }
    return r;
  }
};

// Trials with a cut anywhere, a random legal image, up to two more cuts in recovery/resume.
// Returns the number of trials whose result differs from the reference.
int failing_trials(Variant v, Kind kind, int trials, bool rows = false, bool uneven = false) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(v) * 31 + static_cast<std::uint64_t>(kind));
  int failed = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t n = 13 + static_cast<std::size_t>(trial % 3) * 6, bs = 4 + trial % 3;
    std::uint64_t total = 0;
    {
      Fixture g(n, bs, v, kind, rows, uneven);
      CrashBackend clean;
      g.run(clean, 0);
      total = clean.ops();
    }
    Fixture f(n, bs, v, kind, rows, uneven);
    CrashBackend be(rng(), 1 + trial % 2, trial % 2 == 1);
    std::size_t first = 0;
    bool in_recovery = false;
    for (int attempt = 0;; ++attempt) {
      const std::uint64_t k =
          attempt == 0 ? 1 + rng() % total : (attempt < 3 ? 1 + rng() % (total / 4 + 8) : 0);
      be.arm(k);
      try {
        if (in_recovery) {
          first = f.recover(be);
          in_recovery = false;
        }
        f.run(be, first);
        break;
      } catch (const Crash&) {
        if (rng() % 2 == 0)
          be.apply_crash_durable_only();
        else
          be.apply_crash(0.3);
        in_recovery = true;
      }
    }
    be.disarm();
    if (std::memcmp(f.c.get(), f.reference().data(), n * n * sizeof(double)) != 0) ++failed;
  }
  return failed;
}

TEST(GemmCrash, EveryVariantRecoversBitExactlyFromAnyCut) {
  for (Variant v : kFigureOrder)
    for (Kind k : {Kind::kLazy, Kind::kEager, Kind::kLp})
      EXPECT_EQ(failing_trials(v, k, 40), 0) << to_string(v) << " scheme " << static_cast<int>(k);
}

// Negative controls: the same trials catch recoveries that keep a partial update.
TEST(GemmCrash, TheTrialsCatchRecoveriesThatDoNotZeroAnUnfinishedPanel) {
  for (Variant v : {Variant::kGepp1, Variant::kGemp1, Variant::kGepm2}) {
    EXPECT_GT(failing_trials(v, Kind::kLazyNoZero, 40), 0) << to_string(v);
    EXPECT_GT(failing_trials(v, Kind::kLpNoZero, 40), 0) << to_string(v);
  }
}

// Hybrid Recompute (GEPP only): restored from the newest partial copy, bit-exact; the same trials
// catch a recovery that continues from the counter without restoring.
TEST(GemmCrash, HybridRecomputeRecoversBitExactlyAndItsMutantIsCaught) {
  for (Variant v : {Variant::kGepp1, Variant::kGepp2}) {
    EXPECT_EQ(failing_trials(v, Kind::kHr, 40), 0) << to_string(v);
    EXPECT_GT(failing_trials(v, Kind::kHrNoRestore, 40), 0) << to_string(v);
  }
}

// The row micro-tile order changes the store order and the eager slivers, not the recovery.
TEST(GemmCrash, RowOrderRecoversBitExactly) {
  for (Variant v : {Variant::kGepp1, Variant::kGepm2})
    for (Kind k : {Kind::kLazy, Kind::kEager, Kind::kLp})
      EXPECT_EQ(failing_trials(v, k, 20, true), 0) << to_string(v) << " " << static_cast<int>(k);
}

// Separate mc, kc and nc (--mc, --kc, --nc): panels, steps and blocks of three sizes, edge
// blocks of each; the recoveries stay bit-exact and the no-zero mutants are still caught.
TEST(GemmCrash, UnequalBlockingRecoversBitExactlyAndItsMutantsAreCaught) {
  for (Variant v : kFigureOrder)
    for (Kind k : {Kind::kLazy, Kind::kEager, Kind::kLp})
      EXPECT_EQ(failing_trials(v, k, 20, false, true), 0)
          << to_string(v) << " scheme " << static_cast<int>(k);
  for (Variant v : {Variant::kGepp1, Variant::kGemp1, Variant::kGepm2, Variant::kGemp2}) {
    EXPECT_GT(failing_trials(v, Kind::kLazyNoZero, 40, false, true), 0) << to_string(v);
    EXPECT_GT(failing_trials(v, Kind::kLpNoZero, 40, false, true), 0) << to_string(v);
  }
}

}  // namespace
}  // namespace pmlab::kernels::gemm
