#!/usr/bin/env python3
"""bench/hook_cost: BPF time of the process hooks (exec, exit, mmap) per new process, spanprof's and
the OpenTelemetry eBPF profiler's in the same invocation.

A new process costs an agent's BPF programs that run on process events. spanprof's: the exec
tracepoint (sched_process_exec), the exit tracepoint (sched_process_exit, once per thread), the
mmap hook (every mmap(2) of every process; the ones of executable memory of a loaded process
are looked at further) and the prctl hook of the span links (every prctl(2)). The OpenTelemetry
profiler's (--peer): sched_process_free (once per process) and sys_exit_prctl (every prctl(2));
it has no exec or mmap hook (it learns of a process from its first sample). Both are counted
alike: every BPF program the agent holds that is not a perf_event program (the samplers, and
the OpenTelemetry profiler's tail-called unwinders, run per sample, not per process).

With BPF run-time statistics on (a BPF_ENABLE_STATS descriptor held for the run, which other
tools' writes to kernel.bpf_stats_enabled do not turn off; else that sysctl, restored after),
the script reads run_time_ns and run_cnt of those programs around two spawn windows, the agent
profiling the whole host at 19 Hz (every new process is targeted, as by default):

  * /bin/true      N fork+exec of /bin/true (ld.so maps libc);
  * 4 libraries    N/3 fork+exec of bench/workloads/spawnmany.c, which dlopens libm, libz,
                   libelf and libcrypto (more mmaps of executable code per process);

and around an idle window (no spawning) of the same length after each, whose BPF time per
second is taken off (the other processes of the machine run the same hooks). Prints, per agent
and workload, the hook time per new process (median over the rounds; min..max), each program's
ns per run and runs per new process; with --baseline BIN (for example a build of main) the same
for that spanprof binary, and with --peer BIN for the OpenTelemetry profiler (its receiver: the
Go test collector, integration/testcollector, built here), each agent in turns in every round,
and the ratios agent/baseline and agent/peer. A --peer that does not exist is said and left out.

Needs root and bpftool. Never fails on the figures; exit status non-zero only if something
failed to run.
Usage: python3 bench/process/hook_cost.py [--build DIR] [--baseline BIN] [--peer BIN]
                                          [--spawns N] [--rounds R]
       make bench-hooks [BUILD=dir] [BENCH_HOOKS_ARGS="--peer /tmp/otelprof/ebpf-profiler"]
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
SAMPLER_TYPE = "perf_event"  # the samplers: per sample, not per process
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


def hook_progs(pid, timeout=120):
    """{prog id: name} of the agent's BPF programs but its samplers (perf_event programs), once a
    sampler is loaded and the set has stopped growing for a second."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        progs, sampler = {}, False
        for pid_ in benchproc.prog_ids(pid):
            try:
                p = ub.bpftool("prog", "show", "id", str(pid_))
            except BenchError:
                continue
            if p.get("type") == SAMPLER_TYPE:
                sampler = True
            else:
                progs[pid_] = p.get("name", "?")
        if sampler and progs and progs == last:
            return progs
        last = progs if sampler else None
        time.sleep(1)
    raise BenchError(f"agent {pid} loaded no sampler and hooks within {timeout} s")


def snap(progs):
    out = {"t": time.monotonic()}
    for pid_ in progs:
        p = ub.bpftool("prog", "show", "id", str(pid_))
        out[pid_] = (p.get("run_time_ns", 0), p.get("run_cnt", 0))
    return out


def delta(progs, a, b):
    return {i: (b[i][0] - a[i][0], b[i][1] - a[i][1]) for i in progs}, b["t"] - a["t"]


def start_agent(kind, binary, tmp, collector):
    """The agent profiling the whole host at 19 Hz: spanprof record, or the OpenTelemetry
    profiler sending to the test collector at @collector (host:port)."""
    err = open(tmp / "stderr", "w")
    if kind == "peer":
        return spawn([binary, "-collection-agent", collector, "-disable-tls",
                      "-samples-per-second", "19"], stdout=err, stderr=subprocess.STDOUT)
    return spawn([binary, "record", "--frequency", "19", "--quiet", "--output-dir", tmp / "out"],
                 stdout=subprocess.DEVNULL, stderr=err)


def one_agent(kind, binary, tmp, spawner, nspawn, collector):
    """One agent run: {workload: (ns per new process, {name: (ns/run, runs per process)})}."""
    agent = start_agent(kind, binary, tmp, collector)
    res = {}
    try:
        progs = hook_progs(agent.pid)
        if kind == "peer":  # its tracepoints are attached last
            wait_log(tmp / "stderr", "Attached sched monitor", agent)
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
            raise BenchError(f"{binary} exited {agent.returncode}: "
                             + (tmp / "stderr").read_text()[-2000:])
    finally:
        benchproc.stop(agent, signal.SIGINT, timeout=30)  # the figures are in already
    return res


def wait_log(path, text, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise BenchError(f"no '{text}' from the agent: " + path.read_text()[-2000:])


def start_collector(tmp):
    """The OTLP receiver of the peer: integration/testcollector, built with go. Its process and
    host:port."""
    import socket
    if not shutil.which("go"):
        raise BenchError("--peer needs go (to build integration/testcollector, its receiver)")
    exe = tmp / "testcollector"
    subprocess.run(["go", "build", "-o", exe, "."], cwd=ROOT / "integration/testcollector",
                   check=True)
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    p = spawn([exe, "-listen", f"127.0.0.1:{port}", "-out", tmp / "received.jsonl"],
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as so:
            if so.connect_ex(("127.0.0.1", port)) == 0:
                return p, f"127.0.0.1:{port}"
        if p.poll() is not None:
            break
        time.sleep(0.1)
    raise BenchError("the test collector did not listen")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--baseline", help="another spanprof binary, measured in turns")
    ap.add_argument("--peer", help="the OpenTelemetry eBPF profiler's binary, measured in turns")
    ap.add_argument("--spawns", type=int, default=300, help="/bin/true processes per window")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid():
        raise BenchError("needs root")
    if not shutil.which("bpftool"):
        raise BenchError("bpftool missing")
    agents = [("agent", "spanprof", Path(a.build) / "spanprof")]
    if a.baseline:
        agents.append(("baseline", "spanprof", Path(a.baseline)))
    for _, _, b in agents:
        if not b.exists():
            raise BenchError(f"{b} missing")
    if a.peer and not Path(a.peer).exists():
        log(f"peer {a.peer} missing: spanprof's figures alone")
    elif a.peer:
        agents.append(("peer", "peer", Path(a.peer)))
    results = {}
    stats_fd = enable_bpf_stats()
    prev = Path(ub.STATS_SYSCTL).read_text().strip()
    with tempfile.TemporaryDirectory(prefix="hook_cost-") as d:
        tmp = Path(d)
        spawner = tmp / "spawnmany"
        subprocess.run(["cc", "-O2", "-o", spawner, ROOT / "bench/workloads/spawnmany.c"],
                       check=True)
        subprocess.run([spawner, "1", spawner, "--libs", *LIBS], check=True)
        collector = None
        try:
            if any(k == "peer" for _, k, _ in agents):
                collector, addr = start_collector(tmp)
            if stats_fd is None:
                Path(ub.STATS_SYSCTL).write_text("1\n")
            for rnd in range(a.rounds):
                order = agents if rnd % 2 == 0 else agents[::-1]
                for tag, kind, binary in order:
                    log(f"round {rnd + 1}: {tag} ({binary})")
                    for wl, r in one_agent(kind, binary, tmp, spawner, a.spawns,
                                           collector and addr).items():
                        results.setdefault((tag, wl), []).append(r)
        finally:
            if collector:
                benchproc.stop(collector, signal.SIGTERM)
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
    for other, _, _ in agents[1:]:
        for wl in ("/bin/true", "4 libraries"):
            b = med[other, wl]
            if b > 0:
                print(f"  ratio agent/{other} {wl}: {med['agent', wl] / b:.2f}")
    if stats_fd is None:
        print(f"kernel.bpf_stats_enabled restored to {Path(ub.STATS_SYSCTL).read_text().strip()}")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log)
