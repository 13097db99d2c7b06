#!/usr/bin/env python3
"""Writes the results pages' tables from a results.json, between marker comments in docs/*.md.

Usage:
  results_tables.py --results FILE.json --docs DIR [--store PATH] [--check]

Every markdown file under DIR may hold blocks

  <!-- BEGIN generated: NAME -->
  ...
  <!-- END generated: NAME -->

whose content this script owns: it rewrites each from the results, by the generator NAME names
(GENERATORS below), and leaves the rest of the page alone. --store PATH first copies the results
file to PATH (the copy the pages cite and the check reads; `make run` stores its fresh run
there). --check writes nothing: it exits 1, showing the differences, when a block differs from
what the results give (ctest ResultsTables runs it on docs/results/results.json).
"""
import argparse
import difflib
import json
import math
import os
import re
import shutil
import sys
from pathlib import Path

BLOCK_RE = re.compile(r"(<!-- BEGIN generated: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)"
                      r"(<!-- END generated: (?P=name) -->)", re.DOTALL)

# LP paper Table VII: LP's native time overhead per kernel (src/experiments/paper_numbers.hpp).
PAPER_TABLE7 = {"tmm": "+0.8%", "cholesky": "+1.1%", "conv2d": "+0.9%", "gauss": "+2.1%",
                "fft": "+1.1%"}
# Columns of the simulated tables: the scheme that stands for each family, per kernel (tmm's ii
# variants and x64 HR, the in-place kernels' hr-x8, GEMM's eager recompute).
FAMILIES = [("LP", ("lp",)), ("EP", ("ep-ii", "ep", "ep-eager")), ("WAL", ("wal-ii", "wal")),
            ("CP", ("cp",)), ("HR", ("hr-ii-x64", "hr-x8", "hr"))]
# The kernels both papers' averages are over (LP paper Figs. 12-13, thesis Fig. 3.6): the
# table's geometric mean is over these, to compare with the papers' averages.
PAPER_KERNELS = ("tmm", "cholesky", "lu", "gauss", "conv2d", "fft")


def percent(fraction, decimals):
    """As the report writes a percentage (experiments::detail::percent): signed, no -0."""
    rounded = round(100 * fraction, decimals)
    if rounded == 0:
        rounded = 0.0
    return f"{rounded:+.{decimals}f}%"


def pct(ratio):
    return "n/a" if ratio is None else percent(ratio - 1, 1)


def native_cell(s):
    """"+0.4% [-0.3%, +1.1%]" when resolved, "unresolved: ..." when not (as report.cpp)."""
    if "ratio" not in s or not s.get("ci95"):
        return "unresolved: no interval" if "ratio" in s else "–"
    r, (lo, hi) = s["ratio"], s["ci95"]
    half_width = 100 * (hi - lo) / 2 / r
    d = 0 if half_width >= 10 else 1 if half_width >= 0.1 else 2
    text = f"{percent(r - 1, d)} [{percent(lo - 1, d)}, {percent(hi - 1, d)}]"
    return text if s.get("resolved") else "unresolved: " + text


def kib(n):
    return f"{n >> 10} KiB" if n < (1 << 20) else f"{n >> 20} MiB"


# ---------------------------------------------------------------------------------------------
# Generators: each returns a block's markdown (ending in a newline) from the results.

def gen_run(res, ctx):
    """Which run the page's generated tables come from."""
    meta = res.get("meta", {})
    mode = res.get("mode", "?")
    link = os.path.relpath(ctx["results"], ctx["page"].parent)
    return (f"The tables between `generated` markers below are written by "
            f"`tools/results_tables.py` from [{Path(link).name}]({link}), the results of "
            f"`pmlab eval --{mode}` run on {meta.get('date', '?')[:10]} at commit "
            f"`{meta.get('git_revision', '?')}` (pmlab {meta.get('pmlab_version', '?')}, "
            f"{meta.get('compiler', '?')}, host CPU {meta.get('cpu', '?')}); `make run` reruns "
            f"the evaluation and rewrites them, and ctest's `ResultsTables` checks that they "
            f"match the stored results.{carried_text(res)}\n")


def carried_text(res):
    """The sections a partial run carried over from an earlier one, each with its origin."""
    carried = res.get("carried_over") or {}
    if not carried:
        return ""
    by_origin = {}
    for section, origin in sorted(carried.items()):
        origin = origin or {}
        key = (origin.get("date", "?")[:10], origin.get("git_revision", "?"))
        by_origin.setdefault(key, []).append(section)
    parts = [f"{', '.join(sections)} from the run of {date} at commit `{rev}`"
             for (date, rev), sections in sorted(by_origin.items())]
    return (f" That run measured only {', '.join(res.get('sections_run', []))}; it carried the "
            f"other sections over: {'; '.join(parts)}.")


def gen_native_lp(res, ctx):
    """LP's native time overhead per kernel beside the LP paper's Table VII."""
    kernels = [k for k in res.get("native", []) if "schemes" in k]
    rows, aa_rows, logs, resolved = [], [], [], 0
    loads = []
    for k in kernels:
        for s in k["schemes"]:
            if s["scheme"] == "base-aa":
                # Base against itself, last: the method's own error, whose true value is 0.
                aa_rows.append(f"| {k['kernel']} A/A (base vs base) | {k['n']} | "
                               f"{native_cell(s)} | – (true value 0%) |")
            if s["scheme"] != "lp":
                continue
            rows.append(f"| {k['kernel']} | {k['n']} | {native_cell(s)} | "
                        f"{PAPER_TABLE7.get(k['kernel'], '–')} |")
            if s["scheme"] == "lp" and s.get("ci95"):
                logs.append((math.log(s["ratio"]), math.log(s["ci95"][0]),
                             math.log(s["ci95"][1])))
                resolved += bool(s.get("resolved"))
        m = k.get("machine", {})
        loads += [v for v in (m.get("load_before"), m.get("load_after")) if v is not None]
    if not rows:
        return "No native measurement in these results.\n"
    k0 = kernels[0]
    cores = k0.get("machine", {}).get("cores", "?")
    out = ["| kernel | n | LP time vs base [95% CI] | paper (Table VII) |",
           "|---|---|---|---|", *rows, *aa_rows, ""]
    if logs:
        n = len(logs)
        g = [math.exp(sum(x[i] for x in logs) / n) - 1 for i in range(3)]
        out.append(f"Geometric mean over the {n} kernels: {percent(g[0], 1)} "
                   f"[{percent(g[1], 1)}, {percent(g[2], 1)}]; {resolved} of {n} resolved "
                   f"(paper: gmean +1.1%, worst +2.1%).")
    load = f", load average {min(loads):.2f}–{max(loads):.2f}" if loads else ""
    out.append(f"Measured natively on the run's host ({cores} cores{load}), "
               f"{k0.get('threads', 1)} thread, paired repetitions of at least "
               f"{k0.get('min_rep_seconds', '?')} s, a budget of "
               f"{k0.get('budget_seconds', 0):.0f} s per kernel, `--persist {k0.get('persist')} "
               f"--flush {k0.get('flush')}`. A cell is **unresolved** when its 95% interval is "
               f"wider than ±{100 * k0.get('target', 0.01):.0f}% (docs/measurement.md); the A/A "
               "row times base against itself, the method's own error at that load.")
    return "\n".join(out) + "\n"


def family_ratio(block, schemes, key):
    rows = {r["scheme"]: r for r in block.get("rows", [])}
    for s in schemes:
        if s in rows:
            return True, rows[s].get(key)
    return False, None


def gen_sim(preset):
    def gen(res, ctx):
        blocks = [b for b in res.get("sim", []) if b.get("preset") == preset and "rows" in b]
        blocks = [b for b in blocks if any(family_ratio(b, s, "cycles_vs_base")[0]
                                           for _, s in FAMILIES)]
        if not blocks:
            return f"No simulation on `{preset}` in these results.\n"
        head = ["kernel", "n"] + [f"{f} {m}" for f, _ in FAMILIES for m in ("cycles", "writes")]
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        logs = {(f, m): [] for f, _ in FAMILIES for m in ("cycles", "writes")}
        for b in blocks:
            cells = [b["kernel"], str(b["n"])]
            for f, schemes in FAMILIES:
                for m in ("cycles", "writes"):
                    has, r = family_ratio(b, schemes, f"{m}_vs_base")
                    cells.append(pct(r) if has else "–")
                    if has and r is not None and r > 0 and b["kernel"] in PAPER_KERNELS:
                        logs[(f, m)].append(math.log(r))
            out.append("| " + " | ".join(cells) + " |")
        gm = ["**gmean**", "(papers' kernels)"]
        for f, _ in FAMILIES:
            for m in ("cycles", "writes"):
                v = logs[(f, m)]
                gm.append(pct(math.exp(sum(v) / len(v))) if v else "–")
        out.append("| " + " | ".join(gm) + " |")
        b0 = blocks[0]
        out += ["", f"`{preset}` as `pmlab eval --{res.get('mode', '?')}` simulates it: "
                f"{b0.get('threads')} threads, LLC {kib(b0.get('llc_bytes', 0))}, "
                f"bs = {b0.get('bs')}, the first-order memory model. Overheads = scheme / base − 1, "
                "base simulated with identical parameters; n/a = base wrote nothing to NVM (the "
                "kernel fits in the LLC at this size); – = no such scheme. gmean: geometric mean "
                f"over {', '.join(PAPER_KERNELS)}, the kernels of the papers' averages."]
        return "\n".join(out) + "\n"
    return gen


GENERATORS = {
    "run": gen_run,
    "native-lp": gen_native_lp,
    "sim-lp-isca18": gen_sim("lp-isca18"),
    "sim-pact17": gen_sim("pact17"),
}


# ---------------------------------------------------------------------------------------------

def rewrite(text, res, ctx, problems):
    def sub(m):
        name = m.group("name")
        gen = GENERATORS.get(name)
        if gen is None:
            problems.append(f"{ctx['page']}: unknown generated block '{name}' "
                            f"(known: {', '.join(GENERATORS)})")
            return m.group(0)
        # Blank lines around the content: a table or paragraph never runs into a marker.
        return m.group(1) + "\n" + gen(res, ctx) + "\n" + m.group(4)
    return BLOCK_RE.sub(sub, text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="results.json of a pmlab eval run")
    ap.add_argument("--docs", required=True, help="the documentation directory")
    ap.add_argument("--store", help="copy the results here first; the pages cite the copy")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a block differs from the results")
    args = ap.parse_args()
    results = Path(args.results)
    if args.store and not args.check:
        Path(args.store).parent.mkdir(parents=True, exist_ok=True)
        if results.resolve() != Path(args.store).resolve():
            shutil.copyfile(results, args.store)
        results = Path(args.store)
    res = json.loads(results.read_text())
    problems, changed, blocks = [], [], 0
    for page in sorted(Path(args.docs).rglob("*.md")):
        text = page.read_text()
        found = len(BLOCK_RE.findall(text))
        if not found:
            continue
        blocks += found
        new = rewrite(text, res, {"page": page, "results": results}, problems)
        if new == text:
            continue
        changed.append(page)
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(True), new.splitlines(True), f"{page} (committed)",
                f"{page} (from {results})"))
        else:
            page.write_text(new)
    for p in problems:
        print(p, file=sys.stderr)
    if args.check and changed:
        print(f"\n{len(changed)} page(s) differ from {results}: run tools/results_tables.py "
              f"--results {results} --docs {args.docs}", file=sys.stderr)
        return 1
    if blocks == 0:
        print(f"no generated block under {args.docs}", file=sys.stderr)
        return 1
    verb = "match" if args.check else "written"
    print(f"{blocks} generated block(s) in {args.docs}: {verb}"
          + (f" ({len(changed)} page(s) rewritten)" if changed and not args.check else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
