#!/usr/bin/env python3
"""bench/jvm_vs_cfi: BPF time and agent CPU of the HotSpot walk against the native CFI walk.

Issue 29's bench: "BPF time per Java sample against the native CFI walk of the same depth; agent
CPU per sample ... each as a ratio in one run". For each depth D (default 10, 50), in the same
invocation, measured the same way (spanprof record --pid at --hz, the agent's own
on_cpu_sample run time from kernel.bpf_stats_enabled, restored after; bench/unwind/unwind_bpf.py's
method and helpers, as bench/runtime/python_vs_cfi.py does for the CPython walk):

  * "JVM -Xint"      spanprof profiling bench/workloads/JvmRecurse.java D (compiled here by the
                     machine's javac) run interpreted: D + 3 Java frames (main, D + 1 calls of rec,
                     leaf), every one an interpreter frame;
  * "JVM compiled"   the same with the default tiered JIT, the agent started after --warmup
                     seconds (the chain compiled by then); -XX:CompileCommand=dontinline on rec
                     and leaf keeps the D + 1 frames of rec on the stack;
  * "CFI"            spanprof profiling integration/workloads/unw_recurse.c built
                     -fomit-frame-pointer, D recursion levels (the CFI walk);

plus one "other" run per round (the cost of the runs that record nothing). Modes alternate
within each round (their order rotating every round): same minutes, same load. Each JVM run
starts the agent once the workload says "ready", so the JVM is described from its first sample.

Printed, from medians over the rounds:
  * per depth and mode: BPF time per recorded sample (ns), Java frames per sample (the walk's
    own counters, hs_stats: interpreted + compiled frames recorded), all frames walked per
    sample (CFI and frame-pointer steps as the sampler counts them, Java frames among
    them: a JVM stack's native part is the rest), and the ratio to the CFI run of the same
    depth (whole sample);
  * the JVM walk's cost per Java frame (slope of ns/sample over Java frames between the
    depths) for each mode, the CFI walk's cost per frame (slope over the frames the sampler
    counted), their ratio, and so the JVM walk of D + 3 Java frames against the CFI walk of as
    many frames;
  * the agent's CPU per recorded sample (utime + stime from /proc/AGENT/stat over the window,
    divided by the samples its sampler recorded in the window), JVM runs against the CFI run
    of the same depth: the naming of Java frames (reads of the JVM's memory) shows here.
Never fails on the figures (a bench, not a test); exit status non-zero only when something
could not run. Needs root, bpftool (make deps) and a JDK (javac, and the java beside it).

Usage: python3 bench/runtime/jvm_vs_cfi.py [--build DIR] [--depths 10,50] [--hz 999]
           [--seconds 3] [--rounds 3] [--cpu 1] [--settle 1] [--javac PATH] [--warmup 3]
       make bench-jvm-cfi [BUILD=dir] [JAVAC=path] [BENCH_JVM_CFI_ARGS="..."]
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # python_agent
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import benchproc  # noqa: E402
import python_agent as pa  # noqa: E402
import unwind_bpf as ub  # noqa: E402
from benchproc import CHILDREN, BenchError, spawn  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "bench" / "workloads" / "JvmRecurse.java"
JAVA_EXTRA = 3  # JvmRecurse D: main, rec x (D + 1), leaf
# enum hs_stat (bpf/hotspot.h)
HS_SAMPLES, HS_INTERPRETED, HS_COMPILED, HS_STUBS = 0, 1, 2, 3
DONTINLINE = ["-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,JvmRecurse::rec",
              "-XX:CompileCommand=dontinline,JvmRecurse::leaf"]


def log(msg):
    print(f"jvm_vs_cfi: {msg}", file=sys.stderr, flush=True)


def map_id(prog_id, name):
    """Id of the map @name the program @prog_id uses (BenchError when it has none)."""
    for mid in ub.bpftool("prog", "show", "id", str(prog_id)).get("map_ids", []):
        if ub.bpftool("map", "show", "id", str(mid)).get("name") == name:
            return mid
    raise BenchError(f"program {prog_id} has no map {name}")


def wait_ready(work, label, timeout=120):
    """Reads the JVM's stdout (a text pipe) up to its "ready" line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = work.stdout.readline()
        if not line:
            raise BenchError(f"{label}: the workload exited before it was ready")
        if line.strip() == "ready":
            return
    raise BenchError(f"{label}: the workload not ready within {timeout} s")


def measure(args, spanprof, argv, label, jvm):
    """One run: the workload @argv (pinned to args.cpu; a JVM first says "ready"), the agent
    --pid on it, snapshots of its sampler (stats, hs_stats), its CPU (/proc/PID/stat) around a
    window of args.seconds after args.settle. Returns a dict of the window's deltas."""
    tmp = Path(tempfile.mkdtemp(prefix="spanprof-jvmcfi-"))
    work = spawn(["taskset", "-c", str(args.cpu), *argv],
                 stdout=subprocess.PIPE if jvm else subprocess.DEVNULL, text=True)
    agent = None
    try:
        if jvm:
            wait_ready(work, label)
        else:
            time.sleep(0.3)
        agent = spawn([spanprof, "record", "--frequency", args.hz, "--duration", 3600, "--quiet",
                       "--pid", work.pid, "--output-dir", tmp],
                      stdout=subprocess.DEVNULL, stderr=open(tmp / "stderr", "w"))
        prog_id, stats_id = ub.find_sampler(agent.pid)
        ub.OUR_PROGS.add(prog_id)
        hs_id = map_id(prog_id, "hs_stats")
        time.sleep(args.settle)
        a, ha, ca = ub.snapshot(prog_id, stats_id), ub.snapshot(prog_id, hs_id), pa.ticks([agent.pid])
        time.sleep(args.seconds)
        b, hb, cb = ub.snapshot(prog_id, stats_id), ub.snapshot(prog_id, hs_id), pa.ticks([agent.pid])
        if work.poll() is not None:
            raise BenchError(f"{label}: workload ended early")
        pa.stop_reap(agent, timeout=120)
        if agent.returncode:
            raise BenchError(f"{label}: spanprof exited {agent.returncode}: "
                             + (tmp / "stderr").read_text()[-2000:])
        d = lambda k: b["stats"].get(k, 0) - a["stats"].get(k, 0)  # noqa: E731
        h = lambda k: hb["stats"].get(k, 0) - ha["stats"].get(k, 0)  # noqa: E731
        return {"label": label, "run_time_ns": b["run_time_ns"] - a["run_time_ns"],
                "run_cnt": b["run_cnt"] - a["run_cnt"], "samples": d(ub.ST_SAMPLES),
                "frames_native": d(ub.ST_FRAMES_CFI) + d(ub.ST_FRAMES_FP),
                "hs_samples": h(HS_SAMPLES), "interpreted": h(HS_INTERPRETED),
                "compiled": h(HS_COMPILED), "stubs": h(HS_STUBS), "cpu_s": cb - ca}
    finally:
        if agent is not None and agent.poll() is None:
            ub.stop(agent, signal.SIGINT, timeout=120)
        ub.stop(work)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    javac = benchproc.take_option("--javac") or os.environ.get("JAVAC", "") or "javac"
    warmup = float(benchproc.take_option("--warmup") or 3)
    args, build, spanprof = ub.bench_args(__doc__, seconds=3.0, rounds=3, depths="10,50")
    if not shutil.which("bpftool"):
        raise BenchError("bpftool missing")
    if not shutil.which(javac):
        raise BenchError(f"{javac} missing (a JDK: javac and java)")
    java = Path(os.path.realpath(shutil.which(javac))).parent / "java"
    depths = [int(x) for x in args.depths.split(",")]
    bins = ub.build_workloads(build)
    classes = build / "bench" / "jvm"
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run([javac, "-g", "-d", str(classes), str(WORKLOAD)], check=True)
    version = subprocess.run([str(java), "-version"], capture_output=True,
                             text=True).stderr.splitlines()
    modes = [("JVM -Xint", ["-Xint"], 0.5), ("JVM compiled", DONTINLINE, warmup), ("CFI", None, 0)]
    prev = Path(ub.STATS_SYSCTL).read_text().strip()
    results, other = {}, []
    t0 = time.monotonic()
    try:
        Path(ub.STATS_SYSCTL).write_text("1\n")
        for rnd in range(args.rounds):
            log(f"round {rnd + 1}: other runs")
            other.append(ub.measure(args, spanprof, lambda tot: ["sleep", str(int(tot) + 1)],
                                    [], "other"))
            for depth in depths:
                k = rnd % len(modes)
                for label, jflags, wait in modes[k:] + modes[:k]:
                    log(f"round {rnd + 1}: depth {depth}: {label}")
                    total = wait + args.settle + args.seconds + 90
                    if jflags is None:
                        argv = [bins["nofp"], int(total), depth]
                    else:
                        argv = [java, *jflags, "-cp", classes, "JvmRecurse", total, depth, wait]
                    results.setdefault((depth, label), []).append(
                        measure(args, spanprof, argv, label, jflags is not None))
    finally:
        Path(ub.STATS_SYSCTL).write_text(prev + "\n")
        for p in list(CHILDREN):
            ub.stop(p)
    left = ub.wait_progs_freed()
    c_other, per_sample = ub.sample_cost(other)

    def med(depth, label, f=per_sample):
        return statistics.median(f(r) for r in results[(depth, label)])

    def per(depth, label, *keys):
        rs = results[(depth, label)]
        return sum(r[k] for r in rs for k in keys) / max(sum(r["samples"] for r in rs), 1)

    def cpu_us(r):
        return r["cpu_s"] * 1e6 / r["samples"] if r["samples"] else float("nan")

    print(f"\nThe HotSpot walk against the CFI walk: BPF time of {ub.PROG_NAME} per recorded "
          f"sample, {args.hz} Hz, {args.seconds:g} s windows, {args.rounds} rounds (medians), "
          f"workload pinned to CPU {args.cpu}; {java} ({version[0] if version else '?'}); "
          f"compiled runs measured after {warmup:g} s of warm-up")
    print(f"kernel {os.uname().release}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}; runs recording nothing: "
          f"{c_other:.0f} ns/run; {time.monotonic() - t0:.0f} s of runs\n")
    print("| depth | mode | samples | ns/sample (min..max) | Java frames/sample (compiled share) "
          "| frames walked/sample | x CFI, whole sample | agent CPU us/sample | x CFI |")
    print("| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for depth in depths:
        cfi, cfi_cpu = med(depth, "CFI"), med(depth, "CFI", cpu_us)
        for label, _, _ in modes:
            ns, cpu = med(depth, label), med(depth, label, cpu_us)
            jf = per(depth, label, "interpreted", "compiled")
            comp = per(depth, label, "compiled") / jf if jf else 0.0
            s = sum(r["samples"] for r in results[(depth, label)])
            ps = [per_sample(r) for r in results[(depth, label)]]
            print(f"| {depth} | {label} | {s} | {ns:.0f} ({min(ps):.0f}..{max(ps):.0f}) | {jf:.1f} ({comp:.0%}) | "
                  f"{per(depth, label, 'frames_native'):.1f} | {ns / cfi:.2f} | {cpu:.1f} | "
                  f"{cpu / cfi_cpu:.2f} |")
    lo, hi = min(depths), max(depths)
    if hi == lo:
        print("\none depth: no cost per frame (give --depths two values)")
    else:
        def slope(label, *keys):
            df = per(hi, label, *keys) - per(lo, label, *keys)
            return (med(hi, label) - med(lo, label)) / df if df > 0 else float("nan")

        cfi_slope = slope("CFI", "frames_native")
        print(f"\nper frame, depth {lo} -> {hi}: the CFI walk {cfi_slope:.0f} ns per frame")
        for label, _, _ in modes[:2]:
            js = slope(label, "interpreted", "compiled")
            ratio = js / cfi_slope if cfi_slope > 0 else float("nan")
            print(f"  {label}: {js:.0f} ns per Java frame: x{ratio:.2f} the CFI walk's")
            for depth in depths:
                n = depth + JAVA_EXTRA
                print(f"    depth {depth}: the JVM walk of {n} Java frames about "
                      f"{js * n / 1000:.1f} us, the CFI walk of {n} frames about "
                      f"{cfi_slope * n / 1000:.1f} us")
    print(f"\nagent CPU: utime+stime (/proc/PID/stat, {1000 // pa.CLK_TCK} ms ticks) over the "
          f"window / samples recorded in it")
    print(f"kernel.bpf_stats_enabled restored to "
          f"{Path(ub.STATS_SYSCTL).read_text().strip()}; our programs left loaded: {len(left)}")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log, lambda p: ub.stop(p))
