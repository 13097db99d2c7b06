// Undo log, both formats: an interrupted transaction rolls back to the logged state; committed
// ones survive; a damaged per-store record is refused.
#include <gtest/gtest.h>

#include <bit>
#include <type_traits>
#include <vector>

#include "crash_backend.hpp"
#include "pmlab/scheme/undo_log.hpp"

namespace pmlab::scheme_test {
namespace {

// The block's log in format F: a copy (12 doubles) or 12 {offset, old value} records.
template <scheme::LogFormat F>
struct FormatOf {
  using Element = double;
  using Block = scheme::LogBlock<double>;
  static Block block(double* data, std::size_t ld, Element* log) { return {data, 3, 4, ld, log}; }
};
template <scheme::LogFormat F>
requires(scheme::entry_format(F)) struct FormatOf<F> {
  using Element = scheme::LogEntry;
  using Block = scheme::EntryLogBlock<double>;
  static Block block(double* data, std::size_t ld, Element* log) {
    return {data, 3, 4, ld, log, F == scheme::LogFormat::kEntrySynced};
  }
};

// A 5 x 7 matrix (ld 7) whose 3 x 4 block at (1, 2) is transacted together with two index words.
template <scheme::LogFormat F>
struct Fixture {
  static constexpr std::size_t kRows = 5, kLd = 7;
  std::unique_ptr<double[], FreeDeleter> m = zeroed<double>(kRows * kLd);
  std::unique_ptr<typename FormatOf<F>::Element[], FreeDeleter> log =
      zeroed<typename FormatOf<F>::Element>(12);
  std::unique_ptr<std::uint64_t[], FreeDeleter> idx = zeroed<std::uint64_t>(8);
  std::unique_ptr<scheme::UndoHeader[], FreeDeleter> hdr = zeroed<scheme::UndoHeader>(1);
  typename FormatOf<F>::Block block = FormatOf<F>::block(m.get() + 1 * kLd + 2, kLd, log.get());
  scheme::LogBlock<std::uint64_t> words{idx.get(), 1, 2, 2, idx.get() + 4};
  scheme::UndoLog tx{hdr.get()};

  Fixture() {
    for (std::size_t i = 0; i < kRows * kLd; ++i) m[i] = static_cast<double>(i);
    idx[0] = 3;
    idx[1] = 9;
  }
  [[nodiscard]] std::vector<double> matrix() const { return {m.get(), m.get() + kRows * kLd}; }
  // The transaction body: every block element and both words change.
  template <class B>
  void update(B& be) {
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t c = 0; c < 4; ++c)
        be.store(block.data + r * kLd + c, -1.0 - static_cast<double>(r * 4 + c));
    be.store(idx.get(), std::uint64_t{4});
    be.store(idx.get() + 1, std::uint64_t{0});
  }
  template <class B>
  void transaction(B& be) {
    tx.begin(be, block, words);
    update(be);
    tx.commit(be, block, words);
  }
};

template <class Format>
class SchemeUndoLog : public ::testing::Test {};
using Formats =
    ::testing::Types<std::integral_constant<scheme::LogFormat, scheme::LogFormat::kBlock>,
                     std::integral_constant<scheme::LogFormat, scheme::LogFormat::kEntry>,
                     std::integral_constant<scheme::LogFormat, scheme::LogFormat::kEntrySynced>>;
TYPED_TEST_SUITE(SchemeUndoLog, Formats);

TYPED_TEST(SchemeUndoLog, CommittedTransactionUpdatesOnlyTheBlockAndClearsTheFlag) {
  using Fixture = Fixture<TypeParam::value>;
  Fixture f;
  const auto before = f.matrix();
  CrashBackend be;
  f.transaction(be);
  EXPECT_FALSE(f.tx.in_tx(be));
  EXPECT_EQ(f.idx[0], 4u);
  for (std::size_t i = 0; i < Fixture::kRows * Fixture::kLd; ++i) {
    const std::size_t r = i / Fixture::kLd, c = i % Fixture::kLd;
    const bool inside = r >= 1 && r < 4 && c >= 2 && c < 6;
    if (!inside)
      EXPECT_EQ(f.m[i], before[i]) << i;
    else
      EXPECT_LT(f.m[i], 0.0) << i;
  }
  // A committed transaction leaves nothing to roll back even if only durable data survives.
  be.apply_crash_durable_only();
  EXPECT_FALSE(f.tx.recover(be, f.block, f.words));
  EXPECT_EQ(f.idx[0], 4u);
  EXPECT_LT(f.m[1 * Fixture::kLd + 2], 0.0);
}

TYPED_TEST(SchemeUndoLog, InterruptionBetweenAnyTwoProtocolStepsRollsBackOrKeepsTheCommit) {
  using Fixture = Fixture<TypeParam::value>;
  std::uint64_t total = 0;
  {
    Fixture f;
    CrashBackend be;
    f.transaction(be);
    total = be.ops();
  }
  std::vector<double> old_m;
  for (std::uint64_t k = 1; k <= total + 1; ++k) {
    for (std::uint64_t seed = 0; seed < 12; ++seed) {
      Fixture f;
      old_m = f.matrix();
      CrashBackend be(seed);
      be.arm(k);
      bool committed = true;
      try {
        f.transaction(be);
      } catch (const Crash&) {
        committed = false;
      }
      if (seed % 3 == 0)
        be.apply_crash_durable_only();
      else
        be.apply_crash(seed % 3 == 1 ? 0.0 : 0.8);
      f.tx.recover(be, f.block, f.words);
      const bool is_old = f.matrix() == old_m && f.idx[0] == 3 && f.idx[1] == 9;
      Fixture g;
      CrashBackend clean;
      g.transaction(clean);
      const bool is_new = f.matrix() == g.matrix() && f.idx[0] == 4 && f.idx[1] == 0;
      EXPECT_TRUE(is_old || is_new) << "torn state after crash at op " << k << " seed " << seed;
      if (committed) {
        EXPECT_TRUE(is_new) << k;
      }
      EXPECT_FALSE(f.tx.in_tx(be));
    }
  }
}

TYPED_TEST(SchemeUndoLog, CrashInsideRecoveryIsRecoveredAgain) {
  using Fixture = Fixture<TypeParam::value>;
  for (std::uint64_t k2 = 1; k2 <= 30; ++k2) {
    Fixture f;
    const auto old_m = f.matrix();
    CrashBackend be(k2);
    f.tx.begin(be, f.block, f.words);
    f.update(be);  // crash before commit: must roll back
    be.apply_crash(0.9);
    be.arm(k2);
    try {
      f.tx.recover(be, f.block, f.words);
    } catch (const Crash&) {
    }
    be.apply_crash();
    f.tx.recover(be, f.block, f.words);
    EXPECT_EQ(f.matrix(), old_m) << k2;
    EXPECT_EQ(f.idx[0], 3u);
    EXPECT_EQ(f.idx[1], 9u);
  }
}

// The per-store format keeps 12 records of twice a double's size, and rolls back by them.
TEST(SchemeUndoLogEntry, RecordsHoldEachElementsOffsetAndOldValue) {
  Fixture<scheme::LogFormat::kEntry> f;
  CrashBackend be;
  f.tx.begin(be, f.block, f.words);
  for (std::size_t i = 0; i < 12; ++i) {
    const std::size_t r = i / 4, c = i % 4;
    EXPECT_EQ(f.log[i].offset, r * Fixture<scheme::LogFormat::kEntry>::kLd + c) << i;
    EXPECT_EQ(std::bit_cast<double>(f.log[i].bits), f.block.data[r * 7 + c]) << i;
  }
}

// The synced format fences each full log line as it is written (12 records = 3 lines), then
// once more for the flag; the plain format fences the whole log once. Same records either way.
TEST(SchemeUndoLogEntry, TheSyncedFormatFencesEachLogLineAndKeepsTheSameRecords) {
  Fixture<scheme::LogFormat::kEntry> plain;
  Fixture<scheme::LogFormat::kEntrySynced> synced;
  CrashBackend plain_be, synced_be;
  plain.tx.begin(plain_be, plain.block, plain.words);
  synced.tx.begin(synced_be, synced.block, synced.words);
  EXPECT_EQ(plain_be.fences(), 2u);  // the log's, then the flag's persist
  EXPECT_EQ(synced_be.fences(), 3u + 2u);
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(synced.log[i].offset, plain.log[i].offset) << i;
    EXPECT_EQ(synced.log[i].bits, plain.log[i].bits) << i;
  }
}

// A record whose offset leaves the block (a damaged pool) is refused, not written through.
TEST(SchemeUndoLogEntry, ARecordPointingOutsideItsBlockIsRefusedAsCorrupt) {
  for (const std::uint64_t bad : {std::uint64_t{4}, std::uint64_t{3 * 7}, ~std::uint64_t{0}}) {
    Fixture<scheme::LogFormat::kEntry> f;
    CrashBackend be;
    f.tx.begin(be, f.block, f.words);
    f.update(be);
    f.log[5].offset = bad;  // column 4 of a 4-wide block; row 3 of 3 rows; far away
    try {
      f.tx.recover(be, f.block, f.words);
      ADD_FAILURE() << "offset " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPoolCorrupt) << bad;
    }
    EXPECT_TRUE(f.tx.in_tx(be)) << "the flag must stay set: the rollback did not finish";
  }
}

}  // namespace
}  // namespace pmlab::scheme_test
