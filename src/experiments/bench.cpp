// Native side-by-side benchmark: interleaved repetitions of every scheme vs base on fresh pools.
#include "pmlab/experiments/bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/native_dispatch.hpp"
#include "pmlab/scheme/checkpoint_copy.hpp"

namespace pmlab::run {
namespace {

namespace fs = std::filesystem;

// Rewrites one byte per page of every array with its own value: the page faults of first
// touch happen here, untimed, instead of inside the measured kernel, and whatever the kernel's
// init wrote (copied inputs, zeroed outputs) is preserved.
void prefault(const pool::Pool& pool) {
  for (const auto& a : pool.arrays()) {
    auto* bytes = reinterpret_cast<volatile unsigned char*>(pool.base() + a.offset);
    for (std::uint64_t i = 0; i < a.bytes; i += 4096) bytes[i] = bytes[i];
  }
}

struct Measurement {
  double seconds = 0;
  bool verified = true;  // the driver's bit-exact check against its fault-free reference
};

// Every kernel goes through its driver's execute(), which times the normal execution only
// (RunReport::compute_seconds: no pool creation, no scheme set-up, no final persist), and
// verify(), which compares the outputs with a fault-free reference bit for bit.
Measurement measure(const BenchOptions& opt, const std::string& scheme, const fs::path& dir) {
  pool::RunParams p;
  p.kernel = opt.kernel;
  p.scheme = scheme;
  p.n = opt.n;
  p.bs = opt.bs;
  p.threads = opt.threads;
  p.seed = opt.seed;
  p.kernel_params = opt.kernel_params;
  const auto& k = find_kernel(opt.kernel);
  const auto path = (dir / scheme).string();
  Measurement m;
  {
    auto pool = pool::Pool::create(path, p, k.arrays(p), k.init);
    prefault(pool);
    auto report = k.execute(pool, ExecOptions{opt.mode, opt.flush});
    m.seconds = report.compute_seconds;
    m.verified = k.verify(pool).ok();
  }
  fs::remove(path);
  return m;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

void validate(const BenchOptions& opt, const std::vector<std::string>& schemes) {
  const auto& k = find_kernel(opt.kernel);  // throws for unknown kernels, naming the known ones
  if (opt.reps < 1 || opt.reps > 1000)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--reps must be in [1, 1000], got {}", opt.reps));
  for (const auto& s : schemes)
    if (std::find(k.schemes.begin(), k.schemes.end(), s) == k.schemes.end())
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("unknown scheme '{}' for {} (known: {})", s, opt.kernel,
                              fmt::join(k.schemes, ", ")));
  pool::RunParams p;
  p.kernel = opt.kernel;
  p.n = opt.n;
  p.bs = opt.bs;
  p.threads = opt.threads;
  p.kernel_params = opt.kernel_params;
  k.validate(p);
  // One pool at a time lives in the temporary directory: the largest must fit there (else the
  // sizes are impossible here: exit 2 before anything is created, not ENOSPC half-way).
  std::uint64_t largest = 0;
  for (const auto& s : schemes) {
    p.scheme = s;
    largest = std::max(largest, pool::pool_file_bytes(k.arrays(p)));
  }
  const fs::path parent = opt.dir.empty() ? fs::temp_directory_path() : fs::path(opt.dir);
  pool::require_room_for_pool((parent / "pool").string(), largest);
  if (opt.mode == persist::PersistMode::kCpu && !persist::cpu_supports(opt.flush))
    throw Error(ErrorCode::kUnsupported,
                fmt::format("this CPU does not support {}", persist::to_string(opt.flush)));
}

template <persist::FlushKind K>
PersistUnitCosts unit_costs_with() {
  using clock = std::chrono::steady_clock;
  constexpr std::size_t kLines = 1u << 16;  // 4 MiB: cache-resident, like a few C panels
  std::vector<double> buf(kLines * 8 + 8), dst(kLines * 8 + 8);
  double* a = reinterpret_cast<double*>(
      round_up(reinterpret_cast<std::uintptr_t>(buf.data()), kCacheLineBytes));
  double* d = reinterpret_cast<double*>(
      round_up(reinterpret_cast<std::uintptr_t>(dst.data()), kCacheLineBytes));
  PersistUnitCosts best{1e300, 1e300, 0};
  for (int rep = 0; rep < 3; ++rep) {  // best of 3: the least disturbed measurement
    auto t0 = clock::now();
    for (std::size_t i = 0; i < kLines; i += 16) {
      a[i * 8] += 1.0;
      persist::flush_line<K>(a + i * 8);
      persist::sfence();
    }
    auto t1 = clock::now();
    for (std::size_t i = 0; i < kLines * 8; i += 8) a[i] += 1.0;
    auto t2 = clock::now();
    persist::flush_range<K>(a, kLines * kCacheLineBytes);
    persist::sfence();
    auto t3 = clock::now();
    scheme::nt_copy(d, a, kLines * 8);
    persist::sfence();
    auto t4 = clock::now();
    auto ns = [](auto x, auto y) {
      return std::chrono::duration<double, std::nano>(y - x).count();
    };
    best.flush_fence_ns =
        std::min(best.flush_fence_ns, ns(t0, t1) / static_cast<double>(kLines / 16));
    best.flush_stream_ns = std::min(best.flush_stream_ns, ns(t2, t3) / static_cast<double>(kLines));
    best.nt_copy_gbs =
        std::max(best.nt_copy_gbs, static_cast<double>(kLines * kCacheLineBytes) / ns(t3, t4));
  }
  return best;
}

PersistUnitCosts unit_costs(persist::FlushKind k) {
  switch (k) {
    case persist::FlushKind::kClflush:
      return unit_costs_with<persist::FlushKind::kClflush>();
    case persist::FlushKind::kClflushopt:
      return unit_costs_with<persist::FlushKind::kClflushopt>();
    case persist::FlushKind::kClwb:
      break;
  }
  return unit_costs_with<persist::FlushKind::kClwb>();
}

}  // namespace

BenchResult run_bench(const BenchOptions& opt) {
  std::vector<std::string> schemes{"base"};
  for (const auto& s : opt.schemes.empty() ? find_kernel(opt.kernel).schemes : opt.schemes)
    if (std::find(schemes.begin(), schemes.end(), s) == schemes.end()) schemes.push_back(s);
  validate(opt, schemes);

  const fs::path parent = opt.dir.empty() ? fs::temp_directory_path() : fs::path(opt.dir);
  const fs::path dir =
      parent / fmt::format("pmlab-bench-{}-{}", ::getpid(),
                           std::chrono::steady_clock::now().time_since_epoch().count());
  fs::create_directories(dir);
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};

  const auto wall0 = std::chrono::steady_clock::now();
  const std::size_t ns = schemes.size(), total = ns * static_cast<std::size_t>(opt.reps);
  std::vector<std::vector<double>> secs(ns);
  std::vector<bool> exact(ns, true);
  std::size_t done = 0;
  for (int rep = 0; rep < opt.reps; ++rep) {
    // Rotate the order each repetition so no scheme always runs first (cold) or last.
    for (std::size_t j = 0; j < ns; ++j) {
      const std::size_t s = (j + static_cast<std::size_t>(rep)) % ns;
      if (opt.stop && opt.stop->load())
        throw Error(ErrorCode::kInterrupted,
                    fmt::format("bench interrupted after {} of {} measurements; temporary pools "
                                "removed",
                                done, total));
      if (opt.progress)
        opt.progress(done, total, fmt::format("rep {}/{} {}", rep + 1, opt.reps, schemes[s]));
      auto m = measure(opt, schemes[s], dir);
      secs[s].push_back(m.seconds);
      if (!m.verified) exact[s] = false;  // every scheme against the same reference as base
      ++done;
    }
  }
  if (opt.progress) opt.progress(done, total, "done");

  BenchResult r;
  r.kernel = opt.kernel;
  r.n = opt.n;
  r.bs = opt.bs;
  r.threads = opt.threads;
  r.reps = opt.reps;
  r.persist = to_string(opt.mode);
  r.flush = std::string(persist::to_string(opt.flush));
  r.nt_store_isa = std::string(scheme::nt_copy_isa());
  for (std::size_t s = 0; s < ns; ++s) {
    BenchSchemeResult b;
    b.scheme = schemes[s];
    b.seconds = secs[s];
    b.median = quantile(secs[s], 0.5);
    b.q1 = quantile(secs[s], 0.25);
    b.q3 = quantile(secs[s], 0.75);
    b.min = *std::min_element(secs[s].begin(), secs[s].end());
    b.max = *std::max_element(secs[s].begin(), secs[s].end());
    std::vector<double> ratios;
    for (std::size_t i = 0; i < secs[s].size(); ++i) ratios.push_back(secs[s][i] / secs[0][i]);
    b.ratio = quantile(ratios, 0.5);
    b.ratio_min = *std::min_element(ratios.begin(), ratios.end());
    b.ratio_max = *std::max_element(ratios.begin(), ratios.end());
    b.best_ratio = b.min / *std::min_element(secs[0].begin(), secs[0].end());
    b.bit_exact = exact[s];
    r.schemes.push_back(std::move(b));
  }
  if (opt.mode == persist::PersistMode::kCpu) r.unit_costs = unit_costs(opt.flush);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

nlohmann::json to_json(const BenchResult& r) {
  nlohmann::json schemes = nlohmann::json::array();
  for (const auto& s : r.schemes)
    schemes.push_back({{"scheme", s.scheme},
                       {"seconds", s.seconds},
                       {"median", s.median},
                       {"q1", s.q1},
                       {"q3", s.q3},
                       {"min", s.min},
                       {"max", s.max},
                       {"ratio_to_base", s.ratio},
                       {"ratio_min", s.ratio_min},
                       {"ratio_max", s.ratio_max},
                       {"ratio_of_minima", s.best_ratio},
                       {"bit_exact_vs_base", s.bit_exact}});
  return {{"kernel", r.kernel},
          {"n", r.n},
          {"bs", r.bs},
          {"threads", r.threads},
          {"reps", r.reps},
          {"persist", r.persist},
          {"flush", r.flush},
          {"nt_store_isa", r.nt_store_isa},
          {"wall_seconds", r.wall_seconds},
          {"unit_costs",
           {{"flush_fence_ns", r.unit_costs.flush_fence_ns},
            {"flush_stream_ns_per_line", r.unit_costs.flush_stream_ns},
            {"nt_copy_gb_per_s", r.unit_costs.nt_copy_gbs}}},
          {"schemes", schemes}};
}

std::string to_markdown(const BenchResult& r) {
  std::string out = fmt::format(
      "{} n={} bs={} threads={} reps={} persist={} flush={} (NT stores: {}), {:.0f} s wall\n\n",
      r.kernel, r.n, r.bs, r.threads, r.reps, r.persist, r.flush, r.nt_store_isa, r.wall_seconds);
  out +=
      "| scheme | median s | IQR s | min-max s | ratio to base | ratio range | ratio of minima | "
      "bit-exact |\n";
  out += "|---|---:|---:|---:|---:|---:|---:|:---:|\n";
  for (const auto& s : r.schemes)
    out += fmt::format(
        "| {} | {:.3f} | {:.3f}-{:.3f} | {:.3f}-{:.3f} | {:.2f} | {:.2f}-{:.2f} | {:.2f} | {} |\n",
        s.scheme, s.median, s.q1, s.q3, s.min, s.max, s.ratio, s.ratio_min, s.ratio_max,
        s.best_ratio, s.bit_exact ? "yes" : "NO");
  if (r.unit_costs.flush_fence_ns > 0)
    out += fmt::format(
        "\nUnit costs ({}): store + flush + sfence of one line {:.0f} ns; flushing many dirty "
        "lines before one sfence {:.1f} ns/line; non-temporal copy {:.1f} GB/s\n",
        r.flush, r.unit_costs.flush_fence_ns, r.unit_costs.flush_stream_ns,
        r.unit_costs.nt_copy_gbs);
  return out;
}

}  // namespace pmlab::run
