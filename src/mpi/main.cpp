// pmlab-mpi: a kernel run across MPI ranks, one pool per rank (DIR/rank-R.pool), and its
// restart after a failure from what the pools hold (docs/distributed.md).
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "comm.hpp"
#include "dist_kernels.hpp"
#include "dist_lp.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/persist/flush.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"

namespace {

using pmlab::Error;
using pmlab::ErrorCode;
using pmlab::dist::Comm;
using pmlab::dist::world;

// docs/exit-codes.md
constexpr int kExitOk = 0, kExitVerify = 1, kExitUsage = 2, kExitPool = 3, kExitInternal = 4;

int exit_code_of(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kUnsupported:
      return kExitUsage;
    case ErrorCode::kInterrupted:
      return 130;
    default:
      return kExitPool;
  }
}

struct Args {
  std::string kernel, pool_dir, scheme = "lp", checksum = "modular", persist = "cpu",
                                flush{pmlab::persist::to_string(pmlab::persist::best_flush_kind())},
                                compare_with, mutate, json;
  std::uint64_t n = 64, bs = 8, seed = 1;
  std::uint32_t threads = 1;
  std::optional<std::uint64_t> iters, lp_anchor, nnz;
  bool no_verify = false, quiet = false;
};

// A step that every rank takes: the worst exit code any rank met is every rank's, and each
// rank that failed says why (rank 0's message alone when all failed alike).
class Agreed {
 public:
  template <class Fn>
  int step(Fn&& fn) {
    int code = kExitOk;
    std::string msg;
    try {
      fn();
    } catch (const Error& e) {
      code = exit_code_of(e);
      msg = e.what();
    } catch (const std::exception& e) {
      code = kExitInternal;
      msg = e.what();
    }
    const auto worst = static_cast<int>(world().max_of(code));
    if (!msg.empty()) fmt::print(stderr, "pmlab-mpi: rank {}: error: {}\n", world().rank(), msg);
    return worst;
  }
};

std::string pool_path(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) / fmt::format("rank-{}.pool", rank)).string();
}

pmlab::pool::RunParams params_of(const Args& a, const pmlab::dist::DistDriver& k, int ranks,
                                 int rank) {
  pmlab::pool::RunParams p;
  p.kernel = a.kernel;
  p.scheme = a.scheme;
  p.checksum = a.checksum;
  p.threads = a.threads;
  p.n = a.n;
  p.bs = a.bs;
  p.seed = a.seed;
  p.set_kernel_param(pmlab::dist::kRanksParam, static_cast<std::uint64_t>(ranks));
  p.set_kernel_param(pmlab::dist::kRankParam, static_cast<std::uint64_t>(rank));
  p.set_kernel_param(pmlab::dist::kJobParam, 0);
  const auto declares = [&](const char* name) {
    for (const auto& s : k.driver.params)
      if (s.name == name) return true;
    return false;
  };
  if (a.nnz) {
    if (!declares("nnz"))
      throw Error(ErrorCode::kInvalidArgument, fmt::format("{} has no --nnz", a.kernel));
    p.set_kernel_param("nnz", *a.nnz);
  }
  if (a.iters) p.set_kernel_param("iters", *a.iters);
  if (a.lp_anchor) p.set_kernel_param("lp-anchor", *a.lp_anchor);
  return p;
}

// Opens this rank's pool, or creates every rank's when none exists. Refused (exit 3): a
// directory holding pools of only some ranks, a pool of another rank count, rank or job.
std::optional<pmlab::pool::Pool> open_pools(const Args& a, const pmlab::dist::DistDriver& k,
                                            pmlab::pool::RunParams& p, Agreed& agreed, int& code) {
  const Comm& comm = world();
  const std::string path = pool_path(a.pool_dir, comm.rank());
  std::uint64_t present = 0;
  code = agreed.step([&] {
    std::filesystem::create_directories(a.pool_dir);
    present = std::filesystem::exists(path) ? 1 : 0;
  });
  if (code != kExitOk) return std::nullopt;
  const std::uint64_t pools = comm.sum_of(present);
  const auto ranks = static_cast<std::uint64_t>(comm.size());
  std::optional<pmlab::pool::Pool> pool;
  if (pools == 0) {
    // A new job: rank 0 draws its id, every rank creates its pool with it.
    std::uint64_t job = 0;
    if (comm.rank() == 0)
      job = std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32);
    job = comm.broadcast(job);
    code = agreed.step([&] {
      p.set_kernel_param(pmlab::dist::kJobParam, job);
      pmlab::pool::RunParams stamped = p;
      stamped.layout_tag = k.driver.layout_tag(p);
      pool.emplace(pmlab::pool::Pool::create(path, stamped, k.driver.arrays(p), k.driver.init));
    });
  } else {
    std::uint64_t job = 0;
    code = agreed.step([&] {
      if (pools != ranks) {
        std::string written;
        if (comm.rank() == 0 && present == 1)
          written = fmt::format(
              " (rank-0.pool was written by a job of {} ranks)",
              pmlab::pool::Pool::read_params(path).kernel_param(pmlab::dist::kRanksParam, 0));
        if (comm.rank() == 0)
          throw Error(ErrorCode::kPoolMismatch,
                      fmt::format("{} holds pools of {} of this job's {} ranks{}: restart with "
                                  "the job's own rank count (mpirun -np), or use a new --pool "
                                  "directory",
                                  a.pool_dir, pools, ranks, written));
        throw Error(ErrorCode::kPoolMismatch, "");
      }
      const pmlab::pool::RunParams stored = pmlab::pool::Pool::read_params(path);
      const std::uint64_t had = stored.kernel_param(pmlab::dist::kRanksParam, 0);
      if (had != ranks)
        throw Error(ErrorCode::kPoolMismatch,
                    fmt::format("{} was written by a job of {} ranks; this job has {}: restart "
                                "it with mpirun -np {} (a restart must keep the rank count)",
                                path, had, ranks, had));
      if (stored.kernel_param(pmlab::dist::kRankParam, ranks) !=
          static_cast<std::uint64_t>(comm.rank()))
        throw Error(ErrorCode::kPoolMismatch,
                    fmt::format("{} belongs to rank {}, not {} (renamed?)", path,
                                stored.kernel_param(pmlab::dist::kRankParam, 0), comm.rank()));
      job = stored.kernel_param(pmlab::dist::kJobParam, 0);
    });
    if (code != kExitOk) return std::nullopt;
    const auto lo = static_cast<std::uint64_t>(comm.min_of(static_cast<std::int64_t>(job)));
    const auto hi = static_cast<std::uint64_t>(comm.max_of(static_cast<std::int64_t>(job)));
    code = agreed.step([&] {
      if (lo != hi)
        throw Error(ErrorCode::kPoolMismatch,
                    fmt::format("{} belongs to job {:x}, but the directory mixes jobs {:x} and "
                                "{:x}: every rank-R.pool must come from one job",
                                path, job, lo, hi));
      p.set_kernel_param(pmlab::dist::kJobParam, job);
      pmlab::pool::RunParams stamped = p;
      stamped.layout_tag = k.driver.layout_tag(p);
      pool.emplace(pmlab::pool::Pool::open(path, stamped));
    });
  }
  if (code != kExitOk) return std::nullopt;
  return pool;
}

int run(const Args& a) {
  Comm& comm = world();
  Agreed agreed;
  const pmlab::dist::DistDriver* k = pmlab::dist::dist_driver_named(a.kernel);
  pmlab::pool::RunParams p;
  int code = agreed.step([&] {
    if (k == nullptr)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("pmlab-mpi runs jacobi and cg, not '{}'", a.kernel));
    using pmlab::dist::Control;
    if (a.mutate == "resume-own")
      pmlab::dist::control() = Control::kResumeOwn;
    else if (a.mutate == "resume-latest-any")
      pmlab::dist::control() = Control::kResumeLatestAny;
    else if (!a.mutate.empty())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--mutate: the negative controls are resume-own and "
                              "resume-latest-any, not '{}'",
                              a.mutate));
    if (const char* us = std::getenv("PMLAB_MPI_COMMIT_DELAY_US"); us != nullptr)
      pmlab::dist::commit_delay_us() = static_cast<unsigned>(std::strtoul(us, nullptr, 10));
    p = params_of(a, *k, comm.size(), comm.rank());
    k->driver.validate(p);
  });
  if (code != kExitOk) return code;
  std::optional<pmlab::pool::Pool> pool = open_pools(a, *k, p, agreed, code);
  if (code != kExitOk) return code;
  pmlab::run::ExecOptions opt;
  code = agreed.step([&] {
    opt.mode = pmlab::run::persist_mode_from_string(a.persist);
    opt.flush = pmlab::persist::flush_kind_from_string(a.flush);
  });
  if (code != kExitOk) return code;
  // From here on a failure on one rank leaves the others inside a collective: it aborts the job.
  pmlab::run::RunReport report;
  try {
    report = k->driver.execute(*pool, opt);
  } catch (const Error& e) {
    fmt::print(stderr, "pmlab-mpi: rank {}: error: {}\n", comm.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, exit_code_of(e));
  } catch (const std::exception& e) {
    fmt::print(stderr, "pmlab-mpi: rank {}: internal error: {}\n", comm.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, kExitInternal);
  }
  const auto& rs = report.recovery;
  const auto& ag = pmlab::dist::last_agreement();
  const std::vector<double> mine{static_cast<double>(rs.regions_validated),
                                 static_cast<double>(rs.regions_inconsistent),
                                 static_cast<double>(rs.regions_unwritten),
                                 static_cast<double>(rs.regions_recomputed),
                                 static_cast<double>(ag.durable),
                                 static_cast<double>(ag.latest_held),
                                 static_cast<double>(report.resume_point),
                                 report.compute_seconds,
                                 report.recovery_seconds};
  const std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), mine.size());
  const std::vector<double> all = comm.gather(mine, counts);
  std::uint64_t mismatches = 0;
  std::string first_mismatch;
  if (!a.no_verify) {
    const pmlab::run::VerifyResult v = k->driver.verify(*pool);
    mismatches = comm.sum_of(v.mismatches);
    if (!v.ok())
      fmt::print(stderr,
                 "pmlab-mpi: rank {}: {} elements differ from the fault-free run; first: "
                 "{}\n",
                 comm.rank(), v.mismatches, v.first_mismatch);
  }
  // The whole state against a single-process pool of the same parameters (pmlab run's).
  const std::vector<double> whole = k->gather_state(*pool);
  bool same_as_single = true;
  if (comm.rank() == 0 && !a.compare_with.empty()) {
    const pmlab::pool::Pool single = pmlab::pool::Pool::open(a.compare_with);
    const auto& info = single.array_info(k->state_array);
    same_as_single =
        info.bytes == whole.size() * sizeof(double) &&
        std::memcmp(single.array<const double>(k->state_array), whole.data(), info.bytes) == 0;
    fmt::print("{}: {} bytes {} {}'s {}\n", a.kernel, info.bytes,
               same_as_single ? "identical to" : "DIFFER from", a.compare_with, k->state_array);
  }
  const auto bad = static_cast<int>(comm.max_of(same_as_single ? 0 : 1));
  if (comm.rank() == 0) {
    double compute = 0;
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < comm.size(); ++r) {
      const double* x = all.data() + static_cast<std::size_t>(r) * mine.size();
      compute = std::max(compute, x[7]);
      ranks.push_back({{"rank", r},
                       {"regions_validated", x[0]},
                       {"regions_inconsistent", x[1]},
                       {"regions_unwritten", x[2]},
                       {"regions_recomputed", x[3]},
                       {"durable", x[4]},
                       {"latest_held", x[5]},
                       {"resume_point", x[6]},
                       {"compute_seconds", x[7]},
                       {"recovery_seconds", x[8]}});
      if (!a.quiet && report.resumed)
        fmt::print(
            "rank {}: regions validated {}, inconsistent {}, unwritten {}, recomputed {}; "
            "durable {}, latest held {}, resumed at {} (iterations redone {})\n",
            r, x[0], x[1], x[2], x[3], x[4], x[5], x[6],
            x[6] < static_cast<double>(k->driver.outer_steps(p)) ? x[5] - x[6] + 1 : 0.0);
    }
    if (!a.quiet)
      fmt::print("{} {} on {} ranks, n={} bs={}: {}{}, compute {:.4f} s (slowest rank){}\n",
                 a.kernel, a.scheme, comm.size(), a.n, a.bs, report.resumed ? "resumed: " : "",
                 report.recovery_action.empty() ? std::string("fresh run") : report.recovery_action,
                 compute,
                 a.no_verify ? "" : (mismatches == 0 ? ", verified bit-exact" : ", MISMATCH"));
    if (!a.json.empty()) {
      nlohmann::json j{{"kernel", a.kernel},
                       {"scheme", a.scheme},
                       {"ranks", comm.size()},
                       {"n", a.n},
                       {"bs", a.bs},
                       {"resumed", report.resumed},
                       {"compute_seconds", compute},
                       {"mismatches", mismatches},
                       {"per_rank", ranks}};
      std::FILE* f = std::fopen(a.json.c_str(), "w");
      if (f != nullptr) {
        fmt::print(f, "{}\n", j.dump(2));
        std::fclose(f);
      }
    }
  }
  return mismatches != 0 || bad != 0 ? kExitVerify : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  Comm::init(&argc, &argv);
  CLI::App app{
      "pmlab-mpi: a pmlab kernel across MPI ranks, each rank on a pool of its own "
      "(DIR/rank-R.pool), restarted after a failure from what the pools hold "
      "(docs/distributed.md).\n\nExit codes as pmlab's (docs/exit-codes.md): 0 ok, 1 "
      "verification failed, 2 bad usage, 3 pool of another job/size/rank or I/O error, 4 "
      "internal error."};
  app.require_subcommand(1);
  Args a;
  CLI::App* cmd = app.add_subcommand("run", "Run (or resume) KERNEL on every rank");
  cmd->add_option("kernel", a.kernel, "jacobi or cg")->required();
  cmd->add_option("--pool", a.pool_dir, "Directory of the ranks' pools (rank-R.pool)")->required();
  cmd->add_option("--scheme", a.scheme, "lp (default) or base");
  cmd->add_option("--n", a.n, "Problem size (as pmlab run)");
  cmd->add_option("--bs", a.bs, "Rows per block (an LP region; a rank holds whole blocks)");
  cmd->add_option("--seed", a.seed, "Input generator seed");
  cmd->add_option("--threads", a.threads, "Threads per rank");
  cmd->add_option("--checksum", a.checksum, "LP's checksum kind");
  cmd->add_option("--iters", a.iters, "Solver iterations (jacobi 11, cg 15)");
  cmd->add_option("--lp-anchor", a.lp_anchor, "LP: iterations between anchors, K (default 4)");
  cmd->add_option("--nnz", a.nnz, "cg: entries per matrix row");
  cmd->add_option("--persist", a.persist, "cpu (default), auto or none, as pmlab run");
  cmd->add_option("--flush", a.flush,
                  "clwb, clflushopt or clflush (default: the best this CPU has)");
  cmd->add_flag("--no-verify", a.no_verify, "Skip the bit-for-bit check against one process");
  cmd->add_option("--compare-with", a.compare_with,
                  "A single-process pool (pmlab run) of the same parameters: compare the whole "
                  "state byte for byte");
  cmd->add_option(
      "--mutate", a.mutate,
      "Negative control of the restart rule: resume-own (no agreement) or resume-latest-any");
  cmd->add_option("--json", a.json, "Write the per-rank report here (rank 0)");
  cmd->add_flag("--quiet", a.quiet, "Print nothing on success");
  int code = kExitOk;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    code = world().rank() == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
    code = code == 0 ? kExitOk : kExitUsage;
  }
  if (code == kExitOk && cmd->parsed()) code = run(a);
  Comm::finalize();
  return code;
}
