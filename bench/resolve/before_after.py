#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Resolve time per sample, before and after, in one run (bench/resolve/resolve.mk).

Builds bench/resolve/resolve_time.c of this tree against a base revision: `git archive BASE`
(default: the merge-base of HEAD with main) extracted into BUILD/bench/resolve-base/COMMIT/src,
this tree's bench/resolve/ copied in, built there with its own Makefile (kept between runs, so
only the first run of a base builds it). Then runs the base's program and this tree's (--this)
alternately, --runs times each, the first of each pair switched every run, and prints each run's
figures, the median of each side and the ratio this/base (and the same of each side's fastest
run, less moved by a loaded machine), for the warm and the fresh profile
(resolve_time.c says what each is). Never fails on the figures; fails when a build fails or
the two programs disagree on the locations they gave (not the same work).
"""
import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def base_commit(rev):
    if not rev:
        try:
            rev = git("merge-base", "HEAD", "main")
        except subprocess.CalledProcessError:
            sys.exit("before_after: no merge-base with main: give BASE=rev")
    return git("rev-parse", "--verify", rev + "^{commit}")


def build_base(commit, build, cc):
    """The base revision's resolve_time, built in BUILD/bench/resolve-base/COMMIT."""
    top = pathlib.Path(build).resolve() / "bench" / "resolve-base" / commit
    src = top / "src"
    if not (src / ".extracted").exists():
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", commit],
                                   stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(src)], stdin=archive.stdout, check=True)
        if archive.wait():
            sys.exit(f"before_after: git archive {commit} failed")
        (src / ".extracted").touch()
    # This tree's benchmark, whatever the base had of it.
    shutil.copytree(ROOT / "bench" / "resolve", src / "bench" / "resolve", dirs_exist_ok=True)
    print(f"before_after: building the base ({commit[:12]}) in {src} ...", flush=True)
    res = subprocess.run(["make", "-C", str(src), "-j2", f"CC={cc}", "BUILD=build",
                          "build/bench/resolve_time"], capture_output=True, text=True)
    if res.returncode:
        sys.stderr.write(res.stdout[-4000:] + res.stderr[-4000:])
        sys.exit("before_after: the base's build failed")
    return src / "build" / "bench" / "resolve_time"


def run(exe, args):
    out = subprocess.run([str(exe), *args], check=True, capture_output=True, text=True,
                         cwd=ROOT).stdout
    m = dict(re.findall(r"(\w+)=([\d.]+)", out))
    if "warm_ns" not in m:
        sys.exit(f"before_after: {exe}: no figures in {out!r}")
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--this", required=True, help="this tree's resolve_time")
    ap.add_argument("--build", default="build", help="this tree's build directory")
    ap.add_argument("--base", default="", help="base revision (default: merge-base with main)")
    ap.add_argument("--cc", default=os.environ.get("CC", "gcc"))
    ap.add_argument("--runs", type=int, default=6, help="runs of each program")
    ap.add_argument("args", nargs="*", help="resolve_time's arguments (after --)")
    a = ap.parse_args()

    commit = base_commit(a.base)
    base_exe = build_base(commit, a.build, a.cc)
    this_exe = pathlib.Path(a.this).resolve()
    fig = {"base": [], "this": []}
    for i in range(a.runs):
        order = ["base", "this"] if i % 2 == 0 else ["this", "base"]
        for side in order:
            fig[side].append(run(base_exe if side == "base" else this_exe, a.args))
        b, t = fig["base"][-1], fig["this"][-1]
        print(f"  run {i + 1}: warm base {b['warm_ns']} this {t['warm_ns']} ns/sample; "
              f"fresh base {b['fresh_ns']} this {t['fresh_ns']} ns/sample", flush=True)
    locs = {side: {f["locations"] for f in fig[side]} for side in fig}
    if locs["base"] != locs["this"]:
        sys.exit(f"before_after: the two gave different locations per round: {locs}")
    first = fig["this"][0]
    print(f"  {first['samples']} samples x {first['rounds']} rounds, fastest of "
          f"{first['batches']} batches per run, thread CPU time; median of {a.runs} runs each; "
          f"base {commit[:12]}")
    for mode, label in (("warm", "resolve"), ("fresh", "resolve (fresh profile each round)")):
        x = statistics.median(float(f[mode + "_ns"]) for f in fig["base"])
        y = statistics.median(float(f[mode + "_ns"]) for f in fig["this"])
        bx = min(float(f[mode + "_ns"]) for f in fig["base"])
        by = min(float(f[mode + "_ns"]) for f in fig["this"])
        print(f"{label}: base {x:.1f} ns/sample, this {y:.1f} ns/sample, ratio Y/X {y / x:.3f} "
              f"(fastest runs: {bx:.1f}, {by:.1f}, ratio {by / bx:.3f})")


if __name__ == "__main__":
    main()
