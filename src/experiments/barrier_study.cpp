// Seed 004's evaluation: simulates each BEP benchmark under every persist-barrier mode.
#include "pmlab/experiments/barrier_study.hpp"

#include <cmath>
#include <map>

#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

struct Config {
  std::string name;     // row label
  std::string barrier;  // --barrier
  std::string scheme;   // tx (epoch persistency) or base (none)
  bool invalidating = false;
};

std::vector<Config> configs() {
  std::vector<Config> c;
  for (const auto& b : hardware_barriers()) c.push_back({b, b, "tx", false});
  c.push_back({"lb++ invalidating", "lb++", "tx", true});  // §7: clflush-like epoch flushes
  c.push_back({"sw", "sw", "tx", false});                  // software EP: clwb + sfence
  c.push_back({"no persistency", "none", "base", false});  // the NP baseline
  return c;
}

json epoch_json(const sim::EpochStats& e) {
  json by = json::object();
  for (std::size_t i = 0; i < sim::kEpochCauseCount; ++i)
    by[std::string(sim::to_string(static_cast<sim::EpochCause>(i)))] = e.flushed_by[i];
  return {{"epochs", e.epochs},
          {"barriers", e.barriers},
          {"splits", e.splits},
          {"idt_deps", e.idt_deps},
          {"conflicting", e.conflicting()},
          {"conflict_pct", e.conflict_pct()},
          {"stall_cycles", e.stall_total()},
          {"flushed_by", by}};
}

}  // namespace

const std::vector<std::string>& bep_benchmarks() {
  static const std::vector<std::string> b = {"hash", "queue", "rbtree", "sdg", "sps"};
  return b;
}

const std::vector<std::string>& hardware_barriers() {
  static const std::vector<std::string> b = {"lb", "lb-idt", "lb-pf", "lb++"};
  return b;
}

json barrier_study_bench(const std::string& bench, const BarrierStudyOptions& o) {
  const sim::MachineSettings mo{{"cores", std::to_string(o.threads)}};
  const double transactions = static_cast<double>(o.threads) * static_cast<double>(o.ops);
  json rows = json::array();
  double lb_cycles = 0;
  for (const Config& c : configs()) {
    run::SimRunSpec spec;
    spec.run.kernel = bench;
    spec.run.scheme = c.scheme;
    spec.run.n = o.entries;
    spec.run.bs = 1;
    spec.run.seed = o.seed;
    spec.run.threads = static_cast<std::uint32_t>(o.threads);
    spec.run.set_kernel_param("ops", o.ops);
    spec.machine = sim::machine_from("micro15", mo);
    spec.machine.persistency.barrier = sim::barrier_from_string(c.barrier);
    spec.machine.persistency.invalidating_epoch_flush = c.invalidating;
    spec.machine.persistency.timed_locks = o.timed_locks;
    // Software EP and no persistency flush nothing explicitly under the hardware barriers; the
    // flush instruction of sw is clwb, as on the paper's machine (non-invalidating).
    spec.flush = c.barrier == "sw" ? sim::FlushMode::kClwb : sim::FlushMode::kNone;
    spec.drain = false;  // as the paper: throughput of the run, epochs still in flight at the end
    const auto st = run::simulate(spec).stats;
    const double cycles = static_cast<double>(st.cycles.value());
    if (c.name == "lb") lb_cycles = cycles;
    json r = {{"config", c.name},
              {"barrier", c.barrier},
              {"scheme", c.scheme},
              {"invalidating", c.invalidating},
              {"cycles", st.cycles.value()},
              {"tx_per_kcycle", cycles > 0 ? 1000.0 * transactions / cycles : 0.0},
              // Same transactions in every row, so throughput over LB = LB's cycles / these.
              {"vs_lb", cycles > 0 && lb_cycles > 0 ? lb_cycles / cycles : 0.0},
              {"nvm_writes", st.nvm.writes}};
    if (st.epochs) r["epochs"] = epoch_json(*st.epochs);
    rows.push_back(std::move(r));
  }
  return {{"bench", bench},
          {"threads", o.threads},
          {"ops", o.ops},
          {"entries", o.entries},
          {"transactions", transactions},
          {"rows", rows},
          {"timed_locks", o.timed_locks}};
}

namespace {
struct BspConfig {
  std::string name;     // row label (the keys of paper::kMicro15Bsp)
  std::string barrier;  // --barrier
  std::uint64_t epoch_stores = 0;
  bool log = true;
  bool write_through = false;
};

std::vector<BspConfig> bsp_configs() {
  return {{"np", "none", 0, false, false},
          {"lb-300", "lb", 300, true, false},
          {"lb-1k", "lb", 1000, true, false},
          {"lb-10k", "lb", 10000, true, false},
          {"lb-idt-10k", "lb-idt", 10000, true, false},
          {"lb++-10k", "lb++", 10000, true, false},
          {"lb++-nolog-10k", "lb++", 10000, false, false},
          {"write-through", "lb", 0, false, true}};
}
}  // namespace

json bsp_study_bench(const std::string& bench, const BarrierStudyOptions& o) {
  const sim::MachineSettings mo{{"cores", std::to_string(o.threads)}};
  json rows = json::array();
  double np_cycles = 0;
  for (const BspConfig& c : bsp_configs()) {
    run::SimRunSpec spec;
    spec.run.kernel = bench;
    spec.run.scheme = "base";  // no program barriers: the hardware makes the epochs
    spec.run.n = o.entries;
    spec.run.bs = 1;
    spec.run.seed = o.seed;
    spec.run.threads = static_cast<std::uint32_t>(o.threads);
    spec.run.set_kernel_param("ops", o.ops);
    spec.machine = sim::machine_from("micro15", mo);
    auto& per = spec.machine.persistency;
    per.barrier = sim::barrier_from_string(c.barrier);
    per.bsp_epoch_stores = c.epoch_stores;
    per.bsp_log = c.log && c.epoch_stores != 0;
    per.bsp_write_through = c.write_through;
    per.timed_locks = o.timed_locks;
    spec.flush = sim::FlushMode::kNone;
    spec.drain = false;  // as the paper's runs: time of the program, nothing forced at the end
    const auto st = run::simulate(spec).stats;
    const double cycles = static_cast<double>(st.cycles.value());
    if (c.name == "np") np_cycles = cycles;
    json r = {{"config", c.name},
              {"barrier", c.barrier},
              {"epoch_stores", c.epoch_stores},
              {"log", per.bsp_log},
              {"write_through", c.write_through},
              {"cycles", st.cycles.value()},
              // Execution time over no persistency (Figs. 13-14 plot time, lower is better).
              {"vs_np", np_cycles > 0 ? cycles / np_cycles : 0.0},
              {"stores", st.stores},
              {"nvm_writes", st.nvm.writes}};
    if (st.epochs) {
      r["epochs"] = epoch_json(*st.epochs);
      r["epochs"]["bsp_barriers"] = st.epochs->bsp_barriers;
      r["epochs"]["log_writes"] = st.epochs->log_writes;
    }
    rows.push_back(std::move(r));
  }
  return {{"bench", bench}, {"kind", "bsp"},        {"threads", o.threads},
          {"ops", o.ops},   {"entries", o.entries}, {"bsp_rows", rows}};
}

// Geometric means of a ratio per configuration, in the order configurations first appear
// (the benchmarks' rows list them in the same order); non-positive ratios are left out.
class GeomeanByConfig {
 public:
  void add(const std::string& config, double ratio) {
    auto [it, fresh] = logs_.try_emplace(config, 0.0, 0);
    if (fresh) order_.push_back(config);
    if (ratio > 0) it->second = {it->second.first + std::log(ratio), it->second.second + 1};
  }
  [[nodiscard]] const std::vector<std::string>& order() const { return order_; }
  [[nodiscard]] double geomean(const std::string& config) const {
    const auto [s, n] = logs_.at(config);
    return n > 0 ? std::exp(s / n) : 0.0;
  }
  [[nodiscard]] int count(const std::string& config) const { return logs_.at(config).second; }

 private:
  std::map<std::string, std::pair<double, int>> logs_;  // sum of logs, count
  std::vector<std::string> order_;
};

json bsp_study_summary(const json& benches) {
  GeomeanByConfig g;
  for (const auto& b : benches)
    if (b.contains("bsp_rows"))
      for (const auto& r : b["bsp_rows"]) g.add(r.value("config", "?"), r.value("vs_np", 0.0));
  json out = json::array();
  for (const auto& c : g.order())
    out.push_back({{"config", c}, {"geomean_vs_np", g.geomean(c)}, {"benches", g.count(c)}});
  return out;
}

json barrier_study_summary(const json& benches) {
  GeomeanByConfig g;
  std::map<std::string, std::pair<double, int>> conflict;  // sum of %, count
  for (const auto& b : benches) {
    if (!b.contains("rows")) continue;
    for (const auto& r : b["rows"]) {
      const std::string c = r.value("config", "?");
      g.add(c, r.value("vs_lb", 0.0));
      if (r.contains("epochs")) {
        auto& k = conflict[c];
        k = {k.first + r["epochs"].value("conflict_pct", 0.0), k.second + 1};
      }
    }
  }
  json out = json::array();
  for (const auto& c : g.order()) {
    json r = {{"config", c}, {"geomean_vs_lb", g.geomean(c)}, {"benches", g.count(c)}};
    if (conflict.count(c) && conflict[c].second > 0)
      r["mean_conflict_pct"] = conflict[c].first / conflict[c].second;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace pmlab::experiments
