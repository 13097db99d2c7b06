// The loop crash test: a user's lp::Loop turned into a run::UserKernel (its protocol on the
// simulator's and the native tail's backends) and handed to the crash campaign.
#include "pmlab/experiments/loop_crash_test.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/lp/loop_protocol.hpp"
#include "pmlab/run/native_tail.hpp"
#include "pmlab/run/user_kernel.hpp"
#include "pmlab/scheme/rows.hpp"
#include "pmlab/sim/machine_params.hpp"

namespace pmlab::experiments {
namespace {

namespace lpp = lp::loop_protocol;

// The loop as every entry point of its kernel shares it.
struct LoopKernel {
  LoopUnderTest loop;  // layout.last resolved
  std::uint64_t regions = 0;
  std::vector<std::byte> reference;  // every array's bytes after a fault-free run
};

struct NoPoint {
  void operator()() const {}
};

// The bytes of the loop's own arrays: pool_arrays lays them out first, one after the other.
std::span<const std::byte> loop_bytes(const pool::Pool& pool, const LoopKernel& k) {
  const auto first = pool.array_info(k.loop.arrays.front().name);
  const auto last = pool.array_info(k.loop.arrays.back().name);
  return {pool.array<const std::byte>(k.loop.arrays.front().name),
          last.offset + last.bytes - first.offset};
}

// Calls fn(protocol, view) for the pool's loop on backend `be`.
template <class B, class Fn>
void with_protocol(B& be, pool::Pool& pool, const LoopKernel& k, Fn&& fn) {
  const lpp::View v = lpp::view_of(pool, lpp::read_record(pool));
  lp::Loop loop = lpp::attach(pool, k.loop.arrays, k.loop.layout);
  const lp::Loop::Body body = k.loop.body(loop);
  lp::with_checksum_kind(k.loop.checksum, [&](auto kind) {
    constexpr lp::ChecksumKind K = decltype(kind)::value;
    lpp::Protocol<K, B, NoPoint> protocol(be, v, body, NoPoint{}, /*store_outputs=*/true);
    fn(protocol);
  });
}

std::shared_ptr<const run::UserKernel> make_kernel(std::shared_ptr<const LoopKernel> k) {
  run::UserKernel u;
  run::KernelDriver& d = u.driver;
  d.name = k->loop.name;
  d.schemes = {std::string(lpp::kLoopScheme)};
  d.arrays = [k](const pool::RunParams&) { return lpp::pool_arrays(k->loop.arrays, k->regions); };
  d.init = [k](pool::Pool& pool) {
    const lpp::LayoutRecord rec = lpp::make_record(k->loop.layout, k->regions, k->loop.checksum);
    std::memcpy(pool.array<std::byte>(lpp::kLayoutArray), &rec, sizeof rec);
    lp::Loop loop = lpp::attach(pool, k->loop.arrays, k->loop.layout);
    if (k->loop.init) k->loop.init(loop);
  };
  d.verify = [k](const pool::Pool& pool) {
    const auto got = loop_bytes(pool, *k);
    run::VerifyResult r;
    r.elements = got.size() / sizeof(double);
    if (k->reference.size() != got.size())
      throw std::logic_error("crash_test: the loop's fault-free result is missing");
    for (std::size_t i = 0; i < r.elements; ++i) {
      if (std::memcmp(got.data() + i * 8, k->reference.data() + i * 8, 8) == 0) continue;
      if (r.mismatches++ > 0) continue;
      double want = 0, have = 0;
      std::memcpy(&want, k->reference.data() + i * 8, 8);
      std::memcpy(&have, got.data() + i * 8, 8);
      // Name the array and the element.
      std::uint64_t at = i;
      std::string array = "?";
      for (const auto& a : k->loop.arrays) {
        const auto info = pool.array_info(a.name);
        const auto off = info.offset - pool.array_info(k->loop.arrays.front().name).offset;
        if (i * 8 >= off && i * 8 < off + info.bytes) {
          array = a.name;
          at = (i * 8 - off) / 8;
        }
      }
      r.first_mismatch = fmt::format("{}[{}] = {} instead of {}", array, at, have, want);
    }
    return r;
  };

  run::SimKernel& s = u.sim;
  s.name = k->loop.name;
  s.run = [k](sim::SimBackend& be, pool::Pool& pool, std::size_t first) {
    be.start_outer_steps_at(first);
    with_protocol(be, pool, *k, [&](auto& p) { p.run_from(first); });
  };
  s.recover = [k](sim::SimBackend& be, pool::Pool& pool, run::RunReport& report) {
    std::size_t resume = 0;
    with_protocol(be, pool, *k, [&](auto& p) { resume = p.recover(report.recovery); });
    report.resumed = true;
    report.recovery_action = "lp-recovery";
    report.resume_point = resume;
    return resume;
  };
  s.restart_native = [k](pool::Pool& pool, const run::NativeRestartOptions& o,
                         run::RunReport& report) -> std::optional<run::NativeRestart> {
    run::TailBackend be(static_cast<int>(pool.params().threads), o.counting);
    run::NativeRestart r;
    r.resume = o.first;
    with_protocol(be, pool, *k, [&](auto& p) {
      if (o.recover) {
        r.resume = p.recover(report.recovery);
        report.resumed = true;
        report.recovery_action = "lp-recovery";
        report.resume_point = r.resume;
        r.recovery_ops = be.ops();
      }
      if (o.run) p.run_from(r.resume);
    });
    r.regions = be.take_regions();
    return r;
  };
  s.output = [k](pool::Pool& pool) { return loop_bytes(pool, *k); };
  s.base_refs = [k](const pool::RunParams&) -> std::uint64_t {
    return k->loop.layout.phases * (k->loop.layout.last - k->loop.layout.first) * 2;
  };
  s.mutants = [](std::string_view) { return scheme::kLpMutants; };
  return std::make_shared<const run::UserKernel>(std::move(u));
}

// The campaign's options for the loop (its fault-free result computed first).
CampaignOptions campaign_options(const LoopUnderTest& loop, const LoopCrashOptions& o) {
  if (!loop.body) throw Error(ErrorCode::kInvalidArgument, "crash_test: the loop has no body");
  if (loop.name.empty() || loop.name.size() > 15)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("crash_test: name '{}' must have 1 to 15 characters", loop.name));
  auto k = std::make_shared<LoopKernel>();
  k->loop = loop;
  k->regions = lpp::resolve(k->loop.arrays, k->loop.layout);

  CampaignOptions opt;
  opt.spec.run.kernel = loop.name;
  opt.spec.run.scheme = std::string(lpp::kLoopScheme);
  opt.spec.run.checksum = std::string(lp::to_string(loop.checksum));
  opt.spec.run.threads = o.threads;
  opt.spec.run.n = k->regions;
  opt.spec.run.bs = k->loop.layout.chunk;
  opt.spec.run.seed = k->loop.layout.phases;
  opt.spec.machine = o.machine;
  opt.spec.user = make_kernel(k);
  opt.trials = o.trials;
  opt.seed = o.seed;
  opt.jobs = o.jobs;

  run::SimSession ref(opt.spec);
  ref.run(0);
  const auto out = ref.output_bytes();
  k->reference.assign(out.begin(), out.end());
  return opt;
}

void print_failures(const std::string& argv0, const CampaignResult& r, mem::Mutation mutation,
                    std::size_t at_most) {
  std::size_t shown = 0;
  for (const auto& t : r.results) {
    if (t.passed) continue;
    if (shown++ == at_most) {
      fmt::print("  ... {} failed trials in all\n", r.trials - r.passed);
      return;
    }
    fmt::print("  FAILED trial {} ({} crash at op {}, {} image): {}\n    replay: {} {}\n", t.index,
               to_string(t.kind), t.crash_op, to_string(t.image), t.failure, argv0,
               replay_arguments(t, mutation));
  }
}

}  // namespace

sim::SimParams loop_crash_machine() {
  sim::MachineSettings o;
  o.set("cores", "2").set("l1-size", "1024").set("l1-ways", "4").set("l2-size", "0");
  o.set("llc-size", "4096").set("llc-ways", "8");
  return sim::machine_from("lp-isca18", o);
}

bool LoopCrashResult::passed() const {
  if (campaign.passed != campaign.trials) return false;
  return std::all_of(controls.begin(), controls.end(),
                     [](const ControlResult& c) { return c.detected(); });
}

LoopCrashResult crash_test(const LoopUnderTest& loop, const LoopCrashOptions& options) {
  const CampaignOptions opt = campaign_options(loop, options);
  LoopCrashResult r;
  r.campaign = run_campaign(opt);
  if (options.control) r.controls = run_controls(opt);
  return r;
}

TrialResult replay_loop_trial(const LoopUnderTest& loop, const LoopCrashOptions& options,
                              std::uint64_t crash_op,
                              const std::vector<std::uint64_t>& recovery_crashes,
                              const TrialSetup& setup) {
  return replay_trial(campaign_options(loop, options).spec, crash_op, recovery_crashes, setup);
}

std::string replay_arguments(const TrialResult& t, mem::Mutation mutation) {
  std::string s = fmt::format("--replay {}", t.crash_op);
  for (const std::uint64_t k : t.recovery_crashes) s += fmt::format(" --replay-recovery {}", k);
  s += fmt::format(" --replay-image {}", to_string(t.image));
  if (perturbs(t.image)) s += fmt::format(" --replay-image-seed {}", t.image_seed);
  if (mutation != mem::Mutation::kNone) s += fmt::format(" --mutate {}", mem::to_string(mutation));
  return s;
}

int crash_test_main(const LoopUnderTest& loop, int argc, char** argv,
                    const LoopCrashOptions& defaults) {
  LoopCrashOptions o = defaults;
  std::optional<std::uint64_t> replay;
  std::vector<std::uint64_t> recovery_crashes;
  TrialSetup setup;
  const std::string prog = argc > 0 ? argv[0] : "crash-test";
  const auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s [--trials N] [--seed S] [--jobs J] [--no-control]\n"
                 "       %s --replay OP [--replay-recovery OP]... [--replay-image MODEL] "
                 "[--replay-image-seed S] [--mutate M]\n",
                 prog.c_str(), prog.c_str());
    return 2;
  };
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "--no-control") {
        o.control = false;
        continue;
      }
      if (i + 1 >= argc) return usage();
      const std::string v = argv[++i];
      char* end = nullptr;
      const std::uint64_t n = std::strtoull(v.c_str(), &end, 10);
      const bool number = !v.empty() && *end == '\0';
      if (a == "--trials" && number && n > 0)
        o.trials = n;
      else if (a == "--seed" && number)
        o.seed = n;
      else if (a == "--jobs" && number)
        o.jobs = static_cast<int>(n);
      else if (a == "--replay" && number)
        replay = n;
      else if (a == "--replay-recovery" && number)
        recovery_crashes.push_back(n);
      else if (a == "--replay-image-seed" && number)
        setup.image_seed = n;
      else if (a == "--replay-image")
        setup.image = image_model_from_string(v);
      else if (a == "--mutate")
        setup.mutation = mutation_from_string(v);
      else
        return usage();
    }
    if (replay) {
      const TrialResult t = replay_loop_trial(loop, o, *replay, recovery_crashes, setup);
      fmt::print("{}: replayed crash at op {}: {}{}\n", loop.name, *replay,
                 t.passed ? "recovered bit-exactly" : "FAILED: ", t.failure);
      return t.passed ? 0 : 1;
    }
    const LoopCrashResult r = crash_test(loop, o);
    std::uint64_t recomputed = 0;
    for (const auto& t : r.campaign.results) recomputed += t.recovery.regions_recomputed;
    fmt::print(
        "{}: {} / {} trials recovered bit-exactly ({} ops, {} region commits, {} regions "
        "recomputed by recovery, {:.2f} s)\n",
        loop.name, r.campaign.passed, r.campaign.trials, r.campaign.fault_free_ops,
        r.campaign.commits, recomputed, r.campaign.seconds);
    print_failures(prog, r.campaign, mem::Mutation::kNone, 5);
    for (const auto& c : r.controls)
      fmt::print("  negative control {}: {} ({} of {} trials failed)\n", mem::to_string(c.mutation),
                 c.detected() ? "detected" : "MISSED", c.failed, c.trials);
    std::fflush(stdout);
    return r.passed() ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), e.what());
    return e.code() == ErrorCode::kInvalidArgument ? 2 : 3;
  }
}

}  // namespace pmlab::experiments
