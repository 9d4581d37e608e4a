#!/usr/bin/env python3
"""bench/unwind_bpf: BPF time per sample of spanprof's sampling program, CFI walker vs frame pointers.

For each stack depth (default 10, 50, 300 recursion levels of integration/workloads/unw_recurse.c),
in the same invocation:

  * "CFI, no FP"   spanprof (CFI on) profiling the workload built -O2 -fomit-frame-pointer;
  * "CFI, FP"      spanprof (CFI on) profiling the workload built -O2 -fno-omit-frame-pointer;
  * "FP only"      spanprof --unwind-max-mb 0 (CFI off: bpf_get_stack frame-pointer walk) profiling
                   the -fno-omit-frame-pointer build (the baseline);

plus one "other" run (spanprof --pid of a sleeping process) giving the cost of the runs that
record nothing (idle CPU, other processes filtered out by --pid).

With kernel.bpf_stats_enabled=1 (restored to its previous value at the end), the script reads
run_time_ns and run_cnt of the agent's own on_cpu_sample program (prog ids found through
/proc/AGENT/fdinfo, then `bpftool prog show id N`) and the agent's per-CPU `stats` map
(samples recorded, filtered, idle; frames walked) at the start and at the end of a steady-state
window, and prints per mode:

  * ns/run      = delta run_time_ns / delta run_cnt (every run, as bpftool shows it);
  * ns/sample   = (delta run_time_ns - other runs x ns/run of the "other" mode) / samples recorded:
                  the estimated BPF time of one recorded sample of the workload;
  * user frames = frames per recorded sample (from profile.folded, max depth of the workload's stack);
  * ratios against "FP only" at the same depth.

Needs root. Never fails on the figures; exit status non-zero only if something failed to run.
Usage: python3 bench/unwind/unwind_bpf.py [--build DIR] [--depths 10,50,300] [--hz 999] [--seconds S]
                                   [--rounds N] [--cpu N]
       make bench-unwind-bpf [BUILD=dir] [BENCH_UNWIND_BPF_ARGS="..."]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
import benchproc
from benchproc import CHILDREN, BenchError, spawn

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD_SRC = ROOT / "integration" / "workloads" / "unw_recurse.c"
PROG_NAME = "on_cpu_sample"
STATS_SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"
# enum sp_stat (bpf/sampler.h)
ST_SAMPLES, ST_IDLE, ST_FILTERED = 0, 1, 2
ST_UNW_CFI, ST_UNW_FP, ST_FRAMES_CFI, ST_FRAMES_FP = 6, 7, 10, 11

OUR_PROGS = set()  # ids of the on_cpu_sample programs our agents loaded


def log(msg):
    print(f"unwind_bpf: {msg}", file=sys.stderr, flush=True)


def stop(p, sig=signal.SIGKILL, timeout=30):
    benchproc.stop(p, sig, timeout, group=False)


def bpftool(*args):
    res = subprocess.run(["bpftool", "--json", *args], capture_output=True, text=True, timeout=30)
    if res.returncode:
        raise BenchError(f"bpftool {' '.join(args)}: {res.stderr.strip()}")
    return json.loads(res.stdout)


def find_sampler(pid, timeout=60):
    """(prog id of the agent's on_cpu_sample, id of its stats map) once it is loaded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid_ in sorted(benchproc.prog_ids(pid)):
            try:
                prog = bpftool("prog", "show", "id", str(pid_))
            except BenchError:
                continue
            if prog.get("name") != PROG_NAME:
                continue
            for mid in prog.get("map_ids", []):
                m = bpftool("map", "show", "id", str(mid))
                if m.get("name") == "stats" and m.get("type") == "percpu_array":
                    return pid_, mid
        time.sleep(0.2)
    raise BenchError(f"agent {pid} did not load {PROG_NAME} within {timeout} s")


def snapshot(prog_id, map_id):
    prog = bpftool("prog", "show", "id", str(prog_id))
    stats = {}
    for ent in bpftool("map", "dump", "id", str(map_id)):
        fmt = ent.get("formatted", ent)
        key = fmt["key"]
        if isinstance(key, list):  # raw hex bytes
            key = int.from_bytes(bytes(int(b, 16) for b in key), "little")
        total = 0
        for v in fmt["values"]:
            val = v["value"]
            if isinstance(val, list):
                val = int.from_bytes(bytes(int(b, 16) for b in val), "little")
            total += int(val)
        stats[int(key)] = total
    return {"run_time_ns": prog.get("run_time_ns", 0), "run_cnt": prog.get("run_cnt", 0),
            "stats": stats, "t": time.monotonic()}


def bench_args(doc, seconds=6.0, rounds=2, depths=None):
    """Parses the options the BPF-time benchmarks share (--depths too when @depths, its default,
    is given) and checks root and the agent binary: (args, build dir, spanprof path)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--build", default="build")
    if depths:
        ap.add_argument("--depths", default=depths)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--seconds", type=float, default=seconds, help="measurement window per run")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--cpu", type=int, default=1, help="CPU the workload is pinned to")
    args = ap.parse_args()
    if os.geteuid():
        raise BenchError("needs root")
    build = Path(args.build).resolve()
    spanprof = build / "spanprof"
    if not spanprof.exists():
        raise BenchError(f"{spanprof} missing: make BUILD={args.build} all")
    return args, build, spanprof


def sampler_window(args, spanprof, work, tmp, extra, label, before_stop=None):
    """Runs `spanprof record --pid` on the workload @work, output in @tmp; returns the sampler
    snapshots (a, b) around a window of args.seconds, taken after args.settle. @before_stop is
    called between the last snapshot and the agent's SIGINT. Raises BenchError when the agent
    exits non-zero; the agent is stopped in any case."""
    time.sleep(0.3)
    agent = spawn([spanprof, "record", "--frequency", args.hz, "--duration", 3600, "--quiet",
                   "--pid", work.pid, "--output-dir", tmp, *extra],
                  stdout=subprocess.DEVNULL, stderr=open(tmp / "stderr", "w"))
    try:
        prog_id, map_id = find_sampler(agent.pid)
        OUR_PROGS.add(prog_id)
        time.sleep(args.settle)
        a = snapshot(prog_id, map_id)
        time.sleep(args.seconds)
        b = snapshot(prog_id, map_id)
        if before_stop:
            before_stop()
        stop(agent, signal.SIGINT, timeout=120)
        if agent.returncode:
            raise BenchError(f"{label}: spanprof exited {agent.returncode}: "
                             + (tmp / "stderr").read_text()[-2000:])
        return a, b
    finally:
        if agent.poll() is None:
            stop(agent, signal.SIGINT, timeout=120)


def wait_progs_freed():
    """Our sampler programs still loaded after up to 10 s (a program is freed shortly after its
    last reference is closed)."""
    left = []
    for _ in range(50):
        left = [p for p in bpftool("prog", "show") if p.get("id") in OUR_PROGS]
        if not left:
            break
        time.sleep(0.2)
    return left


def sample_cost(other):
    """(c_other, per_sample): the BPF time of a run that records nothing (idle, filtered), pooled
    over the @other runs, and a function giving a run's BPF time per recorded sample with those
    non-recording runs taken off at that cost (nan without samples)."""
    o_cnt = sum(r["run_cnt"] for r in other)
    c_other = sum(r["run_time_ns"] for r in other) / o_cnt if o_cnt else 0.0

    def per_sample(r):
        if not r["samples"]:
            return float("nan")
        return (r["run_time_ns"] - (r["run_cnt"] - r["samples"]) * c_other) / r["samples"]

    return c_other, per_sample


def build_workloads(build):
    out = build / "bench"
    out.mkdir(parents=True, exist_ok=True)
    bins = {}
    for tag, flag in (("nofp", "-fomit-frame-pointer"), ("fp", "-fno-omit-frame-pointer")):
        exe = out / f"unw_recurse_{tag}"
        cmd = ["cc", "-O2", "-g", flag, str(WORKLOAD_SRC), "-o", str(exe)]
        subprocess.run(cmd, check=True)
        bins[tag] = exe
    return bins


def max_depth(folded, comm):
    """Largest number of user frames of a stack of process @comm in profile.folded."""
    best = 0
    try:
        text = folded.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        stack, _, _ = line.rpartition(" ")
        frames = stack.split(";")
        if frames[0] not in (comm, comm[:15]):
            continue
        best = max(best, sum(1 for f in frames[1:] if not f.endswith("_[k]")))
    return best


def measure(args, spanprof, target_argv, extra, label):
    """One run: workload, agent --pid, snapshots around a steady window. Returns a dict."""
    tmp = Path(tempfile.mkdtemp(prefix="spanprof-unwbpf-"))
    total = args.settle + args.seconds + 30
    work = spawn(["taskset", "-c", str(args.cpu), *target_argv(total)],
                 stdout=subprocess.DEVNULL)
    try:

        def alive():
            if work.poll() is not None:
                raise BenchError(f"{label}: workload ended early")

        a, b = sampler_window(args, spanprof, work, tmp, extra, label, alive)
        depth = max_depth(tmp / "profile.folded", Path(target_argv(0)[0]).name)
        d = lambda k: b["stats"].get(k, 0) - a["stats"].get(k, 0)  # noqa: E731
        return {"label": label, "dt": b["t"] - a["t"],
                "run_time_ns": b["run_time_ns"] - a["run_time_ns"],
                "run_cnt": b["run_cnt"] - a["run_cnt"],
                "samples": d(ST_SAMPLES), "idle": d(ST_IDLE), "filtered": d(ST_FILTERED),
                "unw_cfi": d(ST_UNW_CFI), "unw_fp": d(ST_UNW_FP),
                "frames_cfi": d(ST_FRAMES_CFI), "frames_fp": d(ST_FRAMES_FP), "depth": depth}
    finally:
        stop(work)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    args, build, spanprof = bench_args(__doc__, depths="10,50,300")
    if not shutil.which("bpftool"):
        raise BenchError("bpftool missing")
    depths = [int(x) for x in args.depths.split(",")]
    bins = build_workloads(build)

    modes = [("CFI, -fomit-frame-pointer", "nofp", []),
             ("CFI, -fno-omit-frame-pointer", "fp", []),
             ("FP only (--unwind-max-mb 0), -fno-omit-frame-pointer", "fp", ["--unwind-max-mb", "0"])]
    prev = Path(STATS_SYSCTL).read_text().strip()
    results = {}
    other = []
    try:
        Path(STATS_SYSCTL).write_text("1\n")
        for rnd in range(args.rounds):
            sleeper = lambda tot: ["sleep", str(int(tot) + 1)]  # noqa: E731
            log(f"round {rnd + 1}: other runs (agent --pid of a sleeping process)")
            other.append(measure(args, spanprof, sleeper, [], "other"))
            for depth in depths:
                order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
                for label, tag, extra in order:
                    log(f"round {rnd + 1}: depth {depth}: {label}")
                    argv = lambda tot, t=tag, dep=depth: [bins[t], str(tot), str(dep)]  # noqa: E731
                    r = measure(args, spanprof, argv, extra, label)
                    results.setdefault((depth, label), []).append(r)
    finally:
        Path(STATS_SYSCTL).write_text(prev + "\n")
        for p in list(CHILDREN):
            stop(p)
    left = wait_progs_freed()
    c_other, per_sample = sample_cost(other)

    print(f"\nBPF time of {PROG_NAME} per run / per recorded sample, {args.hz} Hz, "
          f"{args.seconds:.0f} s windows, {args.rounds} rounds, workload pinned to CPU {args.cpu}")
    print(f"kernel {os.uname().release}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(f"runs recording nothing (idle / filtered): {c_other:.0f} ns/run "
          f"(median of rounds {statistics.median(r['run_time_ns'] / max(r['run_cnt'], 1) for r in other):.0f})\n")
    hdr = ("| depth | mode | user frames | samples | ns/run | ns/sample (median; min..max) "
           "| frames/sample CFI+FP | x FP only |")
    print(hdr)
    print("| ---: | --- | ---: | ---: | ---: | --- | --- | ---: |")
    for depth in depths:
        base = statistics.median(per_sample(r) for r in results[(depth, modes[2][0])])
        for label, _, _ in modes:
            rs = results[(depth, label)]
            ps = [per_sample(r) for r in rs]
            med = statistics.median(ps)
            nrun = statistics.median(r["run_time_ns"] / max(r["run_cnt"], 1) for r in rs)
            s = sum(r["samples"] for r in rs)
            fr = (sum(r["frames_cfi"] for r in rs) / max(s, 1),
                  sum(r["frames_fp"] for r in rs) / max(s, 1))
            print(f"| {depth} | {label} | {max(r['depth'] for r in rs)} | {s} | {nrun:.0f} | "
                  f"{med:.0f} ({min(ps):.0f}..{max(ps):.0f}) | {fr[0]:.1f}+{fr[1]:.1f} | "
                  f"{med / base:.2f} |")
    print()
    for depth in depths:
        cfi = statistics.median(per_sample(r) for r in results[(depth, modes[0][0])])
        base = statistics.median(per_sample(r) for r in results[(depth, modes[2][0])])
        print(f"depth {depth}: CFI walk adds {cfi - base:.0f} ns per sample over frame pointers "
              f"({cfi / base:.2f}x)")
    frames = {}
    for depth in depths:
        rs = results[(depth, modes[0][0])]
        frames[depth] = (sum(r["frames_cfi"] + r["frames_fp"] for r in rs) / max(sum(r["samples"] for r in rs), 1),
                         statistics.median(per_sample(r) for r in rs))
    lo, hi = min(depths), max(depths)
    if hi != lo and frames[hi][0] > frames[lo][0]:
        slope = (frames[hi][1] - frames[lo][1]) / (frames[hi][0] - frames[lo][0])
        print(f"CFI cost per frame, depth {lo} -> {hi}: {slope:.0f} ns "
              f"({frames[lo][0]:.0f} -> {frames[hi][0]:.0f} frames per sample)")
        for depth in depths:
            print(f"  so the walk of {frames[depth][0]:.0f} frames (depth {depth}) is about "
                  f"{slope * frames[depth][0] / 1000:.1f} us of the {frames[depth][1] / 1000:.1f} us "
                  f"per sample")
    try:
        mx = Path("/proc/sys/kernel/perf_event_max_stack").read_text().strip()
        print(f"kernel.perf_event_max_stack = {mx}: the frame-pointer walk (bpf_get_stack) "
              f"stops there")
    except OSError:
        pass
    print(f"\nkernel.bpf_stats_enabled restored to {Path(STATS_SYSCTL).read_text().strip()}; "
          f"our {PROG_NAME} programs left loaded: {len(left)} (of {len(OUR_PROGS)} loaded)")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log, stop)
