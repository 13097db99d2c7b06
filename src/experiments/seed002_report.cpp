// Renders seed 002's study (Tables 1 and 2, Figs. 5, 6, 7, 12, 13, 14) as Markdown beside the
// paper's numbers.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "pmlab/experiments/seed002_study.hpp"
#include "pmlab/scheme/family.hpp"

namespace pmlab::experiments {
namespace {

using nlohmann::json;

std::string fraction_pct(const json& v) {
  return v.is_number() ? fmt::format("{:+.1f}%", 100.0 * v.get<double>()) : "n/a";
}
std::string pct_plain(const json& v) {
  return v.is_number() ? fmt::format("{:.1f}%", 100.0 * v.get<double>()) : "n/a";
}

std::string table1(const json& t) {
  std::string md =
      "### Table 1: flush cost per line state\n\n"
      "Paper (clflush, Xeon E5-2630 v3, cycles per block): dirty 228, clean 254, not cached 350. "
      "Simulator: 256 lines in one state, then flush of each + one sfence, cycles per line "
      "(deterministic), on `lp-isca18` (gem5's directory: no state costs more) and on "
      "`haswell-ep` (seed 002's machine, a home agent with its directory in DRAM).\n\n"
      "| flush | modified | exclusive | shared | invalid |\n|---|---:|---:|---:|---:|\n";
  for (const char* machine : {"lp-isca18", "haswell-ep"}) {
    for (const char* f : {"clflush", "clflushopt", "clwb"}) {
      std::string cells;
      for (const char* s : {"modified", "exclusive", "shared", "invalid"})
        for (const auto& r : t.value("sim", json::array()))
          if (r.value("flush", "") == f && r.value("state", "") == s &&
              r.value("machine", "lp-isca18") == machine)
            cells += fmt::format(" | {:.1f}", r.value("cycles", 0.0));
      if (!cells.empty()) md += fmt::format("| {} (sim, {}){} |\n", f, machine, cells);
    }
  }
  const json& nat = t.value("native", json::object());
  md += fmt::format(
      "\nNative, this machine: ns per line of flush + sfence over {} lines, {} paired rounds "
      "(state order rotated each round); ratio to modified as median (min-max over rounds). "
      "A ratio whose range straddles 1 is **unresolved**. Shared is not measured natively (it "
      "needs the second core, which other processes use here).\n\n"
      "| flush | state | ns/line (median) | ratio to modified (range) |\n|---|---|---:|---|\n",
      nat.value("lines", 0), nat.value("rounds", 0));
  for (const auto& r : nat.value("rows", json::array())) {
    if (r.contains("skipped")) {
      md += fmt::format("| {} | - | - | skipped: {} |\n", r.value("flush", "?"),
                        r.value("skipped", ""));
      continue;
    }
    md += fmt::format("| {} | {} | {:.1f} | {:.2f} ({:.2f}-{:.2f}){} |\n", r.value("flush", "?"),
                      r.value("state", "?"), r.value("ns_median", 0.0),
                      r.value("ratio_to_modified", 0.0), r.value("ratio_min", 0.0),
                      r.value("ratio_max", 0.0), r.value("resolved", false) ? "" : " unresolved");
  }
  return md + "\n";
}

std::string fig5(const json& t) {
  std::string md =
      "### Fig. 5: parallel clflush of a dirty buffer\n\n"
      "Paper (Xeon E5-2630 v3, 20 MB buffer): cycles per line improve with threads, then stop "
      "scaling (contention in the cache controllers and memory ports); the values are not in the "
      "text. Simulator: the buffer dirty in the LLC, each core clflushes its share in one "
      "parallel loop (its share of the controller's write queue and units; deterministic). "
      "`drain` is the controller's bound, write_ns / write units.\n\n"
      "| machine | drain | 1 | 2 | 4 | 8 | 16 threads |\n|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& m : t.value("sim", json::array())) {
    md += fmt::format("| {} (cycles/line) | {:.1f}", m.value("machine", "?"),
                      m.value("drain_cycles_per_line", 0.0));
    for (const auto& r : m.value("rows", json::array()))
      md += fmt::format(" | {:.1f} ({:.2f}x)", r.value("cycles_per_line", 0.0),
                        r.value("speedup", 0.0));
    md += " |\n";
  }
  const json& nat = t.value("native", json::object());
  if (nat.contains("skipped"))
    return md + fmt::format("\nNative: skipped ({}).\n\n", nat.value("skipped", ""));
  md += fmt::format(
      "\nNative, this machine ({} cores, DRAM: no NVM behind the flushes): clflush + sfence of a "
      "{} MiB dirty buffer split over the threads, ns per line, {} paired rounds; speedup over 1 "
      "thread as median (min-max over rounds), **unresolved** when the range straddles 1.\n\n"
      "| threads | ns/line (median) | speedup (range) |\n|---:|---:|---|\n",
      nat.value("cores", 0), nat.value("mib", 0), nat.value("rounds", 0));
  for (const auto& r : nat.value("rows", json::array()))
    md += fmt::format("| {} | {:.2f} | {:.2f}x ({:.2f}-{:.2f}){} |\n", r.value("threads", 0),
                      r.value("ns_per_line_median", 0.0), r.value("speedup_median", 0.0),
                      r.value("speedup_min", 0.0), r.value("speedup_max", 0.0),
                      r.value("resolved", false) ? "" : " unresolved");
  return md + "\n";
}

// A derived gain: "+12.3% [+10.1%, +14.2%]", or "... unresolved" when its interval holds 0 or
// rests on a ratio with too few healthy pairs.
std::string gain_text(const json& g) {
  if (!g.is_object() || !g.contains("gain")) return "n/a";
  std::string t = fmt::format("{:+.1f}%", 100 * g.value("gain", 0.0));
  if (g.contains("ci95"))
    t += fmt::format(" [{:+.1f}%, {:+.1f}%]", 100 * g["ci95"][0].get<double>(),
                     100 * g["ci95"][1].get<double>());
  return g.value("resolved", false) ? t : t + " unresolved";
}

// True when one of `rows` has `key` == `name` (a kernel that ran that scheme or configuration).
bool ran(const json& rows, const char* key, const std::string& name) {
  if (!rows.is_array()) return false;
  return std::any_of(rows.begin(), rows.end(),
                     [&](const json& r) { return r.value(key, "") == name; });
}

// Table 2 (pmlab), measured: the rule profiler's classification of each object.
std::string ipv_rules(const json& e) {
  std::string md = fmt::format(
      "### Table 2 (pmlab): update rules found by the rule profiler\n\nEach kernel's own "
      "in-place loop, first iteration, n = {} (`KernelDriver::profile_ipv`, docs/seed002.md). "
      "The paper's Table 2 sorts NPB and Nek5000 objects the same way (e.g. MG's r "
      "non-uniform).\n\n| kernel | object | rule | elements written | read after their "
      "update | loops writing it | ipv rows assume | agree "
      "|\n|---|---|---|---:|---:|---:|---|:---:|\n",
      e.value("n", 0));
  for (const auto& r : e.value("rows", json::array()))
    md += fmt::format("| {} | {} | {} | {} of {} | {} | {} | {} | {} |\n", r.value("kernel", "?"),
                      r.value("object", "?"), r.value("rule", "?"), r.value("written", 0ull),
                      r.value("elements", 0ull), r.value("read_after_write", 0ull),
                      r.value("writing_loops", 0ull), r.value("declared", "-"),
                      r.value("matches_declaration", false) ? "yes" : "**no**");
  return md + "\n";
}

std::string native_figures(const json& e) {
  std::string md = fmt::format(
      "### Figs. 6, 12, 13 natively: {} (n = {}, {} main thread; ipv's helper takes the second "
      "core)\n\n`pmlab bench` against base, paired and interleaved; each ratio with its 95% "
      "interval (\"unresolved\" when wider than the bench's target or the machine was busy). "
      "DRAM behind the flushes: this machine has no NVM.\n\n| scheme | vs base [95% CI] | "
      "bit-exact |\n|---|---|:---:|\n",
      e.value("kernel", "?"), e.value("n", 0), e.value("threads", 0));
  for (const auto& s : e.value("bench", json::object()).value("schemes", json::array()))
    md += fmt::format(
        "| {} | {} | {} |\n", s.value("scheme", "?"),
        s.value("text", s.value("scheme", "") == scheme::kBaseScheme ? "(reference)" : "n/a"),
        s.value("bit_exact_vs_base", false) ? "yes" : "**no**");
  const json f6 = e.value("fig6", json::object()), f12 = e.value("fig12", json::object()),
             f13 = e.value("fig13", json::object());
  md += "\n| figure | measured (native) | paper |\n|---|---|---|\n";
  md += fmt::format("| Fig. 6: cp-nt gain over cp-clflush | {} | 9.6% avg, 16% max |\n",
                    gain_text(f6.value("nt_gain_over_clflush", json())));
  md += fmt::format("| Fig. 6: cp-par-clflush gain over cp-clflush | {} | up to 5% |\n",
                    gain_text(f6.value("par_gain_over_clflush", json())));
  md += fmt::format("| Fig. 12: IPV without flushing, gain over cp-nt (design 2) | {} | 9% avg |\n",
                    gain_text(f12.value("ipv_no_flush_gain_over_cp_nt", json())));
  if (ran(e.value("bench", json::object()).value("schemes", json::array()), "scheme",
          "cp-nt-async"))  // kernels with the row
    md += fmt::format(
        "| Fig. 12: the helper's asynchronous copy (cp-nt-async), gain over cp-nt | {} | 5.4% "
        "(MG) |\n",
        gain_text(f12.value("async_copy_gain_over_cp_nt", json())));
  md += fmt::format("| Fig. 13: ipv's flush time hidden by the helper ({}) | {} | >= 41% |\n",
                    f13.value("placement", "no helper ran"),
                    pct_plain(f13.value("hidden_fraction", json())));
  const json f13c = e.value("fig13_copy", json::object());
  if (!f13c.empty())
    md +=
        fmt::format("| cp-nt-async's copy time hidden by the helper ({}) | {} | (MG's bar) |\n",
                    f13c.value("placement", "?"), pct_plain(f13c.value("hidden_fraction", json())));
  return md + "\n";
}

}  // namespace

std::string seed002_section(const json& entries) {
  if (!entries.is_array() || entries.empty()) return {};
  std::string md =
      "## Seed 002: checkpoint variants, in-place versioning, helper-core flushing (Huang, Wu, "
      "Li)\n\nSimulated figures are deterministic (one exact run per cell); the paper's numbers "
      "are from NPB/Nek5000 on Quartz-emulated NVM with a 256 MB DRAM cache, which pmlab does "
      "not model. Each gap is discussed in docs/seed002.md.\n\n";
  std::string figs;
  for (const auto& e : entries) {
    if (e.value("table", "") == "flush-states") {
      md += table1(e);
      continue;
    }
    if (e.value("table", "") == "flush-scaling") {
      md += fig5(e);
      continue;
    }
    if (e.value("table", "") == "ipv-rules") {
      md += ipv_rules(e);
      continue;
    }
    if (e.value("table", "") == "native-figures") {
      md += native_figures(e);
      continue;
    }
    if (e.contains("error") || e.contains("skipped")) {
      figs += fmt::format("- {}: {}\n", e.value("kernel", e.value("label", "?")),
                          e.value("error", e.value("skipped", "")));
      continue;
    }
    if (!e.contains("rows")) continue;
    figs += fmt::format(
        "\n#### {} (n = {}, bs = {}, {} threads; {})\n\n| config | cycles | "
        "overhead vs base | LLC miss rate | NVM writes | helper overlap | "
        "verified |\n|---|---:|---:|---:|---:|---:|---|\n",
        e.value("kernel", "?"), e.value("n", 0), e.value("bs", 0), e.value("threads", 0),
        e.value("machine", ""));
    for (const auto& r : e["rows"]) {
      const std::string ov =
          r.contains("helper") ? pct_plain(r["helper"].value("overlap", json())) : "-";
      figs += fmt::format("| {} | {} | {} | {:.2f}% | {} | {} | {} |\n", r.value("config", "?"),
                          r.value("cycles", 0ull), fraction_pct(r.value("overhead", json())),
                          100.0 * r.value("llc_miss_rate", 0.0), r.value("nvm_writes", 0ull), ov,
                          r.value("verified", false) ? "yes" : "**no**");
    }
    const json f6 = e.value("fig6", json::object()), f12 = e.value("fig12", json::object()),
               f13 = e.value("fig13", json::object()), f14 = e.value("fig14", json::object());
    figs += "\n| figure | measured (sim) | paper |\n|---|---|---|\n";
    figs += fmt::format("| Fig. 6: cp-nt gain over cp-clflush | {} | 9.6% avg, 16% max |\n",
                        pct_plain(f6.value("nt_gain_over_clflush", json())));
    figs += fmt::format("| Fig. 6: cp-par-clflush gain over cp-clflush | {} | up to 5% |\n",
                        pct_plain(f6.value("par_gain_over_clflush", json())));
    const json f7 = e.value("fig7", json::object());
    figs += fmt::format(
        "| Fig. 7: copy's share of the checkpoint loss, design 1 (cp-clflush); 2a "
        "(cp-par-clflush) | {}; {} | > 50% except BT and LU under design 1 |\n",
        pct_plain(f7.value("copy_share_cp_clflush", json())),
        pct_plain(f7.value("copy_share_cp_par_clflush", json())));
    figs += fmt::format("| Fig. 12: ipv overhead vs base | {} | 4.4% avg, <= 9.5% |\n",
                        fraction_pct(f12.value("ipv_overhead", json())));
    figs += fmt::format("| Fig. 12: ipv-sync (IPV flush, no helper) overhead | {} | (bar) |\n",
                        fraction_pct(f12.value("ipv_sync_overhead", json())));
    figs +=
        fmt::format("| Fig. 12: IPV without flushing, gain over cp-nt (design 2) | {} | 9% avg |\n",
                    pct_plain(f12.value("ipv_no_flush_gain_over_cp_nt", json())));
    if (ran(e["rows"], "config", "cp-nt-async"))  // kernels with the row
      figs += fmt::format(
          "| Fig. 12: the helper's asynchronous copy (cp-nt-async), gain over cp-nt | {} | 5.4% "
          "(MG) |\n",
          pct_plain(f12.value("async_copy_gain_over_cp_nt", json())));
    if (f13.contains("overlap_copy"))
      figs += fmt::format("| cp-nt-async: copy cost hidden (helper.overlap) | {} | (MG's bar) |\n",
                          pct_plain(f13.value("overlap_copy", json())));
    figs += fmt::format(
        "| Fig. 13: flush cost hidden (helper.overlap; WBINVD; from run times) | {}; {}; {} | "
        ">= 41% |\n",
        pct_plain(f13.value("overlap", json())), pct_plain(f13.value("overlap_wbinvd", json())),
        pct_plain(f13.value("overlap_from_times", json())));
    figs += fmt::format(
        "| Fig. 14: LLC miss rate, IPV without flush minus base | {} points | <= 4 points |\n",
        f14.contains("difference_points")
            ? fmt::format("{:+.2f}", f14["difference_points"].get<double>())
            : std::string("n/a"));
  }
  if (!figs.empty())
    md += "### Figs. 6, 12, 13, 14 per kernel (every catalog kernel with an `ipv` row)\n" + figs;
  return md + "\n";
}

}  // namespace pmlab::experiments
