// The generic machinery on a toy kernel: a scheme table yields the native driver (names, arrays,
// the resumable state machine) and the simulator's entry points, which refuse native-only schemes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "pmlab/kernels/checks.hpp"
#include "pmlab/run/resumable.hpp"
#include "pmlab/run/sim_kernel.hpp"
#include "pmlab/scheme/native_path.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::run {
namespace {

using namespace pmlab::scheme;  // the Scheme row type

namespace fs = std::filesystem;

// out[i] = 2·in[i] + 1 in blocks of bs elements; the outer iteration is a block.
struct ToyOperands {
  const double* in = nullptr;
  double* out = nullptr;
  std::uint64_t* done = nullptr;  // "progress" scheme: blocks durably complete
  std::size_t n = 0, bs = 1;
  [[nodiscard]] std::size_t blocks() const { return (n + bs - 1) / bs; }
};
using Ctx = SchemeContext<ToyOperands>;

template <mem::Backend B>
void toy_block(B& be, const ToyOperands& op, std::size_t b) {
  for (std::size_t i = b * op.bs; i < std::min(op.n, b * op.bs + op.bs); ++i)
    be.store(op.out + i, 2.0 * be.load(op.in + i) + 1.0);
}

template <mem::Backend B>
void toy_run(B& be, const ToyOperands& op, std::size_t first, bool record) {
  for (std::size_t b = first; b < op.blocks(); ++b) {
    toy_block(be, op, b);
    if (!record) continue;
    be.persist(op.out + b * op.bs, (std::min(op.n, b * op.bs + op.bs) - b * op.bs) * 8);
    be.store(op.done, std::uint64_t{b + 1});
    be.persist(op.done, sizeof(std::uint64_t));
  }
}

constexpr auto restart = [](mem::Backend auto&, const Ctx&, RunReport& r) -> std::size_t {
  r.recovery_action = "restart";
  return 0;
};

// The whole description of a scheme is its row: four schemes, a few lines each.
constexpr auto kToySchemes = std::tuple{
    Scheme{.name = "base",
           .run = [](mem::Backend auto& be, const Ctx& c,
                     std::size_t first) { toy_run(be, c.op, first, false); },
           .recover = restart},
    Scheme{.name = "progress",
           .arrays =
               [](const pool::RunParams&) {
                 return std::vector<pool::ArraySpec>{{"done", sizeof(std::uint64_t)}};
               },
           .run = [](mem::Backend auto& be, const Ctx& c,
                     std::size_t first) { toy_run(be, c.op, first, true); },
           .recover = [](mem::Backend auto& be, const Ctx& c, RunReport& r) -> std::size_t {
             r.recovery_action = "resume after the last recorded block";
             ++r.recovery.regions_validated;
             return be.load(c.op.done);
           }},
    Scheme{.name = "device",
           .run = [](mem::Backend auto& be, const Ctx& c,
                     std::size_t first) { toy_run(be, c.op, first, false); },
           .recover = restart,
           .sim_refusal = "it drives a device the simulator does not model"},
    Scheme{.name = "native-typed",
           .run = []<mem::Backend B>(B & be, const Ctx& c,
                                     std::size_t first) requires scheme::kIsNativeBackend<B>{
               toy_run(be, c.op, first, false);
}  // namespace
, .recover = restart
}  // namespace pmlab::run
,
}
;

struct Toy {
  using Operands = ToyOperands;
  static constexpr std::string_view kName = "toy";
  static constexpr std::uint64_t kCrashTestMaxN = 64;
  static constexpr bool kPowerOfTwoN = false;
  static constexpr const auto& schemes = kToySchemes;
  static void validate(const pool::RunParams& p) { require_in_range(kName, "--n", p.n, 1, 1000); }
  static std::vector<pool::ArraySpec> arrays(const pool::RunParams& p) {
    return {{"in", p.n * 8}, {"out", p.n * 8}};
  }
  static void init(pool::Pool& pool) {
    for (std::size_t i = 0; i < pool.params().n; ++i)
      pool.array<double>("in")[i] = static_cast<double>(i);
  }
  static Operands operands(const pool::Pool& pool) {
    const auto& p = pool.params();
    return {pool.array<const double>("in"), pool.array<double>("out"),
            pool.has_array("done") ? pool.array<std::uint64_t>("done") : nullptr, p.n, p.bs};
  }
  static OutputBytes output(const Operands& op) { return {op.out, op.n * 8}; }
  static VerifyResult verify(const pool::Pool& pool) {
    std::vector<double> want(pool.params().n);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = 2.0 * static_cast<double>(i) + 1.0;
    return compare_bits(pool.array<const double>("out"), want,
                        [](std::size_t i) { return "out[" + std::to_string(i) + "]"; });
  }
  static std::uint64_t base_refs(const pool::RunParams& p) { return 2 * p.n; }
};
static_assert(ResumableKernel<Toy>);

class KernelSimTable : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }
  pool::Pool create(const std::string& scheme, std::uint64_t n = 10, std::uint64_t bs = 3) {
    pool::RunParams p;
    p.kernel = "toy";
    p.scheme = scheme;
    p.n = n;
    p.bs = bs;
    const KernelDriver d = make_kernel_driver<Toy>();
    d.validate(p);
    return pool::Pool::create((dir_ / scheme).string(), p, d.arrays(p), d.init);
  }
  fs::path dir_ = fs::temp_directory_path() / ("pmlab-toy-" + std::to_string(getpid()));
};

TEST_F(KernelSimTable, TheTableNamesTheSchemesAndTheirArrays) {
  const KernelDriver d = make_kernel_driver<Toy>();
  EXPECT_EQ(d.name, "toy");
  EXPECT_EQ(d.schemes, (std::vector<std::string>{"base", "progress", "device", "native-typed"}));
  pool::RunParams p;
  p.n = 4;
  p.scheme = "progress";
  ASSERT_EQ(d.arrays(p).size(), 3u);
  EXPECT_EQ(d.arrays(p)[2].name, "done");
  p.scheme = "base";
  EXPECT_EQ(d.arrays(p).size(), 2u);
  p.scheme = "magic";
  try {
    d.validate(p);
    FAIL() << "an unknown scheme was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(),
                 "unknown scheme 'magic' for toy (known: base, progress, device, native-typed)");
  }
}

TEST_F(KernelSimTable, ExecuteResumesWhereTheSchemesRecoverySays) {
  auto pool = create("progress");
  const KernelDriver d = make_kernel_driver<Toy>();
  // As if killed after block 1 was recorded: state running, two blocks done.
  pool.set_state(pool::RunState::kRunning);
  *pool.array<std::uint64_t>("done") = 2;
  for (std::size_t i = 0; i < 6; ++i)
    pool.array<double>("out")[i] = 2.0 * static_cast<double>(i) + 1.0;
  const RunReport r = d.execute(pool, ExecOptions{persist::PersistMode::kNone});
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(r.recovery_action, "resume after the last recorded block");
  EXPECT_EQ(r.resume_point, 2u);
  EXPECT_EQ(r.recovery.regions_validated, 1u);
  EXPECT_EQ(pool.state(), pool::RunState::kDone);
  EXPECT_EQ(*pool.array<std::uint64_t>("done"), 4u);
  EXPECT_TRUE(d.verify(pool).ok());
}

TEST_F(KernelSimTable, TheSimulatorRunsTheSameRowsAndRefusesNativeOnlyOnes) {
  const SimKernel sk = make_sim_kernel<Toy>();
  pool::RunParams p;
  p.kernel = "toy";
  p.n = 10;
  for (const std::string s : {"base", "progress"}) {
    p.scheme = s;
    EXPECT_NO_THROW(sk.check(p)) << s;
  }
  const std::pair<const char*, const char*> refused[] = {
      {"device",
       "scheme 'device' of toy runs natively only: it drives a device the simulator "
       "does not model (use `pmlab run`)"},
      {"native-typed",
       "scheme 'native-typed' of toy runs natively only: its code does not run "
       "on the simulator's backend (use `pmlab run`)"}};
  for (const auto& [s, message] : refused) {
    p.scheme = s;
    try {
      sk.check(p);
      ADD_FAILURE() << s << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_STREQ(e.what(), message);
    }
  }

  auto pool = create("progress");
  auto be = sim::SimBackend::from_preset("lp-isca18", sim::FlushMode::kClflushopt, 2);
  sk.run(be, pool, 0);
  EXPECT_TRUE(Toy::verify(pool).ok());
  EXPECT_GT(be.stats().flushes, 0u);  // the row's flushes went through the simulator
  RunReport r;
  EXPECT_EQ(sk.recover(be, pool, r), 4u);
  EXPECT_EQ(r.resume_point, 4u);
  EXPECT_EQ(sk.base_refs(pool.params()), 20u);
}

}  // namespace
}  // namespace pmlab::run
