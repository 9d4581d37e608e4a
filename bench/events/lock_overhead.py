#!/usr/bin/env python3
"""bench/lock_overhead: what does the lock profile cost a lock-heavy program?

Runs bench/workloads/lockheavy (threads hammering one pthread mutex, many acquisitions contended)
alone and under `spanprof record --profile lock` (whole machine, default --lock-min-wait), in
interleaved rounds whose order alternates, and prints the medians and the slowdown
median(with) / median(alone) - 1 of wall time and of the workload's CPU time, with the
contended acquisitions and futex lock waits seen. Then the cost of one futex call the profile
times as a lock wait (`lockheavy futex`: FUTEX_WAIT with value 2 that returns at once), alone
and under the agent: the price of each contended acquisition. A stand-in until bench/events covers every
profile type. Ratios against a baseline of the same invocation; never fails on the figures.

Usage: python3 bench/events/lock_overhead.py [--build DIR] [--rounds N] [--threads T] [--iters N]
"""
import argparse
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
from benchproc import BenchError, run_main, spawn, stop  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def log(msg):
    print(f"lock_overhead: {msg}", file=sys.stderr, flush=True)


def futex_cost(binary):
    res = subprocess.run([str(binary), "futex", "200000"], capture_output=True, text=True,
                         timeout=600)
    m = re.search(r"futex ([\d.]+) ns/call", res.stdout)
    if res.returncode or not m:
        raise BenchError(f"lockheavy futex failed: {res.stdout}{res.stderr}")
    return float(m.group(1))


def run_workload(binary, args):
    res = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                         timeout=600)
    m = re.search(r"wall ([\d.]+) cpu ([\d.]+) waits (\d+)", res.stdout)
    if res.returncode or not m:
        raise BenchError(f"lockheavy failed: {res.stdout}{res.stderr}")
    return float(m.group(1)), float(m.group(2)), int(m.group(3))


def with_agent(spanprof, outdir, fn):
    """Runs fn() while 'spanprof record --profile lock' samples the machine; returns
    (fn's result, the agent's futex lock waits and samples)."""
    p = spawn([spanprof, "record", "--profile", "lock", "-o", outdir],
              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines, started = [], threading.Event()

    def drain():
        for line in p.stderr:
            lines.append(line)
            if "sampling" in line:
                started.set()
    t = threading.Thread(target=drain, daemon=True)
    t.start()
    if not started.wait(180):
        stop(p)
        raise BenchError("spanprof did not start: " + "".join(lines))
    try:
        result = fn()
    finally:
        stop(p, signal.SIGTERM, timeout=120)
        t.join(timeout=10)
    err = "".join(lines)
    m = re.search(r"lock profile: (\d+) futex lock waits", err)
    s = re.search(r"lock profile: (\d+) samples", err)
    return result, (int(m.group(1)) if m else None, int(s.group(1)) if s else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--iters", type=int, default=200000)
    a = ap.parse_args()
    spanprof = Path(a.build) / "spanprof"
    if not spanprof.exists():
        raise BenchError(f"{spanprof} is missing: run 'make' first")
    tmp = Path(tempfile.mkdtemp(prefix="lockbench-"))
    binary = tmp / "lockheavy"
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(binary),
                    str(ROOT / "bench" / "workloads" / "lockheavy.c")], check=True)
    args = [a.threads, a.iters]
    res = {"alone": [], "lock": []}
    fcost = {"alone": [], "lock": []}
    seen = []
    for r in range(a.rounds):
        for mode in (["alone", "lock"] if r % 2 == 0 else ["lock", "alone"]):
            def both():
                return run_workload(binary, args), futex_cost(binary)
            if mode == "alone":
                out = both()
            else:
                out, counts = with_agent(spanprof, tmp / f"out{r}", both)
                seen.append(counts)
            res[mode].append(out[0])
            fcost[mode].append(out[1])
            w, c, n = res[mode][-1]
            log(f"round {r + 1}/{a.rounds} {mode:5}: wall {w:.3f} s cpu {c:.3f} s, "
                f"{n} contended; futex call {out[1]:.0f} ns")
    med = {m: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
               statistics.median(x[2] for x in v)) for m, v in res.items()}
    print(f"lockheavy {a.threads} threads x {a.iters} acquisitions, {a.rounds} rounds "
          f"(medians)")
    for m, (w, c, n) in med.items():
        print(f"  {m:5}  wall {w:.3f} s  cpu {c:.3f} s  contended {n:.0f}")
    print(f"  slowdown with --profile lock: wall {100 * (med['lock'][0] / med['alone'][0] - 1):+.1f}%"
          f"  cpu {100 * (med['lock'][1] / med['alone'][1] - 1):+.1f}%")
    fa, fl = statistics.median(fcost["alone"]), statistics.median(fcost["lock"])
    print(f"  futex lock-wait call: alone {fa:.0f} ns, with --profile lock {fl:.0f} ns "
          f"({fl - fa:+.0f} ns per contended acquisition)")
    waits = [w for w, _ in seen if w is not None]
    samples = [s for _, s in seen if s is not None]
    if waits:
        print(f"  agent: {statistics.median(waits):.0f} futex lock waits and "
              f"{statistics.median(samples):.0f} samples per run (machine-wide, medians)")
    return 0


if __name__ == "__main__":
    run_main(main, log)
