// Every tmm scheme end to end through the kernel driver on real pool files, incl. pmemobj's object
// pool.
#include <gtest/gtest.h>
#include <libpmemobj.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pmlab/core/error.hpp"
#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm_pmemobj.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"

namespace pmlab::scheme_test {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("pmlab-scheme-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

run::ExecOptions exec_options() {
  run::ExecOptions o;
  o.mode = persist::cpu_supports(persist::FlushKind::kClwb) ? persist::PersistMode::kCpu
                                                            : persist::PersistMode::kNone;
  return o;
}

pool::RunParams params_for(const std::string& scheme, std::uint64_t n, std::uint64_t bs,
                           std::uint32_t threads) {
  pool::RunParams p;
  p.kernel = "tmm";
  p.scheme = scheme;
  p.n = n;
  p.bs = bs;
  p.threads = threads;
  return p;
}

TEST(SchemeTmmDriver, EverySchemeRunsToABitExactResultOnAPool) {
  TempDir dir;
  const auto& k = run::find_kernel("tmm");
  const std::vector<std::string> all{"base",         "lp",           "ep-ii",
                                     "ep-jj",        "wal-ii",       "wal-jj",
                                     "wal-ii-entry", "wal-jj-entry", "wal-ii-entry-sync",
                                     "cp",           "cp-clflush",   "cp-par-clflush",
                                     "cp-nt",        "ipv-sync",     "ipv",
                                     "ipv-nf",       "hr-ii-x32",    "hr-ii-x64",
                                     "hr-jj-x32",    "hr-jj-x64",    "pmemobj"};
  EXPECT_EQ(k.schemes, all);
  for (const auto& s : all) {
    const auto path = (dir.path / s).string();
    const auto p = params_for(s, 21, 4, 2);
    k.validate(p);
    auto pool = pool::Pool::create(path, p, k.arrays(p), k.init);
    for (const auto& array : k.arrays(p)) EXPECT_TRUE(pool.has_array(array.name)) << s;
    const auto report = k.execute(pool, exec_options());
    EXPECT_FALSE(report.resumed);
    EXPECT_EQ(pool.state(), pool::RunState::kDone);
    const auto v = k.verify(pool);
    EXPECT_TRUE(v.ok()) << s << ": " << v.first_mismatch;
    EXPECT_FALSE(fs::exists(kernels::tmm::PmemobjTmm::path_for(path)))
        << "object pool left behind by " << s;
  }
}

TEST(SchemeTmmDriver, PmemobjReplacesAStaleObjectPoolOnAFreshRun) {
  TempDir dir;
  const auto path = (dir.path / "p").string();
  const auto obj = kernels::tmm::PmemobjTmm::path_for(path);
  std::ofstream(obj) << "left over from an earlier run";
  const auto& k = run::find_kernel("tmm");
  const auto p = params_for("pmemobj", 13, 5, 1);
  auto pool = pool::Pool::create(path, p, k.arrays(p), k.init);
  k.execute(pool, exec_options());
  EXPECT_TRUE(k.verify(pool).ok());
  EXPECT_FALSE(fs::exists(obj));
}

// A process dies inside a libpmemobj transaction that scribbled over C: reopening rolls it
// back, and the run then resumes from the panels' kk_done words.
TEST(SchemeTmmDriver, PmemobjTransactionInterruptedByProcessDeathRollsBackOnOpen) {
  TempDir dir;
  const auto path = (dir.path / "obj").string();
  const std::size_t n = 12, bs = 5;
  kernels::tmm::PmemobjTmm::Options o{n, bs, 1, /*fresh=*/true, /*force_pmem=*/true};
  {
    auto fresh = kernels::tmm::PmemobjTmm::open_or_create(path, o);
    EXPECT_EQ(fresh.resume_point(), 0u);
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // child: open, start a transaction, scribble, die without committing
    o.fresh = false;
    auto obj = kernels::tmm::PmemobjTmm::open_or_create(path, o);
    PMEMobjpool* pop = pmemobj_pool_by_ptr(obj.c());
    if (pop == nullptr || pmemobj_tx_begin(pop, nullptr, TX_PARAM_NONE) != 0) ::_exit(2);
    if (pmemobj_tx_add_range_direct(obj.c(), n * sizeof(double)) != 0) ::_exit(3);
    for (std::size_t j = 0; j < n; ++j) obj.c()[j] = 12345.0;
    pmemobj_persist(pop, obj.c(), n * sizeof(double));  // the scribble is durable
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  o.fresh = false;
  auto obj = kernels::tmm::PmemobjTmm::open_or_create(path, o);
  for (std::size_t j = 0; j < n; ++j) EXPECT_EQ(obj.c()[j], 0.0) << j;
  EXPECT_EQ(obj.resume_point(), 0u);
  // Finish the run from there and compare with base.
  std::vector<double> a(n * n), b(n * n), ref(n * n, 0.0), got(n * n);
  for (std::size_t i = 0; i < n * n; ++i) {
    a[i] = kernels::input_value(1, 0, i);
    b[i] = kernels::input_value(1, 1, i);
  }
  kernels::tmm::Operands op{{a.data(), n, n}, {b.data(), n, n}, {ref.data(), n, n}, n, bs};
  mem::PlainBackend be;
  kernels::tmm::run_base(be, op);
  obj.run(op, 0);
  obj.copy_c(got.data());
  EXPECT_EQ(got, ref);
  EXPECT_EQ(obj.resume_point(), op.tiles());
  EXPECT_THROW(kernels::tmm::PmemobjTmm::open_or_create(path, {n + 1, bs, 1, false, true}), Error);
}

}  // namespace
}  // namespace pmlab::scheme_test
