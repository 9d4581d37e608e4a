"""Processes in a PID namespace of their own (every container), against the real kernel: what
the agent names must be named as outside. Each workload runs under
`unshare --pid --fork --mount-proc` (the Python one nested too: unshare inside unshare), so its
PIDs and TIDs inside differ from the host's that BPF and the agent see:

  - CPython (each pyenv 3.8-3.13, Debian's 3.11 and sid's 3.14, as integration/test_python.py
    finds them): the threads of integration/workloads/pythreads.py show their exact Python
    chains, as in test_python.py (at least 95% of each CPU thread's samples). 3.11+ find a
    thread's state by its native_thread_id, the TID inside the namespace: before
    bpf/python.bpf.h compared it with the namespace's TID, every walk ended "no thread state"
    and no Python frame was shown.
  - Node.js without flags (V8's own structures, docs/node.md) and with --perf-basic-prof, its
    /tmp a tmpfs of its own mount namespace (the perf map is /tmp/perf-NSPID.map there), which
    holds the program too, as a container's own file system would (a copy of
    integration/workloads/jit_chain.js: the tmpfs hides the host's /tmp, where a CI's clone may
    be): its chain in at least 90% of the samples, as test_jit.py.
  - Span links (OTEP 4947 thread context, writer/): the test server of test_spanlinks.py (its
    static-TLS build); every linked sample carries the span its own thread ran.

The workloads report their TIDs as they see them (in the namespace); the test maps them to the
host's through /proc/PID/task/TID/status (NSpid), as pprof's tid label gives the host's.
"""
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import WORKLOADS, read_folded, record_gated
from test_jit import NO_INLINING, NODES, chain_complete, share
from test_python import (CPU_THREADS, PYTHONS, by_thread, check_thread, count,
                         own_functions)
from test_spanlinks import check_links, parse_spans, spanservers  # noqa: F401 (fixture)

UNSHARE = shutil.which("unshare")
pytestmark = pytest.mark.skipif(UNSHARE is None, reason="unshare (util-linux) is not installed")

PY_SECONDS = 3
PY_FREQ = 499
PYTHREADS = WORKLOADS / "pythreads.py"
# One namespace: util-linux's unshare forks the command into a new PID namespace, with a /proc
# of that namespace mounted in a new mount namespace, and kills it if unshare dies.
NS = ["--pid", "--fork", "--mount-proc", "--kill-child"]


def in_pidns(cmd, depth=1, private_tmp=False, carry=()):
    """@cmd run in @depth nested PID namespaces (each its own /proc); with @private_tmp a tmpfs
    on /tmp in the innermost mount namespace (a container's /tmp, not the host's), holding a
    copy of each file of @carry as /tmp/NAME (its own name), which @cmd names so.
    The tmpfs hides all of the host's /tmp from @cmd, a checkout of this repository there too
    (a CI's fresh clone: its integration/workloads): each carried file is opened before the
    mount and copied from that descriptor after it. A path of @cmd left under the host's /tmp
    would not be found, and fails here."""
    out = []
    for _ in range(depth):
        out += [UNSHARE, *NS]
    if not private_tmp:
        assert not carry, "files are carried into a private /tmp only"
        return out + [str(c) for c in cmd]
    inside = {f"/tmp/{Path(f).name}" for f in carry}
    hidden = [c for c in map(str, cmd) if c not in inside and Path(c).is_absolute() and
              Path(os.path.realpath(c)).is_relative_to("/tmp")]
    assert not hidden, f"{hidden} would be hidden by the namespace's /tmp: carry them in"
    fds = range(3, 3 + len(carry))
    opens = "".join(f' {fd}<"${fd - 2}"' for fd in fds)
    copies = "".join(f" && cat <&{fd} >/tmp/{Path(f).name}" for fd, f in zip(fds, carry))
    closes = "".join(f" {fd}<&-" for fd in fds)
    script = (f"exec{opens} && shift {len(carry)} && mount -t tmpfs spanprof-pidns /tmp{copies}"
              f' && exec "$@"{closes}')
    return out + ["sh", "-c", script, "sh", *map(str, carry), *map(str, cmd)]


def children(pid):
    """The PIDs whose parent is @pid (host /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(d.name))
    return out


def nspids(path):
    """The NSpid line of a /proc status file: the ID in each PID namespace, host's first."""
    for line in Path(path).read_text().splitlines():
        if line.startswith("NSpid:"):
            return [int(x) for x in line.split()[1:]]
    raise AssertionError(f"no NSpid in {path}")


def target_pid(wrapper, exe, depth, timeout=20):
    """The host PID of the process running @exe under @wrapper (the outer unshare), checked to
    live @depth namespaces deep with a PID there other than the host's."""
    real = os.path.realpath(exe)
    deadline = time.time() + timeout
    while time.time() < deadline:
        todo, found = [wrapper.pid], None
        while todo and not found:
            p = todo.pop()
            try:
                if os.path.realpath(f"/proc/{p}/exe") == real:
                    found = p
                    break
            except OSError:
                pass
            todo += children(p)
        if found:
            ids = nspids(f"/proc/{found}/status")
            assert len(ids) == depth + 1 and ids[-1] != ids[0], \
                f"PID {found} ({exe}) is not {depth} PID namespaces deep: NSpid {ids}"
            return found
        assert wrapper.poll() is None, f"{wrapper.args} exited ({wrapper.returncode})"
        time.sleep(0.05)
    raise AssertionError(f"{exe} never started under {wrapper.args}")


def host_tids(pid):
    """{TID in the process's own (innermost) PID namespace: host TID} of its threads now."""
    out = {}
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[nspids(t / "status")[-1]] = int(t.name)
        except (OSError, AssertionError):
            pass  # the thread ended meanwhile
    return out


def version_of(exe):
    return subprocess.run([str(exe), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, check=True).stdout.strip()


# Every CPython in one namespace; 3.11+ (the TID-matched ones) nested too.
PY_RUNS = [(f"{i}-ns1", p, 1) for i, p in PYTHONS] + \
    [(f"{i}-ns2", p, 2) for i, p in PYTHONS if int(version_of(p).split(".")[1]) >= 11]


@pytest.mark.skipif(not PYTHONS, reason="no CPython 3.8-3.14 installed")
@pytest.mark.parametrize("exe,depth", [(p, d) for _, p, d in PY_RUNS],
                         ids=[i for i, _, _ in PY_RUNS])
def test_python_chains_in_pid_namespace(spanprof, pprofcheck, procs, tmp_path, exe, depth):
    """pythreads.py in @depth PID namespaces: each CPU thread's samples show its exact Python
    chain, at least 95% of them, sized from the thread's own CPU time (test_python.py's
    check_thread: never another thread's function)."""
    version = version_of(exe)
    wrapper = procs.start(*in_pidns([exe, PYTHREADS, PY_SECONDS], depth), stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    info = json.loads(wrapper.stdout.readline())
    pid = target_pid(wrapper, exe, depth)
    tids = host_tids(pid)
    for name, t in info["threads"].items():
        assert t["tid"] in tids, f"{name}: TID {t['tid']} not in the namespace: {tids}"
        assert tids[t["tid"]] != t["tid"], f"{name}: its TID is the host's ({t['tid']})"
        t["tid"] = tids[t["tid"]]
    out = tmp_path / "out"
    res = record_gated(spanprof, out, wrapper, "--pid", pid, "-F", PY_FREQ, timeout=120)
    cpu = json.loads(wrapper.stdout.readline())["cpu"]
    wrapper.wait(timeout=30)
    assert res.stats and res.stats["python"] and res.stats["python"]["processes"] >= 1, \
        res.stderr
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    samples = by_thread(info, [s for s in prof["samples"] if s["values"][0] > 0])
    # Every sample the kernel delivered was recorded; the rate: about FREQ per CPU second on a
    # host, well under half of it in a TCG guest (late timer interrupts: 38% seen on 6.1 at
    # 499 Hz), hence 0.3.
    taken = res.stats["samples"]
    assert taken["taken"] == taken["recorded"], taken
    own = own_functions(info)
    problems, report = [], []
    for name in CPU_THREADS:
        others = set().union(*(f for n, f in own.items() if n != name))
        exact, bad, inexact = check_thread(name, samples[name], info, others)
        problems += bad
        n = count(samples[name])
        report.append(f"{name}: {exact}/{n} exact ({cpu[name]:.2f} s CPU)")
        assert n >= max(20, 0.3 * cpu[name] * PY_FREQ), \
            f"{version} {name}: {n} samples for {cpu[name]:.2f} s of CPU"
        assert exact >= 0.95 * n, \
            f"{version} in {depth} PID namespace(s), {name}: {exact} of {n} samples show its " \
            f"exact chain ({res.stats['python']}); others:\n" + "\n".join(inexact[:5])
    print(f"{version} ({exe}) in {depth} PID namespace(s): " + "; ".join(report))
    assert not problems, "\n".join(problems[:20])


def run_node(spanprof, procs, tmp_path, node, node_args, agent_args=()):
    """jit_chain.js under @node in a PID namespace with a /tmp of its own, gated until the agent
    (@agent_args) samples. Returns (folded stacks, the --stats-json document, CPU seconds, agent
    stderr, the node's PID in its namespace)."""
    script = WORKLOADS / "jit_chain.js"
    wrapper = procs.start(*in_pidns([node, *node_args, f"/tmp/{script.name}", 4],
                                    private_tmp=True, carry=[script]),
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    pid = target_pid(wrapper, node, 1)
    nspid = nspids(f"/proc/{pid}/status")[-1]
    out = tmp_path / "out"
    res = record_gated(spanprof, out, wrapper, "--pid", pid, "--frequency", 99, *agent_args,
                       timeout=120)
    cpu_s = json.loads(wrapper.stdout.readline())["cpu_s"]
    wrapper.wait(timeout=120)
    return read_folded(out / "profile.folded"), res.stats, cpu_s, res.stderr, nspid


@pytest.mark.skipif(not NODES, reason="node (Node.js) is not installed")
@pytest.mark.parametrize("node", [n[1] for n in NODES], ids=[n[0] for n in NODES])
def test_node_in_pid_namespace_named_from_v8(spanprof, procs, tmp_path, node):
    """No flag: the chain named from V8's structures, as outside (test_jit.py)."""
    ours, stats, cpu_s, err, _ = run_node(spanprof, procs, tmp_path, node, NO_INLINING)
    if stats["v8"]["processes"] != 1:
        pytest.skip(f"{node}: its V8 metadata lacks what the agent reads: {stats['v8']}")
    good, total = share(ours, chain_complete)
    print(f"{node} in a PID namespace, V8 structures: chain {good}/{total}")
    assert total >= 0.5 * cpu_s * 99, f"{total} samples for {cpu_s:.1f} s of CPU"
    assert good >= 0.90 * total, (good, total, stats["v8"], [f[-6:] for f, _ in ours[:3]])


@pytest.mark.skipif(not NODES, reason="node (Node.js) is not installed")
def test_node_in_pid_namespace_perf_map(spanprof, procs, tmp_path):
    """--perf-basic-prof, with --no-v8 so the perf map alone names the frames: the map is
    /tmp/perf-NSPID.map in the namespace's own /tmp (the host's /tmp has none), found through
    /proc/PID/root with the PID from NSpid."""
    node = NODES[0][1]
    ours, stats, cpu_s, err, nspid = run_node(
        spanprof, procs, tmp_path, node,
        ["--perf-basic-prof", "--interpreted-frames-native-stack", *NO_INLINING],
        agent_args=("--no-v8",))
    assert not Path(f"/tmp/perf-{nspid}.map").exists(), "the host's /tmp has the map"
    assert "JIT code without names" not in err, err
    jit = stats["jit"]
    assert jit["perf_maps"] == 1 and jit["frames_named"] > 0, jit
    good, total = share(ours, chain_complete)
    print(f"{node} in a PID namespace, perf map in its own /tmp: chain {good}/{total}")
    assert total >= 0.5 * cpu_s * 99, f"{total} samples for {cpu_s:.1f} s of CPU"
    assert good >= 0.90 * total, (good, total, jit)


def test_span_links_in_pid_namespace(spanprof, spanservers, pprofcheck, procs, tmp_path):
    """The static-TLS test server in a PID namespace: samples in a span carry it (99%), never
    another thread's or another span's, as test_spanlinks.py checks outside."""
    binary, _, extra = spanservers["exe"]
    log = tmp_path / "spans.log"
    seen, stop = {}, threading.Event()
    with open(log, "w") as f:
        srv = procs.start(*in_pidns([binary, "8", "4", "-"]), stdout=f, stdin=subprocess.PIPE,
                          text=True)
        deadline = time.time() + 10
        while "ready" not in log.read_text() and time.time() < deadline:
            time.sleep(0.05)
        pid = target_pid(srv, binary, 1)

        def watch():  # the workers start at the gate: their host TIDs while they run
            while not stop.is_set():
                try:
                    seen.update(host_tids(pid))
                except OSError:
                    return
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            res = record_gated(spanprof, tmp_path / "out", srv, "-p", pid, "-F", "97", "-d", "5",
                               *extra)
            srv.wait(timeout=30)
        finally:
            stop.set()
            watcher.join()
    spans = parse_spans(log.read_text())
    assert len(spans) > 50, f"server logged only {len(spans)} spans"
    assert all(s["tid"] in seen and seen[s["tid"]] != s["tid"] for s in spans.values()), \
        (seen, {s["tid"] for s in spans.values()})
    for s in spans.values():
        s["tid"] = seen[s["tid"]]
    c, wrong = check_links(pprofcheck(tmp_path / "out" / "profile.pb.gz"), spans)
    print("span links in a PID namespace:", c)
    assert c["in_span"] > 60, c
    assert c["wrong"] == 0, f"samples linked to the wrong span: {wrong[:5]}"
    assert c["outside_linked"] == 0, c
    assert c["linked"] >= 0.99 * c["in_span"], (c, res.stderr)


def test_agent_in_its_own_pid_namespace_refuses(spanprof, tmp_path):
    """The agent itself in a PID namespace (a container without hostPID): the samples carry the
    host's PIDs, its /proc the namespace's, so it would read other processes than those sampled.
    It refuses at start, saying why and what to do, before loading anything."""
    res = subprocess.run(in_pidns([spanprof, "record", "--duration", 1, "--output-dir",
                                   tmp_path / "out"]), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 1, res.stderr
    assert "running in a PID namespace of its own" in res.stderr, res.stderr
    assert "hostPID: true" in res.stderr and "sampling" not in res.stderr, res.stderr
    assert not (tmp_path / "out").exists()
