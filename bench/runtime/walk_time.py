#!/usr/bin/env python3
"""bench/walk_time: the Python walk against the native CFI walk of the same depth, each timed whole.

Issue 14's target: "the Python walk adds less than the native CFI walk of the same depth".
bench/runtime/python_vs_cfi.py estimates both from the program's run time per sample (on minus
off, and a slope between depths): a subtraction of two figures of 10-20 us that moves by several
us with the machine's load, and a CFI slope that leaves out the CFI walk's own fixed part (its
process lookup, the first stack read). This bench times the two walks themselves, inside the
program, in the same invocation:

  * a build of spanprof whose BPF is compiled with -DSP_WALK_TIMING (`make bench-walk-time`
    makes BUILD-walktime) reads bpf_ktime_get_ns() around the native walk of the user stack
    (unwind_proc_of() and unwind_user_stack(), bpf/unwind.bpf.h) and around the Python walk
    (python_sample(), bpf/python.bpf.h), and adds each walk that produced frames to the
    per-CPU map walk_time: walks, ns, frames, and a histogram of 50 ns buckets;
  * for each depth D (default 10, 50): `spanprof record --pid` at --hz of
    bench/workloads/pyspin.py D (D + 3 Python frames) in each shape of --shapes (default both):
    "recursion", one recursive function (a code object's own reads once per walk, the best
    case), and "distinct", a chain of D + 1 functions (those reads in every frame, the worst
    case), and of integration/workloads/unw_recurse.c D levels deep built -fomit-frame-pointer
    (a CFI walk of about D + 5 frames), workload pinned to --cpu, the map read at the start and
    the end of a window of --seconds after --settle.

Prints per depth the median and mean time of a walk (histograms pooled over the rounds) and its
frames; the CFI walk's median at the Python walk's number of frames (linear between the two
depths' points, each with its fixed part); and the ratio Python walk / CFI walk of the same number
of frames (target: under 1). The Python process's own native walk is printed too. Never fails on
the figures. Needs root and bpftool.

Usage: python3 bench/runtime/walk_time.py [--build DIR] [--depths 10,50] [--hz 999] [--seconds 5]
           [--rounds 3] [--cpu 1] [--python PATH] [--baseline DIR] [--shapes recursion,distinct]
           [--variant-args "AGENT ARGS"]
       make bench-walk-time [BUILD=dir] [PY_BENCH_PYTHON=path] [BENCH_WALK_TIME_ARGS="..."]

With --baseline DIR (another build made with BPF_EXTRA=-DSP_WALK_TIMING), its Python walks and
its CFI walk are timed in the same rounds, interleaved, and printed beside this build's.
With --variant-args "ARGS", this build's Python walks are timed a second time, interleaved, with
ARGS added to the agent's command line (e.g. "--no-python-code-cache": every walk reads each code
object), and printed as "variant". This build's agent runs with --python-code-cache-after 0 (the
code-object cache from the start, as in a run longer than its 10 s default).
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import benchproc  # noqa: E402
import unwind_bpf as ub  # noqa: E402
from benchproc import CHILDREN, BenchError, spawn  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PYSPIN = ROOT / "bench" / "workloads" / "pyspin.py"
PY_EXTRA = 3  # pyspin.py D: <module>, rec x (D + 1), spin
MAP_NAME = "walk_time"
BUCKET_NS = 50  # SP_WALK_BUCKET_NS, bpf/sampler.bpf.c
NATIVE, PYTHON = 0, 1  # enum sp_walk_kind
# This build's agent: the code-object cache from the start (not 10 s after), as in a long run.
OWN_ARGS = ("--python-code-cache-after", "0")


def log(msg):
    print(f"walk_time: {msg}", file=sys.stderr, flush=True)


def walk_map(prog_id):
    """Id of the walk_time map the sampler program @prog_id uses."""
    for mid in ub.bpftool("prog", "show", "id", str(prog_id)).get("map_ids", []):
        if ub.bpftool("map", "show", "id", str(mid)).get("name") == MAP_NAME:
            return mid
    raise BenchError(f"the sampler has no {MAP_NAME} map: a build without -DSP_WALK_TIMING "
                     "(`make bench-walk-time` makes one)")


def u64s(raw):
    """Little-endian u64 words of bpftool's raw hex byte list."""
    b = bytes(int(x, 16) for x in raw)
    return [int.from_bytes(b[i:i + 8], "little") for i in range(0, len(b) - 7, 8)]


def read_walks(map_id):
    """{kind: (walks, ns, frames, hist list)} summed over the CPUs."""
    out = {}
    for ent in ub.bpftool("map", "dump", "id", str(map_id)):
        fmt = ent.get("formatted")
        if fmt:
            key = int(fmt["key"])
            vals = [v["value"] for v in fmt["values"]]
            rows = [[v["walks"], v["ns"], v["frames"], *v["hist"]] for v in vals]
        else:
            key = u64s(ent["key"])[0] if len(ent["key"]) >= 8 else int(ent["key"][0], 16)
            rows = [u64s(v["value"]) for v in ent["values"]]
        tot = [sum(col) for col in zip(*rows)]
        out[key] = (tot[0], tot[1], tot[2], tot[3:])
    return out


def delta(a, b):
    return {k: (b[k][0] - a[k][0], b[k][1] - a[k][1], b[k][2] - a[k][2],
                [y - x for x, y in zip(a[k][3], b[k][3])]) for k in b}


def measure(args, spanprof, argv, label, extra=()):
    """One run: the workload, the agent on it (@extra: more arguments), walk_time read around a
    steady window."""
    tmp = Path(tempfile.mkdtemp(prefix="spanprof-walktime-"))
    work = spawn(["taskset", "-c", str(args.cpu), *argv], stdout=subprocess.DEVNULL)
    agent = None
    try:
        time.sleep(0.3)
        agent = spawn([spanprof, "record", "--frequency", args.hz, "--duration", 3600, "--quiet",
                       "--pid", work.pid, "--output-dir", tmp, *extra],
                      stdout=subprocess.DEVNULL, stderr=open(tmp / "stderr", "w"))
        prog_id, _ = ub.find_sampler(agent.pid)
        ub.OUR_PROGS.add(prog_id)
        map_id = walk_map(prog_id)
        time.sleep(args.settle)
        a = read_walks(map_id)
        time.sleep(args.seconds)
        b = read_walks(map_id)
        if work.poll() is not None:
            raise BenchError(f"{label}: the workload ended early")
        ub.stop(agent, signal.SIGINT, timeout=120)
        if agent.returncode:
            raise BenchError(f"{label}: spanprof exited {agent.returncode}: "
                             + (tmp / "stderr").read_text()[-2000:])
        return delta(a, b)
    finally:
        if agent is not None and agent.poll() is None:
            ub.stop(agent, signal.SIGINT, timeout=120)
        ub.stop(work)
        shutil.rmtree(tmp, ignore_errors=True)


def pool(runs, kind):
    """(walks, mean ns, frames per walk, median ns, 90th percentile ns) over @runs of @kind."""
    walks = sum(r[kind][0] for r in runs if kind in r)
    if not walks:
        return None
    ns = sum(r[kind][1] for r in runs if kind in r)
    frames = sum(r[kind][2] for r in runs if kind in r)
    hist = [sum(col) for col in zip(*(r[kind][3] for r in runs if kind in r))]

    def quantile(q):
        seen = 0
        for i, c in enumerate(hist):
            seen += c
            if seen >= q * walks:
                return (i + 0.5) * BUCKET_NS
        return len(hist) * BUCKET_NS

    return walks, ns / walks, frames / walks, quantile(0.5), quantile(0.9)


def main():
    python = benchproc.take_option("--python") or os.environ.get("PY_BENCH_PYTHON", "") or sys.executable
    baseline = benchproc.take_option("--baseline")
    variant = (benchproc.take_option("--variant-args") or "").split()
    shapes = (benchproc.take_option("--shapes") or "recursion,distinct").split(",")
    if not shapes or any(x not in ("recursion", "distinct") for x in shapes):
        raise BenchError("--shapes: a comma-separated list of recursion, distinct")
    args, build, spanprof = ub.bench_args(__doc__, seconds=5.0, rounds=3, depths="10,50")
    if not shutil.which("bpftool"):
        raise BenchError("bpftool missing")
    depths = [int(x) for x in args.depths.split(",")]
    bins = ub.build_workloads(build)
    if baseline:
        baseline = Path(baseline).resolve() / "spanprof"
        if not baseline.exists():
            raise BenchError(f"{baseline} missing: make BUILD=DIR BPF_EXTRA=-DSP_WALK_TIMING all")
    runs = {}
    try:
        for rnd in range(args.rounds):
            for depth in depths:
                order = [("CFI", [bins["nofp"], "3600", str(depth)], spanprof, ())]
                for shape in shapes:
                    argv = [python, str(PYSPIN), str(depth), shape]
                    order.append((f"python {shape}", argv, spanprof, OWN_ARGS))
                    if baseline:
                        order.append((f"baseline python {shape}", argv, baseline, ()))
                    if variant:
                        order.append((f"variant python {shape}", argv, spanprof,
                                      OWN_ARGS + tuple(variant)))
                if baseline:
                    order.append(("baseline CFI", [bins["nofp"], "3600", str(depth)], baseline,
                                  ()))
                k = rnd % len(order)
                for label, argv, agent, extra in order[k:] + order[:k]:
                    log(f"round {rnd + 1}: depth {depth}: {label}")
                    runs.setdefault((depth, label), []).append(
                        measure(args, agent, argv, label, extra))
    finally:
        for p in list(CHILDREN):
            ub.stop(p)
    left = ub.wait_progs_freed()

    print(f"\nEach walk timed whole inside on_cpu_sample (bpf_ktime_get_ns() around it), "
          f"{args.hz} Hz, {args.seconds:g} s windows, {args.rounds} rounds pooled, workload "
          f"pinned to CPU {args.cpu}; {python}")
    print(f"kernel {os.uname().release}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}\n")
    print("| depth | walk | walks | frames/walk | median ns | mean ns | 90th pct ns |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    rows = {}
    for depth in depths:
        walks = []
        for shape in shapes:
            walks.append((f"python {shape}", PYTHON, f"Python walk (pyspin.py, {shape})"))
            if baseline:
                walks.append((f"baseline python {shape}", PYTHON,
                              f"Python walk (pyspin.py, {shape}), baseline build"))
            if variant:
                walks.append((f"variant python {shape}", PYTHON,
                              f"Python walk (pyspin.py, {shape}), with {' '.join(variant)}"))
        walks.append((f"python {shapes[0]}", NATIVE, "native walk of pyspin.py's python"))
        walks.append(("CFI", NATIVE, "CFI walk (unw_recurse -fomit-frame-pointer)"))
        if baseline:
            walks.append(("baseline CFI", NATIVE,
                          "CFI walk (unw_recurse -fomit-frame-pointer), baseline build"))
        for label, kind, name in walks:
            p = pool(runs[(depth, label)], kind)
            rows[(depth, label, kind)] = p
            if p is None:
                print(f"| {depth} | {name} | 0 | | | | |")
                continue
            print(f"| {depth} | {name} | {p[0]} | {p[2]:.1f} | {p[3]:.0f} | {p[1]:.0f} | "
                  f"{p[4]:.0f} |")
    cfi = [rows[(d, "CFI", NATIVE)] for d in depths]
    if len(depths) < 2 or any(c is None for c in cfi) or cfi[-1][2] == cfi[0][2]:
        log("no CFI line (one depth, or no CFI walks): no ratio")
        return 0
    (f0, m0), (f1, m1) = (cfi[0][2], cfi[0][3]), (cfi[-1][2], cfi[-1][3])
    slope = (m1 - m0) / (f1 - f0)
    print(f"\nthe CFI walk: {m0:.0f} ns for {f0:.1f} frames, {m1:.0f} ns for {f1:.1f} "
          f"(medians; {slope:.0f} ns a frame between them, {m0 - slope * f0:.0f} ns fixed)")
    if baseline:
        for depth in depths:
            new, old = rows[(depth, "CFI", NATIVE)], rows[(depth, "baseline CFI", NATIVE)]
            if new and old:
                print(f"  depth {depth}: the CFI walk of this build / the baseline's: "
                      f"{new[3]:.0f} / {old[3]:.0f} ns median = x{new[3] / old[3]:.2f}, "
                      f"mean x{new[1] / old[1]:.2f}")
    labels = [f"{b}python {shape}" for shape in shapes for b in
              ("",) + (("baseline ",) if baseline else ()) + (("variant ",) if variant else ())]
    for label in labels:
        for depth in depths:
            p = rows[(depth, label, PYTHON)]
            if p is None:
                print(f"  depth {depth}: no Python walk recorded ({label})")
                continue
            same = m0 + slope * (p[2] - f0)
            ratio = p[3] / same if same > 0 else float("nan")
            print(f"  {label}, depth {depth}: the Python walk of {p[2]:.1f} frames {p[3]:.0f} ns; "
                  f"the CFI walk of {p[2]:.1f} frames {same:.0f} ns: x{ratio:.2f} "
                  f"[{'PASS' if ratio < 1 else 'MISS'}] target (issue 14): under x1 "
                  f"(informative)")
    print(f"\nour {ub.PROG_NAME} programs left loaded: {len(left)}")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log, lambda p: ub.stop(p))
