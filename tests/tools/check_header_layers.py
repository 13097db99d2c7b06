#!/usr/bin/env python3
"""Per-header layering: every public header includes only its own layer and the layers below,
and compiles alone.

Usage: check_header_layers.py REPO_ROOT [--compile-commands BUILD/compile_commands.json] [-j N]

The layers are the rows of the table under "## The layers" in docs/architecture.md, lowest
first. A row's second column names what it holds in backticks: `core/` (a folder of
include/pmlab/), `run/bep_bench_params.hpp` or `kernels/checks.hpp` (one header, which beats its
folder), `pmlab.h`; `src/...` entries are sources and are not read here. Static linking checks the
layers of compiled code only; a header-only include upward (a base header reaching into the run
layer) links fine, so this reads every `#include "pmlab/..."` of every header under
include/pmlab/ and refuses:
  - a header that no row of the table places in a layer;
  - an include of a header of a higher layer.
With --compile-commands, each header is also compiled alone (-fsyntax-only, with the flags the
build gives src/experiments/), so that it includes what it uses.
Before all that, it checks itself on a made-up tree that includes upward (it must refuse it).
Exits 1 listing every problem, 0 when there is none.
"""
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"pmlab/([^"]+)"', re.MULTILINE)
TICK_RE = re.compile(r"`([^`]+)`")
HEADER_EXTS = (".hpp", ".h")


def layer_table(architecture_md):
    """[(layer name, [entries])], lowest layer first, from the table under '## The layers'."""
    text = open(architecture_md, encoding="utf-8").read()
    start = text.index("## The layers")
    end = text.find("\n## ", start + 1)
    layers = []
    for line in text[start:end if end != -1 else None].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        name = TICK_RE.findall(cells[0])[0]
        entries = [e for e in TICK_RE.findall(cells[1]) if not e.startswith("src")]
        layers.append((name, entries))
    return layers


def layer_of(header, layers):
    """Index of the layer that holds `header` (a path relative to include/pmlab/), or None."""
    for i, (_, entries) in enumerate(layers):
        if header in entries:
            return i
    folder = header.split("/")[0] + "/" if "/" in header else None
    for i, (_, entries) in enumerate(layers):
        if folder in entries:
            return i
    return None


def headers_under(include_root):
    """{path relative to include_root: text} of every public header."""
    out = {}
    for root, _, files in os.walk(include_root):
        for f in files:
            if f.endswith(HEADER_EXTS):
                path = os.path.join(root, f)
                out[os.path.relpath(path, include_root)] = open(path, encoding="utf-8").read()
    return out


def layering_problems(headers, layers):
    problems = []
    for header, text in sorted(headers.items()):
        own = layer_of(header, layers)
        if own is None:
            problems.append(f"include/pmlab/{header}: no layer of docs/architecture.md holds it")
            continue
        for included in INCLUDE_RE.findall(text):
            theirs = layer_of(included, layers)
            if theirs is None:
                problems.append(f"include/pmlab/{header}: includes pmlab/{included}, "
                                "which no layer holds")
            elif theirs > own:
                problems.append(f"include/pmlab/{header} ({layers[own][0]}) includes "
                                f"pmlab/{included} of a higher layer ({layers[theirs][0]})")
    return problems


def self_test():
    """The check refuses an upward include and an unplaced header, and passes a clean tree."""
    layers = [("low", ["a/", "b/up.hpp"]), ("high", ["b/"])]
    clean = {"a/x.hpp": '#include "pmlab/a/y.hpp"\n', "a/y.hpp": "",
             "b/z.hpp": '#include "pmlab/a/x.hpp"\n#include "pmlab/b/up.hpp"\n', "b/up.hpp": ""}
    upward = dict(clean, **{"a/y.hpp": '#include "pmlab/b/z.hpp"\n'})
    upward_file = dict(clean, **{"b/up.hpp": '#include "pmlab/b/z.hpp"\n'})
    unplaced = dict(clean, **{"c/w.hpp": ""})
    ok = (not layering_problems(clean, layers)
          and len(layering_problems(upward, layers)) == 1
          and len(layering_problems(upward_file, layers)) == 1
          and len(layering_problems(unplaced, layers)) == 1)
    return [] if ok else ["self-test: the check does not refuse an upward include"]


def compile_command(compile_commands):
    """The compiler and flags the build uses for src/experiments/ (the highest library layer)."""
    entries = json.load(open(compile_commands, encoding="utf-8"))
    for e in entries:
        if "/src/experiments/" in e["file"]:
            args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
            first = next(i for i, a in enumerate(args) if re.search(r"(c|g|clang)\+\+$", a))
            flags, skip = [], False
            for a in args[first + 1:]:
                if skip:
                    skip = False
                elif a in ("-o", "-c", "-MT", "-MF"):
                    skip = True
                elif a != "-MD" and not a.endswith((".cpp", ".cxx")):
                    flags.append(a)
            return [args[first]] + flags, e["directory"]
    raise SystemExit(f"{compile_commands}: no src/experiments/ entry to take flags from")


def compiles_alone(header, command, directory):
    """None when `#include "pmlab/<header>"` alone compiles, else the compiler's first lines."""
    r = subprocess.run(command + ["-fsyntax-only", "-x", "c++", "-"], cwd=directory,
                       input=f'#include "pmlab/{header}"\n', capture_output=True, text=True)
    if r.returncode == 0:
        return None
    return f"include/pmlab/{header} does not compile alone:\n    " + "\n    ".join(
        r.stderr.strip().splitlines()[:6])


def main(argv):
    args = argv[1:]
    root = args[0] if args and not args[0].startswith("-") else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    compile_commands = args[args.index("--compile-commands") + 1] if (
        "--compile-commands" in args) else None
    jobs = int(args[args.index("-j") + 1]) if "-j" in args else 2
    problems = self_test()
    layers = layer_table(os.path.join(root, "docs", "architecture.md"))
    if not layers:
        problems.append("docs/architecture.md: no layer table under '## The layers'")
    headers = headers_under(os.path.join(root, "include", "pmlab"))
    problems += layering_problems(headers, layers)
    if compile_commands:
        command, directory = compile_command(compile_commands)
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            for problem in pool.map(lambda h: compiles_alone(h, command, directory),
                                    sorted(h for h in headers if h.endswith(".hpp"))):
                if problem:
                    problems.append(problem)
    for p in problems:
        print(p)
    print(f"{len(headers)} headers, {len(layers)} layers: "
          f"{'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
