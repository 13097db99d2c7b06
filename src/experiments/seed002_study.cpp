// Seed 002's evaluation: Table 1 (flush cost by line state) and Figs. 6, 12, 13, 14 per kernel.
#include "pmlab/experiments/seed002_study.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/experiments/bench.hpp"
#include "pmlab/persist/flush.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/scheme/ipv_profile.hpp"
#include "pmlab/scheme/scheme.hpp"
#include "pmlab/sim/machine.hpp"
#include "pmlab/sim/presets.hpp"
#include "pmlab/sim/stats.hpp"
#include "row_family.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

// --- Table 1 --------------------------------------------------------------------------------

constexpr std::array<const char*, 4> kStates = {"modified", "exclusive", "shared", "invalid"};

// Simulated cycles of flush + sfence per line, `lines` lines all in `state` before the flushes.
double sim_flush_cycles(sim::FlushMode mode, const std::string& state, const char* machine) {
  sim::SimParams p = sim::preset(machine);
  sim::Machine m(p);
  constexpr std::uint64_t kLines = 256, kBase = 1u << 20;  // 16 KiB: fits L1 (no evictions)
  for (std::uint64_t i = 0; i < kLines; ++i) {
    const LineAddr l(kBase + i);
    if (state == "modified") {
      m.store(0, l);
    } else if (state == "exclusive") {
      m.load(0, l);
    } else if (state == "shared") {
      m.load(0, l);
      m.load(1, l);
    }
  }
  const std::uint64_t t0 = m.clock(0).value();
  for (std::uint64_t i = 0; i < kLines; ++i) m.flush(0, LineAddr(kBase + i), mode);
  m.fence(0);
  return static_cast<double>(m.clock(0).value() - t0) / static_cast<double>(kLines);
}

// Native: a line-aligned buffer that fits L2; each state prepared, then timed flush + sfence.
struct Aligned {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  explicit Aligned(std::size_t bytes)
      : p(static_cast<unsigned char*>(std::aligned_alloc(kCacheLineBytes, bytes))) {}
  std::unique_ptr<unsigned char, Free> p;
};

template <persist::FlushKind K>
double native_flush_ns(unsigned char* buf, std::size_t lines, const std::string& state) {
  volatile unsigned char sink = 0;
  // Every state starts from "not cached": flushed and fenced.
  persist::persist_range<K>(buf, lines * kCacheLineBytes);
  if (state == "modified") {
    for (std::size_t i = 0; i < lines; ++i) buf[i * kCacheLineBytes] += 1;
  } else if (state == "exclusive") {
    for (std::size_t i = 0; i < lines; ++i) sink = sink + buf[i * kCacheLineBytes];
  }
  const auto t0 = std::chrono::steady_clock::now();
  persist::persist_range<K>(buf, lines * kCacheLineBytes);
  const auto t1 = std::chrono::steady_clock::now();
  (void)sink;
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(lines);
}

double native_flush(persist::FlushKind k, unsigned char* buf, std::size_t lines,
                    const std::string& state) {
  switch (k) {
    case persist::FlushKind::kClflush:
      return native_flush_ns<persist::FlushKind::kClflush>(buf, lines, state);
    case persist::FlushKind::kClflushopt:
      return native_flush_ns<persist::FlushKind::kClflushopt>(buf, lines, state);
    case persist::FlushKind::kClwb:
      return native_flush_ns<persist::FlushKind::kClwb>(buf, lines, state);
  }
  return 0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --- Fig. 5 ---------------------------------------------------------------------------------

// Simulated: `lines` lines dirtied by `threads` cores (each its own contiguous share), then each
// core flushes its share as one parallel loop (fork_clocks: each core gets its share of the
// memory controller's write queue and units, as in a kernel's parallel loop); the flushes are
// issued round robin, one line each. Cycles from the fork to the join after every core's
// fence, per line of the buffer.
double sim_flush_scaling_cycles(const std::string& machine, int threads, std::uint64_t lines) {
  sim::SimParams p = sim::preset(machine);
  p.cores = std::max(p.cores, threads);
  sim::Machine m(p);
  constexpr std::uint64_t kBase = 1u << 20;
  const auto share = [&](int c) {
    const std::uint64_t per =
        (lines + static_cast<std::uint64_t>(threads) - 1) / static_cast<std::uint64_t>(threads);
    const std::uint64_t lo = std::min(lines, per * static_cast<std::uint64_t>(c));
    return std::pair{lo, std::min(lines, lo + per)};
  };
  m.fork_clocks(0, threads);
  for (int c = 0; c < threads; ++c)
    for (auto [i, e] = share(c); i < e; ++i) m.store(c, LineAddr(kBase + i));
  m.join_clocks();
  const std::uint64_t start = m.clock(0).value();
  m.fork_clocks(0, threads);
  for (std::uint64_t k = 0;; ++k) {
    bool any = false;
    for (int c = 0; c < threads; ++c) {
      const auto [lo, hi] = share(c);
      if (lo + k >= hi) continue;
      m.flush(c, LineAddr(kBase + lo + k), sim::FlushMode::kClflush);
      any = true;
    }
    if (!any) break;
  }
  for (int c = 0; c < threads; ++c) m.fence(c);
  m.join_clocks();
  return static_cast<double>(m.clock(0).value() - start) / static_cast<double>(lines);
}

// Native: the buffer dirtied, then `threads` threads each clflush + sfence their contiguous
// share; wall nanoseconds from the first thread's start to the last one's end, per line.
double native_flush_scaling_ns(unsigned char* buf, std::size_t lines, unsigned threads) {
  std::memset(buf, static_cast<int>(lines & 0xff), lines * kCacheLineBytes);
  const std::size_t per = (lines + threads - 1) / threads;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back([=] {
      const std::size_t lo = std::min(lines, per * t), hi = std::min(lines, lo + per);
      persist::persist_range<persist::FlushKind::kClflush>(buf + lo * kCacheLineBytes,
                                                           (hi - lo) * kCacheLineBytes);
    });
  persist::persist_range<persist::FlushKind::kClflush>(buf, std::min(lines, per) * kCacheLineBytes);
  for (auto& th : pool) th.join();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(lines);
}

// --- Figs. 6, 12, 13, 14 -------------------------------------------------------------------

struct Config {
  std::string name, scheme;
  sim::FlushMode flush = sim::FlushMode::kClflushopt;
  sim::WholeCacheFlush whole = sim::WholeCacheFlush::kNever;
};

std::vector<Config> configs(const std::vector<std::string>& schemes) {
  const auto has = [&](const char* s) {
    return std::find(schemes.begin(), schemes.end(), s) != schemes.end();
  };
  std::vector<Config> c = {{"base", "base"}};
  for (const char* s : {"cp-clflush", "cp-par-clflush", "cp-nt", "cp-nt-async", "ipv-sync", "ipv"})
    if (has(s)) c.push_back({s, s});
  // Fig. 7's breakdown: the same checkpoints with every flush and fence off leave the copy's
  // own cost; the rest of the design's loss is its CPU-cache flush.
  for (const char* s : {"cp-clflush", "cp-par-clflush"})
    if (has(s)) c.push_back({std::string(s) + " copy only", s, sim::FlushMode::kNone});
  // The paper's "IPV without flushing" (Figs. 12, 14): the ipv-nf row (no flush, no fence, no
  // helper; the same cycles as ipv with every flush and fence off), or that where it is absent.
  if (has("ipv-nf"))
    c.push_back({"ipv no flush", "ipv-nf"});
  else if (has("ipv"))
    c.push_back({"ipv no flush", "ipv", sim::FlushMode::kNone});
  if (has("ipv")) {
    // Fig. 13's runs used WBINVD for every benchmark (docs/seed002.md).
    c.push_back({"ipv wbinvd", "ipv", sim::FlushMode::kClflushopt, sim::WholeCacheFlush::kAlways});
  }
  return c;
}

// A size the kernel accepts: the first candidate run::validate takes.
std::optional<run::SimRunSpec> sized_spec(const std::string& kernel, bool full, std::uint64_t n0) {
  // Quick: 256, where tmm's three arrays (1.5 MiB) overflow lp-isca18's 512 KiB LLC, as the
  // papers' sizes do; other kernels take the first size they accept.
  std::vector<std::uint64_t> ns = full ? std::vector<std::uint64_t>{512, 1024, 256, 128, 64}
                                       : std::vector<std::uint64_t>{256, 128, 512, 64, 32};
  if (n0 != 0) ns.insert(ns.begin(), n0);
  const sim::MachineSettings o{{"wc-buffers", "10"}};  // non-temporal copies modelled (cp-nt)
  for (const std::uint64_t n : ns) {
    for (const std::uint64_t bs : {16u, 8u}) {
      run::SimRunSpec spec;
      spec.run.kernel = kernel;
      spec.run.scheme = "base";
      spec.run.n = n;
      spec.run.bs = bs;
      spec.machine = sim::machine_from("lp-isca18", o);
      spec.machine.whole_cache_flush = sim::WholeCacheFlush::kNever;
      spec.run.threads = static_cast<std::uint32_t>(spec.machine.threads);
      try {
        run::validate(spec);
        return spec;
      } catch (const std::exception&) {
      }
    }
  }
  return std::nullopt;
}

json helper_json(const sim::HelperStats& h) {
  return {{"requests", h.requests},       {"flush_ops", h.flush_ops},
          {"copy_ops", h.copy_ops},       {"wbinvd_ops", h.wbinvd_ops},
          {"busy_cycles", h.busy_cycles}, {"exposed_cycles", h.exposed_cycles},
          {"overlap", h.overlap()}};
}

}  // namespace

json seed002_flush_states(const Seed002Options& o) {
  json sim_rows = json::array();
  // lp-isca18: the papers' gem5 directory (flushes cost the same in every state); haswell-ep:
  // seed 002's machine, whose home agent makes the state matter (SimParams::home_agent).
  for (const char* machine : {"lp-isca18", "haswell-ep"})
    for (const sim::FlushMode m :
         {sim::FlushMode::kClflush, sim::FlushMode::kClflushopt, sim::FlushMode::kClwb})
      for (const char* s : kStates)
        sim_rows.push_back({{"flush", std::string(sim::to_string(m))},
                            {"state", s},
                            {"machine", machine},
                            {"cycles", sim_flush_cycles(m, s, machine)}});
  // Natively: modified, exclusive and invalid (shared needs a second core reading every line,
  // which on this 2-core host is the core other processes use: not measured).
  const int rounds = o.full ? 41 : 15;
  constexpr std::size_t kLines = 2048;  // 128 KiB
  Aligned buf(kLines * kCacheLineBytes);
  std::memset(buf.p.get(), 1, kLines * kCacheLineBytes);
  json native_rows = json::array();
  for (const persist::FlushKind k :
       {persist::FlushKind::kClflush, persist::FlushKind::kClflushopt, persist::FlushKind::kClwb}) {
    if (!persist::cpu_supports(k)) {
      native_rows.push_back({{"flush", std::string(persist::to_string(k))},
                             {"skipped", "the CPU lacks the instruction"}});
      continue;
    }
    const std::array<std::string, 3> states = {"modified", "exclusive", "invalid"};
    std::array<std::vector<double>, 3> ns;
    std::array<std::vector<double>, 3> ratio;  // per round, state / modified
    for (int r = 0; r < rounds; ++r) {
      std::array<double, 3> t{};
      // Rotate the order every round so drift does not favour one state.
      for (std::size_t j = 0; j < 3; ++j) {
        const std::size_t s = (j + static_cast<std::size_t>(r)) % 3;
        t[s] = native_flush(k, buf.p.get(), kLines, states[s]);
      }
      for (std::size_t s = 0; s < 3; ++s) {
        ns[s].push_back(t[s]);
        ratio[s].push_back(t[0] > 0 ? t[s] / t[0] : 0);
      }
    }
    for (std::size_t s = 0; s < 3; ++s) {
      const auto [lo, hi] = std::minmax_element(ratio[s].begin(), ratio[s].end());
      native_rows.push_back({{"flush", std::string(persist::to_string(k))},
                             {"state", states[s]},
                             {"ns_median", median(ns[s])},
                             {"ratio_to_modified", median(ratio[s])},
                             {"ratio_min", *lo},
                             {"ratio_max", *hi},
                             {"resolved", s == 0 || *lo > 1.0 || *hi < 1.0}});
    }
  }
  return {{"table", "flush-states"},
          {"sim", sim_rows},
          {"sim_machines", {"lp-isca18", "haswell-ep"}},
          {"native", {{"rounds", rounds}, {"lines", kLines}, {"rows", native_rows}}}};
}

namespace {

// One scheme's paired ratio to base, with its 95% interval. `trusted`: the interval rests on
// at least the bench's minimum of healthy pairs on a machine that was not busy and did not
// drift (its width may still exceed the bench's ±target).
struct MeasuredRatio {
  double ratio = 0, low = 0, high = 0;
  bool trusted = false;
};

MeasuredRatio measured(const BenchResult& r, const std::string& scheme, std::size_t min_pairs) {
  for (const auto& s : r.schemes)
    if (s.scheme == scheme && s.paired) {
      const auto& p = *s.paired;
      MeasuredRatio m{p.ratio, 0, 0, false};
      if (p.ci95) {
        m.low = p.ci95->low;
        m.high = p.ci95->high;
        m.trusted = p.pairs_used >= min_pairs && !p.busy() && !p.drifted;
      }
      return m;
    }
  return {};
}

// How much faster `a` runs than `b` (1 - a/b, both timed against the same base), with the
// interval the two ratios' intervals allow; `resolved` when both intervals are trusted and
// the gain's excludes 0.
json gain_json(const BenchResult& r, const BenchOptions& o, const std::string& a,
               const std::string& b) {
  const MeasuredRatio ma = measured(r, a, o.min_pairs), mb = measured(r, b, o.min_pairs);
  if (ma.ratio <= 0 || mb.ratio <= 0) return nullptr;
  json g = {{"gain", 1.0 - ma.ratio / mb.ratio}, {"resolved", false}};
  if (ma.low > 0 && mb.low > 0) {
    const double low = 1.0 - ma.high / mb.low, high = 1.0 - ma.low / mb.high;
    g["ci95"] = {low, high};
    g["resolved"] = ma.trusted && mb.trusted && (low > 0 || high < 0);
  }
  return g;
}

}  // namespace

json seed002_native(const std::string& kernel, const Seed002Options& o) {
  const auto& kd = run::find_kernel(kernel);
  BenchOptions b;
  b.kernel = kernel;
  b.n = o.n != 0 ? o.n : kernel == "jacobi" ? (o.full ? 1024 : 512) : kernel == "cg" ? 40000 : 512;
  b.threads = 1;  // the helper thread takes the second core
  // Quick: short repetitions, so that even cp-clflush (~8x base here) reaches the bench's
  // minimum of pairs within its 4 s.
  b.budget_seconds = o.full ? 30 : 4;
  b.min_rep_seconds = o.native_rep_seconds > 0 ? o.native_rep_seconds : o.full ? 0.2 : 0.05;
  b.seed = o.seed;
  b.stop = o.stop;
  for (const char* s :
       {"cp-clflush", "cp-par-clflush", "cp-nt", "cp-nt-async", "ipv-nf", "ipv-sync", "ipv"})
    if (std::find(kd.schemes.begin(), kd.schemes.end(), s) != kd.schemes.end())
      b.schemes.emplace_back(s);
  const BenchResult r = run_bench(b);
  json out = {{"table", "native-figures"},
              {"kernel", kernel},
              {"n", b.n},
              {"threads", b.threads},
              {"bench", to_json(r)}};
  out["fig6"] = {{"nt_gain_over_clflush", gain_json(r, b, "cp-nt", "cp-clflush")},
                 {"par_gain_over_clflush", gain_json(r, b, "cp-par-clflush", "cp-clflush")}};
  out["fig12"] = {{"ipv_no_flush_gain_over_cp_nt", gain_json(r, b, "ipv-nf", "cp-nt")},
                  {"async_copy_gain_over_cp_nt", gain_json(r, b, "cp-nt-async", "cp-nt")}};
  const auto helper_of = [](const BenchSchemeResult& s) -> json {
    return {{"hidden_fraction", s.helper.hidden_fraction()},
            {"busy_ns", s.helper.busy_ns},
            {"exposed_ns", s.helper.exposed_ns},
            {"placement", s.helper.placement}};
  };
  for (const auto& s : r.schemes) {
    if (s.helper.placement.empty()) continue;
    // The rows with a flush helper: ipv's versions and cp-nt-async's copy (Fig. 13).
    const scheme::Family family = family_of(kernel, s.scheme);
    if (family == scheme::Family::kIpv) out["fig13"] = helper_of(s);
    if (family == scheme::Family::kCp) out["fig13_copy"] = helper_of(s);
  }
  return out;
}

json seed002_flush_scaling(const Seed002Options& o) {
  // Simulated: 4,096 dirty lines (256 KiB, inside both machines' LLCs, as the paper's 20 MB
  // buffer sits in its 20 MB LLC), 1 to 16 cores, on the two papers' machines.
  constexpr std::uint64_t kSimLines = 4096;
  json sim = json::array();
  for (const char* machine : {"lp-isca18", "pact17"}) {
    const sim::SimParams p = sim::preset(machine);
    json rows = json::array();
    double one = 0;
    for (const int t : {1, 2, 4, 8, 16}) {
      const double c = sim_flush_scaling_cycles(machine, t, kSimLines);
      if (t == 1) one = c;
      rows.push_back({{"threads", t}, {"cycles_per_line", c}, {"speedup", one / c}});
    }
    // The controller's bound: its write units drain one line per write_ns / units.
    const double drain = p.nvm.write_ns * p.freq_ghz / static_cast<double>(p.nvm.write_units);
    sim.push_back({{"machine", machine},
                   {"lines", kSimLines},
                   {"drain_cycles_per_line", drain},
                   {"rows", rows}});
  }
  json out = {{"table", "flush-scaling"}, {"sim", sim}};
  if (!persist::cpu_supports(persist::FlushKind::kClflush)) {
    out["native"] = {{"skipped", "the CPU lacks clflush"}};
    return out;
  }
  // Natively: the paper's 20 MB buffer, 1 to nproc threads, paired rounds (every thread count
  // once per round, the order rotated), each count's speedup over 1 thread per round.
  const unsigned nproc = std::max(1u, std::thread::hardware_concurrency());
  const int rounds = o.full ? 21 : 7;
  constexpr std::size_t kLines = (20u << 20) / kCacheLineBytes;
  Aligned buf(kLines * kCacheLineBytes);
  std::vector<unsigned> counts;
  for (unsigned t = 1; t <= nproc; t *= 2) counts.push_back(t);
  if (counts.back() != nproc) counts.push_back(nproc);
  std::vector<std::vector<double>> ns(counts.size()), speedup(counts.size());
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> t(counts.size());
    for (std::size_t j = 0; j < counts.size(); ++j) {
      const std::size_t i = (j + static_cast<std::size_t>(r)) % counts.size();
      t[i] = native_flush_scaling_ns(buf.p.get(), kLines, counts[i]);
    }
    for (std::size_t i = 0; i < counts.size(); ++i) {
      ns[i].push_back(t[i]);
      speedup[i].push_back(t[i] > 0 ? t[0] / t[i] : 0);
    }
  }
  json native_rows = json::array();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const auto [lo, hi] = std::minmax_element(speedup[i].begin(), speedup[i].end());
    native_rows.push_back({{"threads", counts[i]},
                           {"ns_per_line_median", median(ns[i])},
                           {"speedup_median", median(speedup[i])},
                           {"speedup_min", *lo},
                           {"speedup_max", *hi},
                           {"resolved", i == 0 || *lo > 1.0 || *hi < 1.0}});
  }
  out["native"] = {{"flush", "clflush"},
                   {"mib", 20},
                   {"rounds", rounds},
                   {"cores", nproc},
                   {"rows", native_rows}};
  return out;
}

json seed002_rules(const Seed002Options& o) {
  namespace fs = std::filesystem;
  // The kernels whose updates the paper's rules sort: those with ipv rows, jacobi's MG-like
  // variant, and the tiled factorizations that have no ipv row.
  struct Case {
    std::string kernel;
    bool mg_like = false;
  };
  const std::vector<Case> cases = {{"tmm"},   {"cg"}, {"jacobi"},  {"jacobi", true},
                                   {"gauss"}, {"lu"}, {"cholesky"}};
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("pmlab-ipv-rules-{}-{}", ::getpid(), o.seed);
  fs::create_directories(dir);
  json rows = json::array();
  for (const Case& c : cases) {
    const auto& k = run::find_kernel(c.kernel);
    pool::RunParams p;
    p.kernel = c.kernel;
    p.scheme = std::string(scheme::kBaseScheme);
    p.n = 40;  // the first iteration's pattern does not depend on the size
    p.bs = 8;
    p.threads = 2;
    p.seed = o.seed == 0 ? 1 : o.seed;
    if (c.mg_like) p.set_kernel_param("mg-like", 1);
    const std::string path = (dir / "p").string();
    std::vector<scheme::IpvObjectProfile> objects;
    {
      auto pool = pool::Pool::create(path, p, k.arrays(p), k.init);
      objects = k.profile_ipv(pool);
    }
    fs::remove(path);
    for (const auto& ob : objects) {
      std::string declared = "-";
      if (ob.declared == scheme::IpvObject::Declared::kUniform) declared = "uniform";
      if (ob.declared == scheme::IpvObject::Declared::kNonUniform) declared = "non-uniform";
      rows.push_back({{"kernel", c.kernel + (c.mg_like ? " --mg-like" : "")},
                      {"object", ob.name},
                      {"rule", std::string(scheme::to_string(ob.rule))},
                      {"elements", ob.elements},
                      {"written", ob.written},
                      {"read_after_write", ob.read_after_write},
                      {"writing_loops", ob.writing_loops},
                      {"declared", declared},
                      {"matches_declaration", ob.matches_declaration()}});
    }
  }
  fs::remove_all(dir);
  return {{"table", "ipv-rules"}, {"n", 40}, {"rows", rows}};
}

std::vector<std::string> seed002_kernels() {
  std::vector<std::string> out;
  for (const auto& k : run::kernel_drivers())
    if (std::find(k.schemes.begin(), k.schemes.end(), "ipv") != k.schemes.end())
      out.push_back(k.name);
  return out;
}

json seed002_kernel(const std::string& kernel, const Seed002Options& o) {
  const auto& kd = run::find_kernel(kernel);
  auto spec0 = sized_spec(kernel, o.full, o.n);
  if (!spec0) return {{"kernel", kernel}, {"skipped", "no size the simulator accepts"}};
  json rows = json::array();
  std::map<std::string, sim::SimStats> st;
  for (const Config& c : configs(kd.schemes)) {
    run::SimRunSpec spec = *spec0;
    spec.run.scheme = c.scheme;
    spec.run.seed = o.seed;
    spec.flush = c.flush;
    spec.machine.whole_cache_flush = c.whole;
    spec.verify = true;
    const auto r = run::simulate(spec);
    st[c.name] = r.stats;
    json row = {{"config", c.name},
                {"scheme", c.scheme},
                {"flush", std::string(sim::to_string(c.flush))},
                {"whole_cache", std::string(sim::to_string(c.whole))},
                {"cycles", r.stats.cycles.value()},
                {"llc_miss_rate", r.stats.llc().miss_rate()},
                {"nvm_writes", r.stats.nvm.writes},
                {"verified", r.verify && r.verify->ok()}};
    if (r.stats.helper) row["helper"] = helper_json(*r.stats.helper);
    rows.push_back(std::move(row));
  }
  const auto cyc = [&](const std::string& c) {
    return st.count(c) ? static_cast<double>(st[c].cycles.value()) : 0.0;
  };
  const double base = cyc("base");
  for (auto& r : rows) r["overhead"] = base > 0 ? r["cycles"].get<double>() / base - 1.0 : 0.0;
  json out = {{"kernel", kernel},
              {"n", spec0->run.n},
              {"bs", spec0->run.bs},
              {"threads", spec0->run.threads},
              {"machine", "lp-isca18, --wc-buffers 10, helper on core 8"},
              {"rows", rows}};
  const auto gain = [&](const std::string& a, const std::string& b) -> json {
    return cyc(a) > 0 && cyc(b) > 0 ? json(1.0 - cyc(a) / cyc(b)) : json(nullptr);
  };
  const auto ovh = [&](const std::string& a) -> json {
    return cyc(a) > 0 && base > 0 ? json(cyc(a) / base - 1.0) : json(nullptr);
  };
  out["fig6"] = {{"nt_gain_over_clflush", gain("cp-nt", "cp-clflush")},
                 {"par_gain_over_clflush", gain("cp-par-clflush", "cp-clflush")},
                 {"cp_nt_overhead", ovh("cp-nt")}};
  // Fig. 7: the copy's share of each clflush design's loss over base (the paper's third part,
  // the DRAM cache's flush, is modelled behind --dram-cache on, which these runs leave off:
  // docs/seed002.md "The DRAM cache").
  const auto copy_share = [&](const std::string& design) -> json {
    const double loss = cyc(design) - base, copy = cyc(design + " copy only") - base;
    return cyc(design) > 0 && cyc(design + " copy only") > 0 && loss > 0 ? json(copy / loss)
                                                                         : json(nullptr);
  };
  out["fig7"] = {{"copy_share_cp_clflush", copy_share("cp-clflush")},
                 {"copy_share_cp_par_clflush", copy_share("cp-par-clflush")}};
  out["fig12"] = {{"ipv_overhead", ovh("ipv")},
                  {"ipv_sync_overhead", ovh("ipv-sync")},
                  {"ipv_no_flush_overhead", ovh("ipv no flush")},
                  {"ipv_no_flush_gain_over_cp_nt", gain("ipv no flush", "cp-nt")},
                  {"async_copy_gain_over_cp_nt", gain("cp-nt-async", "cp-nt")}};
  json f13 = json::object();
  if (st.count("ipv") && st["ipv"].helper) f13["overlap"] = st["ipv"].helper->overlap();
  if (st.count("cp-nt-async") && st["cp-nt-async"].helper)
    f13["overlap_copy"] = st["cp-nt-async"].helper->overlap();
  if (st.count("ipv wbinvd") && st["ipv wbinvd"].helper)
    f13["overlap_wbinvd"] = st["ipv wbinvd"].helper->overlap();
  // The native-style estimate from whole-run times: (sync - async) / (sync - no flush).
  if (cyc("ipv-sync") > cyc("ipv no flush") && cyc("ipv") > 0)
    f13["overlap_from_times"] =
        (cyc("ipv-sync") - cyc("ipv")) / (cyc("ipv-sync") - cyc("ipv no flush"));
  out["fig13"] = f13;
  if (st.count("ipv no flush"))
    out["fig14"] = {{"llc_miss_rate_base", st["base"].llc().miss_rate()},
                    {"llc_miss_rate_ipv_no_flush", st["ipv no flush"].llc().miss_rate()},
                    {"difference_points", 100.0 * (st["ipv no flush"].llc().miss_rate() -
                                                   st["base"].llc().miss_rate())}};
  return out;
}

}  // namespace pmlab::experiments
