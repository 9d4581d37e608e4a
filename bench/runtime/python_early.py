#!/usr/bin/env python3
"""bench/python_early: Python frames in the agent's first seconds, for CPython processes started
before it.

--procs CPython processes of bench/workloads/pybusy.py (python_agent.py's workload, spread over
every CPython 3.8+ installed: pyenv's and Debian's 3.11) are started first and spin; then
spanprof record runs on the whole host at --frequency Hz per CPU, and is stopped (SIGINT)
--seconds after its "spanprof: sampling" line. From its profile.folded: the workload's stacks
(comm "pybusy") and the share of them holding a Python frame (";pybusy." : module.qualname).
With --baseline BINARY, another agent build runs the same way on the same processes, the two
taking turns in each round (order alternating), and the ratio of the shares is printed. Never
fails on the figures. Needs root.

Usage: python3 bench/runtime/python_early.py [--build DIR] [--baseline BINARY] [--procs 21]
           [--frequency 190] [--seconds 3] [--rounds 3] [--nice 10]
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # python_agent
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchproc
import benchproc  # noqa: E402
import python_agent as pa  # noqa: E402
from benchproc import BenchError, spawn  # noqa: E402


def log(msg):
    print(f"python_early: {msg}", file=sys.stderr, flush=True)


def run_agent(args, spanprof, tmp):
    """One run of @spanprof on the whole host: (workload stacks, of which with a Python frame)."""
    out = tmp / "out"
    agent = spawn([spanprof, "record", "--frequency", args.frequency, "--output-dir", out],
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        benchproc.wait_sampling(agent)
        time.sleep(args.seconds)
        pa.stop_reap(agent)
    finally:
        if agent.poll() is None:
            benchproc.stop(agent)
    if agent.returncode:
        raise BenchError(f"{spanprof} exited {agent.returncode}")
    stacks = with_py = 0
    for line in (out / "profile.folded").read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if stack.split(";", 1)[0] != pa.COMM:
            continue
        stacks += int(n)
        with_py += int(n) * (f";{pa.COMM}." in stack)
    return stacks, with_py


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline")
    ap.add_argument("--procs", type=int, default=21)
    ap.add_argument("--frequency", default="190")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nice", default="10")
    args = ap.parse_args()
    args.threads = 1
    builds = [("spanprof", str(Path(args.build) / "spanprof"))]
    if args.baseline:
        builds.append(("baseline", args.baseline))
    procs, exes = pa.start_workloads(args)  # stopped by run_main()
    log(f"{len(procs)} CPython processes ({len(exes)} interpreters) started before the agent")
    shares = {name: [] for name, _ in builds}
    with tempfile.TemporaryDirectory(prefix="python_early-") as d:
        for r in range(args.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for name, binary in order:
                tmp = Path(d) / f"{name}-{r}"
                tmp.mkdir()
                stacks, with_py = run_agent(args, binary, tmp)
                share = with_py / stacks if stacks else float("nan")
                shares[name].append(share)
                print(f"round {r + 1} {name}: {with_py}/{stacks} workload stacks with a "
                      f"Python frame ({share:.1%}) in the first {args.seconds:g} s", flush=True)
    for name, _ in builds:
        print(f"{name}: median {statistics.median(shares[name]):.1%}")
    if args.baseline:
        a, b = statistics.median(shares["spanprof"]), statistics.median(shares["baseline"])
        print(f"spanprof / baseline: x{a / b:.2f}" if b else "baseline: no Python frame")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log)
