// `pmlab sim`: run a kernel x scheme in the persistence simulator; NVM traffic, misses, cycles,
// optionally normalised to base.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/driver/sim_run.hpp"
#include "pmlab/sim/presets.hpp"

namespace pmlab::cli {
namespace {

struct SimArgs {
  std::string kernel;
  std::string scheme = "lp";
  std::string config = "lp-isca18";
  std::uint64_t n = 256;
  std::uint64_t bs = 16;
  std::optional<std::uint32_t> threads;
  std::string checksum = "modular";
  std::uint64_t seed = 1;
  std::string flush = "clflushopt";
  bool drain = false;
  std::optional<std::string> vs;
  bool verify = false;
  bool json = false;
  bool no_progress = false;
  // Machine overrides, kept as typed text so sizes may carry K/M suffixes.
  std::optional<int> cores;
  std::optional<std::string> l1_size, l2_size, llc_size, d1, ll;
  std::optional<std::uint32_t> l1_ways, l2_ways, llc_ways, wq_entries, write_units;
  std::optional<std::string> replacement, llc_inclusion;
  std::optional<double> nvm_read_ns, nvm_write_ns, freq_ghz;
};

[[noreturn]] void bad(const std::string& msg) {
  throw Error(ErrorCode::kInvalidArgument, msg);
}

// "65536", "64K", "64KiB", "64KB", "8M", "1G": cache sizes, so every suffix is a power of 1024.
std::uint64_t parse_size(const std::string& flag, const std::string& text) {
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    bad(fmt::format("{}: '{}' is not a size (e.g. 65536, 64K, 512KiB, 8M)", flag, text));
  }
  std::string suffix = text.substr(pos);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::uint64_t mult = 1;
  if (suffix == "" || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    mult = 1ull << 30;
  else
    bad(fmt::format("{}: '{}' is not a size (suffixes: K, M, G = 2^10, 2^20, 2^30 bytes)", flag,
                    text));
  if (v > (1ull << 40) / mult) bad(fmt::format("{}: '{}' is too large", flag, text));
  return v * mult;
}

// cachegrind's --D1/--LL syntax: size,assoc,line_size.
sim::CacheGeometry parse_geometry(const std::string& flag, const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == ',') {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  if (parts.size() != 3)
    bad(fmt::format(
        "{} expects size,assoc,line_size as cachegrind does (e.g. 65536,8,64), got '{}'", flag,
        text));
  const std::uint64_t assoc = parse_size(flag, parts[1]), line = parse_size(flag, parts[2]);
  if (assoc < 1 || assoc > 1024)
    bad(fmt::format("{}: associativity must be in [1, 1024], got {}", flag, assoc));
  return {parse_size(flag, parts[0]), static_cast<std::uint32_t>(assoc),
          static_cast<std::uint32_t>(line)};
}

sim::SimParams build_machine(const SimArgs& a) {
  if ((a.d1 || a.ll) && a.config != "cachegrind")
    bad("--D1 and --LL describe cachegrind's caches: use them with --config cachegrind");
  driver::MachineOverrides o;
  o.cores = a.cores;
  if (a.l1_size) o.l1_size = parse_size("--l1-size", *a.l1_size);
  if (a.l2_size) o.l2_size = parse_size("--l2-size", *a.l2_size);
  if (a.llc_size) o.llc_size = parse_size("--llc-size", *a.llc_size);
  o.l1_ways = a.l1_ways;
  o.l2_ways = a.l2_ways;
  o.llc_ways = a.llc_ways;
  if (a.replacement) o.replacement = sim::replacement_from_string(*a.replacement);
  if (a.llc_inclusion) o.inclusive_llc = *a.llc_inclusion == "inclusive";
  o.nvm_read_ns = a.nvm_read_ns;
  o.nvm_write_ns = a.nvm_write_ns;
  o.freq_ghz = a.freq_ghz;
  o.write_queue_entries = a.wq_entries;
  o.write_units = a.write_units;
  sim::SimParams p = driver::machine_from(a.config, o);
  if (a.config == "cachegrind" && (a.d1 || a.ll)) {
    // Rebuild from the geometries, then re-apply the overrides on top.
    const sim::SimParams cg = sim::cachegrind_like(
        a.d1 ? parse_geometry("--D1", *a.d1) : sim::CacheGeometry{p.l1.size_bytes, p.l1.ways, 64},
        a.ll ? parse_geometry("--LL", *a.ll)
             : sim::CacheGeometry{p.llc.size_bytes, p.llc.ways, 64});
    p.l1.size_bytes = cg.l1.size_bytes;
    p.l1.ways = cg.l1.ways;
    p.llc.size_bytes = cg.llc.size_bytes;
    p.llc.ways = cg.llc.ways;
    p.validate();
  }
  return p;
}

// A one-line bar on stderr, redrawn at most 10 times a second.
class ProgressBar {
 public:
  ProgressBar(bool on, std::string label) : on_(on), label_(std::move(label)) {}
  ~ProgressBar() {
    if (drawn_) std::fputs("\r\033[K", stderr);
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  [[nodiscard]] driver::SimProgress callback() {
    if (!on_) return {};
    return [this](double f) { draw(f); };
  }

 private:
  void draw(double f) {
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(f * kWidth);
    fmt::print(stderr, "\r[{:#<{}}{:.<{}}] {:3.0f}% {}", "", filled, "", kWidth - filled, 100 * f,
               label_);
    std::fflush(stderr);
  }

  bool on_;
  std::string label_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

driver::SimRunResult simulate_one(const driver::SimRunSpec& spec, bool progress) {
  ProgressBar bar(progress, fmt::format("simulating {} {} (n={})", spec.run.kernel, spec.run.scheme,
                                        spec.run.n));
  return driver::simulate(spec, bar.callback());
}

std::string human(double v) {
  if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.0f} ", v);
}

std::string level_line(const sim::LevelParams& l, bool shared) {
  return fmt::format("{} {} {} KiB {}-way {} cyc{}", l.name, shared ? "shared" : "private",
                     l.size_bytes / 1024, l.ways, l.hit_latency.value(),
                     l.replacement == sim::Replacement::kLru
                         ? ""
                         : fmt::format(" {}", sim::to_string(l.replacement)));
}

// Rows of the text report: label and the figure from the stats JSON (a path of keys).
struct Row {
  std::string label;
  std::vector<std::string> path;
};

std::vector<Row> report_rows(const sim::SimParams& m) {
  std::vector<Row> rows{{"cycles", {"cycles"}},
                        {"NVM reads (lines)", {"nvm_reads"}},
                        {"NVM writes (lines)", {"nvm_writes"}}};
  for (std::size_t i = 0; i < sim::kWriteCauseCount; ++i) {
    const std::string c(sim::to_string(static_cast<sim::WriteCause>(i)));
    rows.push_back({"  by " + c, {"nvm_writes_by_cause", c}});
  }
  std::vector<std::string> names{m.l1.name};
  if (m.l2) names.push_back(m.l2->name);
  names.push_back(m.llc.name);
  for (const auto& n : names) rows.push_back({n + " misses", {"levels", n, "misses"}});
  rows.push_back({"line accesses", {"accesses"}});
  rows.push_back({"flushes", {"flushes"}});
  rows.push_back({"fences", {"fences"}});
  rows.push_back({"fence stall cycles", {"fence_stall_cycles"}});
  rows.push_back({"write-queue stall cycles", {"write_queue_stall_cycles"}});
  return rows;
}

const nlohmann::json& at_path(const nlohmann::json& j, const std::vector<std::string>& path) {
  const nlohmann::json* p = &j;
  for (const auto& k : path) p = &p->at(k);
  return *p;
}

std::string ratio_text(const nlohmann::json& r) {
  return r.is_null() ? std::string("n/a") : fmt::format("{:.4f}x", r.get<double>());
}

int do_sim(const SimArgs& a) {
  const sim::SimParams machine = build_machine(a);
  driver::SimRunSpec spec;
  spec.run.kernel = a.kernel;
  spec.run.scheme = a.scheme;
  spec.run.n = a.n;
  spec.run.bs = a.bs;
  spec.run.threads = a.threads.value_or(static_cast<std::uint32_t>(machine.threads));
  spec.run.checksum = lp::checksum_kind_from_string(a.checksum);
  spec.run.seed = a.seed;
  spec.machine = machine;
  spec.flush = sim::flush_mode_from_string(a.flush);
  spec.drain = a.drain;
  spec.verify = a.verify;

  std::optional<driver::SimRunSpec> ref;
  if (a.vs) {
    ref = spec;
    ref->run.scheme = *a.vs;
    ref->verify = false;
    driver::validate(*ref);  // refuses a bad reference scheme before the long run
  }
  const bool progress = !a.no_progress && isatty(STDERR_FILENO) != 0;
  const driver::SimRunResult r = simulate_one(spec, progress);
  std::optional<driver::SimRunResult> base;
  // Simulated even when it is the same scheme: runs are deterministic, so x/x = 1 exactly.
  if (ref) base = simulate_one(*ref, progress);
  const std::optional<driver::VerifyResult>& verdict = r.verify;

  const nlohmann::json stats = sim::to_json(r.stats);
  if (a.json) {
    nlohmann::json j{{"kernel", a.kernel},
                     {"scheme", a.scheme},
                     {"config", a.config},
                     {"n", a.n},
                     {"bs", a.bs},
                     {"threads", spec.run.threads},
                     {"checksum", std::string(lp::to_string(spec.run.checksum))},
                     {"seed", a.seed},
                     {"flush", a.flush},
                     {"drain", a.drain},
                     {"machine", sim::to_json(machine)},
                     {"ops", r.ops},
                     {"wall_seconds", r.seconds},
                     {"cpu_seconds", r.cpu_seconds},
                     {"refs_per_second", r.refs_per_second()}};
    j.update(stats);
    if (base) {
      j["vs"] = *a.vs;
      j["base"] = sim::to_json(base->stats);
      j["normalized"] = driver::normalized_to(r.stats, base->stats);
    }
    if (verdict) {
      j["verified"] = verdict->ok();
      j["mismatches"] = verdict->mismatches;
    }
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("pmlab sim {} --scheme {} --config {} --n {} --bs {} --threads {} --flush {}{}\n",
               a.kernel, a.scheme, a.config, a.n, a.bs, spec.run.threads, a.flush,
               a.drain ? " --drain" : "");
    fmt::print("  machine: {} cores {:g} GHz; {}", machine.cores, machine.freq_ghz,
               level_line(machine.l1, false));
    if (machine.l2) fmt::print("; {}", level_line(*machine.l2, false));
    fmt::print("; {}{}; NVM {:g}/{:g} ns read/write, WQ {}, {} units\n",
               level_line(machine.llc, true),
               machine.inclusive_llc ? " inclusive" : " non-inclusive", machine.nvm.read_ns,
               machine.nvm.write_ns, machine.nvm.write_queue_entries, machine.nvm.write_units);
    fmt::print("  simulated {}refs in {:.2f} s, {:.2f} s CPU ({}refs/s)\n",
               human(static_cast<double>(r.stats.accesses())), r.seconds, r.cpu_seconds,
               human(r.refs_per_second()));
    const nlohmann::json base_stats = base ? sim::to_json(base->stats) : nlohmann::json();
    const nlohmann::json norm =
        base ? driver::normalized_to(r.stats, base->stats) : nlohmann::json();
    if (base)
      fmt::print("  {:<26}{:>16}{:>16}{:>12}\n", "", a.scheme, *a.vs, fmt::format("/{}", *a.vs));
    for (const Row& row : report_rows(machine)) {
      const auto v = at_path(stats, row.path).get<std::uint64_t>();
      if (base)
        fmt::print("  {:<26}{:>16}{:>16}{:>12}\n", row.label, v,
                   at_path(base_stats, row.path).get<std::uint64_t>(),
                   ratio_text(at_path(norm, row.path)));
      else
        fmt::print("  {:<26}{:>16}\n", row.label, v);
    }
    if (verdict) {
      if (verdict->ok())
        fmt::print("  verify: OK, {} elements bit-identical to the fault-free reference\n",
                   verdict->elements);
      else
        fmt::print("  verify: FAILED, {} of {} elements differ; first: {}\n", verdict->mismatches,
                   verdict->elements, verdict->first_mismatch);
    }
  }
  return verdict && !verdict->ok() ? kExitVerifyFailed : kExitOk;
}

}  // namespace

void add_sim_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SimArgs>();
  auto* cmd = app.add_subcommand(
      "sim",
      "Run a kernel under a persistency scheme in the persistence simulator (heap-like scratch "
      "memory, inputs "
      "registered as persistent) and report NVM reads/writes by cause, per-level misses and "
      "cycles. "
      "--vs base also simulates base with the same parameters and normalises every figure to it. "
      "The machine is a preset (--config) with optional overrides; see docs/simulator.md.");
  std::string kernels;
  for (const auto& k : driver::sim_kernels()) kernels += (kernels.empty() ? "" : ", ") + k.name;
  std::string presets;
  for (auto p : sim::preset_names()) presets += (presets.empty() ? "" : ", ") + std::string(p);
  cmd->add_option("kernel", a->kernel, "Kernel to simulate: " + kernels)->required();
  cmd->add_option("--scheme", a->scheme,
                  "Persistency scheme (base, lp, ep-ii, ep-jj, wal-ii, wal-jj, cp, hr-*-x32/x64)")
      ->capture_default_str();
  cmd->add_option("--config", a->config, "Machine preset: " + presets)->capture_default_str();
  cmd->add_option("--n", a->n, "Problem size n")->capture_default_str();
  cmd->add_option("--bs", a->bs, "Block/tile size")->capture_default_str();
  cmd->add_option("--threads", a->threads,
                  "Logical threads (default: the preset's; thread t runs on core t % cores)");
  cmd->add_option("--checksum", a->checksum,
                  "LP checksum: modular, parity, adler32, modular-parity, crc32c")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the deterministic inputs")->capture_default_str();
  cmd->add_option("--flush", a->flush,
                  "Flush instruction: clflushopt (the papers'), clwb, clflush, none")
      ->capture_default_str();
  cmd->add_flag("--drain", a->drain,
                "Write every dirty line back at the end (counted as nvm_writes_by_cause.drain)");
  cmd->add_option("--vs", a->vs,
                  "Also simulate this scheme (normally base) and normalise every figure to it");
  cmd->add_flag(
      "--verify", a->verify,
      "Check the simulated result bit for bit against the native reference (exit 1 on mismatch)");
  cmd->add_flag("--json", a->json, "Print JSON (keys: docs/simulator.md, \"pmlab sim JSON\")");
  cmd->add_flag("--no-progress", a->no_progress,
                "No progress bar (it is shown only when stderr is a terminal)");
  auto* m = cmd->add_option_group("machine overrides", "Changes to the preset");
  m->add_option("--cores", a->cores,
                "Simulated cores (pact17: the shared L2 stays 1 MiB per core)");
  m->add_option("--l1-size", a->l1_size, "Private L1 size (bytes, or with K/M suffix)");
  m->add_option("--l1-ways", a->l1_ways, "L1 associativity");
  m->add_option("--l2-size", a->l2_size,
                "Adds/resizes a private L2 per core (0 removes it); the LLC is then L3");
  m->add_option("--l2-ways", a->l2_ways, "Private L2 associativity");
  m->add_option("--llc-size", a->llc_size, "Shared last-level cache size");
  m->add_option("--llc-ways", a->llc_ways, "LLC associativity");
  m->add_option("--llc-inclusion", a->llc_inclusion,
                "inclusive (presets) or non-inclusive (1 core only, cachegrind's)")
      ->check(CLI::IsMember({"inclusive", "non-inclusive"}));
  m->add_option("--replacement", a->replacement,
                "Replacement policy of every level: lru, random, srrip");
  m->add_option("--nvm-read-ns", a->nvm_read_ns, "NVM read latency (ns)");
  m->add_option("--nvm-write-ns", a->nvm_write_ns, "NVM write latency (ns)");
  m->add_option("--freq-ghz", a->freq_ghz, "Core clock (GHz)");
  m->add_option("--wq-entries", a->wq_entries, "Memory-controller write-queue entries");
  m->add_option("--write-units", a->write_units, "Concurrent NVM writes (banks)");
  m->add_option("--D1", a->d1,
                "With --config cachegrind: D1 as size,assoc,line (cachegrind's syntax)");
  m->add_option("--LL", a->ll, "With --config cachegrind: LL as size,assoc,line");
  cmd->callback([a, &exit_code] { exit_code = do_sim(*a); });
}

}  // namespace pmlab::cli
