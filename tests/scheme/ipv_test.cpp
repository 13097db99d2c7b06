// In-place versioning on tmm (seed 002 §4.1): bit-exact recovery from a crash at every op under
// any legal NVM image, at most one kk tile lost, and the protocol mutants caught.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "crash_backend.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm_ipv.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::scheme_test {
namespace {

namespace tm = kernels::tmm;

template <class T>
using Array = std::unique_ptr<T[], FreeDeleter>;

struct IpvFixture {
  std::size_t n, bs;
  std::vector<double> a, b;
  Array<double> c, v1;
  Array<scheme::IpvHeader> h;
  std::vector<double> expected;

  IpvFixture(std::size_t n_, std::size_t bs_)
      : n(n_),
        bs(bs_),
        a(n * n),
        b(n * n),
        c(zeroed<double>(n * n)),
        v1(zeroed<double>(n * n)),
        h(zeroed<scheme::IpvHeader>(1)),
        expected(n * n, 0.0) {
    for (std::size_t i = 0; i < n * n; ++i) {
      a[i] = kernels::input_value(3, 0, i);
      b[i] = kernels::input_value(3, 1, i);
    }
    mem::PlainBackend be({}, 1);
    tm::run_base(be, op_of(expected.data()));
  }
  [[nodiscard]] tm::Operands op_of(double* cc) const {
    return {{a.data(), n, n}, {b.data(), n, n}, {cc, n, n}, n, bs};
  }
  [[nodiscard]] tm::Operands op() const { return op_of(c.get()); }
  [[nodiscard]] tm::IpvState st() const { return {v1.get(), h.get()}; }
  void reset() {
    std::memset(c.get(), 0, n * n * sizeof(double));
    std::memset(v1.get(), 0, n * n * sizeof(double));
    std::memset(h.get(), 0, sizeof(scheme::IpvHeader));
  }
  [[nodiscard]] bool result_ok() const {
    return std::memcmp(c.get(), expected.data(), n * n * sizeof(double)) == 0;
  }
};

struct Outcome {
  std::size_t trials = 0, wrong = 0, lost_more_than_one = 0;
};

// A crash before every store, flush and fence, under three images; recovery, a second crash at
// a pseudo-random point of the resumed run (or of the second recovery), recovery and finish.
Outcome crash_everywhere(std::size_t n, std::size_t bs, tm::IpvFlush how, int threads,
                         mem::Mutation mutation = mem::Mutation::kNone) {
  IpvFixture f(n, bs);
  std::uint64_t total = 0;
  {
    CrashBackend counter(1, threads);
    counter.set_mutation(mutation);
    tm::run_ipv(counter, f.op(), f.st(), how);
    total = counter.ops();
    EXPECT_TRUE(f.result_ok());
  }
  Outcome out;
  for (std::uint64_t at = 1; at <= total; ++at)
    for (int image = 0; image < 3; ++image) {
      f.reset();
      CrashBackend be(at * 3 + static_cast<std::uint64_t>(image), threads, /*shuffle=*/true);
      be.set_mutation(mutation);
      be.arm(at);
      try {
        tm::run_ipv(be, f.op(), f.st(), how);
      } catch (const Crash&) {
      }
      // The tile in flight at the cut, as the program had committed it (live memory).
      const std::uint64_t live_done = f.h[0].done, live_complete = f.h[0].complete;
      if (image == 0) be.apply_crash_durable_only();
      if (image == 1) be.apply_crash(0.3);
      if (image == 2) be.apply_crash(1.0);
      be.disarm();
      lp::RecoveryStats stats;
      const std::size_t d = tm::recover_ipv(be, f.op(), f.st(), stats);
      if (live_complete == 0 && d + 1 < live_done) ++out.lost_more_than_one;
      be.arm(1 + (at * 7919) % total);
      try {
        tm::run_ipv(be, f.op(), f.st(), how, d);
      } catch (const Crash&) {
        be.apply_crash(0.5);
        be.disarm();
        tm::run_ipv(be, f.op(), f.st(), how, tm::recover_ipv(be, f.op(), f.st(), stats));
      }
      be.disarm();
      ++out.trials;
      if (!f.result_ok()) ++out.wrong;
    }
  return out;
}

TEST(SchemeIpv, TmmRecoversBitExactlyFromEveryCrashPointLosingAtMostOneTile) {
  for (const auto how : {tm::IpvFlush::kSync, tm::IpvFlush::kAsync})
    for (const auto& [n, bs] : {std::pair<std::size_t, std::size_t>{5, 2}, {6, 2}, {7, 3}})
      for (int threads : {1, 3}) {
        const Outcome o = crash_everywhere(n, bs, how, threads);
        EXPECT_GT(o.trials, 100u);
        EXPECT_EQ(o.wrong, 0u) << "n " << n << " bs " << bs << " threads " << threads;
        EXPECT_EQ(o.lost_more_than_one, 0u) << "n " << n << " bs " << bs;
      }
}

// Negative controls: each mutant of the protocol makes some trial end wrong.
TEST(SchemeIpv, TheCrashTestCatchesEveryProtocolMutant) {
  for (const auto m : {mem::Mutation::kIpvCommitBeforeFlush, mem::Mutation::kIpvBarrierAfterWrite,
                       mem::Mutation::kIpvSkipFlush}) {
    const Outcome o = crash_everywhere(6, 2, tm::IpvFlush::kSync, 1, m);
    EXPECT_GT(o.wrong, 0u) << "mutant " << mem::to_string(m);
  }
}

// Natively the helper thread really flushes: the result is exact and durable-marked, with two
// threads computing and one helper.
TEST(SchemeIpv, NativeHelperThreadRunMatchesTheReference) {
  for (const std::size_t n : {33u, 64u}) {
    IpvFixture f(n, 8);
    mem::PlainBackend be({}, 2);
    tm::run_ipv(be, f.op(), f.st(), tm::IpvFlush::kAsync);
    EXPECT_TRUE(f.result_ok()) << n;
    EXPECT_EQ(f.h[0].complete, 1u);
    EXPECT_EQ(f.h[0].done, (n + 7) / 8);
    // The helper's times reach the backend (and from there `pmlab run`'s report) when it stops.
    EXPECT_FALSE(be.helper_times().placement.empty()) << n;
    EXPECT_GT(be.helper_times().busy_ns, 0u) << n;
  }
  {  // a backend whose run used no helper reports none
    IpvFixture f(33, 8);
    mem::PlainBackend be({}, 1);
    tm::run_ipv(be, f.op(), f.st(), tm::IpvFlush::kSync);
    EXPECT_TRUE(be.helper_times().placement.empty());
  }
  if (persist::cpu_supports(persist::FlushKind::kClwb)) {
    IpvFixture f(40, 8);
    mem::NativeBackend<persist::CpuPersist<persist::FlushKind::kClwb>> be({}, 1);
    tm::run_ipv(be, f.op(), f.st(), tm::IpvFlush::kAsync);
    EXPECT_TRUE(f.result_ok());
  }
}

TEST(SchemeAsyncFlush, HiddenFractionIsTheShareOfFlushTimeTheMainThreadDidNotWaitFor) {
  EXPECT_EQ((mem::HelperTimes{}).hidden_fraction(), 0.0);  // nothing flushed: nothing hidden
  EXPECT_DOUBLE_EQ((mem::HelperTimes{1000, 250, "cpu 1"}).hidden_fraction(), 0.75);
  EXPECT_EQ((mem::HelperTimes{1000, 1000, "cpu 1"}).hidden_fraction(), 0.0);
  // Waiting longer than the helper flushed (scheduling, the queue's own latency) hides nothing.
  EXPECT_EQ((mem::HelperTimes{1000, 3000, "cpu 1"}).hidden_fraction(), 0.0);
}

TEST(SchemeAsyncFlush, HelperCompletesEveryTicketBeforeTheBarrierReturns) {
  std::vector<std::pair<const void*, std::size_t>> seen;
  std::mutex m;
  scheme::FlushHelper helper(
      [&](const void* p, std::size_t n) {
        const std::lock_guard lock(m);
        seen.emplace_back(p, n);
      },
      [](double*, const double*, std::size_t) { FAIL() << "no copy was submitted"; }, 1);
  std::vector<double> data(1000);
  for (std::size_t i = 0; i < 100; ++i) (void)helper.submit({data.data() + i, i});
  helper.wait_all();
  ASSERT_EQ(seen.size(), 100u);  // FIFO: every range, in order
  for (std::size_t i = 0; i < 100; ++i) EXPECT_EQ(seen[i].second, i);
  EXPECT_FALSE(helper.placement().empty());
}

// cp-nt-async's copies go through the same FIFO as flushes: in order, each complete (and, with
// the native copy function, fenced) before the barrier returns.
TEST(SchemeAsyncFlush, HelperCopiesInOrderWithFlushesBeforeTheBarrierReturns) {
  std::vector<int> order;  // 0: a flush, 1: a copy
  std::mutex m;
  scheme::FlushHelper helper(
      [&](const void*, std::size_t) {
        const std::lock_guard lock(m);
        order.push_back(0);
      },
      [&](double* d, const double* s, std::size_t n) {
        scheme::native_copy_durable(persist::NoPersist{}, d, s, n);
        const std::lock_guard lock(m);
        order.push_back(1);
      },
      1);
  std::vector<double> src(4099), dst(4099, -1.0);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = 0.5 * static_cast<double>(i);
  (void)helper.submit(scheme::FlushRange{src.data(), 64});
  (void)helper.submit(scheme::CopyRange{dst.data() + 1, src.data() + 1, 4098});
  (void)helper.submit(scheme::CopyRange{dst.data(), src.data(), 1});
  (void)helper.submit(scheme::CopyRange{dst.data(), src.data(), 0});  // nothing to do
  (void)helper.submit(scheme::FlushRange{dst.data(), 64});
  helper.wait_all();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace pmlab::scheme_test
