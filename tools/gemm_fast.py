#!/usr/bin/env python3
"""gemm's micro-kernel beside OpenBLAS and BLIS: figure and table from scripts/gemm-fast-bench.

Usage: gemm_fast.py DIR   (reads DIR/bench-n*-t*.json and DIR/clock_ghz.txt; writes
DIR/gemm-fast.png and DIR/gemm-fast.md)

The CPU's peak is clock x doubles per FMA pipe x 2 (an FMA is two operations) x FMA pipes: the
clock measured by tools/clock_probe.c (a chain of dependent adds, one per cycle), the pipes'
width and count from the CPU's family (AMD's and Intel's optimization guides), printed with it.
"""
import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def cpu_description():
    """Model name, family and flags from /proc/cpuinfo (never assumed)."""
    text = Path("/proc/cpuinfo").read_text()
    field = lambda k: re.search(rf"^{k}\s*:\s*(.*)$", text, re.M).group(1).strip()  # noqa: E731
    return field("model name"), field("vendor_id"), int(field("cpu family")), int(
        field("model")), field("flags").split()


def fma_pipes(vendor, family, flags):
    """(pipes, doubles per pipe, source) of the core's FMA units."""
    if vendor == "AuthenticAMD" and family == 0x19:  # Zen 3 / Zen 4: two 256-bit FMA pipes
        return 2, 4, "AMD family 19h (Zen 3/4): 2 FMA pipes of 256 bits; a 512-bit FMA takes both"
    if vendor == "AuthenticAMD" and family == 0x1A:  # Zen 5: two 512-bit FMA pipes
        return 2, 8, "AMD family 1Ah (Zen 5): 2 FMA pipes of 512 bits"
    if "avx512f" in flags:
        return 2, 8, "Intel with AVX-512: 2 FMA units of 512 bits (server parts)"
    return 2, 4, "2 FMA units of 256 bits (AVX2)"


def main():
    d = Path(sys.argv[1])
    model, vendor, family, cpu_model, flags = cpu_description()
    ghz = float((d / "clock_ghz.txt").read_text())
    pipes, lanes, source = fma_pipes(vendor, family, flags)
    peak = ghz * lanes * 2 * pipes
    rows = {}  # (n, threads) -> {label: gflops}
    diffs = {}
    kernels = {}
    for f in sorted(d.glob("bench-n*-t*.json")):
        m = re.match(r"bench-n(\d+)-t(\d+)(-skx)?\.json", f.name)
        n, t, skx = int(m.group(1)), int(m.group(2)), bool(m.group(3))
        r = json.loads(f.read_text())
        for s in r["schemes"]:
            if "gflops" not in s:
                continue
            name = s["scheme"]
            if name == "openblas":
                name = "openblas (SkylakeX forced)" if skx else "openblas (as installed)"
                kernels[name] = s["rival_kernel"]
                diffs[(name, n, t)] = s["rival_relative_difference"]
            elif name == "blis":
                kernels[name] = s["rival_kernel"]
                diffs[(name, n, t)] = s["rival_relative_difference"]
            elif skx:
                continue  # the SkylakeX run's own pmlab rows repeat the first run's
            else:
                name = "pmlab " + name
            rows.setdefault((n, t), {})[name] = s["gflops"]
    labels = ["pmlab base", "pmlab lp", "pmlab ep-lazy", "openblas (as installed)",
              "openblas (SkylakeX forced)", "blis"]
    labels = [l for l in labels if any(l in v for v in rows.values())]
    groups = sorted(rows)
    fig, ax = plt.subplots(figsize=(10, 5.2))
    width = 0.8 / max(len(labels), 1)
    for i, l in enumerate(labels):
        xs = [g + i * width for g in range(len(groups))]
        ys = [rows[k].get(l, 0) for k in groups]
        text = l + (f" [{kernels[l]}]" if l in kernels else "")
        bars = ax.bar(xs, ys, width, label=text)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    for j, (n, t) in enumerate(groups):
        y = peak * t
        ax.hlines(y, j - 0.1, j + 0.9 - width, colors="k", linestyles="--")
    ax.plot([], [], "k--", label=f"peak: {ghz:.2f} GHz x {lanes} doubles x 2 x {pipes} pipes "
            f"= {peak:.1f} GFLOP/s per core")
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
    ax.set_xticklabels([f"n={n}, {t} thread{'s' if t > 1 else ''}" for n, t in groups])
    ax.set_ylabel("GFLOP/s (2n³ / median repetition time)")
    ax.set_title(f"DGEMM on {model} (family {family:#x} model {cpu_model:#x}): pmlab's 8x24 "
                 "micro-kernel, its LP and EagerRecompute-lazy, OpenBLAS 0.3.21, BLIS 0.9.0",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    ax.set_ylim(0, peak * max(t for _, t in groups) * 1.35)
    fig.text(0.01, 0.01, f"scripts/gemm-fast-bench; peak: {source}", fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(d / "gemm-fast.png", dpi=100)
    with open(d / "gemm-fast.md", "w") as out:
        out.write(f"CPU: {model} (family {family:#x}, model {cpu_model:#x}); clock {ghz:.2f} GHz "
                  f"measured; peak {peak:.1f} GFLOP/s per core ({source})\n\n")
        out.write("| n | threads | " + " | ".join(labels) + " | peak |\n")
        out.write("|---:|---:|" + "---:|" * (len(labels) + 1) + "\n")
        for (n, t) in groups:
            vals = [f"{rows[(n, t)][l]:.1f}" if l in rows[(n, t)] else "" for l in labels]
            out.write(f"| {n} | {t} | " + " | ".join(vals) + f" | {peak * t:.1f} |\n")
        out.write("\nKernels: " + ", ".join(f"{k}: {v}" for k, v in kernels.items()) + "\n")
        out.write("Relative difference from pmlab base (max |C_lib - C| / max |C|): " +
                  ", ".join(f"{k} n={n} t={t}: {v:.1e}" for (k, n, t), v in sorted(diffs.items()))
                  + "\n")


if __name__ == "__main__":
    main()
