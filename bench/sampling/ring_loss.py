#!/usr/bin/env python3
"""bench/ring_loss: what share of its samples does spanprof lose to a full ring buffer when every
CPU is saturated by other work?

Every CPU runs a compile loop (`gcc -O2 -c` of a benchmark source, again and again: the CPUs are
saturated and a process is exec'd every few tens of ms, so the agent has new processes to read
and tables to build while it drains). Under that load:
  - cpu: `spanprof record` of the whole host for --seconds at 19, 99 and 999 Hz;
  - alloc: `--profile alloc --alloc-sample-bytes 0` (every allocation) on
    bench/workloads/allocchurn (one thread of small mallocs and frees, -p);
  - offcpu: `--profile offcpu --offcpu-min 1us` on bench/workloads/lockcontend (4 threads
    contending on 2 mutexes: a futex wait every few us, -p).
Prints, per run, the samples recorded, those lost to a full ring buffer (the agent counts them:
its accounting line, or its "<type> profile: N samples, M lost" line) and the loss share
lost / (recorded + lost), against the 1% target. With --baseline BIN, the same runs with that
agent, and the ratio of the losses. Never fails on the figures; needs root.

Usage: python3 bench/sampling/ring_loss.py [--build DIR] [--baseline BIN] [--seconds S] [--rates LIST]
                                  [--runs LIST]
       make bench-ring [BUILD=dir] [BENCH_RING_ARGS="--baseline /path/to/spanprof"]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
from benchproc import (BenchError, run_main, spawn, start_compile_load, stop,  # noqa: E402
                       wait_sampling)

ROOT = Path(__file__).resolve().parents[2]
TARGET = 1.0  # % lost, the requirement (informative)


def log(msg):
    print(f"ring_loss: {msg}", file=sys.stderr, flush=True)


def build(tmp, name, flags=()):
    exe = tmp / name
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", *flags, "-o", exe,
                    ROOT / "bench/workloads" / f"{name}.c"], check=True)
    return exe


def losses(err, kind):
    """(recorded, lost) from the agent's summary."""
    if kind == "cpu":
        m = re.search(r"accounting: (\d+) samples taken by BPF = (\d+) recorded .*?; (\d+) more "
                      r"lost to a full ring buffer", err)
        if m:
            return int(m.group(2)), int(m.group(3))
        # Agents that print the accounting line only when something was lost: the summary.
        m = re.search(r"spanprof: (\d+) samples from ", err)
        d = (re.search(r"spanprof: dropped \d+ \(ring buffer full (\d+)", err) or
             re.search(r"of samples lost \((\d+)\): the ring buffer", err))
        if m:
            return int(m.group(1)), int(d.group(1)) if d else 0
    else:
        m = re.search(rf"{kind} profile: (\d+) samples, (\d+) lost", err)
        if m:
            return int(m.group(1)), int(m.group(2))
        # Agents with a shorter summary: "N samples from", "P% of samples lost (L): the ring".
        m = re.search(r"spanprof: (\d+) samples from ", err)
        d = re.search(r"of samples lost \((\d+)\): the ring buffer", err)
        if m:
            return int(m.group(1)), int(d.group(1)) if d else 0
    raise BenchError(f"no loss figures for {kind} in the agent's output:\n{err[-2000:]}")


def run_cpu(spanprof, tmp, hz, seconds):
    out = tmp / f"cpu{hz}"
    agent = spawn([spanprof, "record", "--frequency", hz, "--duration", seconds, "--output-dir",
                   out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = agent.communicate(timeout=600)
    return losses(err, "cpu")


def run_event(spanprof, tmp, kind, args, workload):
    wl = spawn(workload, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = wl.stdout.readline().split()
    if len(ready) != 2 or ready[0] != "ready":
        raise BenchError(f"{workload[0]}: no 'ready' line ({ready})")
    agent = spawn([spanprof, "record", "--profile", kind, *args, "-p", ready[1], "--output-dir",
                   tmp / f"ev-{kind}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                  text=True)
    try:
        seen = wait_sampling(agent)
        wl.stdin.write("go\n")
        wl.stdin.flush()
        wl.stdout.read()
        wl.wait(timeout=600)
        _, err = agent.communicate(timeout=600)  # the agent stops once the -p process exits
    finally:
        stop(agent, signal.SIGINT, timeout=120)
        stop(wl)
    return losses(seen + err, kind)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--baseline", help="another spanprof binary, measured the same way")
    ap.add_argument("--seconds", default="10")
    ap.add_argument("--rates", default="19,99,999")
    ap.add_argument("--runs", default="cpu,alloc,offcpu")
    a = ap.parse_args()
    if os.geteuid():
        raise BenchError("needs root")
    agents = [("agent", Path(a.build) / "spanprof")]
    if a.baseline:
        agents.append(("baseline", Path(a.baseline)))
    runs = a.runs.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ring_loss-") as d:
        tmp = Path(d)
        churn = build(tmp, "allocchurn")
        contend = build(tmp, "lockcontend", ["-pthread"])
        load = start_compile_load(tmp)
        try:
            time.sleep(2)
            for tag, binary in agents:
                if "cpu" in runs:
                    for hz in a.rates.split(","):
                        log(f"{tag}: cpu at {hz} Hz, whole host, {a.seconds} s")
                        rows.append((tag, f"cpu {hz} Hz", *run_cpu(binary, tmp, hz, a.seconds)))
                if "alloc" in runs:
                    log(f"{tag}: alloc, every allocation")
                    rows.append((tag, "alloc --alloc-sample-bytes 0", *run_event(
                        binary, tmp, "alloc", ["--alloc-sample-bytes", "0"], [churn, "30"])))
                if "offcpu" in runs:
                    log(f"{tag}: offcpu from 1 us")
                    rows.append((tag, "offcpu --offcpu-min 1us", *run_event(
                        binary, tmp, "offcpu", ["--offcpu-min", "1us"], [contend, "200"])))
        finally:
            for p in load:
                stop(p, group=True)
    print(f"ring_loss: samples lost to a full ring buffer with {os.cpu_count()} CPUs saturated by "
          f"compile loops (target < {TARGET:g}%)")
    share = {}
    for tag, what, rec, lost in rows:
        pct = 100.0 * lost / (rec + lost) if rec + lost else 0.0
        share[tag, what] = pct
        print(f"  {tag:8s} {what:30s} {rec:9d} recorded {lost:9d} lost {pct:7.2f}%  "
              f"{'PASS' if pct < TARGET else 'MISS'}")
    if a.baseline:
        for tag, what, _, _ in rows:
            if tag == "agent" and ("baseline", what) in share:
                b = share["baseline", what]
                r = f"{share['agent', what] / b:.2f}" if b else "n/a (baseline lost none)"
                print(f"  ratio agent/baseline loss share, {what}: {r}")
    return 0


if __name__ == "__main__":
    run_main(main, log)
