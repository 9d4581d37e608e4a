"""Child processes of the benchmarks: started in their own session, always stopped."""
import os
import signal
import subprocess
import sys

CHILDREN = []


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
