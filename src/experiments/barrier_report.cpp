// Renders seed 004's persist-barrier study (Fig. 11, Fig. 12, §7) as Markdown beside the paper.
#include <fmt/format.h>

#include <string>

#include "paper_numbers.hpp"
#include "pmlab/experiments/barrier_study.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

const json* find_config(const json& rows, const std::string& config) {
  for (const auto& r : rows)
    if (r.value("config", "") == config) return &r;
  return nullptr;
}

// "inside" / "outside" the band [lo, hi] for a measured value; the band is issue 18's.
std::string band(double v, double lo, double hi) {
  return v >= lo && v <= hi ? fmt::format("inside [{}, {}]", lo, hi)
                            : fmt::format("**outside** [{}, {}]", lo, hi);
}

// LB+IDT per benchmark, beside what drives its gain. IDT removes only the online flushes of
// inter-thread conflicts (it records the dependence instead), so its gain follows their share
// of LB's conflicting epochs and what each of them cost LB.
std::string idt_gain_table(const json& benches) {
  std::string rows;
  for (const auto& b : benches) {
    if (b.contains("error")) continue;
    const json runs = b.value("rows", json::array());
    const json* lb = find_config(runs, "lb");
    const json* idt = find_config(runs, "lb-idt");
    if (lb == nullptr || idt == nullptr || !lb->contains("epochs") || !idt->contains("epochs"))
      continue;
    const json& e = (*lb)["epochs"];
    const json& by = e["flushed_by"];
    const auto inter = by.value("inter_raw", 0ull) + by.value("inter_waw", 0ull);
    const auto conflicting = e.value("conflicting", 0ull);
    const double removed = static_cast<double>(e.value("stall_cycles", 0ull)) -
                           static_cast<double>((*idt)["epochs"].value("stall_cycles", 0ull));
    rows += fmt::format(
        "| {} | {} of {} ({:.0f}%) | {} | {:.3f}x |\n", b.value("bench", "?"), inter, conflicting,
        conflicting > 0 ? 100.0 * static_cast<double>(inter) / static_cast<double>(conflicting)
                        : 0.0,
        inter > 0 ? fmt::format("{:.0f}", removed / static_cast<double>(inter)) : "–",
        idt->value("vs_lb", 0.0));
  }
  if (rows.empty()) return {};
  return "\nLB+IDT by benchmark. IDT removes only the online flushes of inter-thread conflicts "
         "(it records the dependence instead), so its gain follows their share of LB's "
         "conflicting epochs and what each of them cost LB (the stall cycles IDT removes, per "
         "inter-thread conflict). The paper (§5.1) puts LB+IDT's small average gain (1.03x) "
         "down to micro-benchmarks dominated by intra-thread conflicts.\n\n"
         "| bench | LB's conflicting epochs that are inter-thread | stall cycles removed per "
         "inter-thread conflict | LB+IDT vs LB |\n|---|---|---|---|\n" +
         rows;
}

// Figs. 13-14: BSP bulk mode on the base schemes (no program barriers), time over NP.
std::string bsp_section(const json& benches) {
  bool any = false;
  for (const auto& b : benches) any = any || b.contains("bsp_rows");
  if (!any) return {};
  std::string md =
      "### Buffered strict persistency, bulk mode (Figs. 13-14)\n\n"
      "Each benchmark's `base` scheme (no persist barriers in the program) with the hardware "
      "ending every core's epoch after N stores (`pmlab sim BENCH --scheme base --config micro15 "
      "--barrier MODE --bsp-epoch N [--bsp-log off]`; write-through: `--barrier lb "
      "--bsp-write-through`; locks as in the table above). The paper runs PARSEC, SPLASH-2 and "
      "STAMP, which pmlab does not "
      "have; its own micro-benchmarks stand in (queue is the one with shared hot data). "
      "Execution time over no persistency (lower is better), deterministic.\n\n"
      "| bench | threads x ops | config | time vs NP | conflict % | BSP epochs | log writes | "
      "NVM writes |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& b : benches) {
    if (!b.contains("bsp_rows")) continue;
    for (const auto& r : b["bsp_rows"]) {
      std::string e = "– | – | –";
      if (r.contains("epochs")) {
        const json& x = r["epochs"];
        e = fmt::format("{:.1f} | {} | {}", x.value("conflict_pct", 0.0),
                        x.value("bsp_barriers", 0ull), x.value("log_writes", 0ull));
      }
      md += fmt::format("| {} | {} x {} | {} | {:.3f}x | {} | {} |\n", b.value("bench", "?"),
                        b.value("threads", 0), b.value("ops", 0ull), r.value("config", "?"),
                        r.value("vs_np", 0.0), e, r.value("nvm_writes", 0ull));
    }
  }
  const json sum = bsp_study_summary(benches);
  md += "\n| config | geomean time vs NP | paper (Figs. 13-14, §7.2) |\n|---|---|---|\n";
  for (const auto& r : sum) {
    const std::string c = r.value("config", "?");
    const auto p = paper::kMicro15Bsp.find(c);
    md += fmt::format("| {} | {:.3f}x | {} |\n", c, r.value("geomean_vs_np", 0.0),
                      p == paper::kMicro15Bsp.end() ? "–" : p->second);
  }
  const json* l300 = find_config(sum, "lb-300");
  const json* l1k = find_config(sum, "lb-1k");
  const json* l10k = find_config(sum, "lb-10k");
  const json* idt = find_config(sum, "lb-idt-10k");
  const json* pp = find_config(sum, "lb++-10k");
  const json* nolog = find_config(sum, "lb++-nolog-10k");
  const json* wt = find_config(sum, "write-through");
  if (l300 && l1k && l10k && idt && pp && nolog && wt) {
    const auto g = [](const json* r) { return r->value("geomean_vs_np", 0.0); };
    const auto holds = [](bool ok) { return ok ? "holds" : "**does not hold**"; };
    md += "\nThe paper's trends (issue 18 asks for these, not its values):\n\n";
    md += fmt::format("- Fig. 13, LB300 ≥ LB1K ≥ LB10K: {:.3f} / {:.3f} / {:.3f}, {}.\n", g(l300),
                      g(l1k), g(l10k), holds(g(l300) >= g(l1k) && g(l1k) >= g(l10k)));
    md += fmt::format("- Fig. 14, LB++ ≤ LB+IDT ≤ LB (10K): {:.3f} / {:.3f} / {:.3f}, {}.\n", g(pp),
                      g(idt), g(l10k), holds(g(pp) <= g(idt) && g(idt) <= g(l10k)));
    md += fmt::format("- Fig. 14, NOLOG < LB++: {:.3f} < {:.3f}, {}.\n", g(nolog), g(pp),
                      holds(g(nolog) < g(pp)));
    md += fmt::format(
        "- §7.2, write-through ≫ LB300: {:.3f} vs {:.3f} ({:.2f}x of LB300; paper ≈8x NP "
        "against 1.9x).\n\n",
        g(wt), g(l300), g(l300) > 0 ? g(wt) / g(l300) : 0.0);
  }
  return md;
}

}  // namespace

std::string barrier_section(const json& benches) {
  if (!benches.is_array() || benches.empty()) return {};
  bool fig11 = false;  // only BSP entries (eval --only): the Fig. 11-12 tables have no rows
  for (const auto& b : benches) fig11 = fig11 || b.contains("rows") || b.contains("error");
  if (!fig11) return bsp_section(benches);
  const bool timed = benches.front().value("timed_locks", false);
  std::string md =
      "## Persist barriers: LB, LB+IDT, LB+PF, LB++ (seed 004, Joshi et al. MICRO'15)\n\n"
      "The BEP micro-benchmarks (`pmlab sim BENCH --scheme tx --barrier MODE --config micro15" +
      std::string(timed ? " --timed-locks`: a critical section waits for its lock's release, so "
                          "threads under one lock serialise in time under every mode), "
                        : "`), ") +
      "each transaction an epoch-separated undo-log transaction. Throughput is transactions per "
      "simulated cycle over LB's; the simulator is deterministic, so each cell is one exact run "
      "(no noise to resolve). Conflict % = epochs flushed because a request needed them "
      "(intra, inter RAW/WAW, replacement) over all persisted epochs; capacity and proactive "
      "flushes are listed apart.\n\n";
  md +=
      "| bench | threads x ops | config | throughput vs LB | conflict % | intra | inter RAW | "
      "inter WAW | replacement | capacity | proactive | splits | IDT deps |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& b : benches) {
    if (b.contains("error")) {
      md += fmt::format("| {} | – | error: {} |  |  |  |  |  |  |  |  |  |  |\n",
                        b.value("label", "?"), b.value("error", "?"));
      continue;
    }
    for (const auto& r : b.value("rows", json::array())) {
      std::string epoch_cells = "– | – | – | – | – | – | – | – | –";
      if (r.contains("epochs")) {
        const json& e = r["epochs"];
        const json& by = e["flushed_by"];
        const auto n = [&](const char* k) { return by.value(k, 0ull); };
        epoch_cells = fmt::format("{:.1f} | {} | {} | {} | {} | {} | {} | {} | {}",
                                  e.value("conflict_pct", 0.0), n("intra"), n("inter_raw"),
                                  n("inter_waw"), n("replacement"), n("capacity"), n("proactive"),
                                  e.value("splits", 0ull), e.value("idt_deps", 0ull));
      }
      md += fmt::format("| {} | {} x {} | {} | {:.3f}x | {} |\n", b.value("bench", "?"),
                        b.value("threads", 0), b.value("ops", 0ull), r.value("config", "?"),
                        r.value("vs_lb", 0.0), epoch_cells);
    }
  }
  const json sum = barrier_study_summary(benches);
  md +=
      "\n### Averages beside the paper (Fig. 11 throughput over LB, Fig. 12 conflicting "
      "epochs)\n\n"
      "| config | geomean throughput vs LB | paper Fig. 11 | mean conflict % | paper Fig. 12 |\n"
      "|---|---|---|---|---|\n";
  for (const auto& r : sum) {
    const std::string c = r.value("config", "?");
    const auto f11 = paper::kMicro15Fig11.find(c);
    const auto f12 = paper::kMicro15Fig12.find(c);
    md += fmt::format("| {} | {:.3f}x | {} | {} | {} |\n", c, r.value("geomean_vs_lb", 0.0),
                      f11 == paper::kMicro15Fig11.end() ? "–" : fmt::format("{:.2f}x", f11->second),
                      r.contains("mean_conflict_pct")
                          ? fmt::format("{:.1f}", r["mean_conflict_pct"].get<double>())
                          : "–",
                      f12 == paper::kMicro15Fig12.end() ? "–" : f12->second);
  }
  const json* lb = find_config(sum, "lb");
  const json* idt = find_config(sum, "lb-idt");
  const json* pf = find_config(sum, "lb-pf");
  const json* pp = find_config(sum, "lb++");
  const json* inv = find_config(sum, "lb++ invalidating");
  if (lb && idt && pf && pp) {
    const auto g = [](const json* r) { return r->value("geomean_vs_lb", 0.0); };
    const auto k = [](const json* r) { return r->value("mean_conflict_pct", 0.0); };
    md +=
        "\nWhere these land against issue 18's bands for a first-order model (measured above):\n\n";
    md += fmt::format(
        "- Fig. 11 LB+IDT {:.3f}x: {}; LB+PF {:.3f}x: {}; LB++ {:.3f}x: {}, and {} the "
        "better of LB+IDT and LB+PF (−0.01).\n",
        g(idt), band(g(idt), 0.98, 1.10), g(pf), band(g(pf), 1.05, 1.35), g(pp),
        band(g(pp), 1.10, 1.40),
        g(pp) >= std::max(g(idt), g(pf)) - 0.01 ? "at least" : "**below**");
    md += fmt::format(
        "- Fig. 12 LB {:.1f}% conflicting ({} ≥ 70%); LB+PF {:.1f}% ({} 5 points "
        "below LB).\n",
        k(lb), k(lb) >= 70 ? "meets" : "**misses**", k(pf),
        k(pf) <= k(lb) - 5 ? "at least" : "**not**");
    if (inv)
      md += fmt::format(
          "- §7 flush kind: LB++ with invalidating epoch flushes runs at {:.3f}x of "
          "the non-invalidating LB++ (paper: the non-invalidating one is ~30% "
          "faster, i.e. ≤ 0.90x expected).\n",
          g(pp) > 0 ? g(inv) / g(pp) : 0.0);
    md += idt_gain_table(benches);
    md +=
        "\nGaps are explained in docs/bep.md (first-order timing, no out-of-order core or "
        "32-entry write buffer to hide online persists, a monolithic LLC, pmlab's own "
        "benchmark sizes and op mixes: the seed gives only 512 B entries).\n\n";
  }
  md += bsp_section(benches);
  return md;
}

}  // namespace pmlab::experiments
