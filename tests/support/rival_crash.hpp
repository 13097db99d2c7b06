// Crash-test harness for the kernels' WAL / checkpoint / hybrid schemes: zeroed "pool" arrays
// sized by the schemes' *_bytes_for helpers, and a random-crash property loop.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../scheme/crash_backend.hpp"
#include "pmlab/lp/recovery.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/scheme/band_copy.hpp"
#include "pmlab/scheme/copy_jobs.hpp"
#include "pmlab/scheme/index_record.hpp"
#include "pmlab/scheme/step_checkpoint.hpp"
#include "pmlab/scheme/wal_units.hpp"
#include "test_scale.hpp"
#include "test_seed.hpp"

namespace pmlab::testing {

using scheme_test::Crash;
using scheme_test::CrashBackend;

// Named, zero-filled, 64-byte aligned arrays standing in for a pool's scheme arrays; each is
// exactly as large as the scheme asked for (rounded up to a line), so ASan sees overruns.
class PoolArrays {
 public:
  template <std::size_t N>
  void add(const std::array<scheme::PoolArray, N>& arrays) {
    for (const auto& a : arrays) {
      ASSERT_GT(a.bytes, 0u) << a.name;
      names_.emplace_back(a.name);
      bytes_.push_back(a.bytes);
      data_.push_back(scheme_test::zeroed<std::byte>(a.bytes));
    }
  }
  template <class T>
  [[nodiscard]] T* get(std::string_view name) const {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return reinterpret_cast<T*>(data_[i].get());
    ADD_FAILURE() << "no pool array " << name;
    return nullptr;
  }
  void zero() {
    for (std::size_t i = 0; i < data_.size(); ++i) std::memset(data_[i].get(), 0, bytes_[i]);
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::size_t> bytes_;
  std::vector<std::unique_ptr<std::byte[], scheme_test::FreeDeleter>> data_;
};

// One kernel x scheme instance: run / recover through backend B, a reset to the state of a
// freshly created pool, and a bit-exact comparison with the base kernel's result.
template <class B>
struct BasicRivalCase {
  std::string label;
  std::size_t steps = 0;  // recover() returning this means "already complete"
  std::function<void()> reset;
  std::function<void(B&, std::size_t)> run;
  std::function<std::size_t(B&, lp::RecoveryStats&)> recover;
  std::function<bool()> exact;
};
using RivalCase = BasicRivalCase<CrashBackend>;

struct CrashTally {
  std::uint64_t trials = 0, cuts = 0, cuts_in_recovery = 0;
  std::uint64_t rolled_back = 0;      // recoveries that found an open or torn region
  std::uint64_t recomputed = 0;       // recoveries that recomputed ops themselves
  std::uint64_t resumed_mid_run = 0;  // recoveries that resumed at 0 < step < steps
};

// The test's fixed seed (PMLAB_TEST_SEED to replay or explore: tests/support/test_seed.hpp).
inline std::uint64_t rivals_seed() {
  return test::test_seed();
}

// Property: for `trials` random instances (make(rng)), a power cut before a random store,
// flush or fence of the run; the NVM image keeps any version of each line no older than its
// last completed flush + fence (from "latest everywhere" to "only what was made durable");
// parallel loops run in a shuffled order; half of the restarts crash again, half of those
// within 64 ops, i.e. inside recovery. Recovery + resumed run must give base's result bit for
// bit. Returns the counts for non-vacuity checks.
template <class Make>
CrashTally crash_property(const char* name, std::uint64_t trials, Make&& make) {
  const std::uint64_t seed = rivals_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  constexpr double kBiases[] = {0.0, 0.3, 0.9, 1.0};
  CrashTally tally;
  for (std::uint64_t t = 0; t < trials; ++t) {
    RivalCase c = make(rng);
    SCOPED_TRACE(::testing::Message() << name << " trial " << t << " " << c.label);
    c.reset();
    std::uint64_t total = 1;
    {
      CrashBackend counter;
      c.run(counter, 0);
      total = std::max<std::uint64_t>(1, counter.ops());
      if (!c.exact()) {
        ADD_FAILURE() << "fault-free run differs from base";
        break;
      }
    }
    c.reset();
    CrashBackend be(rng(), 1, /*shuffle=*/true);
    be.arm(1 + rng() % total);
    bool done = false;
    for (int attempt = 0; attempt < 12 && !done; ++attempt) {
      bool in_recovery = false;
      try {
        std::size_t first = 0;
        if (attempt > 0) {
          in_recovery = true;
          lp::RecoveryStats st;
          first = c.recover(be, st);
          in_recovery = false;
          if (st.regions_inconsistent > 0) ++tally.rolled_back;
          if (st.regions_recomputed > 0) ++tally.recomputed;
          if (first > 0 && first < c.steps) ++tally.resumed_mid_run;
        }
        c.run(be, first);
        done = true;
      } catch (const Crash&) {
        ++tally.cuts;
        if (in_recovery) ++tally.cuts_in_recovery;
        if (rng() % 5 == 0)
          be.apply_crash_durable_only();
        else
          be.apply_crash(kBiases[rng() % 4]);
        if (rng() % 2) be.arm(1 + rng() % (rng() % 2 ? 64 : total));
      }
    }
    if (!done) {
      be.disarm();
      lp::RecoveryStats st;
      c.run(be, c.recover(be, st));
    }
    ++tally.trials;
    if (!c.exact()) {
      ADD_FAILURE() << "recovered result differs from base";
      break;
    }
  }
  std::printf(
      "[ crashes  ] %s: %llu trials, %llu power cuts (%llu inside recovery), %llu recoveries "
      "rolled back or repaired, %llu recomputed ops, %llu resumed mid-run\n",
      name, static_cast<unsigned long long>(tally.trials),
      static_cast<unsigned long long>(tally.cuts),
      static_cast<unsigned long long>(tally.cuts_in_recovery),
      static_cast<unsigned long long>(tally.rolled_back),
      static_cast<unsigned long long>(tally.recomputed),
      static_cast<unsigned long long>(tally.resumed_mid_run));
  return tally;
}

// Exhaustive: a power cut before every store, flush and fence of the run, each under three
// NVM images (only what was made durable; a random mix; everything that was stored), then
// recovery (parallel loops shuffled) and the resumed run must give base's result bit for bit.
// Returns the number of crash points.
inline std::uint64_t crash_at_every_op(RivalCase c) {
  SCOPED_TRACE(c.label);
  c.reset();
  std::uint64_t total = 0;
  {
    CrashBackend counter;
    c.run(counter, 0);
    total = counter.ops();
  }
  for (std::uint64_t at = 1; at <= total; ++at)
    for (int image = 0; image < 3; ++image) {
      c.reset();
      CrashBackend be(at * 3 + static_cast<std::uint64_t>(image), 1, /*shuffle=*/true);
      be.arm(at);
      try {
        c.run(be, 0);
        ADD_FAILURE() << "no power cut at op " << at;
        return at;
      } catch (const Crash&) {
      }
      if (image == 0) be.apply_crash_durable_only();
      if (image == 1) be.apply_crash(0.5);
      if (image == 2) be.apply_crash(1.0);
      lp::RecoveryStats st;
      c.run(be, c.recover(be, st));
      if (!c.exact()) {
        ADD_FAILURE() << "power cut at op " << at << " of " << total << ", image " << image;
        return at;
      }
    }
  return total;
}

// Bitwise equality of a result with a reference (NaN-safe, -0.0 distinct from 0.0).
inline bool same_bits(const double* x, const std::vector<double>& ref) {
  return std::memcmp(x, ref.data(), ref.size() * sizeof(double)) == 0;
}

// Sizes for the property tests: a third tiny primes, the rest 1..max_n; bs 1..max_bs.
inline std::size_t random_n(std::mt19937_64& rng, std::size_t max_n) {
  constexpr std::size_t kPrimes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23};
  return rng() % 3 == 0 ? kPrimes[rng() % 9] : 1 + rng() % max_n;
}

// Plain memory that counts what a scheme costs: stores (8-byte writes), line flushes, fences,
// regions. Single-threaded.
class CountingBackend {
 public:
  template <class T>
  [[nodiscard]] T load(const T* p) const {
    return *p;
  }
  template <class T>
  void store(T* p, T v) {
    ++stores;
    *p = v;
  }
  void flush(const void*) { ++flushes; }
  void fence() { ++fences; }
  void persist(const void* p, std::size_t len) {
    const auto first = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{63};
    for (auto a = first; a < reinterpret_cast<std::uintptr_t>(p) + len; a += 64) flush(nullptr);
    fence();
  }
  void region_begin(mem::RegionId) { ++regions; }
  void region_end(mem::RegionId) {}
  template <class Fn>
  void parallel_for(std::size_t begin, std::size_t end, Fn&& fn) {
    for (std::size_t i = begin; i < end; ++i) fn(i);
  }
  [[nodiscard]] int threads() const { return 1; }

  std::uint64_t stores = 0, flushes = 0, fences = 0, regions = 0;
};
static_assert(mem::Backend<CountingBackend>);

// ---------------------------------------------------------------------------------------------
// Building cases from a kernel's data D, generically: the kernels' rival APIs have the same
// shape, so the calls below find kernels::<kernel>::run_wal etc. by argument-dependent lookup.
// D provides: op, PoolArrays pool, reset() (inputs/work as at pool creation, pool zeroed),
// exact() (bit-equal to base), label(), and kHasHybrid.

enum class Rival { kWal, kCp, kHr };

inline std::string rival_name(Rival s, std::size_t param) {
  switch (s) {
    case Rival::kWal:
      return "wal";
    case Rival::kCp:
      return "cp-every" + std::to_string(param);
    case Rival::kHr:
      return "hr-x" + std::to_string(param);
  }
  return "?";
}

template <class D>
scheme::WalUnits wal_units_of(D& d) {
  d.pool.add(wal_bytes_for(d.op));
  return {d.pool.template get<scheme::UndoHeader>("wal_header"),
          d.pool.template get<scheme::WalProgress>("wal_index"),
          d.pool.template get<double>("wal_log")};
}
template <class D>
scheme::StepCheckpoint checkpoint_of(D& d, std::size_t every) {
  d.pool.add(cp_bytes_for(d.op));
  return cp_state(d.op, d.pool.template get<scheme::StepCheckpointHeader>("cp_header"),
                  d.pool.template get<double>("cp_area"), every);
}
template <class D>
auto hybrid_of(D& d, std::size_t parts) {
  d.pool.add(hr_bytes_for(d.op, parts));
  return hr_state(d.op, d.pool.template get<scheme::IndexRecordLayout<1>>("ep_index"),
                  d.pool.template get<double>("hr_copy"),
                  d.pool.template get<scheme::PartState>("hr_parts"), parts);
}

// `param`: cp's interval (0 = the kernel's default), hr's number of parts.
template <class B, class D>
BasicRivalCase<B> make_case(std::shared_ptr<D> d, Rival s, std::size_t param) {
  BasicRivalCase<B> c;
  c.steps = rival_steps(d->op);
  c.reset = [d] { d->reset(); };
  c.exact = [d] { return d->exact(); };
  switch (s) {
    case Rival::kWal: {
      const auto wal = wal_units_of(*d);
      c.run = [d, wal](B& be, std::size_t first) { run_wal(be, d->op, wal, first); };
      c.recover = [d, wal](B& be, lp::RecoveryStats& st) {
        return recover_wal(be, d->op, wal, st);
      };
      break;
    }
    case Rival::kCp: {
      if (param == 0) param = cp_default_every(d->op);
      const auto cp = checkpoint_of(*d, param);
      c.run = [d, cp](B& be, std::size_t first) { run_cp(be, d->op, cp, first); };
      c.recover = [d, cp](B& be, lp::RecoveryStats& st) { return recover_cp(be, d->op, cp, st); };
      break;
    }
    case Rival::kHr: {
      if constexpr (D::kHasHybrid) {
        const auto hr = hybrid_of(*d, param);
        c.run = [d, hr](B& be, std::size_t first) { run_hr(be, d->op, hr, first); };
        c.recover = [d, hr](B& be, lp::RecoveryStats& st) { return recover_hr(be, d->op, hr, st); };
      } else {
        ADD_FAILURE() << "no hybrid scheme for " << d->label();
      }
      break;
    }
  }
  c.label = d->label() + " " + rival_name(s, param);
  return c;
}

// Fault-free: each scheme on backend `be` gives base's result bit for bit, and recovering the
// completed run finds nothing to roll back or recompute and reports completion.
template <class B, class D>
void expect_fault_free_exact(B& be, std::shared_ptr<D> d, Rival s, std::size_t param) {
  auto c = make_case<B>(d, s, param);
  SCOPED_TRACE(c.label);
  c.reset();
  c.run(be, 0);
  EXPECT_TRUE(c.exact());
  lp::RecoveryStats st;
  EXPECT_EQ(c.recover(be, st), c.steps);
  EXPECT_EQ(st.regions_inconsistent, 0u);
  EXPECT_EQ(st.regions_recomputed, 0u);
  EXPECT_TRUE(c.exact());
}

// The crash backend, counting regions begun (the ops a run executes).
class RegionCountingCrashBackend : public CrashBackend {
 public:
  using CrashBackend::CrashBackend;
  void region_begin(mem::RegionId) { ++regions; }
  std::uint64_t regions = 0;
};

// Hybrid Recompute vs EagerRecompute from the same crash images: late power cuts in an hr run
// (every line at its newest version, so the op in flight stays torn), then recovery + resumed
// run once with the copies (hr) and once without (ep, on the same records and data). Both must
// finish bit-exactly. Work redone after the crash = ops recomputed by recovery + ops the
// resumed run executes; hr restarts every torn tile/block at a state >= ep's, so it may never
// redo more, and must redo less in total.
// D additionally provides work_data() and work_elems() (the in-place working array).
template <class D>
void expect_hybrid_redoes_less_than_eager(std::shared_ptr<D> d, std::size_t parts,
                                          int crash_points) {
  SCOPED_TRACE(d->label() + " hr-x" + std::to_string(parts));
  const auto hr = hybrid_of(*d, parts);
  const std::size_t rec_bytes = hr_bytes_for(d->op, parts)[0].bytes;
  auto* rec = d->pool.template get<std::byte>("ep_index");
  d->reset();
  std::uint64_t total = 0;
  {
    CrashBackend counter;
    run_hr(counter, d->op, hr, 0);
    total = counter.ops();
  }
  std::uint64_t hr_redone = 0, ep_redone = 0;
  for (int p = 0; p < crash_points; ++p) {
    d->reset();
    CrashBackend be(static_cast<std::uint64_t>(p) + 1);
    const auto percent = static_cast<std::uint64_t>(50 + 45 * p / crash_points);
    be.arm(std::max<std::uint64_t>(1, total * percent / 100));
    try {
      run_hr(be, d->op, hr, 0);
      ADD_FAILURE() << "no power cut";
    } catch (const Crash&) {
    }
    be.apply_crash(1.0);
    const std::vector<double> work(d->work_data(), d->work_data() + d->work_elems());
    const std::vector<std::byte> records(rec, rec + rec_bytes);
    lp::RecoveryStats hs, es;
    RegionCountingCrashBackend after_hr, after_ep;
    run_hr(after_hr, d->op, hr, recover_hr(after_hr, d->op, hr, hs));
    EXPECT_TRUE(d->exact()) << "hr, crash point " << p;
    std::copy(work.begin(), work.end(), d->work_data());
    std::copy(records.begin(), records.end(), rec);
    run_ep(after_ep, d->op, hr.records, recover_ep(after_ep, d->op, hr.records, es));
    EXPECT_TRUE(d->exact()) << "ep, crash point " << p;
    const std::uint64_t h = hs.regions_recomputed + after_hr.regions;
    const std::uint64_t e = es.regions_recomputed + after_ep.regions;
    EXPECT_LE(h, e) << "crash point " << p;
    hr_redone += h;
    ep_redone += e;
  }
  std::printf(
      "[ hybrid   ] %s hr-x%zu: %d late crashes, ops redone with copies %llu, without %llu\n",
      d->label().c_str(), parts, crash_points, static_cast<unsigned long long>(hr_redone),
      static_cast<unsigned long long>(ep_redone));
  EXPECT_LT(hr_redone, ep_redone);
}

}  // namespace pmlab::testing
