#!/usr/bin/env python3
"""bench/python_agent_pair: the agent's CPU against a baseline build, side by side, same window.

bench/runtime/python_agent.py runs its modes one after the other: on a shared, loaded machine
the load moves between windows by more than the difference of two builds. Here the two
spanprof binaries run at the same time (whole host, default rate, Python walk on), on the same
--procs CPython processes of bench/workloads/pybusy.py (python_agent.py's workload), so they
sample the same ticks of the same processes: over each window (after --settle seconds) the
script reads each agent's CPU time (/proc/PID/stat), the samples its sampler recorded (its
BPF stats map) and its peak RSS so far (VmHWM in /proc/PID/status), and prints CPU per 1000
samples of each and the ratio, per window and median, and the peak RSS at the last window.
Outputs are not needed (the agents are killed after the last window). --args / --baseline-args
add options to one agent's command line (e.g. the same binary twice, one with
"--symbol-cache-mb 24"). Needs root and bpftool.

Usage: python3 bench/runtime/python_agent_pair.py --baseline BINARY [--build DIR] [--procs 20]
           [--threads 3] [--settle 20] [--seconds 20] [--windows 3] [--nice 10]
           [--args "OPTIONS"] [--baseline-args "OPTIONS"]
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # python_agent
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchproc
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import benchproc  # noqa: E402
import python_agent as pa  # noqa: E402
import unwind_bpf as ub  # noqa: E402
from benchproc import CHILDREN, BenchError, spawn  # noqa: E402


def log(msg):
    print(f"python_agent_pair: {msg}", file=sys.stderr, flush=True)


def peak_rss_mb(pid):
    """VmHWM of @pid in MB (nan when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--build", default="build")
    ap.add_argument("--procs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=3)
    ap.add_argument("--settle", type=float, default=20.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--args", default="", help="more options for spanprof record (this build)")
    ap.add_argument("--baseline-args", default="", help="more options for the baseline's")
    args = ap.parse_args()
    if os.geteuid():
        raise BenchError("needs root")
    bins = {"spanprof": str(Path(args.build).resolve() / "spanprof"), "baseline": args.baseline}
    extra = {"spanprof": shlex.split(args.args), "baseline": shlex.split(args.baseline_args)}
    work, exes = pa.start_workloads(args)
    log(f"{args.procs} workload processes over {len(exes)} interpreters")
    agents, ids, rows = {}, {}, []
    load0 = open("/proc/loadavg").read().split()[:3]
    try:
        for label, exe in bins.items():
            agents[label] = spawn([exe, "record", "--duration", 3600, "--quiet", "--output-dir",
                                   f"/tmp/spanprof-pair-{os.getpid()}-{label}", *extra[label]],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for label, a in agents.items():
            ids[label] = ub.find_sampler(a.pid, timeout=300)
        log(f"both sampling; settling {args.settle:g} s")
        time.sleep(args.settle)
        snap = lambda: {k: (pa.ticks([agents[k].pid]), ub.snapshot(*ids[k]))  # noqa: E731
                        for k in agents}
        prev = snap()
        for w in range(args.windows):
            time.sleep(args.seconds)
            cur = snap()
            row = {}
            for k in agents:
                cpu = cur[k][0] - prev[k][0]
                n = cur[k][1]["stats"].get(ub.ST_SAMPLES, 0) - prev[k][1]["stats"].get(
                    ub.ST_SAMPLES, 0)
                row[k] = (cpu, n, 1e6 * cpu / n if n else float("nan"),
                          peak_rss_mb(agents[k].pid))
            rows.append(row)
            log(f"window {w + 1}: " + ", ".join(
                f"{k} {v[0]:.2f} s CPU, {v[1]} samples, {v[2]:.0f} ms/1000, peak RSS {v[3]:.1f} MB"
                for k, v in row.items()))
            prev = cur
    finally:
        for p in list(CHILDREN):
            benchproc.stop(p)
        subprocess.run(["rm", "-rf"] + [f"/tmp/spanprof-pair-{os.getpid()}-{k}" for k in bins])
    print(f"\ntwo spanprof builds side by side on {args.procs} CPU-busy CPython processes "
          f"({len(exes)} interpreters), {time.strftime('%Y-%m-%d %H:%M %Z')}; options: spanprof "
          f"{args.args or '-'}, baseline {args.baseline_args or '-'}; load average "
          f"{' '.join(load0)} at start, {' '.join(open('/proc/loadavg').read().split()[:3])} at "
          f"end; {args.windows} windows of {args.seconds:g} s after {args.settle:g} s\n")
    print("| window | spanprof CPU s | samples | ms / 1000 samples | baseline CPU s | samples "
          "| ms / 1000 samples | spanprof / baseline |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    ratios = []
    for i, r in enumerate(rows):
        s, b = r["spanprof"], r["baseline"]
        ratios.append(s[2] / b[2] if b[2] else float("nan"))
        print(f"| {i + 1} | {s[0]:.2f} | {s[1]} | {s[2]:.0f} | {b[0]:.2f} | {b[1]} | {b[2]:.0f} | "
              f"x{ratios[-1]:.2f} |")
    tot = {k: (sum(r[k][0] for r in rows), sum(r[k][1] for r in rows)) for k in bins}
    print(f"\nall windows: spanprof {1e6 * tot['spanprof'][0] / max(tot['spanprof'][1], 1):.0f} "
          f"ms / 1000 samples, baseline {1e6 * tot['baseline'][0] / max(tot['baseline'][1], 1):.0f}"
          f"; median ratio x{statistics.median(ratios):.2f}")
    print(f"peak RSS (VmHWM) at the last window: spanprof {rows[-1]['spanprof'][3]:.1f} MB, "
          f"baseline {rows[-1]['baseline'][3]:.1f} MB")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log, lambda p: benchproc.stop(p))
