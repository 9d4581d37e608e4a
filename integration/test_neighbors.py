"""Living beside other BPF tools on the same machine (issue 16).

- Another tool's uprobe on the instruction spanprof probes, placed first, with a reference
  counter (a USDT semaphore: the kernel refuses a second registration with a different counter,
  "ref_ctr_offset mismatch") or without one: spanprof's alloc probe is attached anyway (with
  that tool's counter when it has one, saying so), every allocation through it is counted, and
  the other tool's probe and counter are as they were after spanprof exits.
  workloads/uprobe_holder.c is the other tool (a uprobe perf event, the kernel's own interface,
  no BPF), workloads/alloc_neighbor.c the profiled program (the allocator library
  workloads/alloc_plugin.c, whose plugin_semaphore serves as the counter).
- tracefs absent at start: spanprof mounts it in a mount namespace of its own, so another agent
  started meanwhile finds no tracefs of spanprof's to rely on, mounts its own, and keeps it after
  spanprof exits. Run inside a private mount namespace of the test (the host's tracefs is never
  touched).
"""
import os
import re
import signal
import subprocess

import pytest

from conftest import WORKLOADS, wait_sampling

N_ALLOCS = 200


@pytest.fixture(scope="module")
def bins(workdir):
    d = workdir / "neighbors"
    d.mkdir(exist_ok=True)
    plugin, holder, neighbor = d / "liballoc_plugin.so", d / "uprobe_holder", d / "alloc_neighbor"
    subprocess.run(["gcc", "-O2", "-g", "-fPIC", "-shared", "-Wl,-Bsymbolic", "-o", plugin,
                    WORKLOADS / "alloc_plugin.c"], check=True)
    subprocess.run(["gcc", "-O2", "-o", holder, WORKLOADS / "uprobe_holder.c", "-lelf"],
                   check=True)
    subprocess.run(["gcc", "-O2", "-g", "-o", neighbor, WORKLOADS / "alloc_neighbor.c", "-ldl"],
                   check=True)
    return {"plugin": plugin, "holder": holder, "neighbor": neighbor}


def first_line(proc, prefix):
    line = proc.stdout.readline()
    assert line.startswith(prefix), (line, proc.stderr.read() if proc.stderr else "")
    return line.split()


@pytest.mark.parametrize("counter", [True, False], ids=["with_counter", "without_counter"])
def test_alloc_uprobe_beside_another_tools(spanprof, bins, pprofcheck, procs, tmp_path,
                                           counter):
    holder = procs.start(bins["holder"], bins["plugin"], "malloc",
                         *(["plugin_semaphore"] if counter else []),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    first_line(holder, "attached")
    wl = procs.start(bins["neighbor"], bins["plugin"], N_ALLOCS, stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
    _, pid, sema = first_line(wl, "ready")
    # The kernel counts the other tool's probe in the process's semaphore.
    assert int(sema) == (1 if counter else 0)

    out = tmp_path / "out"
    # The files of the target are probed before sampling begins (ev_alloc.c alloc_attach()).
    agent = procs.start(spanprof, "record", "--verbose", "--profile", "alloc",
                        "--alloc-sample-bytes", "0",
                        "-p", pid, "--output-dir", out, stderr=subprocess.PIPE, text=True)
    seen = "".join(wait_sampling(agent))
    wl.stdin.write("go\n")
    wl.stdin.flush()
    site, done = wl.stdout.readline(), wl.stdout.readline().split()
    assert site.split()[:3] == ["site", "plugin_site", str(N_ALLOCS)], site
    assert done == ["done", str(int(sema))], done
    agent.send_signal(signal.SIGINT)
    _, err = agent.communicate(timeout=120)
    err = seen + err
    assert agent.returncode == 0, err

    assert "attach failures" in err and " 0 attach failures" in err, err
    assert not re.search(r"attaching a uprobe to malloc in .* failed", err), err
    conflict = re.search(r"alloc: malloc in \S*liballoc_plugin.so: another tool's uprobe on the "
                         r"same instruction has a reference counter .*: attached again with "
                         r"that tool's counter", err)
    assert bool(conflict) == counter, err

    prof = pprofcheck(out / "alloc.pb.gz")
    allocs = sum(s["values"][0] for s in prof["samples"]
                 if "plugin_site" in [ln["function"] for loc in s["stack"] or []
                                      for ln in loc["lines"] or []])
    assert allocs == N_ALLOCS, (allocs, err)

    # spanprof is gone: the other tool's counter is still counted, its probe still in place.
    wl.stdin.close()
    assert wl.wait(timeout=30) == 0
    check = procs.start(bins["neighbor"], bins["plugin"], 0, stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, text=True)
    assert int(first_line(check, "ready")[2]) == (1 if counter else 0)
    check.stdin.close()
    check.wait(timeout=30)
    holder.stdin.close()
    assert holder.wait(timeout=30) == 0


def mounted(ns_pid, path):
    """Whether @path is a mount point in the mount namespace of process @ns_pid."""
    return subprocess.run(["nsenter", "-t", str(ns_pid), "-m", "mountpoint", "-q", path]).returncode == 0


def test_tracefs_left_to_other_agents(spanprof, procs, tmp_path):
    # A private mount namespace without tracefs (nor debugfs, whose tracing/ is tracefs too).
    ns = procs.start("unshare", "-m", "--propagation", "private", "sh", "-c",
                     "for m in /sys/kernel/tracing /sys/kernel/debug/tracing /sys/kernel/debug; "
                     "do while mountpoint -q $m; do umount -l $m || exit 1; done; done; "
                     "echo ready; exec cat", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True)
    assert ns.stdout.readline() == "ready\n"
    assert not mounted(ns.pid, "/sys/kernel/tracing")

    # The lock profile and the mmap hook are classic tracepoints: both need tracefs.
    agent = procs.start("nsenter", "-t", ns.pid, "-m", spanprof, "record", "--verbose",
                        "--profile", "cpu,lock", "--output-dir", tmp_path / "out", "--frequency", "19",
                        stderr=subprocess.PIPE, text=True)
    seen = "".join(wait_sampling(agent))
    # spanprof's tracefs is in a namespace of its own: the test's has none.
    assert os.readlink(f"/proc/{agent.pid}/ns/mnt") != os.readlink(f"/proc/{ns.pid}/ns/mnt")
    assert not mounted(ns.pid, "/sys/kernel/tracing")
    # Another agent starts meanwhile, finds no tracefs, mounts it.
    subprocess.run(["nsenter", "-t", str(ns.pid), "-m", "mount", "-t", "tracefs", "nodev",
                    "/sys/kernel/tracing"], check=True)
    agent.send_signal(signal.SIGINT)
    _, err = agent.communicate(timeout=120)
    err = seen + err
    assert agent.returncode == 0, err
    assert "no mmap hook" not in err and "attaching the tracepoint" not in err, err
    assert re.search(r"lock profile: \d+ futex lock waits", err), err
    # ... and still has it after spanprof exited.
    assert mounted(ns.pid, "/sys/kernel/tracing")
    assert subprocess.run(["nsenter", "-t", str(ns.pid), "-m", "test", "-d",
                           "/sys/kernel/tracing/events"]).returncode == 0
    ns.stdin.close()
    assert ns.wait(timeout=30) == 0
