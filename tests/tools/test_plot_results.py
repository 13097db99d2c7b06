#!/usr/bin/env python3
"""Render test of tools/plot_results.py: every figure drawn from a results.json reads cleanly.

Usage: test_plot_results.py [--results FILE.json ...] [--plot-script PATH] [--out DIR]

Renders every figure the plot script draws from each results file (default: results-small.json
beside this script, a quick run's results.json trimmed to four kernels per section) and, for the
first file, also from a variant whose native section times every scheme (the full mode's grid).
For each figure it checks:

1. its size in pixels is within bounds, and it is not a strip (aspect ratio at most 4);
2. no two tick labels of an axis overlap, and no two texts of the figure overlap (tick labels,
   axis labels, titles, the caption, legends, annotations);
3. every text lies inside the canvas (nothing clipped);
4. no legend covers a bar, a marker or a line vertex of any axes;
5. every labelled category slot of a bar chart has something drawn in it (no empty slots);
6. no log-axis tick reads like "4×10⁰", and the figure has at least one legend.

Exits 1 listing every problem, 0 when there is none. matplotlib is a declared dependency
(scripts/setup-deps): without it the test fails.
"""
import argparse
import copy
import importlib.util
import json
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

MIN_PX, MAX_PX = 300, 2400  # a figure a page can show without scaling it to illegibility
MAX_ASPECT = 4.0  # crash_recovery.png was 5,247 x 374 px: a strip no one can read
TOLERANCE_PX = 1.0  # texts touching by less than this do not count as overlapping


def load_plot_module(path):
    spec = importlib.util.spec_from_file_location("plot_results", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def png_size(data):
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def overlap(a, b):
    """The overlap of two display-space boxes in pixels along x and y (both > 0: they overlap)."""
    return min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0)


def overlaps(a, b, tol=TOLERANCE_PX):
    w, h = overlap(a, b)
    return w > tol and h > tol


def shown(text):
    return text.get_visible() and text.get_text().strip() != ""


def drawn_ticks(ax, which):
    """(location, label) of the ticks an axis draws: those inside its view interval (matplotlib
    keeps labels for ticks outside it, which it does not draw)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    lo, hi = sorted(axis.get_view_interval())
    span = (hi - lo) * 1e-9
    pairs = list(zip(axis.get_majorticklocs(), axis.get_majorticklabels()))
    pairs += list(zip(axis.get_minorticklocs(), axis.get_minorticklabels()))
    return [(loc, t) for loc, t in pairs if lo - span <= loc <= hi + span and shown(t)]


def tick_labels(ax, which):
    return [t for _, t in drawn_ticks(ax, which)]


def figure_texts(fig, renderer):
    """(description, bbox, group) for every text drawn: texts of one legend share a group."""
    out = []
    for t in (fig._suptitle, fig._supxlabel, fig._supylabel):
        if t is not None and shown(t):
            out.append((f"figure text '{t.get_text()[:40]}'", t.get_window_extent(renderer), None))
    for i, ax in enumerate(fig.axes):
        name = ax.get_title() or f"axes {i}"
        for which in "xy":
            for t in tick_labels(ax, which):
                out.append((f"{name}: {which} tick '{t.get_text()}'",
                            t.get_window_extent(renderer), None))
        for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label):
            if shown(t):
                out.append((f"{name}: '{t.get_text()[:40]}'", t.get_window_extent(renderer),
                            None))
        for t in ax.texts:
            if shown(t):
                out.append((f"{name}: text '{t.get_text()}'", t.get_window_extent(renderer),
                            None))
        leg = ax.get_legend()
        if leg is not None:
            out.append((f"{name}: legend", leg.get_window_extent(renderer), id(leg)))
    for leg in fig.legends:
        out.append(("figure legend", leg.get_window_extent(renderer), id(leg)))
    return out


def data_marks(ax):
    """Display-space boxes of what an axes draws: bars, and points of its lines and markers."""
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle
    boxes, points = [], []
    for p in ax.patches:
        if isinstance(p, Rectangle) and p.get_visible() and p.get_width() and p.get_height():
            boxes.append(p.get_window_extent())
    for line in ax.lines:
        if line.get_visible():
            xy = line.get_xydata()
            if len(xy):
                points.extend(line.get_transform().transform(xy))
    for c in ax.collections:
        if isinstance(c, LineCollection) and c.get_visible():
            for seg in c.get_segments():
                points.extend(c.get_transform().transform(seg))
    return boxes, points


def category_positions(ax, which):
    """Positions along the category axis where something is drawn."""
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle
    k = 0 if which == "x" else 1
    pos = []
    for p in ax.patches:
        if isinstance(p, Rectangle) and p.get_visible() and p.get_width() and p.get_height():
            pos.append(p.get_x() + p.get_width() / 2 if which == "x"
                       else p.get_y() + p.get_height() / 2)
    for line in ax.lines:
        pos.extend(xy[k] for xy in line.get_xydata())
    for c in ax.collections:
        if isinstance(c, LineCollection):
            for seg in c.get_segments():
                pos.extend(xy[k] for xy in seg)
    for t in ax.texts:
        pos.append(t.get_position()[k])
    return pos


def check_figure(name, fig, plot, problems):
    from matplotlib.container import BarContainer
    # One draw at the PNG's resolution serves every check: plot_results saves without a tight
    # bounding box, so the canvas is the PNG, pixel for pixel (a savefig here would draw the
    # figure twice more; drawing is nearly all of this test's time).
    fig.set_dpi(plot.DPI)
    fig.canvas.draw()
    w, h = fig.canvas.get_width_height()
    if not (MIN_PX <= w <= MAX_PX and MIN_PX <= h <= MAX_PX):
        problems.append(f"{name}: {w} x {h} px, outside [{MIN_PX}, {MAX_PX}]")
    if max(w, h) / min(w, h) > MAX_ASPECT:
        problems.append(f"{name}: {w} x {h} px, aspect ratio above {MAX_ASPECT}")
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox

    # 2. Tick labels of one axis, then every pair of texts in the figure.
    for ax in fig.axes:
        for which in "xy":
            labels = tick_labels(ax, which)
            boxes = [t.get_window_extent(renderer) for t in labels]
            for i in range(len(labels)):
                for j in range(i + 1, len(labels)):
                    if overlaps(boxes[i], boxes[j]):
                        problems.append(f"{name}: {which} tick labels '{labels[i].get_text()}' "
                                        f"and '{labels[j].get_text()}' overlap "
                                        f"({ax.get_title() or 'untitled axes'})")
    texts = figure_texts(fig, renderer)
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            (da, ba, ga), (db, bb, gb) = texts[i], texts[j]
            if ga is not None and ga == gb:
                continue
            if (" tick " in da and " tick " in db and da.split(":")[0] == db.split(":")[0]
                    and da.split(":")[1][:3] == db.split(":")[1][:3]):
                continue  # same axis: reported above
            if overlaps(ba, bb):
                problems.append(f"{name}: {da} overlaps {db}")

    # 3. Inside the canvas.
    for desc, box, _ in texts:
        if (box.x0 < canvas.x0 - TOLERANCE_PX or box.y0 < canvas.y0 - TOLERANCE_PX or
                box.x1 > canvas.x1 + TOLERANCE_PX or box.y1 > canvas.y1 + TOLERANCE_PX):
            problems.append(f"{name}: {desc} is cut off at the figure's edge")

    # 4. Legends cover no data.
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + fig.legends
    if not legends:
        problems.append(f"{name}: no legend")
    for leg in legends:
        lb = leg.get_window_extent(renderer)
        for ax in fig.axes:
            boxes, points = data_marks(ax)
            covered = sum(overlaps(lb, b, 0.5) for b in boxes)
            inside = sum(lb.x0 < x < lb.x1 and lb.y0 < y < lb.y1 for x, y in points)
            if covered or inside:
                problems.append(f"{name}: a legend covers {covered} bar(s) and {inside} point(s) "
                                f"of '{ax.get_title() or 'untitled axes'}'")

    # 5. No empty category slot in a bar chart; 6. no "4×10⁰" on a log axis.
    for ax in fig.axes:
        bars = [c for c in ax.containers if isinstance(c, BarContainer)] + \
            [p for p in ax.patches]
        if bars:
            orientations = {getattr(c, "orientation", None) for c in ax.containers
                            if isinstance(c, BarContainer)}
            which = "y" if orientations == {"horizontal"} else "x"
            scale = ax.get_xscale() if which == "x" else ax.get_yscale()
            if scale == "linear":
                pos = category_positions(ax, which)
                for loc, label in drawn_ticks(ax, which):
                    if not any(abs(p - loc) < 0.5 for p in pos):
                        problems.append(f"{name}: slot '{label.get_text()}' of "
                                        f"'{ax.get_title() or 'untitled axes'}' is empty")
        for which in "xy":
            if (ax.get_xscale() if which == "x" else ax.get_yscale()) != "log":
                continue
            for t in tick_labels(ax, which):
                if "times10^{0}" in t.get_text().replace(" ", ""):
                    problems.append(f"{name}: log tick label '{t.get_text()}' "
                                    f"({ax.get_title() or 'untitled axes'})")
    return w, h


def with_every_native_scheme(res):
    """The fixture as if the native section had timed more than LP (eval --full): the grid."""
    res = copy.deepcopy(res)
    for k in res.get("native", []):
        if "schemes" not in k:
            continue
        lp = next((s for s in k["schemes"] if s["scheme"] == "lp"), None)
        if lp is not None:
            ep = dict(lp, scheme="ep-ii" if k["kernel"] == "tmm" else "ep", resolved=True)
            k["schemes"].append(ep)
    return res


def run(results_files, plot_path, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plot = load_plot_module(plot_path)
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    problems, drawn = [], 0
    cases = []
    for i, f in enumerate(results_files):
        res = json.loads(Path(f).read_text())
        cases.append((Path(f).name, res))
        if i == 0:
            cases.append((Path(f).name + " (every native scheme)", with_every_native_scheme(res)))
    for case, res in cases:
        figs = plot.render(res)
        names = [n for n, _ in figs]
        missing = [n for n, _ in plot.FIGURES if n not in names]
        if missing and "every native scheme" not in case:
            problems.append(f"{case}: no figure drawn for {', '.join(missing)}")
        for name, fig in figs:
            w, h = check_figure(f"{case}: {name}", fig, plot, problems)
            if out_dir:
                fig.savefig(Path(out_dir) / name, dpi=plot.DPI)
                if png_size((Path(out_dir) / name).read_bytes()) != (w, h):
                    problems.append(f"{case}: {name}: the PNG's size differs from the canvas'")
            print(f"{case}: {name} {w} x {h} px")
            plt.close(fig)
            drawn += 1
    return problems, drawn


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", action="append",
                    help="a results.json to draw from (repeatable; default: the fixture)")
    ap.add_argument("--plot-script", default=str(ROOT / "tools" / "plot_results.py"))
    ap.add_argument("--out", help="also write the PNGs here, to look at them")
    args = ap.parse_args()
    files = args.results or [str(HERE / "results-small.json")]
    problems, drawn = run(files, args.plot_script, args.out)
    if problems:
        print(f"\n{len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"{drawn} figures: sizes, labels, legends and slots OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
