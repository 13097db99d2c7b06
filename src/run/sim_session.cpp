// Simulated kernel x scheme runs: the table of per-kernel sim entry points, the scratch-pool
// session.
#include "pmlab/run/sim_session.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/run/user_kernel.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::run {

const SimKernel& find_sim_kernel(const std::string& name) {
  for (const auto& k : sim_kernels())
    if (k.name == name) return k;
  std::string known;
  for (const auto& k : sim_kernels()) known += (known.empty() ? "" : ", ") + k.name;
  throw Error(
      ErrorCode::kInvalidArgument,
      fmt::format("kernel '{}' has no simulator entry point (simulated kernels: {})", name, known));
}

// ---------------------------------------------------------------------------------------------
// The session.

namespace {

// DRAM-backed scratch space: /dev/shm when usable, else $TMPDIR, else /tmp.
std::vector<std::string> scratch_dirs() {
  std::vector<std::string> dirs;
  if (access("/dev/shm", W_OK) == 0) dirs.emplace_back("/dev/shm");
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') dirs.emplace_back(t);
  dirs.emplace_back("/tmp");
  return dirs;
}

pool::Pool scratch_pool(const KernelDriver& kd, const pool::RunParams& p) {
  static std::atomic<std::uint64_t> counter{0};
  const auto arrays = kd.arrays(p);
  std::string errors;
  for (const auto& dir : scratch_dirs()) {
    const std::string path = fmt::format("{}/pmlab-sim-{}-{}.pool", dir, getpid(), counter++);
    try {
      pool::Pool pool = pool::Pool::create(path, p, arrays, kd.init);
      ::unlink(path.c_str());  // the mapping stays valid; nothing is left behind
      return pool;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kIo) throw;
      errors += fmt::format("{}{}", errors.empty() ? "" : "; ", e.what());
    }
  }
  throw Error(ErrorCode::kIo, "cannot create the simulator's scratch arrays: " + errors);
}

sim::SimBackend make_backend(const SimRunSpec& spec, pool::Pool& pool) {
  sim::SimBackend be(spec.machine, spec.flush, static_cast<int>(spec.run.threads));
  // Every array is persistent data; its initial bytes count as persisted at setup.
  for (const auto& a : pool.arrays())
    if (a.bytes > 0) be.register_persistent(pool.base() + a.offset, a.bytes);
  return be;
}

}  // namespace

struct SimSession::State {
  SimRunSpec spec;
  const KernelDriver* kd;
  const SimKernel* sk;
  pool::Pool pool;
  sim::SimBackend be;

  // Members are built in order: every check runs before anything is allocated.
  explicit State(const SimRunSpec& s)
      : spec((validate(s), s)),
        kd(s.user ? &s.user->driver : &find_kernel(s.run.kernel)),
        sk(s.user ? &s.user->sim : &find_sim_kernel(s.run.kernel)),
        pool(scratch_pool(*kd, s.run)),
        be(make_backend(s, pool)) {
    // Seed 002 §3's DRAM cache (--dram-cache on; nothing otherwise): the kernel's output, the
    // object it declares it rewrites (ResumableKernel::output), is placed for every row; a row
    // places its own write-intensive objects (ipv's second version) when it runs.
    if (sk->output) {
      const std::span<const std::byte> out = sk->output(pool);
      be.dram_cache_place(out.data(), out.size());
    }
  }
};

void validate(const SimRunSpec& spec) {
  const KernelDriver& kd = spec.user ? spec.user->driver : find_kernel(spec.run.kernel);
  const SimKernel& sk = spec.user ? spec.user->sim : find_sim_kernel(spec.run.kernel);
  if (kd.validate) kd.validate(spec.run);
  if (sk.check) sk.check(spec.run);
  if (!sk.run || !sk.recover || !kd.arrays || !kd.verify)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("kernel '{}' lacks a simulator entry point", spec.run.kernel));
  if (spec.run.threads < 1 || spec.run.threads > static_cast<std::uint32_t>(sim::kMaxCores))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--threads must be between 1 and {} in the simulator (got {})",
                            sim::kMaxCores, spec.run.threads));
  spec.machine.validate();
}

void require_scratch_room(const SimRunSpec& spec, std::uint64_t concurrent_runs) {
  const KernelDriver& kd = spec.user ? spec.user->driver : find_kernel(spec.run.kernel);
  if (!kd.arrays) return;
  const std::uint64_t bytes = pool::pool_file_bytes(kd.arrays(spec.run));
  const std::string dir = scratch_dirs().front();
  // On /dev/shm (tmpfs) the arrays themselves take memory; every concurrent run also holds the
  // simulator's durable image (a copy of every array) and dirties its pages copy-on-write.
  const std::uint64_t in_memory = dir == "/dev/shm" ? bytes : 0;
  pool::require_room_for_scratch(dir, bytes, in_memory + concurrent_runs * bytes);
}

SimSession::SimSession(const SimRunSpec& spec) : s_(std::make_unique<State>(spec)) {}
SimSession::~SimSession() = default;
SimSession::SimSession(SimSession&&) noexcept = default;
SimSession& SimSession::operator=(SimSession&&) noexcept = default;

void SimSession::run(std::size_t first) {
  s_->sk->run(s_->be, s_->pool, first);
}
std::optional<NativeRestart> SimSession::restart_native(bool recover, std::size_t first,
                                                        RunReport& report, bool run) {
  if (!s_->sk->restart_native) return std::nullopt;
  NativeRestartOptions o;
  o.recover = recover;
  o.run = run;
  o.first = first;
  o.counting = {s_->be.flush_mode() != sim::FlushMode::kNone, s_->be.mutation()};
  return s_->sk->restart_native(s_->pool, o, report);
}
std::size_t SimSession::recover(RunReport& report) {
  return s_->sk->recover(s_->be, s_->pool, report);
}
VerifyResult SimSession::verify() const {
  return s_->kd->verify(s_->pool);
}
std::span<const std::byte> SimSession::output_bytes() {
  return s_->sk->output ? s_->sk->output(s_->pool) : std::span<const std::byte>{};
}
sim::SimBackend& SimSession::backend() {
  return s_->be;
}
pool::Pool& SimSession::pool() {
  return s_->pool;
}
const SimRunSpec& SimSession::spec() const {
  return s_->spec;
}
std::uint64_t SimSession::estimated_ops() const {
  return s_->sk->base_refs ? s_->sk->base_refs(s_->spec.run) : 0;
}

double SimRunResult::refs_per_second() const {
  return seconds > 0 ? static_cast<double>(stats.accesses()) / seconds : 0.0;
}

SimRunResult simulate(const SimRunSpec& spec, const SimProgress& progress) {
  SimSession session(spec);
  sim::SimBackend& be = session.backend();
  if (progress) {
    const double total = static_cast<double>(std::max<std::uint64_t>(1, session.estimated_ops()));
    // Schemes add ops to the base kernel's, so the estimate is capped below 1.
    // `total` by value: the callback outlives this block.
    be.on_loop_end(
        [&, total] { progress(std::min(0.999, static_cast<double>(be.ops()) / total)); });
  }
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = process_cpu_seconds();
  session.run(0);
  if (spec.drain) be.machine().write_back_all(sim::WriteCause::kDrain);
  const double cpu = process_cpu_seconds() - cpu0;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  be.on_loop_end({});
  SimRunResult r{be.stats(), be.ops(), seconds, cpu, std::nullopt};
  if (spec.verify) r.verify = session.verify();
  return r;
}

// ---------------------------------------------------------------------------------------------

namespace {
nlohmann::json ratio_tree(const nlohmann::json& x, const nlohmann::json& base) {
  if (x.is_object()) {
    nlohmann::json r = nlohmann::json::object();
    for (const auto& [key, v] : x.items())
      if (key != "core_cycles" && base.contains(key)) r[key] = ratio_tree(v, base.at(key));
    return r;
  }
  if (!x.is_number() || !base.is_number()) return nullptr;
  const double a = x.get<double>(), b = base.get<double>();
  // x/0 has no value, and 0/0 says nothing (same as base only in the sense that neither did
  // anything): both null, shown as "n/a", never a 1 that reads like a measurement.
  if (b == 0) return nullptr;
  return a / b;
}
}  // namespace

nlohmann::json normalized_to(const sim::SimStats& s, const sim::SimStats& base) {
  return ratio_tree(sim::to_json(s), sim::to_json(base));
}

}  // namespace pmlab::run
