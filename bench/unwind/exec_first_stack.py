#!/usr/bin/env python3
"""bench/exec_first_stack: how long after a new program starts does spanprof give its first
complete stack, on a quiet and on a loaded machine?

The workload (bench/workloads/execclock.c, built without frame pointers, so only its CFI
unwinds it) burns CPU in slot_NNN() during the NNN-th 5 ms slot since it was launched: the first
complete stack of a run (root `_start`, through main and a slot function) in the agent's folded
output tells when, after the launch, the agent first unwound it whole. Each run is a fresh copy
of the binary (a file the agent has never seen: its tables must be built) started after the
agent samples the whole host (`spanprof record --frequency HZ`), or with --targeted only the
copies (`--exe` of each: no other process's tables or names to build, a quicker end on a busy
machine).

Conditions: quiet, and loaded (one compile loop per CPU, `gcc -O2 -c` of a benchmark source in a
loop: both CPUs saturated and a process exec'd every few tens of ms). With --baseline BIN (for
example a build of an earlier commit), the same runs with that agent, for ratios. Prints, per
agent and condition, the median and the range over the runs of the time to the first complete
stack and the share of the run's samples that were not complete; then the ratios loaded/quiet
and agent/baseline. Never fails on the figures; needs root.

Usage: python3 bench/unwind/exec_first_stack.py [--build DIR] [--baseline BIN] [--runs N] [--hz HZ]
                                               [--targeted]
       make bench-exec [BUILD=dir] [BENCH_EXEC_ARGS="--runs 9 --baseline other/spanprof"]
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
from benchproc import (BenchError, run_main, spawn, start_compile_load, stop,  # noqa: E402
                       wait_sampling)

ROOT = Path(__file__).resolve().parents[2]
SLOT_MS = 5
SLOTS = 200  # 1 s per run


def log(msg):
    print(f"exec_first_stack: {msg}", file=sys.stderr, flush=True)


def build(tmp):
    exe = tmp / "execclock"
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-fno-ipa-icf",
                    "-fno-optimize-sibling-calls", "-o", exe,
                    ROOT / "bench/workloads/execclock.c"], check=True)
    return exe


def one_condition(spanprof, exe, tmp, tag, runs, hz, targeted):
    """Runs @runs fresh copies under one agent: [(first complete ms or None, incomplete share)].
    @targeted: the agent samples the copies only (--exe each), not the whole host."""
    out = tmp / f"out-{tag}"
    names = [f"xc{tag[:6]}{i:02d}"[:15] for i in range(runs)]
    for name in names:
        shutil.copy(exe, tmp / name)
    target = [a for name in names for a in ("--exe", tmp / name)] if targeted else []
    agent = spawn([spanprof, "record", "--frequency", hz, "--output-dir", out, *target],
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_sampling(agent)
        time.sleep(1)  # the agent's first pass over the host's processes
        for name in names:
            t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            subprocess.run([tmp / name, str(t0), str(SLOTS)], check=True)
            time.sleep(0.2)
    finally:
        # Whole host on a busy machine: naming every process's frames at the end takes long.
        stop(agent, signal.SIGINT, timeout=120 if targeted else 600)
    res = []
    stacks = {}
    for line in (out / "profile.folded").read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        stacks.setdefault(frames[0], []).append((frames[1:], int(count)))
    for name in names:
        first, total, incomplete = None, 0, 0
        for frames, count in stacks.get(name, []):
            slot = next((int(f[5:]) - 100 for f in frames if re.fullmatch(r"slot_\d{3}", f)),
                        None)
            total += count
            if frames and frames[0] == "_start" and "main" in frames and slot is not None:
                first = slot if first is None else min(first, slot)
            else:
                incomplete += count
        res.append((None if first is None else first * SLOT_MS,
                    incomplete / total if total else None))
    return res


def summary(rows):
    firsts = [r[0] for r in rows if r[0] is not None]
    shares = [r[1] for r in rows if r[1] is not None]
    missing = len(rows) - len(firsts)
    med = statistics.median(firsts) if firsts else None
    return med, firsts, shares, missing


def fmt(med, firsts, shares, missing):
    if med is None:
        return f"no complete stack in {missing} runs"
    return (f"first complete stack {med:6.0f} ms after launch (median; {min(firsts)}..{max(firsts)}"
            f" ms{'; ' + str(missing) + ' runs never complete' if missing else ''}), "
            f"{100 * statistics.median(shares):5.1f}% of the run's samples incomplete (median)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--baseline", help="another spanprof binary, measured the same way")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hz", default="999")
    ap.add_argument("--targeted", action="store_true",
                    help="sample the program's copies only (--exe), not the whole host")
    a = ap.parse_args()
    if os.geteuid():
        raise BenchError("needs root")
    agents = [("agent", Path(a.build) / "spanprof")]
    if a.baseline:
        agents.append(("baseline", Path(a.baseline)))
    results = {}
    with tempfile.TemporaryDirectory(prefix="exec_first_stack-") as d:
        tmp = Path(d)
        exe = build(tmp)
        for cond in ("quiet", "loaded"):
            load = start_compile_load(tmp) if cond == "loaded" else []
            try:
                if load:
                    time.sleep(2)
                for tag, binary in agents:
                    log(f"{tag}, {cond}: {a.runs} runs at {a.hz} Hz")
                    results[tag, cond] = summary(
                        one_condition(binary, exe, tmp, f"{tag[0]}{cond}", a.runs, a.hz,
                                      a.targeted))
            finally:
                for p in load:
                    stop(p, group=True)
    print(f"exec_first_stack: time from launch to the first complete stack of a new FP-less "
          f"program ({a.runs} runs of {SLOTS * SLOT_MS} ms each, "
          f"{'the copies only (--exe)' if a.targeted else 'whole host'} at {a.hz} Hz, "
          f"{os.cpu_count()} CPUs)")
    for (tag, cond), r in results.items():
        print(f"  {tag:8s} {cond:6s}  {fmt(*r)}")
    for tag, _ in agents:
        q, l = results[tag, "quiet"][0], results[tag, "loaded"][0]
        if q is not None and l is not None:
            print(f"  ratio {tag} loaded/quiet: {l / max(q, SLOT_MS):.2f}")
    if a.baseline:
        for cond in ("quiet", "loaded"):
            m, b = results["agent", cond][0], results["baseline", cond][0]
            if m is not None and b is not None:
                print(f"  ratio agent/baseline {cond}: {max(m, SLOT_MS) / max(b, SLOT_MS):.2f}")
    return 0


if __name__ == "__main__":
    run_main(main, log)
