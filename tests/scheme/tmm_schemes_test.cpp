// tmm under every eager scheme: bit-exact vs base, and bit-exact after crashes at random points.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "crash_backend.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm_eager.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::scheme_test {
namespace {

namespace k = kernels::tmm;

// What each backend-template scheme name means, spelled here independently of the catalog's rows
// so the test checks the rows' kernel functions rather than repeating them.
enum class TmmFamily { kEagerRecompute, kHybridRecompute, kWal, kCheckpoint };
struct NamedScheme {
  TmmFamily family = TmmFamily::kEagerRecompute;
  bool jj = false;
  std::size_t parts = 0;
  bool entry_log = false;  // wal-*-entry: the per-store {offset, old value} log format
  bool synced = false;     // wal-*-entry-sync: each log line fenced as it fills
};
NamedScheme scheme_named(const std::string& s) {
  const bool jj = s.find("jj") != std::string::npos;
  if (s.starts_with("ep-")) return {TmmFamily::kEagerRecompute, jj, 0};
  if (s.starts_with("wal-"))
    return {TmmFamily::kWal, jj, 0, s.find("-entry") != std::string::npos, s.ends_with("-sync")};
  if (s == "cp") return {TmmFamily::kCheckpoint, false, 0};
  return {TmmFamily::kHybridRecompute, jj, s.ends_with("x64") ? 64u : 32u};
}

// Operands plus every scheme's state arrays on the heap (zeroed like a fresh pool).
struct SchemeFixture {
  std::size_t n, bs, nt;
  NamedScheme scheme;
  std::unique_ptr<double[], FreeDeleter> a, b, c;
  std::unique_ptr<scheme::IndexRecordLayout<2>[], FreeDeleter> records;
  std::unique_ptr<double[], FreeDeleter> hr_copy;
  std::unique_ptr<scheme::PartState[], FreeDeleter> hr_parts;
  std::unique_ptr<scheme::UndoHeader[], FreeDeleter> wal_hdr;
  std::unique_ptr<k::WalIndex[], FreeDeleter> wal_index;
  std::unique_ptr<double[], FreeDeleter> wal_log, cp_area;
  std::unique_ptr<k::CpHeader[], FreeDeleter> cp_header;
  std::unique_ptr<scheme::LogEntry[], FreeDeleter> wal_entries;
  k::Operands op;
  scheme::PartialCopier copier;
  k::EagerState eager;
  k::WalState wal;
  k::CpState cp;

  SchemeFixture(const std::string& name, std::size_t n_, std::size_t bs_, std::uint64_t seed = 3)
      : n(n_),
        bs(bs_),
        nt((n_ + bs_ - 1) / bs_),
        scheme(scheme_named(name)),
        a(zeroed<double>(n * n)),
        b(zeroed<double>(n * n)),
        c(zeroed<double>(n * n)),
        records(zeroed<scheme::IndexRecordLayout<2>>(nt)),
        hr_copy(zeroed<double>(2 * n * n)),
        hr_parts(zeroed<scheme::PartState>(64)),
        wal_hdr(zeroed<scheme::UndoHeader>(nt)),
        wal_index(zeroed<k::WalIndex>(nt)),
        wal_log(zeroed<double>(n * n)),
        cp_area(zeroed<double>(6 * n * n)),
        cp_header(zeroed<k::CpHeader>(1)),
        wal_entries(zeroed<scheme::LogEntry>(n * n)) {
    for (std::size_t i = 0; i < n * n; ++i) {
      a[i] = kernels::input_value(seed, 0, i);
      b[i] = kernels::input_value(seed, 1, i);
    }
    op = k::Operands{{a.get(), n, n}, {b.get(), n, n}, {c.get(), n, n}, n, bs};
    copier = scheme::PartialCopier(c.get(), hr_copy.get(), hr_parts.get(), n * n, scheme.parts);
    eager = {{records.get(), nt}, scheme.family == TmmFamily::kHybridRecompute ? &copier : nullptr};
    wal = {wal_hdr.get(), wal_index.get(), wal_log.get(), wal_entries.get()};
    cp = {cp_area.get(), cp_header.get()};
  }

  template <mem::Backend B>
  void run(B& be, std::size_t first_kt) {
    switch (scheme.family) {
      case TmmFamily::kEagerRecompute:
      case TmmFamily::kHybridRecompute:
        return scheme.jj ? k::run_ep_jj(be, op, eager, first_kt)
                         : k::run_ep_ii(be, op, eager, first_kt);
      case TmmFamily::kWal:
        if (scheme.synced)
          return scheme.jj ? k::run_wal_jj<scheme::LogFormat::kEntrySynced>(be, op, wal, first_kt)
                           : k::run_wal_ii<scheme::LogFormat::kEntrySynced>(be, op, wal, first_kt);
        if (scheme.entry_log)
          return scheme.jj ? k::run_wal_jj<scheme::LogFormat::kEntry>(be, op, wal, first_kt)
                           : k::run_wal_ii<scheme::LogFormat::kEntry>(be, op, wal, first_kt);
        return scheme.jj ? k::run_wal_jj<scheme::LogFormat::kBlock>(be, op, wal, first_kt)
                         : k::run_wal_ii<scheme::LogFormat::kBlock>(be, op, wal, first_kt);
      case TmmFamily::kCheckpoint:
        return k::run_cp(be, op, cp, first_kt);
      default:
        FAIL() << "not a backend-template scheme";
    }
  }
  template <mem::Backend B>
  std::size_t recover(B& be, lp::RecoveryStats& st) {
    switch (scheme.family) {
      case TmmFamily::kEagerRecompute:
      case TmmFamily::kHybridRecompute:
        return scheme.jj ? k::recover_ep_jj(be, op, eager, st)
                         : k::recover_ep_ii(be, op, eager, st);
      case TmmFamily::kWal:
        return scheme.entry_log
                   ? k::recover_wal<scheme::LogFormat::kEntry>(be, op, wal, scheme.jj, st)
                   : k::recover_wal<scheme::LogFormat::kBlock>(be, op, wal, scheme.jj, st);
      case TmmFamily::kCheckpoint:
        return k::recover_cp(be, op, cp, st);
      default:
        return 0;
    }
  }
  [[nodiscard]] std::vector<double> result() const { return {c.get(), c.get() + n * n}; }
  [[nodiscard]] std::vector<double> reference() const {
    std::vector<double> out(n * n, 0.0);
    k::Operands ref{{a.get(), n, n}, {b.get(), n, n}, {out.data(), n, n}, n, bs};
    mem::PlainBackend be;
    k::run_base(be, ref);
    return out;
  }
};

bool bit_equal(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

const std::vector<std::string> kTemplateSchemes{"ep-ii",
                                                "ep-jj",
                                                "wal-ii",
                                                "wal-jj",
                                                "wal-ii-entry",
                                                "wal-jj-entry",
                                                "wal-ii-entry-sync",
                                                "cp",
                                                "hr-ii-x32",
                                                "hr-ii-x64",
                                                "hr-jj-x32",
                                                "hr-jj-x64"};
const std::vector<std::pair<std::size_t, std::size_t>> kSizes{{1, 1},  {7, 3},  {13, 4}, {10, 10},
                                                              {9, 20}, {24, 5}, {16, 4}};

TEST(SchemeTmm, SchemeNamesParseAndEveryBackendSchemeIsCovered) {
  const auto& names = run::find_kernel("tmm").schemes;
  for (const auto& s : kTemplateSchemes)
    EXPECT_NE(std::find(names.begin(), names.end(), s), names.end()) << s;
  EXPECT_EQ(std::find(names.begin(), names.end(), "hr-ii-x16"), names.end());
  EXPECT_EQ(scheme_named("hr-jj-x64").parts, 64u);
  EXPECT_TRUE(scheme_named("hr-jj-x64").jj);
  // + base, lp, pmemobj, and seed 002's cp-clflush, cp-par-clflush, cp-nt, ipv-sync, ipv, ipv-nf
  EXPECT_EQ(names.size(), kTemplateSchemes.size() + 3 + 6);
}

class SchemeTmmEach : public ::testing::TestWithParam<std::string> {};

TEST_P(SchemeTmmEach, FaultFreeRunEqualsBaseBitForBitForAnySizeAndThreads) {
  for (auto [n, bs] : kSizes) {
    for (int threads : {1, 2}) {
      SchemeFixture f(GetParam(), n, bs);
      mem::PlainBackend be({}, threads);
      f.run(be, 0);
      EXPECT_TRUE(bit_equal(f.result(), f.reference())) << n << "/" << bs << " threads " << threads;
      // A completed run needs no repair and resumes past the end.
      lp::RecoveryStats st;
      EXPECT_EQ(f.recover(be, st), f.nt);
      EXPECT_EQ(st.regions_recomputed, 0u);
      EXPECT_EQ(st.regions_inconsistent, 0u);
      EXPECT_TRUE(bit_equal(f.result(), f.reference()));
    }
  }
}

TEST_P(SchemeTmmEach, PersistsEagerlyUnlikeBase) {
  SchemeFixture f(GetParam(), 16, 4);
  CrashBackend be;
  f.run(be, 0);
  // A completed eager run is durable as a whole: keeping only flushed+fenced lines loses nothing.
  be.apply_crash_durable_only();
  lp::RecoveryStats st;
  const std::size_t resume = f.recover(be, st);
  EXPECT_EQ(resume, f.nt);
  EXPECT_TRUE(bit_equal(f.result(), f.reference()));
  EXPECT_GT(be.fences(), f.nt);  // at least one fence per kk iteration
}

// Crash at a random store/flush/fence, keep a random legal NVM image, recover (sometimes
// crashing inside recovery or inside the resumed run too), finish: C must equal base bit for bit.
TEST_P(SchemeTmmEach, InterruptAtRandomPointsThenRecoverAndFinishIsBitExact) {
  std::mt19937_64 rng(std::hash<std::string>{}(GetParam()));
  std::uint64_t repaired = 0, crashes = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const auto [n, bs] = kSizes[1 + static_cast<std::size_t>(trial) % (kSizes.size() - 1)];
    SchemeFixture f(GetParam(), n, bs, 10 + static_cast<std::uint64_t>(trial));
    std::uint64_t total = 0;
    {
      SchemeFixture g(GetParam(), n, bs);
      CrashBackend clean;
      g.run(clean, 0);
      total = clean.ops();
    }
    CrashBackend be(rng(), /*threads=*/1 + trial % 3, /*shuffle=*/trial % 2 == 1);
    std::size_t first_kt = 0;
    bool in_recovery = false;
    for (int attempt = 0;; ++attempt) {
      // The first cut lands anywhere in a whole run; later ones (at most 3) early in what follows.
      const std::uint64_t k =
          attempt == 0 ? 1 + rng() % total : (attempt < 3 ? 1 + rng() % (total / 4 + 8) : 0);
      be.arm(k);
      try {
        if (in_recovery) {
          lp::RecoveryStats st;
          first_kt = f.recover(be, st);
          repaired += st.regions_inconsistent + st.regions_recomputed;
          in_recovery = false;
        }
        f.run(be, first_kt);
        break;
      } catch (const Crash&) {
        ++crashes;
        switch (rng() % 3) {
          case 0:
            be.apply_crash_durable_only();
            break;
          case 1:
            be.apply_crash(0.0);
            break;
          default:
            be.apply_crash(0.7);
            break;
        }
        in_recovery = true;
      }
    }
    be.disarm();
    ASSERT_TRUE(bit_equal(f.result(), f.reference()))
        << GetParam() << " trial " << trial << " n " << n << " bs " << bs;
  }
  EXPECT_GE(crashes, 40u);
  if (GetParam() != "cp") {
    EXPECT_GT(repaired, 0u) << "no trial exercised a repair or rollback";
  }
}

// Every crash point of a small run (n not a multiple of bs), each with three NVM images.
TEST_P(SchemeTmmEach, InterruptAtEveryPointOfASmallRunIsBitExact) {
  constexpr std::size_t n = 5, bs = 2;
  std::uint64_t total = 0;
  {
    SchemeFixture g(GetParam(), n, bs);
    CrashBackend clean;
    g.run(clean, 0);
    total = clean.ops();
  }
  const auto ref = SchemeFixture(GetParam(), n, bs).reference();
  for (std::uint64_t k = 1; k <= total; ++k) {
    for (int image = 0; image < 3; ++image) {
      SchemeFixture f(GetParam(), n, bs);
      CrashBackend be(k * 3 + static_cast<std::uint64_t>(image));
      be.arm(k);
      ASSERT_THROW(f.run(be, 0), Crash);
      if (image == 0)
        be.apply_crash_durable_only();
      else
        be.apply_crash(image == 1 ? 1.0 : 0.0);  // newest versions / random older ones
      lp::RecoveryStats st;
      const std::size_t resume = f.recover(be, st);
      f.run(be, resume);
      ASSERT_TRUE(bit_equal(f.result(), ref))
          << GetParam() << " crash at op " << k << " of " << total << " image " << image;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SchemeTmm, SchemeTmmEach, ::testing::ValuesIn(kTemplateSchemes),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (auto& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

// The fence counts that explain the schemes' costs (docs/schemes.md), exactly as designed.
TEST(SchemeTmm, FenceCountsFollowEachProtocol) {
  const std::size_t n = 20, bs = 4, nt = 5;
  auto fences = [&](const std::string& name) {
    SchemeFixture f(name, n, bs);
    CrashBackend be;
    f.run(be, 0);
    return be.fences();
  };
  EXPECT_EQ(fences("ep-ii"), 3 * nt * nt);               // started, panel, done
  EXPECT_EQ(fences("ep-jj"), nt * nt * (2 * nt + 4));    // per tile: tile + jj index; kk advance: 4
  EXPECT_EQ(fences("wal-ii"), 4 * nt * nt);              // log, flag, data, flag
  EXPECT_EQ(fences("wal-jj"), 4 * nt * nt * nt);         // the same per tile
  EXPECT_EQ(fences("cp"), 2 * nt);                       // a, b, c copies + header, per kk
  EXPECT_EQ(fences("hr-ii-x32"), 3 * nt * nt + 3 * nt);  // ep-ii + invalidate, copy, publish
  EXPECT_EQ(fences("hr-jj-x64"), nt * nt * (2 * nt + 4) + 3 * nt);
}

// Hybrid Recompute bounds the recomputation: a panel caught mid-kk late in the run restarts from
// a partial copy at most 2X kk iterations old, EagerRecompute from zero.
TEST(SchemeTmm, HybridRecomputeRecomputesLessThanEagerRecomputeLateInTheRun) {
  const std::size_t n = 96, bs = 1;  // 96 kk iterations > 2 * 32
  auto late_crash = [&](const std::string& name) {
    SchemeFixture f(name, n, bs);
    CrashBackend be(5);
    mem::PlainBackend plain;
    k::run_ep_ii(plain, f.op, f.eager, 0);  // reach the end quickly, then redo the last kk tile
    std::memset(f.c.get(), 0, n * n * sizeof(double));
    std::memset(f.records.get(), 0, f.nt * sizeof(scheme::IndexRecordLayout<2>));
    std::memset(f.hr_parts.get(), 0, 64 * sizeof(scheme::PartState));
    k::run_ep_ii(plain, f.op, f.eager, 0);
    // Mark panel 0 as caught in kk tile nt-1 and scribble on it.
    f.records[0].value[0] = k::ep_started(f.nt - 1);
    for (std::size_t j = 0; j < n; ++j) f.c[j] = -1.0;
    lp::RecoveryStats st;
    const std::size_t resume = k::recover_ep_ii(be, f.op, f.eager, st);
    EXPECT_EQ(resume, f.nt - 1);
    k::run_ep_ii(be, f.op, f.eager, resume);
    EXPECT_TRUE(bit_equal(f.result(), f.reference())) << name;
    return st.regions_recomputed;
  };
  const auto ep = late_crash("ep-ii"), hr32 = late_crash("hr-ii-x32"),
             hr64 = late_crash("hr-ii-x64");
  EXPECT_EQ(ep, n - 1);
  EXPECT_LE(hr32, 2u * 32u);
  EXPECT_LE(hr64, 2u * 64u);
  EXPECT_LT(hr32, ep);
}

}  // namespace
}  // namespace pmlab::scheme_test
