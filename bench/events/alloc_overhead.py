#!/usr/bin/env python3
"""bench/alloc_overhead: what does the alloc profile cost an allocation-heavy program?

Runs bench/workloads/allocbench (malloc of 16..512 bytes, a few bytes written, WORK steps of
arithmetic, free; fixed work) in interleaved rounds whose order rotates every round:

  * alone;
  * under `spanprof record --profile alloc -p PID` at the default rate (one sample per 512 KiB);
  * under the same with --alloc-min-bytes above every size: every call traps into the uprobe and
    returns at once, which isolates the cost of the trap itself.

Each run times its own loop (CLOCK_MONOTONIC, start-up excluded: the workload starts once the
agent samples). Prints per mode the slowdown against the median of the "alone" runs of this
invocation (median, min/max of the rounds) and the added time per allocator call in ns, for each
WORK setting (how much a program does between two allocations). The target (under 5 % at the
default rate, the issue) is reported as PASS/MISS, never enforced. Needs root.

Usage: python3 bench/events/alloc_overhead.py [--build DIR] [--rounds N] [--iterations N]
       make bench-alloc [BUILD=dir] [BENCH_ALLOC_ARGS="--rounds 5"]
"""
import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = 5.0  # % slowdown at the default rate


def run_once(bench, iters, work, agent_args, spanprof, outdir):
    wl = subprocess.Popen([str(bench), str(iters), str(work)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    agent = None
    try:
        line = wl.stdout.readline()
        assert line.startswith("ready"), line
        if agent_args is not None:
            agent = subprocess.Popen([str(spanprof), "record", "--profile", "alloc", "-p",
                                      str(wl.pid), "--output-dir", str(outdir), *agent_args],
                                     stderr=subprocess.PIPE, text=True)
            while True:
                err = agent.stderr.readline()
                if not err:
                    raise RuntimeError("spanprof exited before sampling")
                if "spanprof: sampling" in err:
                    break
        wl.stdin.write("go\n")
        wl.stdin.close()
        out = dict(l.split() for l in wl.stdout.read().splitlines() if len(l.split()) == 2)
        wl.wait()
        return int(out["elapsed_ns"]), int(out["calls"])
    finally:
        if wl.poll() is None:
            wl.kill()
            wl.wait()
        if agent:
            agent.send_signal(signal.SIGINT)
            agent.communicate(timeout=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=2000000)
    ap.add_argument("--work", default="20,200,2000",
                    help="arithmetic steps per allocation, comma list (default 20,200,2000)")
    a = ap.parse_args()
    spanprof = (ROOT / a.build / "spanprof").resolve()
    tmp = Path(tempfile.mkdtemp(prefix="alloc-bench-"))
    bench = tmp / "allocbench"
    subprocess.run(["gcc", "-O2", "-o", str(bench), str(ROOT / "bench/workloads/allocbench.c")],
                   check=True)
    modes = {"alone": None, "alloc default": [],
             "trap only": ["--alloc-min-bytes", str(1 << 30)]}
    for work in (int(w) for w in a.work.split(",")):
        times = {m: [] for m in modes}
        calls = 0
        names = list(modes)
        for r in range(a.rounds):
            for m in names[r % len(names):] + names[:r % len(names)]:
                t, calls = run_once(bench, a.iterations, work, modes[m], spanprof, tmp / "out")
                times[m].append(t)
        base = statistics.median(times["alone"])
        print(f"work {work} steps per allocation: alone {base / calls:.0f} ns per iteration "
              f"({a.rounds} rounds, {calls} allocations each)")
        for m in names[1:]:
            med = statistics.median(times[m])
            ratios = [100 * (t / base - 1) for t in times[m]]
            verdict = ""
            if m == "alloc default":
                verdict = "  PASS" if 100 * (med / base - 1) < TARGET else "  MISS"
            print(f"  {m:14s} slowdown {100 * (med / base - 1):7.1f} % "
                  f"(rounds {min(ratios):.1f} .. {max(ratios):.1f}), "
                  f"+{(med - base) / calls:.0f} ns per call{verdict}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
