"""Child processes of the benchmarks: started in their own session, always stopped."""
import os
import signal
import subprocess
import sys
from pathlib import Path

CHILDREN = []
ROOT = Path(__file__).resolve().parents[1]


class BenchError(Exception):
    """A benchmark could not run (not a measurement result)."""


def spawn(argv, **kw):
    """Starts argv in a new session and remembers it for stop_all()."""
    p = subprocess.Popen([str(a) for a in argv], start_new_session=True, **kw)
    CHILDREN.append(p)
    return p


def stop(p, sig=signal.SIGKILL, timeout=30, group=False):
    """Sends sig to p (to its whole process group with group=True), waits, then kills."""
    kill = os.killpg if group else os.kill
    if p.poll() is None:
        try:
            kill(p.pid, sig)
        except ProcessLookupError:
            pass
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    if p in CHILDREN:
        CHILDREN.remove(p)


def start_compile_load(tmp):
    """One compile loop per CPU (`gcc -O2 -c` of a benchmark source, again and again: every CPU
    saturated and a process exec'd every few tens of ms), writing its objects into @tmp; stopped
    with the other children."""
    src = ROOT / "bench/workloads/cpuburn.c"
    return [spawn(["sh", "-c", f"while :; do gcc -O2 -c {src} -o {tmp}/load{i}.o; done"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for i in range(os.cpu_count() or 1)]


def wait_sampling(agent):
    """Reads the agent's stderr (a text pipe) up to its "spanprof: sampling" line; returns what it
    printed until then. BenchError when it exits before."""
    seen = []
    while True:
        line = agent.stderr.readline()
        if not line:
            raise BenchError("the agent exited before sampling:\n" + "".join(seen))
        seen.append(line)
        if line.startswith("spanprof: sampling"):
            return "".join(seen)


def prog_ids(pid):
    """BPF program ids a process holds open (its /proc/PID/fdinfo)."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def take_option(name):
    """The value of option @name in sys.argv ("" when absent), both removed from sys.argv."""
    argv = sys.argv[1:]
    if name not in argv:
        return ""
    i = argv.index(name)
    if i + 1 >= len(argv):
        raise BenchError(f"{name} needs a value")
    value = argv[i + 1]
    del sys.argv[i + 1:i + 3]
    return value


def run_main(main, log, stop_child=stop):
    """Runs a benchmark's main(): exit with its status, 1 on BenchError, and every child
    stopped with stop_child at the end."""
    try:
        sys.exit(main())
    except BenchError as e:
        log(f"error: {e}")
        sys.exit(1)
    finally:
        for p in list(CHILDREN):
            stop_child(p)
