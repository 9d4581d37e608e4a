#!/usr/bin/env python3
"""bench/python_vs_cfi: BPF time of the Python walk against the native CFI walk of the same depth.

Issue 14's target: "the Python walk adds less than the native CFI walk of the same depth". For
each depth D (default 10, 50), in the same invocation and measured the same way (spanprof
record --pid at --hz, the agent's own on_cpu_sample run time from kernel.bpf_stats_enabled,
restored after; bench/unwind/unwind_bpf.py's method and helpers):

  * "python on"   spanprof profiling bench/workloads/pyspin.py D (D + 3 Python frames: <module>,
                  D + 1 calls of rec, spin), with the Python walk;
  * "python off"  the same with --no-python;
  * "CFI"         spanprof profiling integration/workloads/unw_recurse.c built
                  -fomit-frame-pointer, D recursion levels (CFI walk);

plus one "other" run giving the cost of the runs that record nothing. Prints per depth the BPF
time per recorded sample of each mode; the Python walk's cost (on - off, per sample and per
Python frame); the CFI walk's cost per frame (slope between the depths, frames counted by the
sampler) and so the CFI walk of D + 3 frames; and the ratio Python walk / CFI walk of the same
number of frames (target: under 1). Never fails on the figures. Needs root and bpftool.

With --baseline DIR (another build, e.g. main's: `make BUILD=DIR all` in its checkout), the
"python on" and "python off" runs are made with its spanprof too, interleaved with this build's
in every round (same minutes, same load), and the Python walk of each build is printed with
the ratio this build / baseline per depth and per frame.

Usage: python3 bench/runtime/python_vs_cfi.py [--build DIR] [--depths 10,50] [--hz 999]
           [--seconds 6] [--rounds 2] [--cpu 1] [--python PATH] [--baseline DIR]
       make bench-python-cfi [BUILD=dir] [PY_BENCH_PYTHON=path] [BASELINE=dir]
           [BENCH_PYTHON_CFI_ARGS="..."]
"""
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import benchproc  # noqa: E402
import unwind_bpf as ub  # noqa: E402
from benchproc import CHILDREN, BenchError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PYSPIN = ROOT / "bench" / "workloads" / "pyspin.py"
PY_EXTRA = 3  # pyspin.py D: <module>, rec x (D + 1), spin


def log(msg):
    print(f"python_vs_cfi: {msg}", file=sys.stderr, flush=True)


def main():
    python = benchproc.take_option("--python") or os.environ.get("PY_BENCH_PYTHON", "") or sys.executable
    baseline = benchproc.take_option("--baseline")
    args, build, spanprof = ub.bench_args(__doc__, depths="10,50")
    if not shutil.which("bpftool"):
        raise BenchError("bpftool missing")
    depths = [int(x) for x in args.depths.split(",")]
    bins = ub.build_workloads(build)
    agents = {"": spanprof}
    if baseline:
        agents["baseline "] = Path(baseline).resolve() / "spanprof"
        if not agents["baseline "].exists():
            raise BenchError(f"{agents['baseline ']} missing: make BUILD={baseline} all")
    modes = []
    for who in agents:
        modes += [(f"{who}python on", "py", [], agents[who]),
                  (f"{who}python off", "py", ["--no-python"], agents[who])]
    modes.append(("CFI", "cfi", [], spanprof))
    prev = Path(ub.STATS_SYSCTL).read_text().strip()
    results, other = {}, []
    try:
        Path(ub.STATS_SYSCTL).write_text("1\n")
        for rnd in range(args.rounds):
            sleeper = lambda tot: ["sleep", str(int(tot) + 1)]  # noqa: E731
            log(f"round {rnd + 1}: other runs")
            other.append(ub.measure(args, spanprof, sleeper, [], "other"))
            for depth in depths:
                k = rnd % len(modes)
                for label, kind, extra, agent in modes[k:] + modes[:k]:
                    log(f"round {rnd + 1}: depth {depth}: {label}")
                    if kind == "py":
                        target = lambda tot, d=depth: [python, str(PYSPIN), str(d)]  # noqa: E731
                    else:
                        target = lambda tot, d=depth: [bins["nofp"], str(tot), str(d)]  # noqa: E731
                    results.setdefault((depth, label), []).append(
                        ub.measure(args, agent, target, extra, label))
    finally:
        Path(ub.STATS_SYSCTL).write_text(prev + "\n")
        for p in list(CHILDREN):
            ub.stop(p)
    left = ub.wait_progs_freed()
    c_other, per_sample = ub.sample_cost(other)

    def med(depth, label):
        return statistics.median(per_sample(r) for r in results[(depth, label)])

    def frames(depth, label):
        rs = results[(depth, label)]
        return (sum(r["frames_cfi"] + r["frames_fp"] for r in rs)
                / max(sum(r["samples"] for r in rs), 1))

    print(f"\nThe Python walk against the CFI walk: BPF time of {ub.PROG_NAME} per recorded "
          f"sample, {args.hz} Hz, {args.seconds:g} s windows, {args.rounds} rounds (medians), "
          f"workload pinned to CPU {args.cpu}; {python}")
    print(f"kernel {os.uname().release}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}; runs recording nothing: "
          f"{c_other:.0f} ns/run")
    lo, hi = min(depths), max(depths)
    slope = None
    if hi != lo and frames(hi, "CFI") > frames(lo, "CFI"):
        slope = (med(hi, "CFI") - med(lo, "CFI")) / (frames(hi, "CFI") - frames(lo, "CFI"))
    walks = {}
    for who, agent in agents.items():
        print(f"\n{who or 'this build '}({agent}):\n")
        print("| depth | python on ns/sample | python off | Python frames | Python walk adds "
              "| per Python frame | CFI ns/sample | CFI frames/sample |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        walk = walks[who] = {}
        for depth in depths:
            on, off = med(depth, f"{who}python on"), med(depth, f"{who}python off")
            cfi = med(depth, "CFI")
            n = depth + PY_EXTRA
            walk[depth] = on - off
            print(f"| {depth} | {on:.0f} | {off:.0f} | {n} | {on - off:.0f} | "
                  f"{(on - off) / n:.0f} | {cfi:.0f} | {frames(depth, 'CFI'):.1f} |")
        if slope is None:
            continue
        py_slope = (walk[hi] - walk[lo]) / (hi - lo)
        print(f"\nper frame, depth {lo} -> {hi}: CFI walk {slope:.0f} ns, Python walk "
              f"{py_slope:.0f} ns (x{py_slope / slope:.2f})" if slope > 0 else
              f"\nper frame, depth {lo} -> {hi}: CFI slope {slope:.0f} ns (noise: no ratio); "
              f"Python walk {py_slope:.0f} ns")
        for depth in depths:
            n = depth + PY_EXTRA
            cfi_walk = slope * n
            ratio = walk[depth] / cfi_walk if cfi_walk > 0 else float("nan")
            print(f"  depth {depth}: the Python walk of {n} frames adds {walk[depth] / 1000:.1f} us; "
                  f"the CFI walk of {n} frames is about {cfi_walk / 1000:.1f} us: x{ratio:.2f} "
                  f"[{'PASS' if ratio < 1 else 'MISS'}] target (issue 14): under x1 (informative)")
    if len(walks) > 1:
        print("\nthis build against the baseline, same rounds:")
        for depth in depths:
            a, b = walks[""][depth], walks["baseline "][depth]
            print(f"  depth {depth}: the Python walk adds {a:.0f} ns here, {b:.0f} ns in the "
                  f"baseline: {a - b:+.0f} ns"
                  + (f" (x{a / b:.2f})" if b > 0 else ""))
        if hi != lo:
            a = (walks[""][hi] - walks[""][lo]) / (hi - lo)
            b = (walks["baseline "][hi] - walks["baseline "][lo]) / (hi - lo)
            print(f"  per frame ({lo} -> {hi}): {a:.0f} ns here, {b:.0f} ns in the baseline")
    print(f"\nkernel.bpf_stats_enabled restored to "
          f"{Path(ub.STATS_SYSCTL).read_text().strip()}; our programs left loaded: {len(left)}")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log, lambda p: ub.stop(p))
