#!/usr/bin/env python3
# The built pmlab(1) renders with man -l, without groff warnings, and documents every verb.
"""Usage: check_man_page.py BUILD_DIR/man/pmlab.1 [PMLAB]

Renders the page as `man -l` does and checks: no warning from groff (-ww), the standard
sections, a subsection per verb with its options (with PMLAB, the verbs its --help lists), and
the scheme lists. Exit 0 when all hold, 1 with the failures listed otherwise.
"""
import os
import re
import shutil
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    page = sys.argv[1]
    failures = []
    env = dict(os.environ, MANWIDTH="80", MAN_DISABLE_SECCOMP="1", LC_ALL="C.UTF-8")
    # groff's own warnings (an unknown request, a bad escape) on the page as it stands.
    lint = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", page], capture_output=True,
                          text=True, env=env)
    # "cannot adjust line": a tag of choices broken only at its commas cannot be justified;
    # layout, not an error.
    warnings = [w for w in lint.stderr.splitlines() if w.strip() and "cannot adjust line" not in w]
    if lint.returncode != 0 or warnings:
        failures.append("groff -man -ww: " + ("\n".join(warnings) or "exit %d" % lint.returncode))
    if shutil.which("man"):
        shown = subprocess.run(["man", "-l", page], capture_output=True, text=True, env=env)
        if shown.returncode != 0:
            failures.append("man -l exits %d: %s" % (shown.returncode, shown.stderr.strip()))
    else:  # the same renderer, without man's pager plumbing
        shown = subprocess.run(["groff", "-man", "-Tutf8", "-P-c", page], capture_output=True,
                               text=True, env=env)
    text = re.sub(r".\x08", "", shown.stdout)  # overstrike bold, should a pager have left it
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "SEE ALSO"):
        if not re.search(r"^" + section + r"$", text, re.M):
            failures.append("no section " + section)
    verbs = ["run", "sim", "bench", "crash", "eval", "info"]
    if len(sys.argv) > 2:
        helped = subprocess.run([sys.argv[2], "--help"], capture_output=True, text=True).stdout
        listed = helped.split("Subcommands:")[-1]
        verbs = re.findall(r"^  (\w+) ", listed, re.M)
    for verb in verbs:
        if not re.search(r"^   pmlab " + verb + r"\b", text, re.M):
            failures.append("no subsection for pmlab " + verb)
    for needle in ("--scheme", "--threads", "Schemes per kernel", "cp-nt-async", "--llc-size"):
        if needle not in text:
            failures.append("the page never mentions " + needle)
    for f in failures:
        print("check_man_page: " + f, file=sys.stderr)
    if not failures:
        print("check_man_page: %s renders; %d verbs documented" % (page, len(verbs)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
