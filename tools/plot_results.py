#!/usr/bin/env python3
"""Figures for pmlab eval: reads results.json, writes PNGs next to it (matplotlib, Agg backend).

Usage: plot_results.py RESULTS.json OUT_DIR   (pmlab eval runs it after every evaluation)

Each figure stands alone: its title names what was measured and on which machine, its caption
(bottom line) the command, date, commit and host, every mark has a legend entry, and the papers'
values are drawn where a paper gives one. tests/tools/test_plot_results.py renders every figure
from a small results.json and checks sizes, overlapping labels, legends and empty slots.
"""
import json
import math
import sys
import textwrap
import traceback
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.transforms import offset_copy  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # noqa: E402

DPI = 100

# ---------------------------------------------------------------------------------------------
# The papers' values. They mirror src/experiments/paper_numbers.hpp (the report's tables use
# those): results.json does not carry them, so a figure needs its own copy.

# LP paper (ISCA 2018) Table VII: LP's native time overhead per kernel, %.
PAPER_TABLE7 = {"tmm": 0.8, "cholesky": 1.1, "conv2d": 0.9, "gauss": 2.1, "fft": 1.1}
# LP paper Fig. 10 (§VI-B): tmm on lp-isca18, time and NVM writes over base. The paper does not
# say how its ii-granular log is laid out, so its WAL values stand beside each of pmlab's ii
# log formats.
PAPER_FIG10_TIME = {"lp": 1.002, "ep-ii": 1.12, "wal-ii": 5.97, "wal-ii-entry": 5.97,
                    "wal-ii-entry-sync": 5.97}
PAPER_FIG10_WRITES = {"lp": 1.003, "ep-ii": 1.36, "wal-ii": 3.83, "wal-ii-entry": 3.83,
                      "wal-ii-entry-sync": 3.83}
# Thesis Table 3.4: tmm on pact17, time and NVM writes over base.
PAPER_T34_TIME = {"ep-ii": 1.05, "ep-jj": 1.06, "wal-ii": 1.08, "wal-jj": 1.09, "cp": 3.07,
                  "hr-ii-x32": 1.08, "hr-ii-x64": 1.07, "hr-jj-x32": 1.09, "hr-jj-x64": 1.08}
PAPER_T34_WRITES = {"ep-ii": 1.07, "ep-jj": 1.15, "wal-ii": 2.11, "wal-jj": 2.23, "cp": 4.30,
                    "hr-ii-x32": 1.13, "hr-ii-x64": 1.08, "hr-jj-x32": 1.20, "hr-jj-x64": 1.16}
# NVM writes over base, (lowest, highest, average) over the papers' kernels: LP paper Fig. 13
# (lp-isca18) and thesis Fig. 3.6 (pact17; its "Recompute" is EagerRecompute). The per-kernel
# bars did not survive the text extraction; the text gives these ranges.
PAPER_WRITES_RANGE = {
    "lp-isca18": ("LP paper Fig. 13", {"lp": (1.001, 1.044, 1.03), "ep": (1.002, 1.55, 1.206)}),
    "pact17": ("thesis Fig. 3.6", {"ep": (1.02, 1.30, 1.08), "cp": (1.08, 1.71, 1.38)}),
}
# LP paper Fig. 15b: LP tmm's time overhead per checksum kind, % (crc32c is not in the paper).
PAPER_FIG15B = {"modular": 0.2, "parity": 0.1, "adler32": 1.0, "modular-parity": 3.4}
# LP paper Fig. 15a: LP's time overhead at each L2 (last-level) cache size, %.
PAPER_FIG15A = {"256K": 6.5, "512K": 0.2, "1M": 0.1}
# LP paper §VI-A (Fig. 11): LP's extra NVM writes with periodic cleaning every T, % of the run.
PAPER_PERIODIC = [(0.08, 32.0)]  # T = 0.08% of the run: +32%
PAPER_PERIODIC_BELOW = [(33.0, 2.0)]  # T = 33%: below +2%
# Seed 004 (MICRO'15) Fig. 11 / Fig. 12 averages over its five micro-benchmarks (§7).
PAPER_FIG11 = {"lb": 1.0, "lb-idt": 1.03, "lb-pf": 1.17, "lb++": 1.22}
PAPER_FIG12 = {"lb": 90, "lb-idt": 90, "lb-pf": 77, "lb++": 75}
# Seed 004 Figs. 13-14, §7.2: buffered strict persistency, time over no persistency.
PAPER_BSP = {"lb-300": 1.9, "lb-1k": 1.5, "lb-10k": 1.5, "lb-idt-10k": 1.35, "lb++-10k": 1.3,
             "lb++-nolog-10k": 1.16, "write-through": 8.0}
# Seed 002 Fig. 12: IPV's overhead over base, average 4.4%, at most 9.5%; Fig. 13: the helper
# hides at least 41% of the flush cost.
PAPER_IPV = (1.044, 1.095)
PAPER_OVERLAP = 41.0
# Thesis §5.1: PreFlush's speedup, average +22.2%, up to +49.8%.
PAPER_PREFLUSH = (22.2, 49.8)
# Thesis §4.6.1: row writes over naive GEMM for the variants its prose gives a number for.
PAPER_GEMM_ROWS = {"gepp1": 17.0, "gemp1": 74.0}

# One color per scheme family, in every figure.
FAMILY_COLORS = {"lp": "tab:green", "ep": "tab:red", "wal": "tab:purple", "hr": "tab:orange",
                 "cp": "tab:gray"}
FAMILY_NAMES = {"lp": "LP", "ep": "EagerRecompute", "wal": "WAL (undo log)",
                "hr": "Hybrid Recompute", "cp": "checkpoint (copy)"}
# The scheme that stands for a family in the per-kernel figure: tmm's ii variants, the thesis'
# x64 HR, GEMM's eager recompute (its lazy one is thesis Ch. 4's own scheme).
FAMILY_SCHEMES = {"lp": ("lp",), "ep": ("ep-ii", "ep", "ep-eager"), "wal": ("wal-ii", "wal"),
                  "hr": ("hr-ii-x64", "hr-x8", "hr"), "cp": ("cp",)}
PAPER_MARK = dict(color="black", marker="D", markersize=5, linestyle="none", zorder=5)


# ---------------------------------------------------------------------------------------------
# Shared helpers.

def provenance(res):
    """The caption's last line: which command, when, at which commit, on which host."""
    meta = res.get("meta", {})
    mode = res.get("mode")
    parts = [f"pmlab eval --{mode}" if mode else "pmlab eval"]
    if meta.get("date"):
        parts.append(meta["date"][:10])
    if meta.get("git_revision"):
        parts.append(f"commit {meta['git_revision'][:12]}")
    if meta.get("cpu"):
        parts.append(f"host CPU {meta['cpu']}")
    return ", ".join(parts)


def new_figure(res, size, title, caption, nrows=1, ncols=1, **kw):
    """A constrained-layout figure: the title on top, the caption and provenance at the foot."""
    fig, axes = plt.subplots(nrows, ncols, figsize=size, dpi=DPI, squeeze=False,
                             layout="constrained", **kw)
    fig.suptitle("\n".join(textwrap.wrap(title, int(size[0] * 72 / (11 * 0.55)))),
                 fontsize=11)
    # Wrapped to the figure's width (characters of about 0.55 em): a caption wider than the
    # figure would be cut off.
    foot = textwrap.wrap(caption, int(size[0] * 72 / (7.5 * 0.55))) if caption else []
    fig.supxlabel("\n".join(foot + [provenance(res)]), fontsize=7.5, color="dimgray")
    return fig, axes


def ratio(row, key):
    """A ratio vs base; results.json writes null when base was 0 (n/a): NaN, which is not drawn."""
    v = row.get(key) if row else None
    return float("nan") if v is None else v


def finite(v):
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def ratio_ticks(lo, hi):
    """Tick values for a log axis of ratios, dense enough to read, sparse enough not to collide."""
    decades = math.log10(max(hi, 1.0001) / max(lo, 1e-9))
    if decades <= 0.35:
        mantissas = (1.0, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, 7.0, 8.0, 9.0)
    elif decades <= 1.2:
        mantissas = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    elif decades <= 2.5:
        mantissas = (1.0, 2.0, 5.0)
    else:
        mantissas = (1.0,)
    ticks = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in mantissas:
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks


def times_label(v, _pos=None):
    return f"{v:g}×"


def ratio_axis(ax, values, axis="y", pad=1.25):
    """A log axis of ratios over base labelled 1×, 1.5×, 2×, ... (never 4×10⁰)."""
    vals = [v for v in values if finite(v) and v > 0] or [1.0]
    lo, hi = min(min(vals), 1.0) / pad, max(max(vals), 1.0) * pad
    scale = ax.set_yscale if axis == "y" else ax.set_xscale
    lim = ax.set_ylim if axis == "y" else ax.set_xlim
    target = ax.yaxis if axis == "y" else ax.xaxis
    scale("log")
    lim(lo, hi)
    target.set_major_locator(FixedLocator(ratio_ticks(lo, hi)))
    target.set_major_formatter(FuncFormatter(times_label))
    target.set_minor_formatter(NullFormatter())


def legend_below(ax, handles, ncol=3, fontsize=8):
    """A legend under the axes (outside the data, so it hides no bar), below the tick labels
    and the axis label: call it after setting them."""
    lines = max([t.get_text().count("\n") + 1 for t in ax.get_xticklabels()] or [1])
    drop = 0.1 + 0.16 * lines + (0.22 if ax.get_xlabel() else 0.0)
    trans = offset_copy(ax.transAxes, fig=ax.figure, y=-drop, units="inches")
    return ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     bbox_transform=trans, ncol=ncol, fontsize=fontsize, frameon=False)


def legend_right(ax, handles, fontsize=8):
    return ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                     fontsize=fontsize, frameon=False)


def grid_shape(count, ncols):
    ncols = min(ncols, count)
    return (count + ncols - 1) // ncols, ncols


def drop_unused(fig, axes, used):
    for ax in list(axes.flat)[used:]:
        fig.delaxes(ax)


def kib(n_bytes):
    return f"{n_bytes >> 10} KiB" if n_bytes < (1 << 20) else f"{n_bytes >> 20} MiB"


def pct_of_ratio(r):
    return f"{100 * (r - 1):+.1f}%"


def geomean(values):
    vals = [v for v in values if finite(v) and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")


# ---------------------------------------------------------------------------------------------
# Native time (LP paper Table VII).

def unresolved_patch(color):
    return Patch(facecolor=color, alpha=0.45, hatch="//", edgecolor="black",
                 label="unresolved: interval wider than the ±1% target")


def native_lp(res, kernels):
    """LP only (quick mode): LP's overhead per kernel with its 95% interval, the paper's value
    per kernel, the A/A row (base against itself: the method's own error, truly 0%) in gray."""
    rows = [(k, s, f"{k['kernel']}\nn={k['n']}") for k in kernels for s in k["schemes"]
            if s["scheme"] == "lp"]
    rows += [(k, s, f"{k['kernel']} A/A\nbase vs base") for k in kernels
             for s in k["schemes"] if s["scheme"] == "base-aa"]
    rows = [r for r in rows if r[1].get("ci95")]
    if not rows:
        return None
    loads = [v for k in kernels for v in (k.get("machine", {}).get("load_before"),
                                          k.get("machine", {}).get("load_after")) if finite(v)]
    cores = next((k["machine"]["cores"] for k in kernels if k.get("machine", {}).get("cores")),
                 None)
    threads = kernels[0].get("threads", 1)
    budget = kernels[0].get("budget_seconds")
    load = f", load average {min(loads):.1f}–{max(loads):.1f}" if loads else ""
    caption = (f"Native runs on this host ({cores} cores{load}), {threads} thread, "
               f"budget {budget:.0f} s per kernel, --persist cpu --flush clwb. "
               "Time overhead = LP's time over base's in paired repetitions.")
    fig, axes = new_figure(res, (max(7.0, 0.95 * len(rows) + 2.5), 4.6),
                           "LP's native time overhead vs base per kernel (LP paper Table VII)",
                           caption)
    ax = axes[0][0]
    xs = range(len(rows))
    pct = [100 * (s["ratio"] - 1) for _, s, _ in rows]
    lo = [100 * (s["ratio"] - s["ci95"][0]) for _, s, _ in rows]
    hi = [100 * (s["ci95"][1] - s["ratio"]) for _, s, _ in rows]
    colors = ["tab:gray" if s["scheme"] == "base-aa" else "tab:green" for _, s, _ in rows]
    bars = ax.bar(xs, pct, color=colors, zorder=2)
    ax.errorbar(xs, pct, yerr=[lo, hi], fmt="none", ecolor="black", capsize=3, zorder=3)
    for bar, (_, s, _) in zip(bars, rows):
        if not s.get("resolved", False):
            bar.set_hatch("//")
            bar.set_alpha(0.45)
    px = [i for i, (k, s, _) in enumerate(rows)
          if s["scheme"] == "lp" and k["kernel"] in PAPER_TABLE7]
    ax.plot(px, [PAPER_TABLE7[rows[i][0]["kernel"]] for i in px], **PAPER_MARK)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([name for _, _, name in rows], fontsize=8)
    ax.set_ylabel("time overhead vs base (%)")
    handles = [Patch(color="tab:green", label="LP vs base, resolved (±1%)"),
               unresolved_patch("tab:green"),
               Patch(color="tab:gray", label="A/A: base vs base (the method's own error)"),
               Line2D([], [], color="black", marker="_", markersize=8, label="95% interval"),
               Line2D([], [], label="paper Table VII", **PAPER_MARK)]
    legend_below(ax, handles, ncol=3 if len(rows) >= 6 else 2)
    return fig


def native_grid(res, kernels):
    """Every scheme (full mode): one panel per kernel, schemes as horizontal bars of time over
    base on a log axis, the paper's values where it has them."""
    nr, nc = grid_shape(len(kernels), 3)
    heights = []
    for r in range(nr):
        heights.append(max(len(k["schemes"]) for k in kernels[r * nc:(r + 1) * nc]))
    fig, axes = new_figure(res, (13, sum(0.24 * h + 1.0 for h in heights) + 1.2),
                           "Native time vs base per kernel and scheme (paired repetitions)",
                           "One thread on this host; bars: time over base with the 95% interval.",
                           nr, nc, gridspec_kw={"height_ratios": heights})
    for ax, k in zip(axes.flat, kernels):
        rows = [s for s in k["schemes"] if s["scheme"] != "base" and s.get("ci95")]
        names = [s["scheme"] for s in rows]
        est = [s["ratio"] for s in rows]
        ys = range(len(rows))
        colors = [FAMILY_COLORS.get(n.split("-")[0], "tab:blue") for n in names]
        bars = ax.barh(ys, est, color=colors, zorder=2)
        ax.errorbar(est, ys, xerr=[[s["ratio"] - s["ci95"][0] for s in rows],
                                   [s["ci95"][1] - s["ratio"] for s in rows]],
                    fmt="none", ecolor="black", capsize=2, zorder=3)
        for bar, s in zip(bars, rows):
            if not s.get("resolved", False):
                bar.set_hatch("//")
                bar.set_alpha(0.45)
        paper = [(i, 1 + PAPER_TABLE7[k["kernel"]] / 100) for i, n in enumerate(names)
                 if n == "lp" and k["kernel"] in PAPER_TABLE7]
        if paper:
            ax.plot([p[1] for p in paper], [p[0] for p in paper], **PAPER_MARK)
        ax.set_yticks(list(ys))
        ax.set_yticklabels(names, fontsize=7)
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=0.8)
        ratio_axis(ax, [s["ci95"][1] for s in rows] + [s["ci95"][0] for s in rows], axis="x",
                   pad=1.05)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(f"{k['kernel']} (n={k['n']})", fontsize=9)
    drop_unused(fig, axes, len(kernels))
    handles = [Patch(color=c, label=FAMILY_NAMES[f]) for f, c in FAMILY_COLORS.items()]
    handles += [unresolved_patch("white"),
                Line2D([], [], color="black", marker="|", label="95% interval"),
                Line2D([], [], label="paper Table VII (LP)", **PAPER_MARK)]
    legend_below(list(axes.flat)[len(kernels) - 1], handles, ncol=2, fontsize=7)
    return fig


def native_overhead(res):
    kernels = [k for k in res.get("native", []) if "schemes" in k]
    if not kernels:
        return None
    timed = [{s["scheme"] for s in k["schemes"]} - {"base", "base-aa"} for k in kernels]
    if all(t <= {"lp"} for t in timed):
        return native_lp(res, kernels)
    return native_grid(res, [k for k, t in zip(kernels, timed) if t])


# ---------------------------------------------------------------------------------------------
# Simulated cycles and NVM writes (LP paper Figs. 10, 12-13; thesis Table 3.4, Fig. 3.6).

def machine_text(b):
    return f"{b['threads']} threads, LLC {kib(b['llc_bytes'])}" if "llc_bytes" in b else ""


def sim_tmm(res):
    """tmm's every scheme: NVM writes and cycles over base per machine, the papers' values."""
    blocks = [b for b in res.get("sim", []) if "rows" in b and b["kernel"] == "tmm"]
    if not blocks:
        return None
    count = max(len(b["rows"]) for b in blocks)
    fig, axes = new_figure(
        res, (6.2 * len(blocks), 0.3 * count + 2.4),
        "tmm simulated: NVM writes and cycles over base, every scheme",
        "Ratios over base tmm simulated with identical parameters (log scale). Papers: LP paper "
        "Fig. 10 (lp-isca18), thesis Table 3.4 (pact17).", 1, len(blocks))
    for ax, b in zip(axes[0], blocks):
        rows = [r for r in b["rows"] if r["scheme"] != "base"]
        names = [r["scheme"] for r in rows]
        ys = list(range(len(rows)))
        writes = [ratio(r, "writes_vs_base") for r in rows]
        cycles = [ratio(r, "cycles_vs_base") for r in rows]
        ax.barh([y - 0.2 for y in ys], writes, 0.4, color="tab:blue", label="NVM writes")
        ax.barh([y + 0.2 for y in ys], cycles, 0.4, color="tab:orange", label="cycles")
        pw, pt = ((PAPER_FIG10_WRITES, PAPER_FIG10_TIME) if b["preset"] == "lp-isca18" else
                  (PAPER_T34_WRITES, PAPER_T34_TIME) if b["preset"] == "pact17" else ({}, {}))
        source = {"lp-isca18": "LP paper Fig. 10", "pact17": "thesis Table 3.4"}.get(b["preset"])
        wp = [(pw[n], y - 0.2) for n, y in zip(names, ys) if n in pw]
        tp = [(pt[n], y + 0.2) for n, y in zip(names, ys) if n in pt]
        ax.plot([p[0] for p in wp], [p[1] for p in wp], color="navy", marker="D", markersize=5,
                linestyle="none", zorder=5)
        ax.plot([p[0] for p in tp], [p[1] for p in tp], color="black", marker="^",
                markersize=6, linestyle="none", zorder=5)
        ax.set_yticks(ys)
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=0.8)
        ratio_axis(ax, writes + cycles + [p[0] for p in wp + tp], axis="x")
        ax.set_xlabel("over base (log scale)")
        ax.set_title(f"tmm on {b['preset']} (n={b['n']}, {machine_text(b)})", fontsize=10)
        handles = [Patch(color="tab:blue", label="NVM writes"),
                   Patch(color="tab:orange", label="cycles")]
        if source:
            handles += [Line2D([], [], color="navy", marker="D", linestyle="none",
                               label=f"{source}: writes"),
                        Line2D([], [], color="black", marker="^", linestyle="none",
                               label=f"{source}: time")]
        legend_below(ax, handles, ncol=2)
    return fig


def family_row(block, fam):
    rows = {r["scheme"]: r for r in block["rows"]}
    for s in FAMILY_SCHEMES[fam]:
        if s in rows:
            return rows[s]
    return None


def sim_kernels(res):
    """NVM writes over base per kernel and scheme family, one panel per machine, and the
    papers' ranges over their kernels in the last slot (LP paper Fig. 13, thesis Fig. 3.6)."""
    blocks = [b for b in res.get("sim", []) if "rows" in b]
    # Kernels with a ratio for at least two families: the BEP micro-benchmarks have only `tx`
    # (persist_barriers.png has them), and quick mode's GEMM fits in the LLC (base writes
    # nothing: no ratio).
    blocks = [b for b in blocks if sum(finite(ratio(family_row(b, f), "writes_vs_base"))
                                       for f in FAMILY_SCHEMES) >= 2]
    presets = list(dict.fromkeys(b["preset"] for b in blocks))
    if not presets or len({b["kernel"] for b in blocks}) < 2:
        return None
    families = list(FAMILY_SCHEMES)
    fig, axes = new_figure(
        res, (12, 3.6 * len(presets) + 1.2),
        "Simulated NVM writes over base, per kernel and scheme family "
        "(cf. LP paper Fig. 13, thesis Fig. 3.6)",
        "Each bar: the scheme's NVM writes (LLC write-backs + flushes) over base's, simulated "
        "with identical parameters; tmm stands for its family with ep-ii, wal-ii, hr-ii-x64. "
        "A missing bar: the kernel has no such scheme. gmean: over the kernels shown.",
        len(presets), 1)
    width = 0.16
    for ax, preset in zip(axes[:, 0], presets):
        kernels = [b for b in blocks if b["preset"] == preset]
        values, labels = [], []
        gm = {}
        for f in families:
            gm[f] = geomean([ratio(family_row(b, f), "writes_vs_base") for b in kernels])
        for i, b in enumerate(kernels):
            present = [f for f in families
                       if finite(ratio(family_row(b, f), "writes_vs_base"))]
            # Centre the bars a kernel has: no gap where it lacks a family.
            for j, f in enumerate(present):
                x = i + (j - (len(present) - 1) / 2) * width
                v = ratio(family_row(b, f), "writes_vs_base")
                ax.bar(x, v, width, color=FAMILY_COLORS[f])
                values.append(v)
            labels.append(f"{b['kernel']}\nn={b['n']}")
        source, ranges = PAPER_WRITES_RANGE.get(preset, (None, {}))
        if ranges:
            x0 = len(kernels)
            fams = [f for f in families if f in ranges]
            for j, f in enumerate(fams):
                x = x0 + (j - (len(fams) - 1) / 2) * 0.22
                lo, hi, avg = ranges[f]
                ax.vlines(x, lo, hi, color=FAMILY_COLORS[f], linewidth=3)
                ax.plot([x], [avg], color="black", marker="o", markersize=5, zorder=5)
                values += [lo, hi]
            labels.append(f"{source}\n(range over its\nkernels)")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ratio_axis(ax, values)
        ax.set_ylabel("NVM writes / base")
        b0 = kernels[0]
        ax.set_title(f"{preset} ({machine_text(b0)})", fontsize=10)
        handles = [Patch(color=FAMILY_COLORS[f],
                         label=f"{FAMILY_NAMES[f]} (gmean {pct_of_ratio(gm[f])})")
                   for f in families if finite(gm[f])]
        if ranges:
            handles += [Line2D([], [], color="dimgray", linewidth=3,
                               label=f"{source}: lowest–highest"),
                        Line2D([], [], color="black", marker="o", linestyle="none",
                               label=f"{source}: average")]
        legend_right(ax, handles)
    return fig


# ---------------------------------------------------------------------------------------------
# Checksums (LP paper Fig. 15b).

def checksum_overhead(res):
    parts = [p for p in res.get("checksum", []) if p.get("overhead")]
    cells = [c for p in parts for c in p["overhead"] if c.get("ci95")]
    if not cells:
        return None
    # The overhead study's tmm size: results.json names it when it carries it, else eval's
    # sizes (src/experiments/eval.cpp: 384 quick, 1024 full).
    n = next((p.get("n") for p in parts if p.get("n")), None) or \
        {"quick": 384, "full": 1024}.get(res.get("mode"))
    loads = [c[k] for c in cells for k in ("load_before", "load_after") if finite(c.get(k))]
    load = f", load average {min(loads):.1f}–{max(loads):.1f}" if loads else ""
    fig, axes = new_figure(
        res, (7.5, 4.6), "LP tmm's native time overhead per checksum kind (cf. LP paper Fig. 15b)",
        f"Native, 1 thread, this host{load}; LP tmm{f' (n={n})' if n else ''} over base in "
        "paired repetitions.")
    ax = axes[0][0]
    names = [c["checksum"] for c in cells]
    xs = range(len(cells))
    mid = [100 * (c["ratio"] - 1) for c in cells]
    err = [[100 * (c["ratio"] - c["ci95"][0]) for c in cells],
           [100 * (c["ci95"][1] - c["ratio"]) for c in cells]]
    bars = ax.bar(xs, mid, color="tab:blue", zorder=2)
    ax.errorbar(xs, mid, yerr=err, fmt="none", ecolor="black", capsize=3, zorder=3)
    for bar, c in zip(bars, cells):
        if not c.get("resolved", False):
            bar.set_hatch("//")
            bar.set_alpha(0.5)
    px = [i for i, nm in enumerate(names) if nm in PAPER_FIG15B]
    ax.plot(px, [PAPER_FIG15B[names[i]] for i in px], **PAPER_MARK)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, fontsize=9)
    ax.set_ylabel("time overhead vs base (%)")
    legend_below(ax, [Patch(color="tab:blue", label="resolved (±1%)"),
                      unresolved_patch("tab:blue"),
                      Line2D([], [], color="black", marker="_", markersize=8,
                             label="95% interval"),
                      Line2D([], [], label="LP paper Fig. 15b", **PAPER_MARK)], ncol=2)
    return fig


# ---------------------------------------------------------------------------------------------
# Sensitivity (LP paper §VI-C, Figs. 14-15a; periodic flush §VI-A).

STUDY_AXES = {"llc": "last-level cache size", "nvm": "NVM read / write latency (ns)",
              "threads": "threads (= simulated cores)"}
SCHEME_STYLE = {"lp": ("tab:green", "o", "LP"), "ep-ii": ("tab:red", "s", "EagerRecompute (ii)"),
                "ep-jj": ("tab:brown", "^", "EagerRecompute (jj)")}


def sensitivity(res):
    studies = {}
    for s in res.get("sensitivity", []):
        if "rows" in s or "points" in s:
            studies.setdefault(s["study"], []).append(s)
    if not studies:
        return None
    n = next(iter(studies.values()))[0].get("n")
    machine = res.get("machine", {}).get("config") or "lp-isca18"
    fig, axes = new_figure(
        res, (4.0 * len(studies) + 0.5, 4.4),
        f"Sensitivity of tmm (n={n}) on {machine}, simulated (LP paper §VI-C)",
        "Cycles over base tmm simulated at the same setting; one parameter varied per panel, "
        "the others at the machine's defaults.", 1, len(studies))
    for ax, (study, pts) in zip(axes[0], studies.items()):
        if study == "periodic":
            periodic_panel(ax, pts[0])
            continue
        labels = [str(p["value"]) for p in pts]
        handles = []
        schemes = [s for s in SCHEME_STYLE if any(r["scheme"] == s for p in pts for r in p["rows"])]
        for scheme in schemes:
            color, marker, name = SCHEME_STYLE[scheme]
            ys = []
            for p in pts:
                row = next((r for r in p["rows"] if r["scheme"] == scheme), None)
                ys.append(100 * (ratio(row, "cycles_vs_base") - 1))
            ax.plot(range(len(labels)), ys, marker=marker, color=color)
            handles.append(Line2D([], [], color=color, marker=marker, label=name))
        if study == "llc":
            px = [i for i, v in enumerate(labels) if v in PAPER_FIG15A]
            ax.plot(px, [PAPER_FIG15A[labels[i]] for i in px], **PAPER_MARK)
            handles.append(Line2D([], [], label="LP paper Fig. 15a (LP time)", **PAPER_MARK))
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_xlabel(STUDY_AXES.get(study, study))
        ax.set_ylabel("cycles overhead vs base (%)")
        ax.set_title({"llc": "LLC size", "nvm": "NVM latency", "threads": "threads"}
                     .get(study, study), fontsize=10)
        legend_below(ax, handles, ncol=1)
    return fig


def periodic_panel(ax, s):
    """LP's extra NVM writes with periodic cleaning every T cycles (T a fraction of LP's run)."""
    pts = s["points"]
    xs = [100 * p["fraction_of_run"] for p in pts]
    ys = [100 * (ratio(p, "writes_vs_base") - 1) for p in pts]
    ax.plot(xs, ys, marker="o", color="tab:green")
    ax.axhline(100 * (ratio(s, "lp_writes_vs_base") - 1), color="tab:green", linestyle="--",
               linewidth=1)
    ax.plot([p[0] for p in PAPER_PERIODIC], [p[1] for p in PAPER_PERIODIC], **PAPER_MARK)
    ax.plot([p[0] for p in PAPER_PERIODIC_BELOW], [p[1] for p in PAPER_PERIODIC_BELOW],
            color="black", marker="v", markersize=7, linestyle="none", zorder=5)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}%"))
    ax.set_xlabel("cleaning period T (% of LP's run)")
    ax.set_ylabel("LP's extra NVM writes vs base (%)")
    ax.set_title("periodic flush (LP paper §VI-A)", fontsize=10)
    legend_below(ax, [Line2D([], [], color="tab:green", marker="o", label="LP with cleaning"),
                      Line2D([], [], color="tab:green", linestyle="--",
                             label="LP without cleaning"),
                      Line2D([], [], label="LP paper: +32% at T = 0.08%", **PAPER_MARK),
                      Line2D([], [], color="black", marker="v", linestyle="none",
                             label="LP paper: below +2% at T = 33%")], ncol=1)


# ---------------------------------------------------------------------------------------------
# Crash campaigns: small multiples, one panel per kernel.

FLOOR_PCT = 0.01  # recovery work below this share of a fault-free run is drawn at it (log axis)


def crash_recovery(res):
    rows = [c for c in res.get("crash", []) if "recovery_ops" in c]
    if not rows:
        return None
    kernels = list(dict.fromkeys(c["kernel"] for c in rows))
    by_kernel = {k: [c for c in rows if c["kernel"] == k] for k in kernels}
    # Longest scheme lists first (catalog order among equals): panels sharing a row have
    # similar heights, so little of the figure is blank.
    kernels.sort(key=lambda k: -len(by_kernel[k]))
    nr, nc = grid_shape(len(kernels), 4)
    heights = [max(len(by_kernel[k]) for k in kernels[r * nc:(r + 1) * nc]) for r in range(nr)]
    trials = sorted({c["trials"] for c in rows})
    skipped = sorted({f"{c['kernel']} {c['scheme']}" for c in res.get("crash", [])
                      if "skipped" in c})
    fig, axes = new_figure(
        res, (16, sum(0.17 * h + 1.0 for h in heights) + 1.6),
        f"Crash campaigns: recovery work per trial, every kernel × crash-safe scheme "
        f"(simulated power failures, {'/'.join(map(str, trials))} trials each)",
        "Recovery work = simulated operations of recovery, as a share of a fault-free run "
        f"(log scale; at most {FLOOR_PCT}% drawn at the left edge). Panel titles: trials passed "
        "(output bit-identical to a fault-free run) and mutants caught (negative controls)"
        + (f"; not simulable: {', '.join(skipped)}." if skipped else "."),
        nr, nc, gridspec_kw={"height_ratios": heights})
    all_vals = []
    for i, (ax, k) in enumerate(zip(axes.flat, kernels)):
        cs = by_kernel[k]
        ff = [max(c.get("fault_free_ops", 0), 1) for c in cs]
        med = [max(100 * c["recovery_ops"]["median"] / f, FLOOR_PCT) for c, f in zip(cs, ff)]
        p90 = [max(100 * c["recovery_ops"].get("p90", 0) / f, FLOOR_PCT) for c, f in zip(cs, ff)]
        mx = [max(100 * c["recovery_ops"]["max"] / f, FLOOR_PCT) for c, f in zip(cs, ff)]
        ok = [c.get("passed", 0) == c.get("trials", 0) and
              c.get("controls", {}).get("detected", 0) == c.get("controls", {}).get("declared", 0)
              for c in cs]
        ys = list(range(len(cs)))
        ax.barh(ys, med, color=["tab:blue" if o else "tab:red" for o in ok], height=0.7)
        ax.hlines(ys, med, mx, color="black", linewidth=1)
        ax.plot(mx, ys, color="black", marker="|", markersize=6, linestyle="none")
        ax.plot(p90, ys, color="black", marker=".", markersize=4, linestyle="none")
        all_vals += med + mx
        ax.set_yticks(ys)
        ax.set_yticklabels([c["scheme"] for c in cs], fontsize=7)
        # One bar thickness across a row: every panel spans its row's longest list.
        ax.set_ylim(heights[i // nc] - 0.5, -0.5)
        passed = sum(c.get("passed", 0) for c in cs)
        total = sum(c.get("trials", 0) for c in cs)
        det = sum(c.get("controls", {}).get("detected", 0) for c in cs)
        dec = sum(c.get("controls", {}).get("declared", 0) for c in cs)
        ax.set_title(f"{k} (n={cs[0].get('n')}): {passed}/{total} passed, {det}/{dec} caught",
                     fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    lo, hi = FLOOR_PCT / 1.5, max(all_vals) * 1.5
    for ax in list(axes.flat)[:len(kernels)]:
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.xaxis.set_major_locator(FixedLocator([v for v in (0.01, 0.1, 1, 10, 100, 1000)
                                                 if lo <= v <= hi]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}%"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    drop_unused(fig, axes, len(kernels))
    legend_below(list(axes.flat)[len(kernels) - 1],
                 [Patch(color="tab:blue", label="median: every trial passed, every mutant caught"),
                  Patch(color="tab:red", label="median: a trial failed or a mutant was missed"),
                  Line2D([], [], color="black", marker=".", linestyle="none",
                         label="90th percentile"),
                  Line2D([], [], color="black", marker="|", label="maximum")],
                 ncol=1, fontsize=7)
    return fig


# ---------------------------------------------------------------------------------------------
# Persist barriers (seed 004, Figs. 11-14).

def persist_barriers(res):
    benches = [b for b in res.get("barriers", []) if "rows" in b]
    bsp = [b for b in res.get("barriers", []) if "bsp_rows" in b]
    if not benches:
        return None
    configs = list(PAPER_FIG11)
    b0 = benches[0]
    panels = 3 if bsp else 2
    fig, axes = new_figure(
        res, (5.0 * panels + 1.5, 4.6),
        f"Persist barriers on micro15 (seed 004): {len(benches)} micro-benchmarks, "
        f"{b0.get('threads')} cores × {b0.get('ops')} transactions, simulated",
        "Black: the paper's averages over its five micro-benchmarks (the per-benchmark bars "
        "are not in its text).", 1, panels)
    a1, a2 = axes[0][0], axes[0][1]
    width = 0.8 / (len(benches) + 1)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    handles = []
    for i, b in enumerate(benches):
        rows = {r["config"]: r for r in b["rows"]}
        xs = [j + (i - len(benches) / 2) * width for j in range(len(configs))]
        c = colors[i % len(colors)]
        a1.bar(xs, [rows[c_]["vs_lb"] if c_ in rows else 0 for c_ in configs], width, color=c)
        a2.bar(xs, [rows[c_]["epochs"]["conflict_pct"] if c_ in rows and "epochs" in rows[c_]
                    else 0 for c_ in configs], width, color=c)
        handles.append(Patch(color=c, label=b["bench"]))
    xs = [j + (len(benches) / 2) * width for j in range(len(configs))]
    a1.bar(xs, [PAPER_FIG11[c] for c in configs], width, color="black")
    a2.bar(xs, [PAPER_FIG12[c] for c in configs], width, color="black")
    handles.append(Patch(color="black", label="paper (average)"))
    for ax, title, yl in ((a1, "Fig. 11: throughput over LB", "transactions per cycle / LB's"),
                          (a2, "Fig. 12: epochs flushed by a conflict", "% of epochs")):
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels(configs)
        ax.set_xlabel("persist barrier")
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(yl)
        legend_below(ax, handles, ncol=3, fontsize=7)
    if bsp:
        bsp_panel(axes[0][2], bsp)
    return fig


def bsp_panel(ax, benches):
    """Figs. 13-14: buffered strict persistency, geometric mean over the benchmarks of time
    over no persistency, the paper's values beside."""
    configs = [r["config"] for r in benches[0]["bsp_rows"] if r["config"] != "np"]
    gm = [geomean([next((r["vs_np"] for r in b["bsp_rows"] if r["config"] == c), None)
                   for b in benches]) for c in configs]
    ys = list(range(len(configs)))
    ax.barh(ys, gm, color="tab:cyan", height=0.6)
    px = [i for i, c in enumerate(configs) if c in PAPER_BSP]
    ax.plot([PAPER_BSP[configs[i]] for i in px], px, **PAPER_MARK)
    ax.set_yticks(ys)
    ax.set_yticklabels(configs, fontsize=8)
    ax.invert_yaxis()
    ratio_axis(ax, gm + list(PAPER_BSP.values()), axis="x")
    ax.set_xlabel("time over no persistency (log scale)")
    ax.set_title("Figs. 13-14: buffered strict persistency", fontsize=10)
    legend_below(ax, [Patch(color="tab:cyan", label="geometric mean over the benchmarks"),
                      Line2D([], [], label="paper (Figs. 13-14, §7.2)", **PAPER_MARK)], ncol=1,
                 fontsize=7)


# ---------------------------------------------------------------------------------------------
# Seed 002 (Huang, Wu, Li): checkpoint by copy, in-place versioning, the helper thread.

def seed002(res):
    # Per-kernel entries only: the section's tables (Table 1, Table 2, the native figures)
    # carry a "table" key.
    kernels = [k for k in res.get("seed002", []) if "rows" in k and "table" not in k]
    if not kernels:
        return None
    panels = len(kernels) + 1
    nr, nc = grid_shape(panels, 2)
    count = max(len(k["rows"]) for k in kernels)
    k0 = kernels[0]
    fig, axes = new_figure(
        res, (12, nr * (0.27 * count + 1.6) + 1.2),
        "Seed 002: checkpoint by copy vs in-place versioning, simulated on "
        f"{k0.get('machine', '?')}, {k0.get('threads')} threads",
        "Time = simulated cycles over base (log scale); 'copy only' = a checkpoint without its "
        "flushes, 'ipv no flush' = in-place versioning without flushes (both measurements, "
        "not crash-safe).", nr, nc)
    for ax, k in zip(axes.flat, kernels):
        rows = [r for r in k["rows"] if r["config"] != "base"]
        names = [r["config"] for r in rows]
        vals = [1 + r["overhead"] for r in rows]
        ys = list(range(len(rows)))
        colors = ["tab:green" if n.startswith("ipv") else "tab:gray" for n in names]
        ax.barh(ys, vals, color=colors, height=0.7)
        ipv = [i for i, n in enumerate(names) if n == "ipv"]
        for i in ipv:
            ax.hlines(i, 1.0, PAPER_IPV[1], color="black", linewidth=2, zorder=5)
            ax.plot([PAPER_IPV[0]], [i], **PAPER_MARK)
        ax.set_yticks(ys)
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=0.8)
        ratio_axis(ax, vals + [PAPER_IPV[1]], axis="x")
        ax.set_xlabel("time over base (log scale)")
        ax.set_title(f"{k['kernel']} (n={k['n']}, bs={k.get('bs')})", fontsize=10)
    # One legend for the kernels' panels, under the last of them.
    legend_below(list(axes.flat)[len(kernels) - 1],
                 [Patch(color="tab:gray", label="checkpoint by copy"),
                  Patch(color="tab:green", label="in-place versioning (IPV)"),
                  Line2D([], [], color="black", linewidth=2,
                         label="paper Fig. 12: IPV at most +9.5%"),
                  Line2D([], [], label="paper Fig. 12: IPV average +4.4%", **PAPER_MARK)],
                 ncol=2, fontsize=7)
    ax = list(axes.flat)[len(kernels)]
    kinds = [("overlap", "IPV, per-line flushes", "tab:green"),
             ("overlap_copy", "cp-nt-async, the copy", "tab:gray"),
             ("overlap_wbinvd", "IPV, WBINVD", "tab:olive")]
    width = 0.8 / len(kinds)
    for j, (key, label, color) in enumerate(kinds):
        xs, ys = [], []
        for i, k in enumerate(kernels):
            v = k.get("fig13", {}).get(key)
            if finite(v):
                xs.append(i + (j - (len(kinds) - 1) / 2) * width)
                ys.append(100 * v)
        ax.bar(xs, ys, width, color=color)
        for x, y in zip(xs, ys):
            if y < 0.5:  # a bar of height 0 is invisible: say so
                ax.text(x, 1, "0%", ha="center", va="bottom", fontsize=7)
    ax.axhline(PAPER_OVERLAP, color="black", linestyle="--")
    ax.set_xticks(range(len(kernels)))
    ax.set_xticklabels([k["kernel"] for k in kernels])
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of the flush time hidden")
    ax.set_title("Fig. 13: the helper thread's overlap with computation", fontsize=10)
    legend_below(ax, [Patch(color=c, label=lab) for _, lab, c in kinds] +
                 [Line2D([], [], color="black", linestyle="--", label="paper: at least 41%")],
                 ncol=2, fontsize=7)
    drop_unused(fig, axes, panels)
    return fig


# ---------------------------------------------------------------------------------------------
# PreFlush (thesis Ch. 5): small multiples per kernel, speedup and coverage.

PREFLUSH_VARIANTS = {"thesis": ("tab:blue", "thesis design"),
                     "line-change": ("tab:orange", "+ line-change loop (pmlab)"),
                     "l1-marks": ("tab:green", "+ line-change and L1 marks (pmlab)")}


def preflush_kernels(res):
    return [k for k in res.get("preflush", []) if k.get("rows") and "knob" not in k["rows"][0]]


def preflush_grid(res, metric):
    kernels = preflush_kernels(res)
    if not kernels:
        return None
    variants = list(dict.fromkeys(r["variant"] for k in kernels for r in k["rows"]))
    schemes = {k["kernel"]: list(dict.fromkeys(r["scheme"] for r in k["rows"])) for k in kernels}
    nr, nc = grid_shape(len(kernels), 3)
    heights = [max(len(schemes[k["kernel"]]) for k in kernels[r * nc:(r + 1) * nc])
               for r in range(nr)]
    k0 = kernels[0]
    speed = metric == "speedup"
    title = ("PreFlush speedup per flushing scheme" if speed else
             "PreFlush coverage (early ACKs / flushes) per flushing scheme")
    fig, axes = new_figure(
        res, (14, sum(0.3 * h + 1.0 for h in heights) + 1.6),
        f"{title}, simulated on pact17 (--flush-mc-hop {k0.get('mc_hop')}, "
        f"{k0.get('threads')} threads; thesis Ch. 5)",
        ("Speedup = cycles with PreFlush off / on, minus 1." if speed else
         "Coverage = flushes whose line was already PreFlushed (the thesis' early ACKs) / "
         "all flushes."), nr, nc, gridspec_kw={"height_ratios": heights})
    width = 0.8 / len(variants)
    values = [100 * (r["speedup"] - 1) if speed else 100 * r.get("coverage", 0)
              for k in kernels for r in k["rows"]]
    for i, (ax, k) in enumerate(zip(axes.flat, kernels)):
        names = schemes[k["kernel"]]
        for j, v in enumerate(variants):
            ys, xs = [], []
            for r in k["rows"]:
                if r["variant"] != v:
                    continue
                ys.append(names.index(r["scheme"]) + (j - (len(variants) - 1) / 2) * width)
                xs.append(100 * (r["speedup"] - 1) if speed else 100 * r.get("coverage", 0))
            ax.barh(ys, xs, width, color=PREFLUSH_VARIANTS.get(v, ("tab:purple", v))[0])
        # A scheme whose every bar is 0 would look like a missing row: say 0.
        for i_s, s in enumerate(names):
            vals = [100 * (r["speedup"] - 1) if speed else 100 * r.get("coverage", 0)
                    for r in k["rows"] if r["scheme"] == s]
            if all(abs(v) < 0.05 for v in vals):
                ax.text(0.5, i_s, "0% (every variant)", va="center", fontsize=6)
        # One scale for every panel, so that kernels compare at a glance.
        if speed:
            ax.axvline(PAPER_PREFLUSH[0], color="black", linestyle="--", linewidth=1)
            ax.axvline(PAPER_PREFLUSH[1], color="black", linestyle=":", linewidth=1.2)
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set_xlim(min(values + [0]) - 3, max(values + [PAPER_PREFLUSH[1]]) + 3)
        else:
            ax.set_xlim(0, 100)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=7)
        ax.set_ylim(heights[i // nc] - 0.5, -0.5)  # one bar thickness across a row
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("speedup − 1 (%)" if speed else "coverage (%)", fontsize=8)
        ax.set_title(f"{k['kernel']} (n={k['n']}, bs={k.get('bs')})", fontsize=9)
    drop_unused(fig, axes, len(kernels))
    handles = [Patch(color=PREFLUSH_VARIANTS.get(v, ("tab:purple", v))[0],
                     label=PREFLUSH_VARIANTS.get(v, (None, v))[1]) for v in variants]
    if speed:
        handles += [Line2D([], [], color="black", linestyle="--",
                           label=f"thesis §5.1: average +{PAPER_PREFLUSH[0]}%"),
                    Line2D([], [], color="black", linestyle=":",
                           label=f"thesis §5.1: up to +{PAPER_PREFLUSH[1]}%")]
    legend_below(list(axes.flat)[len(kernels) - 1], handles, ncol=2, fontsize=7)
    return fig


def preflush(res):
    return preflush_grid(res, "speedup")


def preflush_coverage(res):
    return preflush_grid(res, "coverage")


# ---------------------------------------------------------------------------------------------
# GEMM variants (thesis Ch. 4, Fig. 4.3).

GEMM_CONFIGS = ["base", "base-packed", "eager", "eager-packed", "lazy", "lazy-packed"]


def gemm_rows(res):
    """Row writes and speedup over naive GEMM's base, per variant and configuration."""
    variants = [v for v in res.get("gemm", []) if "cells" in v]
    naive = next((v for v in variants if v["variant"] == "naive"), None)
    if naive is None:
        return None
    nb = next(c for c in naive["cells"] if c["config"] == "base")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = new_figure(
        res, (12, 7.6),
        f"Thesis Ch. 4 GEMM variants on thesis-ch4: n={naive['n']}, mc = kc = nc = "
        f"{naive.get('bs')}, {naive.get('threads')} threads, simulated (cf. thesis Fig. 4.3)",
        "Row writes = NVM row-buffer writes (row-buffer model on); both panels relative to naive "
        "GEMM's base. A variant without a bar lacks that configuration.", 2, 1)
    a1, a2 = axes[0][0], axes[1][0]
    width = 0.8 / len(GEMM_CONFIGS)
    rw_all, base_x = [], {}
    for j, v in enumerate(variants):
        present = [c for c in GEMM_CONFIGS if any(x["config"] == c for x in v["cells"])]
        for i, cfg in enumerate(present):
            c = next(x for x in v["cells"] if x["config"] == cfg)
            x = j + (i - (len(present) - 1) / 2) * width
            color = colors[GEMM_CONFIGS.index(cfg) % len(colors)]
            if cfg == "base":
                base_x[v["variant"]] = x
            rw = c["row_writes"] / max(nb["row_writes"], 1)
            rw_all.append(rw)
            a1.bar(x, rw, width, color=color)
            a2.bar(x, nb["cycles"] / max(c["cycles"], 1), width, color=color)
    # The thesis' numbers are for the base configuration: drawn on its bar.
    paper = [(base_x[v], PAPER_GEMM_ROWS[v]) for v in PAPER_GEMM_ROWS if v in base_x]
    a1.plot([p[0] for p in paper], [p[1] for p in paper], **PAPER_MARK)
    rw_all += [p[1] for p in paper]
    ratio_axis(a1, rw_all)
    a2.axhline(1.0, color="black", linewidth=0.8)
    for ax, yl, title in ((a1, "row writes / naive base (log)", "NVM row writes"),
                          (a2, "speedup over naive base", "speed (simulated cycles)")):
        ax.set_xticks(range(len(variants)))
        ax.set_xticklabels([v["variant"] for v in variants])
        ax.set_ylabel(yl)
        ax.set_title(title, fontsize=10)
    handles = [Patch(color=colors[i % len(colors)], label=c) for i, c in enumerate(GEMM_CONFIGS)]
    legend_right(a1, handles + [Line2D([], [], label="thesis §4.6.1 (base, row writes)",
                                       **PAPER_MARK)], fontsize=8)
    legend_right(a2, handles, fontsize=8)
    return fig


def blas_gemm(res):
    """GFLOP/s of gemm's micro-kernel (base, LP, ep-lazy) and of OpenBLAS and BLIS per size and
    thread count, with the threads' peak drawn over each group."""
    cells = [c for c in res.get("blas", []) if "schemes" in c]
    if not cells:
        return None
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]

    def label(s, c):
        if "rival_kernel" in s:
            return f"{s['scheme']} ({s['rival_kernel']})"
        return f"pmlab {s['scheme']} ({c.get('isa', '?')})"

    labels = []
    for c in cells:
        for s in c["schemes"]:
            if "gflops" in s and label(s, c) not in labels:
                labels.append(label(s, c))
    peak = cells[0]["peak"]
    fig, axes = new_figure(
        res, (10, 5.6),
        f"DGEMM on {peak.get('model', '?')}: pmlab's 8x24 micro-kernel, its LP and "
        "EagerRecompute-lazy, beside OpenBLAS and BLIS (native)",
        f"GFLOP/s = 2n³ / median repetition time. Dashed: the threads' peak, "
        f"{peak['ghz']:.2f} GHz measured x {peak['doubles_per_pipe']} doubles x 2 x "
        f"{peak['fma_pipes']} FMA pipes = {peak['gflops_per_core']:.1f} GFLOP/s per core "
        f"({peak['source']}).")
    ax = axes[0][0]
    width = 0.8 / max(len(labels), 1)
    top = 0.0
    for j, c in enumerate(cells):
        by_label = {label(s, c): s["gflops"] for s in c["schemes"] if "gflops" in s}
        for i, l in enumerate(labels):
            if l not in by_label:
                continue
            x = j + (i - (len(labels) - 1) / 2) * width
            bar = ax.bar(x, by_label[l], width, color=colors[i % len(colors)])
            ax.bar_label(bar, fmt="%.0f", fontsize=7)
            top = max(top, by_label[l])
        y = peak["gflops_per_core"] * c.get("threads", 1)
        ax.hlines(y, j - 0.45, j + 0.45, colors="black", linestyles="--", linewidth=1)
        top = max(top, y)
    ax.set_ylim(0, top * 1.15)
    ax.set_xticks(range(len(cells)))
    ax.set_xticklabels([f"n = {c['n']}, {c['threads']} thread{'s' if c['threads'] > 1 else ''}"
                        for c in cells])
    ax.set_ylabel("GFLOP/s")
    handles = [Patch(color=colors[i % len(colors)], label=l) for i, l in enumerate(labels)]
    handles.append(Line2D([], [], color="black", linestyle="--", label="peak of the threads"))
    legend_right(ax, handles)
    return fig


# ---------------------------------------------------------------------------------------------

# Every figure: its file name and the function that draws it (None when the results lack it).
FIGURES = [
    ("native_overhead.png", native_overhead),
    ("sim_tmm.png", sim_tmm),
    ("sim_kernels.png", sim_kernels),
    ("checksum_overhead.png", checksum_overhead),
    ("sensitivity.png", sensitivity),
    ("crash_recovery.png", crash_recovery),
    ("persist_barriers.png", persist_barriers),
    ("seed002.png", seed002),
    ("preflush.png", preflush),
    ("preflush_coverage.png", preflush_coverage),
    ("gemm_row_writes.png", gemm_rows),
    ("blas_gemm.png", blas_gemm),
]


def render(res):
    """(file name, figure) for every figure the results hold data for."""
    out = []
    for name, draw in FIGURES:
        fig = draw(res)
        if fig is not None:
            out.append((name, fig))
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    res = json.loads(Path(argv[1]).read_text())
    out = Path(argv[2])
    failed = []
    for name, draw in FIGURES:
        # One figure's failure (results of an unexpected shape) leaves the others drawn; the
        # exit status still tells eval that the plot failed.
        try:
            fig = draw(res)
        except Exception:  # noqa: BLE001 - reported, and the status says so
            traceback.print_exc()
            failed.append(name)
            continue
        if fig is not None:
            fig.savefig(out / name, dpi=DPI)
            plt.close(fig)
    if failed:
        print(f"plot_results: not drawn: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
