#!/usr/bin/env python3
"""bench/python_agent: the agent's cost on a machine running 20 CPU-busy Python processes.

Starts --procs (default 20) processes of bench/workloads/pybusy.py (--threads threads each, each
thread 10, 15, 20... Python frames deep; at nice --nice, default 10, so that the profilers get
their share of the CPUs), spread over every CPython found (pyenv's 3.8-3.13 under
~/.pyenv/versions and /usr/bin/python3.11), then, in the same invocation and over windows of the
same length, in interleaved rounds whose order rotates every round:

  * "spanprof"              spanprof record (whole host, default rate, Python walk on);
  * "spanprof --no-python"  the same with --no-python;
  * "py-spy"                py-spy record -r RATE --pid P, one instance per workload process
                            (py-spy profiles one process per instance: this is how a user covers
                            20 processes), RATE = spanprof's default rate;
  * "py-spy --native"       the same with --native (Python and native frames mixed, as spanprof);
  * "spanprof baseline"     with --baseline BINARY: that spanprof (an older build) as "spanprof",
                            for a before/after of the agent's own CPU in the same invocation.

For each it prints the profilers' CPU time (utime+stime: over the steady-state window from
/proc/PID/stat, and for the whole run from wait4's rusage, start-up and output writing
included), peak RSS (ru_maxrss; the sum over the 20 py-spy instances, which run together), the
samples of the workload it recorded (spanprof: stacks of comm "pybusy" in profile.folded, and how
many of them name a Python function; py-spy: the counts of its raw output), the CPU per 1000
workload samples, and for spanprof the BPF time of its on_cpu_sample program per run and per
recorded sample (kernel.bpf_stats_enabled=1, restored after), then the ratios spanprof / py-spy
and Python on / off, from medians over the rounds.

spanprof samples each CPU at RATE, py-spy each process at RATE: they record different numbers of
samples, so the comparison that matters is CPU per sample. Two things tilt it against spanprof:
its CPU covers every process of the host (other programs' samples, new binaries) but is divided
by the workload's samples only (the "host samples" column divides by all it recorded), and its
fixed costs (timers, the builder thread, process hooks) are spread over about ten times fewer
samples than py-spy's. --spanprof-frequency HZ runs spanprof at HZ per CPU instead (e.g. 190 on 2
CPUs: about py-spy's 20 x 19 samples a second) to compare at a like number of samples; the
default keeps spanprof's default rate. The machine may be shared: the load average is printed
with the figures; nothing here fails on a figure. Needs root.

Usage: python3 bench/runtime/python_agent.py [--build DIR] [--procs 20] [--threads 3]
           [--seconds 10] [--rounds 3] [--rate HZ] [--nice 10] [--no-native]
           [--no-python-off] [--baseline BINARY] [--spanprof-frequency HZ]
           [--spanprof-args "OPTIONS"]
       make bench-python-agent [BUILD=dir] [BENCH_PYTHON_AGENT_ARGS="--rounds 5"]
"""
import argparse
import glob
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import unwind_bpf as ub  # noqa: E402
import benchproc  # noqa: E402
from benchproc import CHILDREN, BenchError, spawn  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "bench" / "workloads" / "pybusy.py"
COMM = "pybusy"
CLK_TCK = os.sysconf("SC_CLK_TCK")
DEFAULT_RATE = 19  # spanprof record's default --frequency (README)
TARGET_CPU_RATIO = 0.5  # issue 14: the agent's CPU under half of py-spy's for the same samples


def log(msg):
    print(f"python_agent: {msg}", file=sys.stderr, flush=True)


def pythons():
    """The CPython interpreters to run the workload with: pyenv's 3.8+ and Debian's 3.11."""
    found = []
    for d in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*"))):
        ver = Path(d).name.split(".")
        if len(ver) < 2 or not ver[1].isdigit() or int(ver[1]) < 8:
            continue
        exe = Path(d) / "bin" / f"python{ver[0]}.{ver[1]}"
        if os.access(exe, os.X_OK):
            found.append(str(exe))
    if os.access("/usr/bin/python3.11", os.X_OK):
        found.append("/usr/bin/python3.11")
    if not found:
        raise BenchError("no CPython 3.8+ found (~/.pyenv/versions/3.*, /usr/bin/python3.11)")
    return found


def start_workloads(args):
    exes = pythons()
    procs = []
    for i in range(args.procs):
        exe = exes[i % len(exes)]
        # Niced: 20 spinning processes on a small machine would otherwise leave the profilers
        # (and everything else) a few % of a CPU, and their start and stop take minutes.
        p = spawn(["nice", "-n", args.nice, exe, WORKLOAD, args.threads, 10],
                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append((p, exe))
    for p, exe in procs:
        if p.stdout.readline().strip() != b"ready":
            raise BenchError(f"{exe} {WORKLOAD} did not start")
    time.sleep(0.5)  # down to their spinning depth
    return procs, exes


def reap(p, timeout):
    """wait4 on p (at most timeout s): its rusage, or None."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            if p in CHILDREN:
                CHILDREN.remove(p)
            return ru
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def stop_reap(p, timeout=300):
    """SIGINT (the profilers write their outputs), wait4; SIGKILL after @timeout."""
    try:
        os.kill(p.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    ru = reap(p, timeout)
    if ru is None:
        os.kill(p.pid, signal.SIGKILL)
        ru = reap(p, 10)
        raise BenchError(f"{p.args[0]} (pid {p.pid}) did not exit within {timeout} s of SIGINT")
    return ru


def ticks(pids):
    """utime+stime of @pids from /proc/PID/stat, in seconds (a vanished pid counts 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / CLK_TCK


def run_spanprof(args, spanprof, tmp, python_on, own=True):
    """One window of spanprof record on the whole host (@own: this build, with --spanprof-args).
    Returns the figures."""
    out = tmp / "out"
    extra = [] if python_on else ["--no-python"]
    if args.spanprof_frequency:
        extra += ["--frequency", args.spanprof_frequency]
    if own:
        extra += shlex.split(args.spanprof_args)
    with open(tmp / "stderr", "w") as err:
        agent = spawn([spanprof, "record", "--duration", 3600, "--quiet", "--output-dir", out,
                       "--stats-json", tmp / "stats.json", *extra],
                      stdout=subprocess.DEVNULL, stderr=err)
    try:
        prog_id, map_id = ub.find_sampler(agent.pid, timeout=300)  # slow under load
        ub.OUR_PROGS.add(prog_id)
        time.sleep(args.settle)
        c0, a = ticks([agent.pid]), ub.snapshot(prog_id, map_id)
        time.sleep(args.seconds)
        c1, b = ticks([agent.pid]), ub.snapshot(prog_id, map_id)
        try:
            ru = stop_reap(agent, args.stop_timeout)
        except BenchError as e:
            # Killed: no outputs; the window's figures stand (per host sample, below).
            log(f"warning: {e}")
            ru = None
    finally:
        if agent.poll() is None:
            benchproc.stop(agent)
    d = lambda k: b["stats"].get(k, 0) - a["stats"].get(k, 0)  # noqa: E731
    recorded = d(ub.ST_SAMPLES)
    run_ns = b["run_time_ns"] - a["run_time_ns"]
    runs = b["run_cnt"] - a["run_cnt"]
    if ru is None:
        nan = float("nan")
        return {"cpu_window": c1 - c0, "cpu_total": nan, "rss_kb": nan, "rss_max_kb": nan,
                "samples": nan, "samples_window": nan, "named": nan,
                "ns_run": run_ns / runs if runs else nan,
                "ns_sample": run_ns / recorded if recorded else nan, "host_samples": recorded,
                "killed": 1}
    if agent.returncode:
        raise BenchError(f"spanprof exited {agent.returncode}: "
                         + (tmp / "stderr").read_text()[-2000:])
    samples = named = every = 0
    for line in (out / "profile.folded").read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        every += int(n)
        if stack.split(";", 1)[0] != COMM:
            continue
        samples += int(n)
        named += int(n) * (f";{COMM}." in stack)  # a Python frame: module.qualname
    # The window's workload samples: those the sampler recorded in it (stats map), at the
    # workload's share of the whole run's stacks.
    return {"cpu_window": c1 - c0, "cpu_total": ru.ru_utime + ru.ru_stime,
            "rss_kb": ru.ru_maxrss, "rss_max_kb": ru.ru_maxrss, "samples": samples,
            "samples_window": recorded * samples / every if every else 0,
            "named": named, "ns_run": run_ns / runs if runs else float("nan"),
            "ns_sample": run_ns / recorded if recorded else float("nan"),
            "host_samples": recorded, "killed": 0}


def run_pyspy(args, pyspy, tmp, work, native):
    """One window of one py-spy record per workload process. Returns the figures."""
    spies = []
    for i, (p, _) in enumerate(work):
        argv = [pyspy, "record", "-r", args.rate, "--pid", p.pid, "-f", "raw",
                "-o", tmp / f"spy{i}.txt"] + (["--native"] if native else [])
        spies.append(spawn(argv, stdout=subprocess.DEVNULL, stderr=open(tmp / f"spy{i}.err", "w")))
    rus = []
    t0 = time.monotonic()
    try:
        time.sleep(args.settle)
        c0 = ticks([s.pid for s in spies])
        time.sleep(args.seconds)
        c1 = ticks([s.pid for s in spies])
        elapsed = time.monotonic() - t0
        for s in spies:
            rus.append(stop_reap(s))
    finally:
        for s in spies:
            if s.poll() is None:
                benchproc.stop(s)
    samples = 0
    failed = []
    for i, s in enumerate(spies):
        try:
            text = (tmp / f"spy{i}.txt").read_text(errors="replace")
        except OSError:
            failed.append(f"{work[i][1]}: " + (tmp / f"spy{i}.err").read_text()[-300:].strip())
            continue
        samples += sum(int(l.rpartition(" ")[2]) for l in text.splitlines() if l.strip())
    for f in failed:
        log(f"warning: py-spy wrote nothing for {f}")
    return {"cpu_window": c1 - c0, "cpu_total": sum(r.ru_utime + r.ru_stime for r in rus),
            "rss_kb": sum(r.ru_maxrss for r in rus), "rss_max_kb": max(r.ru_maxrss for r in rus),
            "samples": samples, "named": samples, "ns_run": float("nan"),
            # py-spy writes its samples at the end only: the window's share of its run
            "samples_window": samples * args.seconds / elapsed,
            "ns_sample": float("nan"), "host_samples": 0, "failed": len(failed)}


def med(rs, key):
    vals = [r[key] for r in rs if r[key] == r[key]]  # not nan
    return statistics.median(vals) if vals else float("nan")


def per_k(r):
    """Profiler CPU ms per 1000 workload samples, both over the whole run."""
    return 1e6 * r["cpu_total"] / r["samples"] if r["samples"] else float("nan")


def per_k_host(r):
    """spanprof: CPU ms per 1000 samples it recorded in the window (every process of the host)."""
    return 1e6 * r["cpu_window"] / r["host_samples"] if r["host_samples"] else float("nan")


def per_k_window(r):
    """The same over the steady-state window."""
    return 1e6 * r["cpu_window"] / r["samples_window"] if r["samples_window"] else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--procs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0, help="measurement window per run")
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nice", type=int, default=10, help="nice value of the workload processes")
    ap.add_argument("--rate", type=int, default=DEFAULT_RATE, help="py-spy's rate (Hz)")
    ap.add_argument("--no-native", action="store_true", help="skip py-spy --native")
    ap.add_argument("--no-python-off", action="store_true", help="skip spanprof --no-python")
    ap.add_argument("--baseline", help="another spanprof binary to run as 'spanprof baseline'")
    ap.add_argument("--spanprof-args", default="",
                    help="more options for 'spanprof' (not the baseline), e.g. "
                    "\"--symbol-cache-mb 24\"")
    ap.add_argument("--spanprof-frequency", type=int, default=0,
                    help="spanprof's --frequency (Hz per CPU; default: its own default, "
                    f"{DEFAULT_RATE})")
    ap.add_argument("--stop-timeout", type=float, default=300,
                    help="seconds a profiler gets to exit after SIGINT (spanprof: then killed, "
                    "its window figures kept)")
    args = ap.parse_args()
    if os.geteuid():
        raise BenchError("needs root")
    spanprof = Path(args.build).resolve() / "spanprof"
    if not spanprof.exists():
        raise BenchError(f"{spanprof} missing: make BUILD={args.build} all")
    pyspy = shutil.which("py-spy")
    if pyspy and "/shims/" in pyspy:  # pyenv's shim: the real binary, so rusage is py-spy's
        res = subprocess.run(["pyenv", "which", "py-spy"], capture_output=True, text=True)
        pyspy = res.stdout.strip() or pyspy
    if not pyspy:
        log("py-spy not installed (pip install py-spy): its modes are skipped")
    if not shutil.which("bpftool"):
        raise BenchError("bpftool missing")

    modes = [("spanprof", "sp", True)]
    if not args.no_python_off:
        modes.append(("spanprof --no-python", "sp", False))
    if args.baseline:
        if not os.access(args.baseline, os.X_OK):
            raise BenchError(f"--baseline {args.baseline}: not an executable")
        modes.append(("spanprof baseline", "base", True))
    if pyspy:
        modes.append(("py-spy", "spy", False))
        if not args.no_native:
            modes.append(("py-spy --native", "spy", True))
    load0 = open("/proc/loadavg").read().split()[:3]
    prev = Path(ub.STATS_SYSCTL).read_text().strip()
    results = {m[0]: [] for m in modes}
    work, exes = start_workloads(args)
    log(f"{args.procs} workload processes x {args.threads} threads over {len(exes)} "
        f"interpreters: {', '.join(exes)}")
    try:
        Path(ub.STATS_SYSCTL).write_text("1\n")
        for rnd in range(args.rounds):
            k = rnd % len(modes)
            for label, kind, flag in modes[k:] + modes[:k]:
                for p, exe in work:
                    if p.poll() is not None:
                        raise BenchError(f"workload {exe} (pid {p.pid}) exited")
                tmp = Path(tempfile.mkdtemp(prefix="spanprof-pyagent-"))
                try:
                    if kind == "sp":
                        r = run_spanprof(args, spanprof, tmp, flag)
                    elif kind == "base":
                        r = run_spanprof(args, args.baseline, tmp, flag, own=False)
                    else:
                        r = run_pyspy(args, pyspy, tmp, work, flag)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
                results[label].append(r)
                log(f"round {rnd + 1}: {label}: {r['cpu_window']:.2f} s CPU in the window, "
                    f"{r['cpu_total']:.2f} s in all, {r['samples']} workload samples, "
                    f"peak RSS {r['rss_kb'] / 1024:.1f} MB, BPF {r['ns_sample']:.0f} ns/sample")
    finally:
        Path(ub.STATS_SYSCTL).write_text(prev + "\n")
        for p in list(CHILDREN):
            benchproc.stop(p)
    left = ub.wait_progs_freed()
    load1 = open("/proc/loadavg").read().split()[:3]

    print(f"\nspanprof against py-spy on {args.procs} CPU-busy CPython processes "
          f"({args.threads} threads each, 10-{10 + 5 * (args.threads - 1)} Python frames deep, nice "
          f"{args.nice}; {len(exes)} interpreters), {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"kernel {os.uname().release}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(load0)} at start, {' '.join(load1)} at end (the workload adds "
          f"{args.procs} runnable processes)")
    print(f"{args.rounds} rounds of {args.seconds:g} s windows (after {args.settle:g} s settling), "
          f"order rotated per round; spanprof {args.spanprof_args or ''} at "
          f"{args.spanprof_frequency or f'its default {DEFAULT_RATE}'} Hz per CPU on the "
          f"whole host, py-spy -r {args.rate} per process, {args.procs} instances; medians\n")
    hdr = ("| mode | CPU s, window | % of a core | CPU s, whole run | peak RSS MB | workload "
           "samples | with a Python frame | CPU ms / 1000 samples: window | whole run | BPF ns/run "
           "| BPF ns/sample | CPU ms / 1000 host samples: window |")
    print(hdr)
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    summary = {}
    for label, kind, _ in modes:
        rs = results[label]
        s = {k: med(rs, k) for k in ("cpu_window", "cpu_total", "rss_kb", "samples", "named",
                                     "ns_run", "ns_sample")}
        s["per_k"] = statistics.median(per_k(r) for r in rs)
        s["per_k_window"] = statistics.median(per_k_window(r) for r in rs)
        s["per_k_host"] = statistics.median(per_k_host(r) for r in rs)
        summary[label] = s
        rss = f"{s['rss_kb'] / 1024:.1f}"
        if kind == "spy":
            rss += f" ({args.procs} x {max(r['rss_max_kb'] for r in rs) / 1024:.1f} max)"
        bpf = (f"{s['ns_run']:.0f} | {s['ns_sample']:.0f} | {s['per_k_host']:.0f}"
               + (f" ({sum(r['killed'] for r in rs)} killed at --stop-timeout)"
                  if sum(r['killed'] for r in rs) else "")
               if kind != "spy" else "- | - | -")
        print(f"| {label} | {s['cpu_window']:.2f} | {100 * s['cpu_window'] / args.seconds:.1f} | "
              f"{s['cpu_total']:.2f} | {rss} | {s['samples']:.0f} | "
              f"{100 * s['named'] / s['samples'] if s['samples'] else 0:.0f}% | "
              f"{s['per_k_window']:.0f} | {s['per_k']:.0f} | {bpf} |")
    print("\nCPU ms / 1000 samples: window = CPU in the window (/proc/PID/stat) / the window's "
          "workload samples (spanprof: recorded in it x the workload's share of the run's "
          "stacks; py-spy: its run's samples x window / run length); whole run = wait4 rusage "
          "(start-up and output writing included) / all workload samples; "
          "per host sample = CPU in the window / every sample recorded in it (spanprof); "
          "BPF ns/run = on_cpu_sample run_time_ns / run_cnt in the window (every CPU tick of the "
          "host), ns/sample = run time / samples recorded (idle ticks included in the time)")
    print("ratios (medians):")

    def ratio(a, b, key, what):
        if a in summary and b in summary and summary[b][key]:
            x = summary[a][key] / summary[b][key]
            print(f"  {a} / {b}: {what} x{x:.2f}")
            return x
        return None

    for other in ("py-spy", "py-spy --native"):
        x = ratio("spanprof", other, "per_k_window", "CPU per workload sample, window")
        ratio("spanprof", other, "per_k", "CPU per workload sample, whole run")
        ratio("spanprof", other, "cpu_window", "CPU in the window")
        ratio("spanprof", other, "rss_kb", "peak RSS")
        if x is not None:
            print(f"    [{'PASS' if x < TARGET_CPU_RATIO else 'MISS'}] target (issue 14): under "
                  f"{TARGET_CPU_RATIO} of {other}'s CPU for the same samples (informative)")
    ratio("spanprof", "spanprof baseline", "per_k_host", "CPU per host sample, window")
    ratio("spanprof", "spanprof baseline", "per_k_window", "CPU per workload sample, window")
    ratio("spanprof", "spanprof baseline", "per_k", "CPU per workload sample, whole run")
    ratio("spanprof", "spanprof baseline", "cpu_window", "CPU in the window")
    ratio("spanprof", "spanprof --no-python", "cpu_window", "CPU in the window")
    ratio("spanprof", "spanprof --no-python", "per_k_window", "CPU per workload sample, window")
    ratio("spanprof", "spanprof --no-python", "rss_kb", "peak RSS")
    ratio("spanprof", "spanprof --no-python", "ns_sample", "BPF time per sample")
    print(f"\nkernel.bpf_stats_enabled restored to {Path(ub.STATS_SYSCTL).read_text().strip()}; "
          f"our on_cpu_sample programs left loaded: {len(left)} (of {len(ub.OUR_PROGS)} loaded)")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log, lambda p: benchproc.stop(p))
