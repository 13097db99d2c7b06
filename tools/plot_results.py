#!/usr/bin/env python3
"""Figures for pmlab eval: reads results.json, writes PNGs next to it (matplotlib, Agg backend)."""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


# LP paper (ISCA 2018) Table VII: LP's native overhead ranged +0.8% to +2.1% over its kernels.
PAPER_LP_NATIVE_RANGE = (0.8, 2.1)


def lp_column(out, kernels):
    """LP only (make run's quick mode, --native-schemes lp): one panel, kernels side by side,
    LP's overhead in percent with its 95% interval, the paper's range shaded."""
    # Each kernel's LP row, then the A/A rows (base against itself: the method's own error at
    # this load, whose true value is 0%) in gray.
    rows = [(k, s, f"{k['kernel']}\nn={k['n']}") for k in kernels for s in k["schemes"]
            if s["scheme"] == "lp"]
    rows += [(k, s, f"{k['kernel']} A/A\n(base vs base)") for k in kernels for s in k["schemes"]
             if s["scheme"] == "base-aa"]
    rows = [r for r in rows if r[1].get("ci95")]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(rows) + 1.5), 3.6))
    pct = [100 * (s["ratio"] - 1) for _, s, _ in rows]
    lo = [100 * (s["ratio"] - s["ci95"][0]) for _, s, _ in rows]
    hi = [100 * (s["ci95"][1] - s["ratio"]) for _, s, _ in rows]
    names = [name for _, _, name in rows]
    colors = ["tab:gray" if s["scheme"] == "base-aa" else "tab:green" for _, s, _ in rows]
    ax.axhspan(*PAPER_LP_NATIVE_RANGE, color="tab:orange", alpha=0.25,
               label="paper Table VII (+0.8 to +2.1%)")
    bars = ax.bar(names, pct, yerr=[lo, hi], color=colors, capsize=3,
                  label="LP vs base (gray: A/A)")
    for bar, (_, s, _) in zip(bars, rows):
        if not s.get("resolved", False):
            bar.set_hatch("//")
            bar.set_alpha(0.45)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_ylabel("LP time overhead vs base, % (95% CI)")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title("LP native time vs base, 1 thread; hatched = unresolved", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "native_overhead.png", dpi=110)
    plt.close(fig)


def native_overhead(res, out):
    """Ratio to base with its 95% interval; unresolved cells hatched and labelled."""
    kernels = [k for k in res.get("native", []) if "schemes" in k]
    if not kernels:
        return
    timed = [{s["scheme"] for s in k["schemes"]} - {"base", "base-aa"} for k in kernels]
    if all(t == {"lp"} for t in timed):
        lp_column(out, kernels)
        return
    fig, axes = plt.subplots(1, len(kernels), figsize=(3.2 * len(kernels), 3.6), squeeze=False)
    for ax, k in zip(axes[0], kernels):
        rows = [s for s in k["schemes"] if s["scheme"] != "base" and s.get("ci95")]
        if not rows:
            ax.set_title(f"{k['kernel']}: no interval")
            continue
        names = [s["scheme"] for s in rows]
        est = [s["ratio"] for s in rows]
        lo = [s["ratio"] - s["ci95"][0] for s in rows]
        hi = [s["ci95"][1] - s["ratio"] for s in rows]
        colors = ["tab:green" if n == "lp" else "tab:gray" for n in names]
        bars = ax.bar(names, est, yerr=[lo, hi], color=colors, capsize=3)
        for bar, s in zip(bars, rows):
            if not s.get("resolved", False):
                bar.set_hatch("//")
                bar.set_alpha(0.45)
                ax.annotate("unresolved", (bar.get_x() + bar.get_width() / 2, s["ci95"][1]),
                            ha="center", va="bottom", fontsize=6, rotation=90)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_title(f"{k['kernel']} (n={k['n']})", fontsize=9)
        ax.set_ylabel("time / base (95% CI)")
        ax.tick_params(axis="x", rotation=70, labelsize=7)
    fig.suptitle("native time vs base; hatched = unresolved", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "native_overhead.png", dpi=110)
    plt.close(fig)


def ratio(row, key):
    """A ratio vs base; results.json writes null when base was 0 (n/a): NaN, which is not drawn."""
    v = row.get(key) if row else None
    return float("nan") if v is None else v


def sim_writes(res, out):
    blocks = [b for b in res.get("sim", []) if "rows" in b and b["kernel"] == "tmm"]
    if not blocks:
        return
    fig, axes = plt.subplots(1, len(blocks), figsize=(5 * len(blocks), 3.6), squeeze=False)
    for ax, b in zip(axes[0], blocks):
        rows = [r for r in b["rows"] if r["scheme"] != "base"]
        names = [r["scheme"] for r in rows]
        x = range(len(rows))
        writes = [ratio(r, "writes_vs_base") for r in rows]
        cycles = [ratio(r, "cycles_vs_base") for r in rows]
        ax.bar([i - 0.2 for i in x], writes, 0.4, label="NVM writes")
        ax.bar([i + 0.2 for i in x], cycles, 0.4, label="cycles")
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, rotation=70, fontsize=7)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")  # CP's cycles would flatten every other bar
        ax.set_title(f"tmm on {b['preset']} (n={b['n']}), vs base")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "sim_tmm.png", dpi=110)
    plt.close(fig)


def family(scheme):
    """lp, ep, wal, cp, hr: tmm's ii variants (and HR's x64) stand for the family."""
    if scheme in ("ep-jj", "wal-jj", "hr-ii-x32", "hr-jj-x32", "hr-jj-x64"):
        return None
    return scheme.split("-")[0]


def sim_kernels(res, out):
    """NVM writes vs base per kernel and scheme family, one panel per preset (LP Fig. 13)."""
    blocks = [b for b in res.get("sim", []) if "rows" in b]
    presets = sorted({b["preset"] for b in blocks})
    if len({b["kernel"] for b in blocks}) < 2:
        return
    families = ["lp", "ep", "wal", "hr", "cp"]
    colors = {"lp": "tab:green", "ep": "tab:red", "wal": "tab:purple", "hr": "tab:orange",
              "cp": "tab:gray"}
    fig, axes = plt.subplots(1, len(presets), figsize=(6 * len(presets), 3.6), squeeze=False)
    for ax, preset in zip(axes[0], presets):
        kernels = [b for b in blocks if b["preset"] == preset]
        width = 0.8 / len(families)
        for fi, fam in enumerate(families):
            ys = []
            for b in kernels:
                row = next((r for r in b["rows"] if family(r["scheme"]) == fam), None)
                ys.append(ratio(row, "writes_vs_base"))
            xs = [i - 0.4 + width * (fi + 0.5) for i in range(len(kernels))]
            ax.bar(xs, ys, width, label=fam, color=colors[fam])
        ax.set_xticks(range(len(kernels)))
        ax.set_xticklabels([b["kernel"] for b in kernels])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_ylabel("NVM writes / base")
        ax.set_title(f"simulated NVM writes on {preset} (cf. LP Fig. 13, thesis Fig. 3.6)",
                     fontsize=9)
        ax.legend(fontsize=7, ncol=5)
    fig.tight_layout()
    fig.savefig(out / "sim_kernels.png", dpi=110)
    plt.close(fig)


def checksum_overhead(res, out):
    cells = [c for part in res.get("checksum", []) for c in part.get("overhead", [])]
    if not cells:
        return
    fig, ax = plt.subplots(figsize=(5, 3.2))
    names = [c["checksum"] for c in cells]
    # Paired ratio with its 95% interval (experiments/paired_ratio.hpp); unresolved bars hatched.
    mid = [100 * (c["ratio"] - 1) for c in cells]
    err = [[100 * (c["ratio"] - c["ci95"][0]) for c in cells],
           [100 * (c["ci95"][1] - c["ratio"]) for c in cells]]
    bars = ax.bar(names, mid, yerr=err, capsize=3, color="tab:blue")
    for bar, c in zip(bars, cells):
        if not c.get("resolved", False):
            bar.set_hatch("//")
            bar.set_alpha(0.5)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("LP tmm time overhead (%)")
    ax.set_title("checksum kinds (cf. LP paper Fig. 15b)")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(out / "checksum_overhead.png", dpi=110)
    plt.close(fig)


def sensitivity(res, out):
    studies = {}
    for s in res.get("sensitivity", []):
        if "rows" in s:
            studies.setdefault(s["study"], []).append(s)
    if not studies:
        return
    fig, axes = plt.subplots(1, len(studies), figsize=(4.2 * len(studies), 3.4), squeeze=False)
    for ax, (study, pts) in zip(axes[0], studies.items()):
        labels = [str(p["value"]) for p in pts]
        for scheme, color in (("lp", "tab:green"), ("ep-ii", "tab:red")):
            ys = []
            for p in pts:
                row = next((r for r in p["rows"] if r["scheme"] == scheme), None)
                ys.append(100 * (ratio(row, "cycles_vs_base") - 1))
            ax.plot(labels, ys, marker="o", color=color, label=scheme)
        ax.set_title(f"sensitivity: {study}")
        ax.set_ylabel("cycles overhead vs base (%)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "sensitivity.png", dpi=110)
    plt.close(fig)


def crash_recovery(res, out):
    rows = [c for c in res.get("crash", []) if "recovery_ops" in c]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(max(5, 0.45 * len(rows)), 3.4))
    names = [f"{c['kernel']} {c['scheme']}" for c in rows]
    ax.bar(names, [max(1, c["recovery_ops"]["max"]) for c in rows], color="tab:orange", label="max")
    ax.bar(names, [max(1, c["recovery_ops"]["median"]) for c in rows], color="tab:blue", label="median")
    ax.set_yscale("log")
    ax.set_ylabel("recovery work (simulated ops)")
    ax.set_title("crash campaigns: recovery work per trial")
    ax.tick_params(axis="x", rotation=80, labelsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "crash_recovery.png", dpi=110)
    plt.close(fig)


# Seed 004 Fig. 11 / Fig. 12 averages (paper text, l. 282-286), beside the measured bars.
PAPER_FIG11 = {"lb": 1.0, "lb-idt": 1.03, "lb-pf": 1.17, "lb++": 1.22}
PAPER_FIG12 = {"lb": 90, "lb-idt": 90, "lb-pf": 77, "lb++": 75}


def persist_barriers(res, out):
    benches = [b for b in res.get("barriers", []) if "rows" in b]
    if not benches:
        return
    configs = list(PAPER_FIG11)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    width = 0.8 / (len(benches) + 1)
    for i, b in enumerate(benches):
        rows = {r["config"]: r for r in b["rows"]}
        xs = [j + i * width for j in range(len(configs))]
        a1.bar(xs, [rows[c]["vs_lb"] if c in rows else 0 for c in configs], width, label=b["bench"])
        a2.bar(xs, [rows[c]["epochs"]["conflict_pct"] if c in rows and "epochs" in rows[c] else 0
                    for c in configs], width, label=b["bench"])
    xs = [j + len(benches) * width for j in range(len(configs))]
    a1.bar(xs, [PAPER_FIG11[c] for c in configs], width, color="black", label="paper (avg)")
    a2.bar(xs, [PAPER_FIG12[c] for c in configs], width, color="black", label="paper (avg)")
    for ax, title, yl in ((a1, "Fig. 11: throughput over LB", "x LB"),
                          (a2, "Fig. 12: epochs flushed by a conflict", "%")):
        ax.set_xticks([j + 0.4 for j in range(len(configs))])
        ax.set_xticklabels(configs)
        ax.set_title(title)
        ax.set_ylabel(yl)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "persist_barriers.png", dpi=110)
    plt.close(fig)


# Seed 002: overhead vs base per configuration (Figs. 6, 12) and the helper's overlap (Fig. 13).
def seed002(res, out):
    # Per-kernel entries only: the section's tables (Table 1, Table 2, Fig. 5, the native
    # figures) carry a "table" key.
    kernels = [k for k in res.get("seed002", []) if "rows" in k and "table" not in k]
    if not kernels:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    configs = []  # every kernel's configurations, in first-seen order (cp-nt-async: cg, jacobi)
    for k in kernels:
        for r in k["rows"]:
            if r["config"] != "base" and r["config"] not in configs:
                configs.append(r["config"])
    width = 0.8 / len(kernels)
    for i, k in enumerate(kernels):
        rows = {r["config"]: r for r in k["rows"]}
        xs = [j + i * width for j in range(len(configs))]
        a1.bar(xs, [100 * rows[c]["overhead"] if c in rows else 0 for c in configs], width,
               label=k["kernel"])
    a1.axhline(9.5, color="black", linestyle="--", label="paper IPV max 9.5%")
    a1.set_xticks([j + 0.4 - width / 2 for j in range(len(configs))])
    a1.set_xticklabels(configs, rotation=30, fontsize=7)
    a1.set_ylabel("% over base (simulated)")
    a1.set_title("Figs. 6, 12: overhead vs base")
    a1.legend(fontsize=6)
    names = [k["kernel"] for k in kernels]
    a2.bar(range(len(names)), [100 * k.get("fig13", {}).get("overlap", 0) for k in kernels])
    a2.axhline(41, color="black", linestyle="--", label="paper >= 41%")
    a2.set_xticks(range(len(names)))
    a2.set_xticklabels(names)
    a2.set_ylabel("% of flush cost hidden")
    a2.set_title("Fig. 13: helper overlap")
    a2.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "seed002.png", dpi=110)


def preflush(res, out):
    """Thesis Ch. 5: PreFlush speedup - 1 per kernel x flushing scheme, thesis design vs
    pmlab's line-change extension (with and without L1 marks), and their coverage (the
    section-5.3.8 oscillation)."""
    kernels = [k for k in res.get("preflush", []) if k.get("rows") and "knob" not in k["rows"][0]]
    if not kernels:
        return
    variants = []
    for k in kernels:
        for r in k["rows"]:
            if r["variant"] not in variants:
                variants.append(r["variant"])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    labels, sp, cov = [], {v: [] for v in variants}, {v: [] for v in variants}
    for k in kernels:
        for r in k["rows"]:
            if r["variant"] == variants[0]:
                labels.append(f'{k["kernel"]} {r["scheme"]}')
            sp[r["variant"]].append((r["speedup"] - 1) * 100)
            cov[r["variant"]].append(r.get("coverage", 0) * 100)
    xs = range(len(labels))
    width = 0.8 / len(variants)
    for i, v in enumerate(variants):
        a1.bar([x + i * width for x in xs], sp[v], width, label=v)
        a2.bar([x + i * width for x in xs], cov[v], width, label=v)
    for ax, title, yl in ((a1, "PreFlush speedup - 1 (simulated)", "%"),
                          (a2, "coverage (early ACKs / flushes)", "%")):
        ax.set_xticks([x + 0.4 - width / 2 for x in xs])
        ax.set_xticklabels(labels, rotation=90, fontsize=5)
        ax.set_title(title)
        ax.set_ylabel(yl)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "preflush.png", dpi=110)


def gemm_rows(res, out):
    """Thesis Fig. 4.3 shape: row writes / naive base per variant and config (log scale)."""
    variants = [v for v in res.get("gemm", []) if "cells" in v]
    naive = next((v for v in variants if v["variant"] == "naive"), None)
    if naive is None:
        return
    nb = next(c for c in naive["cells"] if c["config"] == "base")
    configs = ["base", "base-packed", "eager", "eager-packed", "lazy", "lazy-packed"]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 6))
    width = 0.8 / len(configs)
    for i, cfg in enumerate(configs):
        xs, rw, sp = [], [], []
        for j, v in enumerate(variants):
            c = next((c for c in v["cells"] if c["config"] == cfg), None)
            if c is None:
                continue
            xs.append(j + i * width)
            rw.append(c["row_writes"] / max(nb["row_writes"], 1))
            sp.append(nb["cycles"] / max(c["cycles"], 1))
        a1.bar(xs, rw, width, label=cfg)
        a2.bar(xs, sp, width, label=cfg)
    for ax, title in ((a1, "row writes / naive (log)"), (a2, "speedup vs naive")):
        ax.set_xticks([j + 0.4 for j in range(len(variants))])
        ax.set_xticklabels([v["variant"] for v in variants])
        ax.set_title(f"Thesis Fig. 4.3 shape, n={naive['n']}: {title}")
        ax.legend(fontsize=6, ncol=3)
    a1.set_yscale("log")
    a1.axhline(17, color="black", lw=0.8, ls="--")  # thesis: GEPP1 = 17x naive
    fig.tight_layout()
    fig.savefig(out / "gemm_row_writes.png", dpi=110)
    plt.close(fig)


def main():
    res = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    for fn in (native_overhead, sim_writes, sim_kernels, checksum_overhead, sensitivity,
               crash_recovery, persist_barriers, seed002, preflush,
               gemm_rows):
        fn(res, out)


if __name__ == "__main__":
    main()
