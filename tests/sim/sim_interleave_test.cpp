// Fine-grained thread interleaving (SimParams::interleave_quantum): turn order, determinism,
// exact crash points with every fiber unwound, and every kernel x scheme still bit-exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/sim_backend.hpp"
#include "sim_test_util.hpp"

namespace pmlab::sim {
namespace {

using testing::LineBuffer;
using testing::ParamsBuilder;

// Which thread ran each op of a 3-thread loop of 3 iterations x 5 stores.
std::vector<int> op_owners(std::uint64_t quantum) {
  SimBackend be(ParamsBuilder().cores(3).quantum(quantum).build(), FlushMode::kClwb);
  LineBuffer buf(16);
  std::vector<int> owner;
  be.parallel_for(0, 3, [&](std::size_t it) {
    for (int k = 0; k < 5; ++k) {
      be.store(buf.as<double>() + it * 8 * 5 + static_cast<std::size_t>(k) * 8, 1.0);
      owner.push_back(be.current_thread());
    }
  });
  EXPECT_EQ(be.current_thread(), 0);
  return owner;
}

TEST(SimInterleave, ThreadsTakeTurnsOfQuantumOps) {
  EXPECT_EQ(op_owners(0), (std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2}))
      << "quantum 0: one whole iteration per turn";
  EXPECT_EQ(op_owners(2), (std::vector<int>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 1, 2}));
  EXPECT_EQ(op_owners(1), (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(SimInterleave, UnevenChunksAndNestedLoops) {
  SimBackend be(ParamsBuilder().cores(2).quantum(3).build(), FlushMode::kClwb);
  LineBuffer buf(64);
  std::vector<std::size_t> seen;
  // 5 iterations on 2 threads: thread 0 gets 0-2, thread 1 gets 3-4; each iteration runs a
  // nested (serial) loop of 2 stores.
  be.parallel_for(0, 5, [&](std::size_t it) {
    be.parallel_for(0, 2, [&](std::size_t j) {
      be.store(buf.as<double>() + (it * 2 + j) * 8, 2.0);
      seen.push_back(it);
    });
  });
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 0, 1, 3, 3, 4, 1, 2, 2, 4}));
  EXPECT_EQ(be.ops(), 10u);
}

TEST(SimInterleave, ACrashIsExactAndUnwindsEveryThread) {
  struct Counted {
    int& live;
    explicit Counted(int& l) : live(l) { ++live; }
    ~Counted() { --live; }
  };
  for (std::uint64_t k : {1u, 2u, 7u, 13u, 30u}) {
    SimBackend be(ParamsBuilder().cores(3).quantum(2).build(), FlushMode::kClwb);
    LineBuffer buf(64);
    int live = 0;
    be.arm_crash(k);
    EXPECT_THROW(be.parallel_for(0, 3,
                                 [&](std::size_t it) {
                                   const Counted guard(live);
                                   for (std::size_t j = 0; j < 10; ++j)
                                     be.store(buf.as<double>() + (it * 10 + j) * 8, 3.0);
                                 }),
                 PowerFailure)
        << k;
    EXPECT_EQ(be.ops(), k - 1) << "exactly ops 1..K-1 ran";
    EXPECT_EQ(live, 0) << "every started thread's frames were unwound";
    EXPECT_TRUE(be.crashed());
    EXPECT_EQ(be.current_thread(), 0);
    // The backend runs on after the failure, interleaved as before.
    be.apply_crash_image();
    be.parallel_for(0, 2, [&](std::size_t it) { be.store(buf.as<double>() + it * 8, 4.0); });
    EXPECT_EQ(be.ops(), k + 1);
  }
}

TEST(SimInterleave, AHookThatDeclinesLetsTheRunContinue) {
  SimBackend be(ParamsBuilder().cores(2).quantum(4).build(), FlushMode::kClwb);
  LineBuffer buf(64);
  std::vector<std::uint64_t> asked;
  be.arm_hook(5, [&](std::uint64_t k) {
    asked.push_back(k);
    be.arm_hook(9, [&](std::uint64_t k2) {
      asked.push_back(k2);
      return false;
    });
    return false;
  });
  be.parallel_for(0, 2, [&](std::size_t it) {
    for (std::size_t j = 0; j < 8; ++j) be.store(buf.as<double>() + (it * 8 + j) * 8, 5.0);
  });
  EXPECT_EQ(asked, (std::vector<std::uint64_t>{5, 9}));
  EXPECT_EQ(be.ops(), 16u);
}

run::SimRunSpec small_spec(const run::KernelDriver& k, const std::string& scheme,
                           std::uint64_t quantum, CoreModel model) {
  run::SimRunSpec spec;
  spec.run.kernel = k.name;
  spec.run.scheme = scheme;
  spec.run.n = k.n_power_of_two ? 256 : 40;
  spec.run.bs = 8;
  spec.run.threads = 3;
  spec.run.seed = 5;
  sim::MachineSettings small;
  small.set("cores", 4);
  small.set("l1-size", 2048);
  small.set("llc-size", 16384);
  spec.machine = sim::machine_from("lp-isca18", small);
  spec.machine.interleave_quantum = quantum;
  spec.machine.core.model = model;
  spec.verify = true;
  return spec;
}

TEST(SimInterleave, EveryKernelAndSchemeStaysBitExactAndDeterministic) {
  int runs = 0;
  for (const auto& k : run::kernel_drivers())
    for (const auto& scheme : k.schemes) {
      run::SimRunSpec spec = small_spec(k, scheme, 7, CoreModel::kInterval);
      try {
        run::find_sim_kernel(k.name).check(spec.run);
      } catch (const Error&) {
        continue;  // native-only
      }
      const run::SimRunResult a = run::simulate(spec);
      ASSERT_TRUE(a.verify && a.verify->ok()) << k.name << " " << scheme;
      const run::SimRunResult b = run::simulate(spec);
      EXPECT_EQ(to_json(a.stats), to_json(b.stats)) << k.name << " " << scheme;
      ++runs;
    }
  EXPECT_GE(runs, 30);
}

TEST(SimInterleave, CrashRecoverFinishIsBitExactAtManyPoints) {
  for (const char* kernel : {"tmm", "lu", "cholesky"})
    for (const char* scheme : {"lp", "ep-ii"}) {
      const run::KernelDriver& kd = run::find_kernel(kernel);
      bool has = false;
      for (const auto& s : kd.schemes) has |= s == scheme;
      if (!has) continue;
      const run::SimRunSpec spec = small_spec(kd, scheme, 5, CoreModel::kInterval);
      const std::uint64_t total = run::simulate(spec).ops;
      for (std::uint64_t k = 1; k < total; k += total / 7 + 1) {
        run::SimSession s(spec);
        auto& be = s.backend();
        be.arm_crash(k);
        EXPECT_THROW(s.run(), PowerFailure) << kernel << " " << scheme << " " << k;
        EXPECT_EQ(be.ops(), k - 1);
        be.apply_crash_image();
        run::RunReport report;
        const std::size_t first = s.recover(report);
        s.run(first);
        EXPECT_TRUE(s.verify().ok()) << kernel << " " << scheme << " crash at " << k;
      }
    }
}

}  // namespace
}  // namespace pmlab::sim
