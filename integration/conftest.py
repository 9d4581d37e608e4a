"""Shared fixtures for spanprof's integration tests (root, real BPF, real kernel)."""
import ctypes
import json
import os
import shutil
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = (ROOT / os.environ.get("BUILD", "build")).resolve()
SPANPROF = BUILD / "spanprof"
WORKLOADS = Path(__file__).resolve().parent / "workloads"
# How many times slower than this machine the tests run: integration/kernels/guest.sh sets
# SPANPROF_TEST_SLOWDOWN in its TCG guest. Only for a workload whose length must outlast the
# agent's lag behind it (a test sized from CPU time needs no such factor).
SLOWDOWN = float(os.environ.get("SPANPROF_TEST_SLOWDOWN", "1"))


def pytest_collection_modifyitems(config, items):
    # These tests drive the real kernel: without root they cannot run at all.
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="integration tests need root (BPF, perf events)")
        for item in items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def spanprof():
    assert SPANPROF.exists(), f"{SPANPROF} is missing: run 'make' first"
    return SPANPROF


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("spanprof-it")


def compile_c(src, out, flags=()):
    cmd = ["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls",
           *flags, "-o", str(out), str(src)]
    subprocess.run(cmd, check=True)
    return out


@pytest.fixture(scope="session")
def workload(workdir):
    """Compiles integration/workloads/NAME.c once per session; returns its path."""
    built = {}

    def get(name, flags=()):
        key = (name, tuple(flags))
        if key not in built:
            built[key] = compile_c(WORKLOADS / f"{name}.c",
                                   workdir / (name + ("-" + "-".join(f.strip("-") for f in flags) if flags else "")),
                                   flags)
        return built[key]
    return get


def go_build(name):
    """Builds the Go test peer integration/NAME into the build directory; returns its path.
    SPANPROF_PEERS_PREBUILT=1 (a guest of integration/kernels/run.sh, whose file system is
    read-only): the host built it already."""
    out = BUILD / name
    if os.environ.get("SPANPROF_PEERS_PREBUILT") == "1" and out.exists():
        return out
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=ROOT / "integration" / name,
                   check=True)
    return out


def go_proxy_unreachable():
    """Why the Go module proxy can't be reached (a string), or None when it answers: the one
    reason a test needing a module or a Go toolchain that is not in the module cache may skip."""
    import urllib.error
    import urllib.request
    proxy = subprocess.run(["go", "env", "GOPROXY"], capture_output=True, text=True,
                           env=dict(os.environ, GOTOOLCHAIN="local")).stdout.strip()
    first = proxy.replace("|", ",").split(",")[0]
    if first in ("off", ""):
        return f"GOPROXY={proxy!r}"
    url = "https://proxy.golang.org" if first == "direct" else first.rstrip("/")
    try:
        urllib.request.urlopen(f"{url}/golang.org/toolchain/@v/list", timeout=30).close()
    except (urllib.error.URLError, OSError) as e:
        return f"{url}: {e}"
    return None


def go_fetch(cmd, what, **kw):
    """Runs a go command that may fetch from the Go module proxy (go mod download, a
    GOTOOLCHAIN=goX.Y.Z go version). On failure skips the test when the proxy is unreachable
    (saying so, with @what was missing), else fails with the command's output."""
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    if res.returncode != 0:
        why = go_proxy_unreachable()
        if why:
            pytest.skip(f"{what} is not in the Go module cache and the Go module proxy is "
                        f"unreachable ({why}): {res.stderr.strip()[-300:]}")
        raise AssertionError(f"{' '.join(map(str, cmd))} failed with the proxy reachable:\n"
                             f"{res.stderr}")
    return res


@pytest.fixture(scope="session")
def pprofcheck(workdir):
    """The reference Go pprof decoder (integration/pprofcheck), built once."""
    out = go_build("pprofcheck")

    def decode(path):
        res = subprocess.run([str(out), str(path)], capture_output=True, text=True, check=True)
        return json.loads(res.stdout)
    return decode


class Procs:
    """Starts child processes and makes sure none outlives the test."""

    def __init__(self):
        self.procs = []

    def start(self, *args, **kw):
        p = subprocess.Popen([str(a) for a in args], **kw)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def procs():
    p = Procs()
    yield p
    p.close()


def forget_stats(path):
    """Removes an earlier run's stats file (a run that fails before sampling writes none)."""
    try:
        Path(path).unlink(missing_ok=True)
    except OSError:
        pass  # its directory is not one (the test's output directory is made unusable)


def with_stats(res, path):
    """@res with .stats: the run's --stats-json document, or None when it wrote none."""
    res.stats = read_stats(path) if Path(path).exists() else None
    return res


def record(spanprof, outdir, *args, timeout=600, check=True):
    """Runs 'spanprof record' to completion and returns the CompletedProcess, with .stats its
    --stats-json document (with_stats()). @timeout is a hang guard, not a time budget: a
    whole-host run in a TCG guest takes over two minutes."""
    stats = stats_path(outdir)
    forget_stats(stats)
    res = subprocess.run([str(spanprof), "record", "--output-dir", str(outdir), "--stats-json",
                          str(stats), *map(str, args)],
                         capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"spanprof failed ({res.returncode}):\n{res.stderr}")
    return with_stats(res, stats)


def cpu_seconds(pid):
    """User + system CPU time of process @pid so far (/proc/PID/stat fields 14 and 15): what a
    test sizes its expected sample count from (a slow or loaded machine runs a workload less
    than the wall-clock time)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_sampling(agent):
    """Reads a running agent's stderr up to its "spanprof: sampling" line (sampling has begun),
    and with --pid up to the line saying the targets' unwind tables are in (they are built
    while sampling runs; the samples before are marked): a workload let go then is walked
    whole from its first sample. Fails with what it printed if it exits first. Not for --quiet
    runs (no such line)."""
    args = [str(a) for a in agent.args]
    want = ["spanprof: sampling"]
    if "--pid" in args or "-p" in args:
        want.append("spanprof: unwind tables of the targeted processes")
    seen = []
    for w in want:
        while not seen or w not in seen[-1]:
            seen.append(agent.stderr.readline())
            if not seen[-1]:
                raise AssertionError(f"spanprof exited before '{w}':\n" + "".join(seen) +
                                     agent.stderr.read())
    return seen


def record_gated(spanprof, outdir, gate, *args, timeout=120, check=True):
    """Runs 'spanprof record' (without --quiet) like record() (.stats too), on a workload held at
    a gate:
    @gate, a Popen with stdin=PIPE, waits for a line on its stdin before it starts working, and
    gets one once the agent samples. So a loaded machine's slow start (BPF verification, first
    tables) never makes the agent miss a workload of fixed length."""
    stats = stats_path(outdir)
    forget_stats(stats)
    agent = subprocess.Popen([str(spanprof), "record", "--output-dir", str(outdir),
                              "--stats-json", str(stats), *map(str, args)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        seen = wait_sampling(agent)
        gate.stdin.write("go\n")
        gate.stdin.close()
        _, err = agent.communicate(timeout=timeout)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    res = subprocess.CompletedProcess(agent.args, agent.returncode, "", "".join(seen) + err)
    if check and res.returncode != 0:
        raise AssertionError(f"spanprof failed ({res.returncode}):\n{res.stderr}")
    return with_stats(res, stats)


def as_nobody(*cmd):
    """@cmd run as the unprivileged user nobody, without any capability (setpriv)."""
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all",
            *map(str, cmd)]


def read_folded(path):
    """profile.folded as a list of (frames root..leaf, count)."""
    out = []
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        out.append((stack.split(";"), int(count)))
    return out


NOT_LOADED = "[truncated: not loaded yet]"


def loaded(stacks):
    """(@stacks without those taken before the process's tables were in, how many those were).
    A --pid run starts sampling before its targets' tables are built (on the builder thread,
    exporter/unwind/unwinder.h unwinder__preload()): those first samples hold the leaf only
    (and what the leaf's inlines name) under the "not loaded yet" marker, checked here."""
    out, marked = [], 0
    for f, c in stacks:
        if NOT_LOADED in f:
            assert f[1] == NOT_LOADED, f"the marker is not the root: {f}"
            user = [x for x in f[2:] if not x.endswith("_[k]")]
            assert len(user) <= 2, f"more than the leaf before the tables: {f}"
            marked += c
            continue
        out.append((f, c))
    return out, marked


def bpf_prog_ids(pid):
    """Ids of the BPF programs a process holds open (its /proc/PID/fdinfo)."""
    import glob
    ids = set()
    for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            for line in open(f):
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def loaded_prog_ids():
    """Ids of every BPF program loaded in the kernel."""
    res = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    return {p["id"] for p in json.loads(res.stdout or "[]")}


_handed_out_ports = set()


def free_port():
    """A TCP port on 127.0.0.1 that nothing uses now and that this session has not handed out
    before. It lies below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range):
    a port from bind(0) is an ephemeral one, which any outgoing connection (the agent's, the
    Collector's, a browser's) may take between this call and the listener's bind, and two
    calls may even return the same one (CI stop 25: a Collector exited with 1)."""
    import socket
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    low = 10000 if ephemeral_low > 12000 else 1024
    span = ephemeral_low - low
    start = low + (os.getpid() * 97) % span  # concurrent sessions start apart
    for i in range(span):
        port = low + (start - low + i) % span
        if port in _handed_out_ports:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out_ports.add(port)
        return port
    raise AssertionError(f"no free TCP port in {low}..{ephemeral_low - 1}")


@pytest.fixture(scope="session")
def otelcol():
    """The pinned OpenTelemetry Collector (integration/collector), built once."""
    out = BUILD / "otelcol-spanprof"
    subprocess.run([str(ROOT / "integration/collector/build.sh"), str(out)], check=True)
    return out


@pytest.fixture(scope="session")
def otlpcheck():
    """Independent OTLP decoder (integration/otlpcheck, the Collector's pdata). Returns decode()."""
    out = go_build("otlpcheck")

    def decode(*paths):
        res = subprocess.run([str(out), "-compact", *map(str, paths)], capture_output=True,
                             text=True)
        assert res.returncode in (0, 1), res.stderr
        return json.loads(res.stdout)
    return decode


@pytest.fixture(scope="session")
def testcollector_bin():
    return go_build("testcollector")


def wait_listening(port, proc, timeout=30, log=None):
    """Waits until something listens on 127.0.0.1:@port, failing if @proc exits first (with the
    end of @log, the file its output went to, when given) or after @timeout seconds."""
    import socket
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            said = ""
            if log is not None and Path(log).exists():
                said = ": " + Path(log).read_text(errors="replace")[-2000:]
            raise AssertionError(f"collector exited with {proc.returncode}{said}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def read_stats(path):
    """The --stats-json file of a run (docs/stats-json.md): every counter of its accounting."""
    stats = json.loads(Path(path).read_text())
    assert stats["schema"] == "spanprof-stats" and stats["version"] == 1, stats
    return stats


def stats_path(outdir):
    """Where record() and record_gated() ask for the --stats-json file of a run writing @outdir:
    beside it, so that the output directory holds only the outputs."""
    return Path(str(outdir).rstrip("/") + ".stats.json")


def summary_numbers(stats):
    """Counts from a run's --stats-json document (read_stats()): recorded samples and, when it
    exported, the export's (sent, bytes, retries, failed, dropped, dropped_samples)."""
    out = {"recorded": stats["samples"]["recorded"]}
    e = stats.get("export")
    if e:
        out.update(bytes=e["bytes_sent"], sent=e["samples_sent"], retries=e["retries"],
                   failed=e["failed"], dropped=e["dropped"], dropped_samples=e["dropped_samples"])
    return out


def fentry_refused(func):
    """Why this kernel takes no fentry program on @func (a string), or None when it loads one.
    Asked of the kernel directly (bpf(BPF_PROG_LOAD) of "return 0" for the function's BTF id),
    not of spanprof's own probe."""
    dump = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"],
                          capture_output=True, text=True).stdout
    ids = [line.split("]")[0][1:] for line in dump.splitlines() if f"FUNC '{func}'" in line]
    if not ids:
        return f"{func} is not in the kernel's BTF"
    insns = bytes.fromhex("b700000000000000" "9500000000000000")  # r0 = 0; exit
    lic = ctypes.create_string_buffer(b"GPL")
    ibuf = ctypes.create_string_buffer(insns, len(insns))
    attr = ctypes.create_string_buffer(128)  # union bpf_attr, BPF_PROG_LOAD's fields
    # prog_type BPF_PROG_TYPE_TRACING, insn_cnt, insns, license
    struct.pack_into("IIQQ", attr, 0, 26, 2, ctypes.addressof(ibuf), ctypes.addressof(lic))
    struct.pack_into("I", attr, 68, 24)  # expected_attach_type BPF_TRACE_FENTRY
    struct.pack_into("I", attr, 108, int(ids[0]))  # attach_btf_id
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(321, 5, attr, 128)  # __NR_bpf (x86-64), BPF_PROG_LOAD
    if fd < 0:
        return f"the kernel refuses fentry programs on {func}: {os.strerror(ctypes.get_errno())}"
    os.close(fd)
    return None
