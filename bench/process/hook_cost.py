#!/usr/bin/env python3
"""bench/hook_cost: BPF time of spanprof's process hooks (exec, exit, mmap) per new process.

A new process costs the agent's BPF programs that run on process events: the exec tracepoint
(sched_process_exec), the exit tracepoint (sched_process_exit, once per thread) and the mmap
syscall (every mmap(2) of every process; the ones of executable memory of a loaded process
are looked at further). With BPF run-time statistics on (a BPF_ENABLE_STATS descriptor held for
the run, which other tools' writes to kernel.bpf_stats_enabled do not turn off; else that sysctl,
restored after), the script reads run_time_ns and run_cnt of every BPF program the agent holds except the
sampler (on_cpu_sample) around two spawn windows, with `spanprof record` profiling the whole host
(19 Hz: every new process is targeted, as by default):

  * /bin/true      N fork+exec of /bin/true (ld.so maps libc);
  * 4 libraries    N/3 fork+exec of bench/workloads/spawnmany.c, which dlopens libm, libz,
                   libelf and libcrypto (more mmaps of executable code per process);

and around an idle window (no spawning) of the same length before each, whose BPF time per
second is taken off (the other processes of the machine run the same hooks). Prints, per agent
and workload, the hook time per new process (median over the rounds; min..max), each program's
ns per run and runs per new process, and with --baseline BIN (for example a build of main) the
same for that agent, measured in turns in the same invocation, and the ratio agent/baseline.

Needs root and bpftool. Never fails on the figures; exit status non-zero only if something
failed to run.
Usage: python3 bench/process/hook_cost.py [--build DIR] [--baseline BIN] [--spawns N] [--rounds R]
       make bench-hooks [BUILD=dir] [BENCH_HOOKS_ARGS="--baseline main/build/spanprof"]
"""
import argparse
import ctypes
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import benchproc  # noqa: E402
import unwind_bpf as ub  # noqa: E402
from benchproc import BenchError, spawn  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLER = "on_cpu_sample"
LIBS = ["libm.so.6", "libz.so.1", "libelf.so.1", "libcrypto.so.3"]


def enable_bpf_stats():
    """An fd that keeps BPF run-time statistics on while it is open (bpf(BPF_ENABLE_STATS)): unlike
    the kernel.bpf_stats_enabled sysctl, another tool switching that off meanwhile does not stop
    them. None where the kernel lacks it (then the sysctl is used)."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(8)  # union bpf_attr.enable_stats.type = BPF_STATS_RUN_TIME
    fd = libc.syscall(321, 32, attr, 8)  # __NR_bpf (x86-64), BPF_ENABLE_STATS
    return fd if fd >= 0 else None


def log(msg):
    print(f"hook_cost: {msg}", file=sys.stderr, flush=True)


def hook_progs(pid, timeout=60):
    """{prog id: name} of the agent's BPF programs but the sampler, once the sampler is loaded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progs = {}
        for pid_ in benchproc.prog_ids(pid):
            try:
                progs[pid_] = ub.bpftool("prog", "show", "id", str(pid_)).get("name", "?")
            except BenchError:
                continue
        if SAMPLER in progs.values():
            return {k: v for k, v in progs.items() if v != SAMPLER}
        time.sleep(0.2)
    raise BenchError(f"agent {pid} did not load {SAMPLER} within {timeout} s")


def snap(progs):
    out = {"t": time.monotonic()}
    for pid_ in progs:
        p = ub.bpftool("prog", "show", "id", str(pid_))
        out[pid_] = (p.get("run_time_ns", 0), p.get("run_cnt", 0))
    return out


def delta(progs, a, b):
    return {i: (b[i][0] - a[i][0], b[i][1] - a[i][1]) for i in progs}, b["t"] - a["t"]


def one_agent(spanprof, tmp, spawner, nspawn):
    """One agent run: {workload: (ns per new process, {name: (ns/run, runs per process)})}."""
    out = tmp / "out"
    agent = spawn([spanprof, "record", "--frequency", "19", "--quiet", "--output-dir", out],
                  stdout=subprocess.DEVNULL, stderr=open(tmp / "stderr", "w"))
    res = {}
    try:
        progs = hook_progs(agent.pid)
        time.sleep(3)  # the first pass over the host's processes
        work = {"/bin/true": (nspawn, ["/bin/true"]),
                "4 libraries": (max(nspawn // 3, 1), [spawner, "--libs", *LIBS])}
        for name, (n, argv) in work.items():
            a = snap(progs)
            t0 = time.monotonic()
            subprocess.run([spawner, str(n), *map(str, argv)], check=True)
            spent = time.monotonic() - t0
            b = snap(progs)
            time.sleep(min(spent, 10))  # idle window: the machine's own processes
            c = snap(progs)
            busy, dt_busy = delta(progs, a, b)
            idle, dt_idle = delta(progs, b, c)
            scale = dt_busy / dt_idle
            per = {}
            total = 0.0
            for i, nm in progs.items():
                ns = busy[i][0] - idle[i][0] * scale
                runs = busy[i][1] - idle[i][1] * scale
                total += ns
                if busy[i][1]:
                    per[nm] = (busy[i][0] / busy[i][1], runs / n)
            res[name] = (total / n, per)
        if agent.poll() is not None:
            raise BenchError(f"spanprof exited {agent.returncode}: "
                             + (tmp / "stderr").read_text()[-2000:])
    finally:
        benchproc.stop(agent, signal.SIGINT, timeout=30)  # the figures are in already
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--baseline", help="another spanprof binary, measured in turns")
    ap.add_argument("--spawns", type=int, default=300, help="/bin/true processes per window")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid():
        raise BenchError("needs root")
    if not shutil.which("bpftool"):
        raise BenchError("bpftool missing")
    agents = [("agent", Path(a.build) / "spanprof")]
    if a.baseline:
        agents.append(("baseline", Path(a.baseline)))
    for _, b in agents:
        if not b.exists():
            raise BenchError(f"{b} missing")
    results = {}
    stats_fd = enable_bpf_stats()
    prev = Path(ub.STATS_SYSCTL).read_text().strip()
    with tempfile.TemporaryDirectory(prefix="hook_cost-") as d:
        tmp = Path(d)
        spawner = tmp / "spawnmany"
        subprocess.run(["cc", "-O2", "-o", spawner, ROOT / "bench/workloads/spawnmany.c"],
                       check=True)
        subprocess.run([spawner, "1", spawner, "--libs", *LIBS], check=True)
        try:
            if stats_fd is None:
                Path(ub.STATS_SYSCTL).write_text("1\n")
            for rnd in range(a.rounds):
                order = agents if rnd % 2 == 0 else agents[::-1]
                for tag, binary in order:
                    log(f"round {rnd + 1}: {tag} ({binary})")
                    for wl, r in one_agent(binary, tmp, spawner, a.spawns).items():
                        results.setdefault((tag, wl), []).append(r)
        finally:
            if stats_fd is None:
                Path(ub.STATS_SYSCTL).write_text(prev + "\n")
            else:
                os.close(stats_fd)
    print(f"hook_cost: BPF time of the process hooks per new process (whole host at 19 Hz, "
          f"{a.rounds} rounds, {a.spawns} /bin/true and {max(a.spawns // 3, 1)} 4-library "
          f"processes per round; kernel {os.uname().release}, {os.cpu_count()} CPUs)")
    med = {}
    for (tag, wl), rs in results.items():
        us = [r[0] / 1000 for r in rs]
        med[tag, wl] = statistics.median(us)
        print(f"  {tag:8s} {wl:12s} {med[tag, wl]:6.2f} us per new process "
              f"(median; {min(us):.2f}..{max(us):.2f})")
        names = sorted({n for r in rs for n in r[1]})
        for n in names:
            vals = [r[1][n] for r in rs if n in r[1]]
            print(f"      {n:20s} {statistics.median(v[0] for v in vals):7.0f} ns/run  "
                  f"{statistics.median(v[1] for v in vals):6.2f} runs per new process")
    if a.baseline:
        for wl in ("/bin/true", "4 libraries"):
            b = med["baseline", wl]
            if b > 0:
                print(f"  ratio agent/baseline {wl}: {med['agent', wl] / b:.2f}")
    if stats_fd is None:
        print(f"kernel.bpf_stats_enabled restored to {Path(ub.STATS_SYSCTL).read_text().strip()}")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log)
