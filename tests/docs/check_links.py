#!/usr/bin/env python3
"""Documentation checks: relative links resolve, README.md stays short, no "session N" dating.

Usage: check_links.py [REPO_ROOT]   (default: two directories above this file)

1. Every relative link and image in README.md, CHANGELOG.md and docs/**/*.md points to a file or
   directory inside the repository; a link's #anchor, when it names a markdown file's heading,
   must match one (GitHub's heading slugs). Links inside code spans and fenced blocks are text.
2. README.md has at most 150 lines.
3. No tracked text file matches `session[s]? <digit>` (case-insensitive): facts are dated by
   date or commit, never by a work session's number.
Exits 1 listing every problem, 0 when there is none.
"""
import os
import re
import subprocess
import sys

README_MAX_LINES = 150
SESSION_RE = re.compile(r"session[s]? [0-9]", re.IGNORECASE)
LINK_RE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^()\s>]+(?:\([^()\s]*\))?[^()\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def strip_code(text):
    """The text with fenced blocks and inline code spans blanked (line numbers kept)."""
    out, in_fence, fence = [], False, ""
    for line in text.split("\n"):
        m = FENCE_RE.match(line)
        if m and (not in_fence or m.group(1) == fence):
            in_fence, fence = (not in_fence), m.group(1)
            out.append("")
            continue
        if in_fence:
            out.append("")
            continue
        out.append(re.sub(r"(`+)(.+?)\1", lambda s: " " * len(s.group(0)), line))
    return out


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            text = f.read()
        in_fence, fence = False, ""
        for line in text.split("\n"):
            m = FENCE_RE.match(line)
            if m and (not in_fence or m.group(1) == fence):
                in_fence, fence = (not in_fence), m.group(1)
                continue
            h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if in_fence or not h:
                continue
            base = slug(h.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for a in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text):
            found.add(a)
        cache[path] = found
    return cache[path]


def markdown_files(root):
    files = [os.path.join(root, "README.md"), os.path.join(root, "CHANGELOG.md")]
    for d, _, names in os.walk(os.path.join(root, "docs")):
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
    return [f for f in files if os.path.isfile(f)]


def check_links(root):
    problems = []
    real_root = os.path.realpath(root)
    for path in markdown_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            lines = strip_code(f.read())
        for lineno, line in enumerate(lines, 1):
            for m in LINK_RE.finditer(line):
                target = m.group(1)
                if SCHEME_RE.match(target) or target.startswith("//"):
                    continue  # a URL: not checked here
                file_part, _, anchor = target.partition("#")
                where = f"{rel}:{lineno}: link '{target}'"
                if file_part:
                    dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part))
                    if not (dest == real_root or dest.startswith(real_root + os.sep)):
                        problems.append(f"{where} leaves the repository")
                        continue
                    if not os.path.exists(dest):
                        problems.append(f"{where}: no such file")
                        continue
                else:
                    dest = path
                if anchor and dest.endswith(".md") and os.path.isfile(dest):
                    if anchor not in anchors(dest):
                        problems.append(f"{where}: no heading with anchor '#{anchor}' in "
                                        f"{os.path.relpath(dest, root)}")
    return problems


def check_readme_length(root):
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        n = len(f.read().splitlines())
    return [] if n <= README_MAX_LINES else [f"README.md: {n} lines, more than {README_MAX_LINES}"]


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout
        return [p for p in out.decode("utf-8", "replace").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []  # not a git checkout: every file outside build/ and .git/
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def check_sessions(root):
    problems = []
    for rel in tracked_files(root):
        path = os.path.join(root, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue  # tracked but deleted in the work tree
        if b"\0" in data:
            continue  # binary
        for lineno, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if SESSION_RE.search(line):
                problems.append(f"{rel}:{lineno}: dated by a session number: {line.strip()[:100]}")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    root = os.path.abspath(root)
    problems = check_links(root) + check_readme_length(root) + check_sessions(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} documentation problem(s)")
        return 1
    print("documentation: links resolve, README.md is short, no session numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
