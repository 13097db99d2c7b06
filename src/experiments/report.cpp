// Renders the evaluation results as Markdown, the papers' numbers side by side, with a note per
// gap.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "paper_numbers.hpp"
#include "pmlab/experiments/barrier_study.hpp"
#include "pmlab/experiments/blas_study.hpp"
#include "pmlab/experiments/eval.hpp"
#include "pmlab/experiments/gemm_study.hpp"
#include "pmlab/experiments/paired_ratio.hpp"
#include "pmlab/experiments/preflush_study.hpp"
#include "pmlab/experiments/seed002_study.hpp"
#include "row_family.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

std::string pct(double ratio) {
  return fmt::format("{:+.1f}%", (ratio - 1.0) * 100.0);
}
// A ratio from results.json: null when its base was 0 (nothing to normalise to).
std::string pct(const json& ratio) {
  return ratio.is_number() ? pct(ratio.get<double>()) : "n/a";
}
std::string times(const json& ratio) {
  return ratio.is_number() ? fmt::format("{:.3f}x", ratio.get<double>()) : "n/a";
}

template <class Map>
std::string lookup(const Map& m, const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) return "–";
  if constexpr (std::is_same_v<typename Map::mapped_type, double>)
    return fmt::format("{:.3f}x", it->second);
  else
    return it->second;
}

const json* find_row(const json& rows, const std::string& scheme) {
  for (const auto& r : rows)
    if (r.value("scheme", "") == scheme) return &r;
  return nullptr;
}

// A native ratio cell: "+0.4% [-0.3%, +1.1%]" when resolved, "unresolved: +3% [-8%, +21%]"
// when not (never a bare number), "–" when not measured.
std::string native_cell(const json& s) {
  if (!s.contains("ratio") || !s.contains("ci95") || s["ci95"].is_null())
    return s.contains("ratio") ? "unresolved: no interval" : "–";
  const double ratio = s["ratio"].get<double>(), low = s["ci95"][0].get<double>(),
               high = s["ci95"][1].get<double>();
  const double half_width_percent = 100 * (high - low) / 2 / ratio;
  const int decimals = half_width_percent >= 10 ? 0 : half_width_percent >= 0.1 ? 1 : 2;
  std::string text = fmt::format("{} [{}, {}]", experiments::detail::percent(ratio - 1, decimals),
                                 experiments::detail::percent(low - 1, decimals),
                                 experiments::detail::percent(high - 1, decimals));
  return s.value("resolved", false) ? text : "unresolved: " + text;
}

std::string load_text(const json& v) {
  return v.is_number() ? fmt::format("{:.2f}", v.get<double>()) : "n/a";
}

// How the measured ratios were formed, from the statistic the results name (older results
// name none: they are the trimmed mean).
std::string ratio_definition(const json& res) {
  for (const auto& k : res)
    if (k.contains("schemes"))
      for (const auto& s : k["schemes"])
        if (s.value("statistic", "") == "floor")
          return "Ratio = the scheme's 10th-percentile repetition time over base's (the floor "
                 "statistic: disturbances on a shared host only add time; results.json has the "
                 "trimmed mean of the per-pair ratios beside it), with a distribution-free 95% "
                 "interval from the order statistics of each side's times";
  return "Ratio = exp of the 20%-trimmed mean of per-pair log ratios, with a 95% bootstrap "
         "interval";
}

std::string native_section(const json& res) {
  std::string md =
      "## Native execution time vs base\n\n"
      "Each scheme against base in paired repetitions (base and scheme back to back, order "
      "alternating, fresh pool contents, only the kernel computation timed, `--persist cpu "
      "--flush clwb`, 1 thread); a repetition repeats the kernel until base computes for at "
      "least the stated time. " +
      ratio_definition(res) +
      "; pairs continue until the interval is within ±target or the budget is spent, and a "
      "ratio that did not get there is marked **unresolved** (docs/measurement.md).\n\n";
  for (const auto& k : res) {
    if (k.contains("error")) {
      md += fmt::format("- {}: not measured ({})\n\n", k.value("label", "?"),
                        k["error"].get<std::string>());
      continue;
    }
    if (!k.contains("schemes")) continue;
    md += fmt::format(
        "### {} (n = {}, bs = {}, {} thread(s), {} execution(s) per repetition, target ±{:.1f}%, "
        "budget {:.0f} s per scheme)\n\n",
        k["kernel"].get<std::string>(), k["n"].get<std::uint64_t>(), k["bs"].get<std::uint64_t>(),
        k.value("threads", 0u), k.value("executions_per_rep", std::uint64_t{1}),
        100 * k.value("target", 0.0), k.value("budget_seconds", 0.0));
    md +=
        "| scheme | s per repetition | vs base [95% CI] | pairs used / run | CPU/wall | "
        "bit-exact | paper |\n|---|---|---|---|---|---|---|\n";
    for (const auto& s : k["schemes"]) {
      const std::string name = s["scheme"];
      std::string paper = "–";
      if (k["kernel"] == "tmm") paper = lookup(paper::kFig10Time, name);
      const scheme::Family family = family_of(k["kernel"].get<std::string>(), name);
      if (family == scheme::Family::kLp && paper::kTable7NativeLp.count(k["kernel"]))
        paper = "+" + paper::kTable7NativeLp.at(k["kernel"]) + " (Table VII)";
      const bool is_base = family == scheme::Family::kBase;
      md += fmt::format(
          "| {} | {:.4f} | {} | {} | {} | {} | {} |\n", name, s.value("median_rep_seconds", 0.0),
          is_base ? "(reference)" : native_cell(s),
          is_base
              ? ""
              : fmt::format("{} / {}", s.value("pairs_used", 0u), s.value("pairs_measured", 0u)),
          is_base ? "" : fmt::format("{:.2f}", s.value("median_cpu_fraction", 0.0)),
          s.value("bit_exact_vs_base", true) ? "yes" : "NO", paper);
    }
    const json machine = k.value("machine", json::object());
    md += fmt::format("\nMachine: load average {} before, {} after, {} cores.",
                      load_text(machine.value("load_before", json())),
                      load_text(machine.value("load_after", json())), machine.value("cores", 0u));
    for (const auto& s : k["schemes"])
      if (s.contains("reason") && !s["reason"].get<std::string>().empty())
        md += fmt::format(" {} unresolved: {}.", s["scheme"].get<std::string>(),
                          s["reason"].get<std::string>());
    for (const auto& w : k.value("warnings", json::array()))
      md += " Warning: " + w.get<std::string>() + ".";
    md += "\n\n";
  }
  md +=
      "Gaps: the papers' native numbers come from machines with real persistent memory, where a "
      "flushed line travels to the NVM DIMM; here pools live in DRAM-backed files, so "
      "`clwb`/`clflushopt` write back to DRAM and flushing schemes pay less than on "
      "Optane-class memory. LP issues no flush in its loop, so its overhead (the checksum "
      "arithmetic) is the figure that transfers most directly.\n\n";
  return md;
}

// LP paper Table VII (LP's native overhead per kernel) beside pmlab's LP column, with the
// geometric mean over the kernels measured.
std::string table7_section(const json& res) {
  std::string md;
  double log_sum = 0, log_low = 0, log_high = 0;
  int measured = 0, resolved = 0;
  std::string rows;
  for (const auto& k : res) {
    if (!k.contains("schemes")) continue;
    const json* lp = find_row(k["schemes"], "lp");
    if (!lp) continue;
    const std::string kernel = k["kernel"];
    const auto paper = paper::kTable7NativeLp.find(kernel);
    rows += fmt::format("| {} | {} | {} | {} |\n", kernel, k["n"].get<std::uint64_t>(),
                        native_cell(*lp),
                        paper == paper::kTable7NativeLp.end() ? "–" : "+" + paper->second);
    if (!lp->contains("ci95") || (*lp)["ci95"].is_null()) continue;
    ++measured;
    resolved += lp->value("resolved", false) ? 1 : 0;
    log_sum += std::log((*lp)["ratio"].get<double>());
    log_low += std::log((*lp)["ci95"][0].get<double>());
    log_high += std::log((*lp)["ci95"][1].get<double>());
  }
  if (rows.empty()) return md;
  md = "## LP's native overhead per kernel (LP paper Table VII)\n\n"
       "| kernel | n | LP time vs base [95% CI] | paper (Table VII) |\n|---|---|---|---|\n" +
       rows;
  if (measured > 0) {
    const double m = measured;
    md += fmt::format(
        "\nGeometric mean over the {} kernels with an interval: {} [{}, {}] (the bracket is the "
        "geometric mean of the interval ends: it contains the mean whenever every kernel's "
        "interval contains its kernel's ratio); {} of {} resolved{}. Paper: gmean +1.1%, "
        "worst +2.1%.\n\n",
        measured, experiments::detail::percent(std::exp(log_sum / m) - 1, 1),
        experiments::detail::percent(std::exp(log_low / m) - 1, 1),
        experiments::detail::percent(std::exp(log_high / m) - 1, 1), resolved, measured,
        resolved < measured ? " — the mean is unresolved too" : "");
  }
  return md;
}

// Instructions executed per scheme relative to base (callgrind): deterministic, so it separates
// added work from a busy machine.
std::string instructions_section(const json& res) {
  if (res.is_null()) return "";
  std::string md = "## Instructions executed vs base (callgrind)\n\n";
  for (const char* why : {"skipped", "error"})
    if (res.contains(why))
      return md + fmt::format("Not measured: {}.\n\n", res[why].get<std::string>());
  md +=
      "Instructions of the kernel's execution alone (scheme set-up, computation, final "
      "persist; not pool creation or verification), counted by `valgrind --tool=callgrind` "
      "(scripts/instruction-counts). Deterministic: reruns give the same counts.\n\n"
      "| kernel | n | scheme | instructions | vs base |\n|---|---|---|---|---|\n";
  for (const auto& k : res.value("kernels", json::array())) {
    if (k.contains("error")) {
      md += fmt::format("| {} | | | error: {} | |\n", k.value("kernel", "?"),
                        k["error"].get<std::string>());
      continue;
    }
    for (const auto& r : k["rows"])
      md += fmt::format("| {} | {} | {} | {} | {} |\n", k["kernel"].get<std::string>(),
                        k["n"].get<std::uint64_t>(), r["scheme"].get<std::string>(),
                        r["instructions"].get<std::uint64_t>(),
                        family_of(k["kernel"].get<std::string>(), r["scheme"].get<std::string>()) ==
                                scheme::Family::kBase
                            ? "1"
                            : pct(r["vs_base"].get<double>()));
  }
  return md + "\n";
}

// The papers summarise the other kernels by averages: geometric means over kernels of each
// scheme family's overhead, over the rows that stand for their family (Scheme::in_family_mean).
std::string gmean_table(const json& res) {
  std::map<std::pair<std::string, std::string>, std::pair<double, double>>
      log_sum;  // (preset, family)
  std::map<std::pair<std::string, std::string>, int> count;
  for (const auto& k : res) {
    if (!k.contains("rows")) continue;
    for (const auto& r : k["rows"]) {
      const std::string s = r["scheme"];
      if (!enters_family_mean(k["kernel"].get<std::string>(), s)) continue;
      const std::string family(scheme::to_string(family_of(k["kernel"].get<std::string>(), s)));
      // A null ratio (base wrote nothing) has no logarithm: the kernel leaves the mean.
      if (!r["cycles_vs_base"].is_number() || !r["writes_vs_base"].is_number()) continue;
      const double c = r["cycles_vs_base"].get<double>(), w = r["writes_vs_base"].get<double>();
      if (c <= 0 || w <= 0) continue;
      auto& acc = log_sum[{k["preset"], family}];
      acc.first += std::log(c);
      acc.second += std::log(w);
      ++count[{k["preset"], family}];
    }
  }
  if (count.empty()) return "";
  std::string md =
      "**Geometric means over the simulated kernels** (the papers report averages over "
      "kernels: LP paper §VI-B LP +1.1% time / +3% writes, EagerRecompute +9% / +20.6%; thesis "
      "§3.4.5 Recompute +3% / +8%, Checkpointing +91% / +38%):\n\n"
      "| preset | scheme family | kernels | cycles vs base (gmean) | NVM writes vs base (gmean) "
      "|\n|---|---|---|---|---|\n";
  for (const auto& [key, acc] : log_sum) {
    const int n = count[key];
    md += fmt::format("| {} | {} | {} | {} | {} |\n", key.first, key.second, n,
                      pct(std::exp(acc.first / n)), pct(std::exp(acc.second / n)));
  }
  return md + "\n";
}

std::string sim_section(const json& res) {
  std::string md =
      "## Simulated cycles and NVM writes vs base\n\n"
      "Same kernel source through the simulator (docs/simulator.md), both papers' "
      "machines, the preset's thread count, bs = 16. Figures are normalized to base "
      "simulated with identical parameters.\n\n";
  for (const auto& k : res) {
    if (k.contains("skipped") || k.contains("error")) {
      md += fmt::format(
          "- {}: {}\n\n", k.value("label", "?"),
          k.contains("error") ? k["error"].get<std::string>() : k["skipped"].get<std::string>());
      continue;
    }
    const std::string preset = k["preset"], kernel = k["kernel"];
    md += fmt::format("### {} on {} (n = {}, {} threads, LLC {} KiB)\n\n", kernel, preset,
                      k["n"].get<std::uint64_t>(), k["threads"].get<std::uint32_t>(),
                      k.value("llc_bytes", std::uint64_t{0}) >> 10);
    md +=
        "| scheme | cycles vs base | NVM writes vs base | paper writes | paper time "
        "|\n|---|---|---|---|---|\n";
    for (const auto& r : k["rows"]) {
      const std::string s = r["scheme"];
      std::string pw = "–", pt = "–";
      if (kernel == "tmm" && preset == "lp-isca18") {
        pw = lookup(paper::kFig10Writes, s);
        pt = lookup(paper::kFig10Time, s);
      }
      if (kernel == "tmm" && preset == "pact17") {
        pw = lookup(paper::kTable34Writes, s);
        pt = lookup(paper::kTable34Time, s);
      }
      // Other kernels: the papers give ranges over kernels, not per-kernel values.
      const std::string family(scheme::to_string(family_of(kernel, s)));
      if (kernel != "tmm" && preset == "lp-isca18") {
        pw = lookup(paper::kFig13WritesRange, family) + " (Fig. 13)";
        pt = lookup(paper::kFig12TimeRange, family) + " (Fig. 12)";
      }
      if (kernel != "tmm" && preset == "pact17") {
        pw = lookup(paper::kFig36WritesRange, family) + " (Fig. 3.6)";
        pt = lookup(paper::kFig36TimeRange, family) + " (Fig. 3.6)";
      }
      if (pw.starts_with("–")) pw = "–";
      if (pt.starts_with("–")) pt = "–";
      md += fmt::format("| {} | {} | {} | {} | {} |\n", s, times(r["cycles_vs_base"]),
                        times(r["writes_vs_base"]), pw, pt);
    }
    md += "\n";
  }
  md += gmean_table(res);
  md +=
      "Gaps: NVM writes are LLC write-backs plus flushes, as in both papers (lines still dirty "
      "at the end are not counted). Quick mode simulates tmm at n = 256 instead of the papers' "
      "n = 1024 (the other kernels at n = 512, fft at 2^15 points, each overflowing the LLC "
      "with what it writes) and, to keep pact17's footprint/LLC ratio (24 MiB of tmm on an 8 MiB "
      "LLC), "
      "scales its LLC to 512 KiB (docs/sim-reproduction.md has tables at the papers' sizes to "
      "compare with, and discusses the gaps to the papers' EagerRecompute and WAL figures). "
      "The simulator "
      "has no out-of-order core: cycles count memory time only, so compute-bound overheads "
      "such as checksum arithmetic do not appear in cycles, and flush/fence stalls are not "
      "overlapped with computation.\n\n";
  return md;
}

// "cache 50/50, any-dirty 50/50": the campaign's crash-image models, passes per model.
std::string image_models_cell(const json& c) {
  std::string out;
  for (const auto& m : c.value("image_models", json::array()))
    out += fmt::format("{}{} {}/{}", out.empty() ? "" : ", ", m["model"].get<std::string>(),
                       m["passed"].get<std::uint64_t>(), m["trials"].get<std::uint64_t>());
  return out.empty() ? "–" : out;
}

// "detects 3/3 (100 trials each)", naming any mutant the campaign missed: measured in this run.
std::string controls_cell(const json& c) {
  if (!c.contains("controls")) return "–";
  const json& k = c["controls"];
  const auto mutants = k["mutants"].get<std::uint64_t>();
  std::string unreached;  // missed controls the fault-free run never reaches (excused)
  for (const auto& r : k["runs"])
    if (r.contains("not_reached"))
      unreached += fmt::format("; {} missed, not reached", r["mutation"].get<std::string>());
  if (k["runs"].empty()) return "none declared";
  std::string missed;
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& r : k["runs"]) {
    lo = std::min(lo, r["trials"].get<std::uint64_t>());
    hi = std::max(hi, r["trials"].get<std::uint64_t>());
    if (!r["detected"].get<bool>() && !r.contains("not_reached"))
      missed += fmt::format("{}{}", missed.empty() ? "" : ", ", r["mutation"].get<std::string>());
  }
  return fmt::format("detects {}/{} ({} trials each){}", k["detected"].get<std::uint64_t>(),
                     mutants, lo == hi ? fmt::format("{}", lo) : fmt::format("{}–{}", lo, hi),
                     missed.empty() ? "" : "; missed: " + missed) +
         unreached;
}

std::string crash_section(const json& res, int jobs) {
  std::string md =
      "## Crash campaigns (simulator power failures)\n\n"
      "Each trial cuts the power at a random op (plus first/last op and just before, "
      "inside and after region commits), restores memory from the NVM image, runs "
      "recovery (cut again in ~30% of trials) and the rest of the run, and compares "
      "bit for bit. Tiny caches (L1 1 KiB, LLC 4 KiB) so CI-sized runs evict. Trials alternate "
      "between the crash-image models listed per campaign: `cache` (what the simulated caches "
      "wrote back) and `any-dirty` (each unfenced flush may be lost and each dirty line may have "
      "reached NVM, independently). Negative controls: the same campaign rerun on each mutant "
      "the scheme's row declares (`pmlab crash --mutate`); a mutant is detected when at least "
      "one of its trials fails, as counted in this run." +
      // With --jobs > 1 a campaign shares the cores with other steps: its rate is not a
      // campaign's own speed (`pmlab crash` alone measures that).
      (jobs > 1 ? fmt::format(" Trials/s: measured while up to {} steps of the evaluation ran "
                              "at once, so lower than `pmlab crash` alone.",
                              jobs)
                : std::string()) +
      "\n\n"
      "| kernel | scheme | n | trials | passed | passed per image model | negative controls | "
      "recovery ops median / p90 / max | crashes in recovery | unnecessary recomputations (R3) | "
      "trials/s |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : res) {
    if (c.contains("skipped") || c.contains("error")) {
      md += fmt::format("| {} | | | | {} | | | | | | |\n", c.value("label", "?"),
                        c.contains("error") ? "error: " + c["error"].get<std::string>()
                                            : c["skipped"].get<std::string>());
      continue;
    }
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {} | {:.0f} |\n",
        c["kernel"].get<std::string>(), c["scheme"].get<std::string>(), c["n"].get<std::uint64_t>(),
        c["trials"].get<std::uint64_t>(), c["passed"].get<std::uint64_t>(), image_models_cell(c),
        controls_cell(c), c["recovery_ops"]["median"].get<std::uint64_t>(),
        c["recovery_ops"]["p90"].get<std::uint64_t>(),
        c["recovery_ops"]["max"].get<std::uint64_t>(),
        c["crashes_during_recovery"].get<std::uint64_t>(),
        c["unnecessary_recomputations"].get<std::uint64_t>(), c["trials_per_second"].get<double>());
  }
  return md + "\n";
}

std::string checksum_section(const json& res) {
  std::string md = "## Checksum accuracy and overhead (LP paper §III-D, Fig. 15b)\n\n";
  for (const auto& part : res) {
    if (part.contains("accuracy")) {
      md +=
          "Errors injected into a real tmm region (bs = 16 rows of a mid-run panel); a miss is a "
          "corrupted region whose checksum still matches. Upper bound: 95% confidence (rule of "
          "three when there are no misses). Paper: < 2×10⁻⁹ for modular and Adler-32.\n\n"
          "| checksum | error model | trials | undetected | miss rate ≤ (95%) "
          "|\n|---|---|---|---|---|\n";
      for (const auto& c : part["accuracy"])
        md += fmt::format("| {} | {} | {} | {} | {:.2e} |\n", c["checksum"].get<std::string>(),
                          c["error_model"].get<std::string>(), c["trials"].get<std::uint64_t>(),
                          c["undetected"].get<std::uint64_t>(),
                          c["miss_rate_upper_95"].get<double>());
      // Which checksums missed errors in this run, per error model: computed, not asserted.
      std::map<std::string, std::vector<std::string>> missed, caught;
      for (const auto& c : part["accuracy"])
        (c["undetected"].get<std::uint64_t>() > 0 ? missed : caught)[c["error_model"]].push_back(
            c["checksum"].get<std::string>());
      md += "\n";
      for (const auto& [model, names] : missed)
        md += fmt::format("Under {}, {} missed errors; {} caught all.\n", model,
                          fmt::join(names, ", "),
                          caught.count(model) ? fmt::format("{}", fmt::join(caught[model], ", "))
                                              : std::string("none"));
      md += "The paper's 2×10⁻⁹ needs ~10⁹ trials to confirm; `--full` runs 2×10⁶ per cell.\n\n";
    }
    if (part.contains("overhead")) {
      md +=
          "LP tmm time with each checksum kind vs base, native, 1 thread: paired, "
          "order-alternating repetitions, 95% bootstrap interval (docs/measurement.md).\n\n"
          "| checksum | LP vs base [95% CI] | pairs | per repetition | paper (Fig. 15b) |\n"
          "|---|---|---:|---:|---|\n";
      for (const auto& c : part["overhead"])
        md += fmt::format("| {} | {} | {} | {:.0f} ms | {} |\n", c["checksum"].get<std::string>(),
                          c.value("text", std::string("?")), c.value("pairs_used", 0),
                          1e3 * c.value("base_rep_seconds", 0.0),
                          lookup(paper::kFig15bOverhead, c["checksum"].get<std::string>()));
      md += "\n";
    }
    if (part.contains("error"))
      md += fmt::format("- {}: {}\n\n", part.value("label", "?"), part["error"].get<std::string>());
  }
  return md;
}

std::string sensitivity_section(const json& res, const std::string& machine) {
  std::string md =
      "## Sensitivity (simulator, tmm, " + machine +
      "; LP paper §VI-C)\n\n"
      "| study | value | LP cycles | LP writes | EagerRecompute (ii) cycles | EagerRecompute (ii) "
      "writes | paper (LP time) |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const auto& s : res) {
    if (s.contains("error")) {
      md += fmt::format("| {} | error: {} | | | | | |\n", s.value("label", "?"),
                        s["error"].get<std::string>());
      continue;
    }
    if (s.value("study", "") == "periodic") continue;  // its own table below
    const auto* lp = find_row(s["rows"], "lp");
    const auto* ep = find_row(s["rows"], "ep-ii");
    std::string value = s["value"].is_string() ? s["value"].get<std::string>() : s["value"].dump();
    std::string paper = s["study"] == "llc" ? lookup(paper::kFig15aLlc, value) : "–";
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} |\n", s["study"].get<std::string>(), value,
        lp ? pct((*lp)["cycles_vs_base"]) : "–", lp ? pct((*lp)["writes_vs_base"]) : "–",
        ep ? pct((*ep)["cycles_vs_base"]) : "–", ep ? pct((*ep)["writes_vs_base"]) : "–", paper);
  }
  // Both summary sentences are computed from the rows above.
  double lp_llc_worst = -1;
  std::vector<std::pair<int, double>> ep_by_threads;
  for (const auto& s : res) {
    if (!s.contains("rows")) continue;
    const auto* lp = find_row(s["rows"], "lp");
    const auto* ep = find_row(s["rows"], "ep-ii");
    if (s.value("study", "") == "llc" && lp && (*lp)["cycles_vs_base"].is_number())
      lp_llc_worst = std::max(lp_llc_worst, std::abs((*lp)["cycles_vs_base"].get<double>() - 1));
    if (s.value("study", "") == "threads" && ep && s["value"].is_number() &&
        (*ep)["cycles_vs_base"].is_number())
      ep_by_threads.emplace_back(s["value"].get<int>(), (*ep)["cycles_vs_base"].get<double>());
  }
  md +=
      "\nGaps: the paper's LP time overhead at a 256 KB LLC (6.5%) comes from the core "
      "computing checksums and missing on the checksum table while the LLC thrashes; pmlab's "
      "cycles count memory time only and LP adds one table store per region";
  md += lp_llc_worst >= 0
            ? fmt::format(": here LP's cycles stay within {:.2f}% of base at every LLC size. ",
                          100 * lp_llc_worst)
            : ". ";
  if (ep_by_threads.size() >= 2) {
    std::sort(ep_by_threads.begin(), ep_by_threads.end());
    bool rising = true, falling = true;
    for (std::size_t i = 1; i < ep_by_threads.size(); ++i) {
      rising = rising && ep_by_threads[i].second >= ep_by_threads[i - 1].second;
      falling = falling && ep_by_threads[i].second <= ep_by_threads[i - 1].second;
    }
    // The thesis' Table 3.5 (R_ii 1.15x at 1 thread, 1.04x at 12): its overhead falls.
    md += fmt::format(
        "EagerRecompute's cycles vs base go from {} at {} thread(s) to {} at {} ({}). The "
        "thesis' Table 3.5 has Recompute's overhead falling with threads (+15% at 1, +4% at "
        "12): {}",
        pct(ep_by_threads.front().second), ep_by_threads.front().first,
        pct(ep_by_threads.back().second), ep_by_threads.back().first,
        rising    ? "rising at every step"
        : falling ? "falling at every step"
                  : "not monotonic in this run",
        falling ? "this run has the same direction."
                : "this run does not reproduce that direction (docs/sim-reproduction.md, "
                  "Table 7).");
  }
  md += "\n\n";
  for (const auto& s : res) {
    if (s.value("study", "") != "periodic" || !s.contains("points")) continue;
    md += fmt::format(
        "### Periodic flush and volatility duration (LP paper §III-E, §VI-A, Fig. 11)\n\n"
        "LP tmm (n = {}) with the simulator's periodic cleaning every T cycles, T a fraction "
        "of LP's run; extra NVM writes vs base tmm without it{}. Without cleaning LP writes {}, "
        "EagerRecompute {} (paper: LP +0.3%, EagerRecompute +36%; with cleaning: +32% at "
        "T = 0.08% of the run, < 2% at 33%).\n\n"
        "| T (fraction of the run) | T (cycles) | extra writes vs base | periodic write-backs "
        "| longest a line stayed dirty (cycles) |\n|---|---|---|---|---|\n",
        s["n"].get<std::uint64_t>(),
        // Results from before commit 9dae19b (2026-11-27) ran this study on the per-core
        // write-queue shares.
        s.value("write_queue", "") == "shared"
            ? "; every run with one write queue for the machine (`--write-queue shared`: with "
              "per-core shares the sweeping core's share would stall it)"
            : "",
        pct(s["lp_writes_vs_base"]), pct(s["ep_writes_vs_base"]));
    for (const auto& p : s["points"])
      md += fmt::format(
          "| {:.2f}% | {} | {} | {} | {} |\n", 100 * p["fraction_of_run"].get<double>(),
          p["period_cycles"].get<std::uint64_t>(), pct(p["writes_vs_base"]),
          p["periodic_writes"].get<std::uint64_t>(), p["max_dirty_cycles"].get<std::uint64_t>());
    const auto& v = s["volatility_max_cycles"];
    const double b = static_cast<double>(v["base"].get<std::uint64_t>());
    md += fmt::format(
        "\nVolatility duration (the longest a line stays dirty in the caches): base {}, LP {} "
        "({:.0f}% of base), EagerRecompute {} ({:.0f}% of base); paper: LP ~101%, "
        "EagerRecompute ~20% of base. Cleaning bounds a line's dirty stretch by T + one op on "
        "one core; across cores add their clock skew within a parallel loop (8 simulated "
        "cores, each running whole panel steps in turn; docs/simulator.md \"Periodic "
        "flush\"). How T bounds LP's recovery work: "
        "docs/crash-campaigns.md.\n\n",
        v["base"].get<std::uint64_t>(), v["lp"].get<std::uint64_t>(),
        b > 0 ? 100 * static_cast<double>(v["lp"].get<std::uint64_t>()) / b : 0.0,
        v["ep-ii"].get<std::uint64_t>(),
        b > 0 ? 100 * static_cast<double>(v["ep-ii"].get<std::uint64_t>()) / b : 0.0);
  }
  return md;
}

// How many LP native cells resolved and the machine's load while they were measured: the
// headline's native column is only as good as this line says.
std::string native_state(const json& results) {
  int cells = 0, resolved = 0;
  double load_min = 1e300, load_max = -1;
  for (const auto& k : results.value("native", json::array())) {
    if (!k.contains("schemes")) continue;
    if (const auto* lp = find_row(k["schemes"], "lp")) {
      ++cells;
      resolved += lp->value("resolved", false) ? 1 : 0;
    }
    const json machine = k.value("machine", json::object());
    for (const char* when : {"load_before", "load_after"})
      if (machine.contains(when) && machine[when].is_number()) {
        load_min = std::min(load_min, machine[when].get<double>());
        load_max = std::max(load_max, machine[when].get<double>());
      }
  }
  if (cells == 0) return "";
  return fmt::format(
      "LP native time: {} of {} kernels resolved to the target; load average {} during the "
      "native section on this machine.\n\n",
      resolved, cells,
      load_max < 0 ? std::string("not recorded")
                   : fmt::format("{:.2f}–{:.2f}", load_min, load_max));
}

}  // namespace

std::string render_headline(const json& results) {
  // `pmlab eval --config M` simulates on M instead of the papers' presets.
  const std::string machine =
      results.contains("machine") ? results["machine"].value("config", "?") : "lp-isca18";
  std::string md = fmt::format(
      "| kernel | LP native time vs base [95% CI] | LP sim writes ({}) | EagerRecompute sim "
      "writes | WAL sim "
      "writes | crash trials passed; negative controls detected |\n"
      "|---|---|---|---|---|---|\n",
      machine);
  std::map<std::string, std::string> lp_native, lp_writes, ep_writes, wal_writes, crash;
  for (const auto& k : results.value("native", json::array()))
    if (k.contains("schemes"))
      if (const auto* r = find_row(k["schemes"], "lp")) lp_native[k["kernel"]] = native_cell(*r);
  for (const auto& k : results.value("sim", json::array())) {
    if (!k.contains("rows") || k["preset"] != machine) continue;
    if (const auto* r = find_row(k["rows"], "lp"))
      lp_writes[k["kernel"]] = times((*r)["writes_vs_base"]);
    // tmm's ii variants stand for the family, the other kernels have one of each.
    for (const char* ep : {"ep-ii", "ep"})
      if (const auto* r = find_row(k["rows"], ep))
        ep_writes[k["kernel"]] = times((*r)["writes_vs_base"]);
    for (const char* wal : {"wal-ii", "wal"})
      if (const auto* r = find_row(k["rows"], wal))
        wal_writes[k["kernel"]] = times((*r)["writes_vs_base"]);
  }
  // Passed / trials, and the negative controls detected / run, summed over the kernel's
  // campaigns of this run.
  struct Tally {
    std::uint64_t passed = 0, trials = 0, detected = 0, mutants = 0;
  };
  std::map<std::string, Tally> tally;
  for (const auto& c : results.value("crash", json::array()))
    if (c.contains("trials")) {
      Tally& t = tally[c["kernel"]];
      t.passed += c["passed"].get<std::uint64_t>();
      t.trials += c["trials"].get<std::uint64_t>();
      if (c.contains("controls")) {
        t.detected += c["controls"]["detected"].get<std::uint64_t>();
        t.mutants += c["controls"]["mutants"].get<std::uint64_t>();
      }
    }
  for (auto& [k, t] : tally)
    crash[k] = t.mutants == 0 ? fmt::format("{} / {}", t.passed, t.trials)
                              : fmt::format("{} / {}; detects {}/{} mutants", t.passed, t.trials,
                                            t.detected, t.mutants);
  std::map<std::string, int> kernels;
  for (auto* m : {&lp_native, &lp_writes, &crash})
    for (auto& [k, v] : *m) kernels[k] = 1;
  auto get = [](const std::map<std::string, std::string>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("–") : it->second;
  };
  // A run of other sections only (`pmlab eval --sections`): no empty table.
  if (kernels.empty()) return "No headline: its sections (native, sim, crash) were not run.\n";
  for (auto& [k, unused] : kernels)
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", k, get(lp_native, k), get(lp_writes, k),
                      get(ep_writes, k), get(wal_writes, k), get(crash, k));
  return md;
}

namespace {

// Whether `section` has results to show: run now or carried over by `pmlab eval --sections`
// (results without "sections_run" come from a run of every section).
bool section_present(const json& results, const std::string& section) {
  if (!results.contains("sections_run")) return true;
  for (const auto& s : results["sections_run"])
    if (s == section) return true;
  return results.value("carried_over", json::object()).contains(section);
}

// `pmlab eval --sections`: which sections this report holds, and from which run.
std::string sections_note(const json& results) {
  if (!results.contains("sections_run") || results["sections_run"].size() == eval_sections().size())
    return "";
  std::vector<std::string> run, carried, missing;
  for (const auto& s : eval_sections()) {
    const json origin = results.value("carried_over", json::object()).value(s, json());
    if (!origin.is_null())
      carried.push_back(fmt::format("{} ({}, revision {})", s, origin.value("date", "?"),
                                    origin.value("git_revision", "?")));
    else if (section_present(results, s))
      run.push_back(s);
    else
      missing.push_back(s);
  }
  std::string md = fmt::format("Sections run now: {}.", fmt::join(run, ", "));
  if (!carried.empty())
    md += fmt::format(" Carried over from earlier runs into this directory: {}.",
                      fmt::join(carried, "; "));
  if (!missing.empty()) md += fmt::format(" Not run: {}.", fmt::join(missing, ", "));
  return md + "\n\n";
}

}  // namespace

std::string render_report(const json& results) {
  std::string md = fmt::format("# pmlab evaluation ({} mode, pmlab {})\n\n",
                               results.value("mode", "?"), results.value("pmlab_version", "?"));
  if (!results.value("complete", false)) {
    const json partial = results.value("partial_sections", json::array());
    md += fmt::format(
        "**Partial report: unfinished sections ({}), interrupted in this run or in the earlier "
        "run they were carried over from; sections below hold what was measured.**\n\n",
        partial.empty() ? std::string("not recorded")
                        : fmt::format("{}", fmt::join(partial, ", ")));
  }
  if (const json failed = results.value("failed_checks", json::array()); !failed.empty()) {
    md += fmt::format("**{} check(s) FAILED (`pmlab eval` exits 1):**\n\n", failed.size());
    for (const auto& f : failed) md += "- " + f.get<std::string>() + "\n";
    md += "\n";
  }
  std::string sections;
  if (results.contains("sections_run") && results["sections_run"].size() < eval_sections().size())
    sections = fmt::format(" --sections {}",
                           fmt::join(results["sections_run"].get<std::vector<std::string>>(), ","));
  if (results.contains("native_schemes"))
    sections +=
        fmt::format(" --native-schemes {}",
                    fmt::join(results["native_schemes"].get<std::vector<std::string>>(), ","));
  md += fmt::format(
      "Reproduce: `pmlab eval --{} --seed {}{}{}` ({:.0f} s here). Raw data: results.json.\n\n",
      results.value("mode", "quick"), results.value("seed", 1),
      results.contains("machine") ? " --config " + results["machine"].value("config", "?")
                                  : std::string(),
      sections, results.value("wall_seconds", 0.0));
  md += sections_note(results);
  if (const json per = results.value("section_seconds", json::object()); !per.empty()) {
    std::vector<std::string> parts;
    for (const auto& [section, seconds] : per.items())
      parts.push_back(fmt::format("{} {:.0f} s", section, seconds.get<double>()));
    // With --jobs > 1 the untimed steps overlapped, so the sum is time spent, not time waited.
    const int jobs = results.value("jobs", 1);
    md += (jobs > 1 ? fmt::format("Time per section (summed over its steps; this run's untimed "
                                  "steps ran {} at a time, its timed ones alone): ",
                                  jobs)
                    : std::string("Wall time per section: ")) +
          fmt::format("{}", fmt::join(parts, ", ")) + ".\n\n";
  }
  md += "## Headline\n\n" + render_headline(results) + "\n" + native_state(results);
  md +=
      "Paper (LP, ISCA 2018): LP native time +0.8–2.1% (Table VII); tmm NVM writes LP 1.003x, "
      "EagerRecompute 1.36x, WAL 3.83x (Fig. 10).\n\n";
  for (const auto& f : results.value("figures", json::array()))
    md += fmt::format("![{}]({})\n\n", f.get<std::string>(), f.get<std::string>());
  const auto has = [&](const char* section) { return section_present(results, section); };
  if (has("native")) {
    md += table7_section(results.value("native", json::array()));
    md += native_section(results.value("native", json::array()));
  }
  if (has("instructions")) {
    const json ic = results.value("instructions", json::array());
    if (ic.is_array() && !ic.empty()) md += instructions_section(ic[0]);
  }
  if (has("sim")) md += sim_section(results.value("sim", json::array()));
  if (has("crash"))
    md += crash_section(results.value("crash", json::array()), results.value("jobs", 1));
  if (has("barriers")) md += barrier_section(results.value("barriers", json::array()));
  if (has("seed002")) md += seed002_section(results.value("seed002", json::array()));
  if (has("preflush")) md += preflush_section(results.value("preflush", json::array()));
  if (has("gemm")) md += gemm_section(results.value("gemm", json::array()));
  if (has("blas")) md += blas_section(results.value("blas", json::array()));
  if (has("checksum")) md += checksum_section(results.value("checksum", json::array()));
  if (has("sensitivity"))
    md += sensitivity_section(
        results.value("sensitivity", json::array()),
        results.contains("machine") ? results["machine"].value("config", "?") : "lp-isca18");
  return md;
}

}  // namespace pmlab::experiments
