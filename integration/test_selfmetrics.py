"""Self-telemetry (docs/self-telemetry.md): the stats lines, --self-metrics into a real Collector,
and the security promises: no listening socket, a clean refusal for an unprivileged user."""
import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, as_nobody, free_port, read_stats, summary_numbers, wait_listening

# What every --self-metrics request carries whatever the machine does (docs/self-telemetry.md).
ALWAYS = {
    "spanprof.samples", "spanprof.stack.read_errors", "spanprof.samples.link_dropped",
    "spanprof.symbolization.misses", "spanprof.symbolization.errors",
    "spanprof.symbolization.frames", "spanprof.debuginfod.files",
    "spanprof.symbol_cache.memory", "spanprof.processes.seen", "spanprof.processes.tracked",
    "spanprof.export.requests", "spanprof.export.calls", "spanprof.export.duration",
    "spanprof.export.size", "spanprof.export.rejected", "spanprof.export.queue.requests",
    "spanprof.export.queue.size", "spanprof.export.samples", "spanprof.export.encode_failures",
    "spanprof.process.cpu.time", "spanprof.process.memory.rss",
    # CFI unwinder and span links are on by default
    "spanprof.unwind.samples", "spanprof.unwind.stops", "spanprof.unwind.frames",
    "spanprof.unwind.refused", "spanprof.bpf.events", "spanprof.span_links.samples",
    "spanprof.go_labels.samples",
    "spanprof.bpf.map.entries", "spanprof.bpf.map.capacity", "spanprof.bpf.map.utilization",
    "spanprof.bpf.map.memory",
}
STATS_LINE = re.compile(r"^spanprof: info: stats (\S+)((?: \S+=\S+)*)$", re.M)


def socket_inodes(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return inodes


def sockets_of(pid):
    """(listening, connected): the process's sockets that accept or receive from anyone, and
    its connected TCP sockets, from /proc/PID/fd and /proc/PID/net/{tcp,tcp6,udp,udp6,unix}."""
    inodes = socket_inodes(pid)
    listening, connected = [], []
    for name in ("tcp", "tcp6", "udp", "udp6"):
        for line in Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]:
            f = line.split()
            if f[9] not in inodes:
                continue
            remote_unset = set(f[2].split(":")[0]) == {"0"}
            if (name.startswith("tcp") and f[3] == "0A") or (name.startswith("udp") and remote_unset):
                listening.append((name, f[1]))
            elif name.startswith("tcp"):
                connected.append((name, f[2]))
    for line in Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]:
        f = line.split()
        if f[6] in inodes and int(f[3], 16) & 0x10000:  # __SO_ACCEPTCON: listen() was called
            listening.append(("unix", f[7] if len(f) > 7 else "(anonymous)"))
    return listening, connected


def stats_lines(stderr):
    """[(group, {key: value})] of the 'spanprof: info: stats' lines, in order."""
    out = []
    for m in STATS_LINE.finditer(stderr):
        out.append((m.group(1), dict(kv.split("=", 1) for kv in m.group(2).split())))
    return out


def start_otelcol(procs, otelcol, port, out_file):
    env = dict(os.environ, OTLP_FILE=str(out_file), OTLP_GRPC_ENDPOINT=f"127.0.0.1:{port}")
    p = procs.start(otelcol, "--config", ROOT / "collector-config/file.yaml", env=env,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, p)
    return p


def attr_value(v):
    for k in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if k in v:
            return int(v[k]) if k == "intValue" else v[k]
    return None


def attrs(lst):
    return {a["key"]: attr_value(a["value"]) for a in lst or []}


def points(metric):
    """(kind, [(attributes, value or histogram point)]) of an OTLP/JSON metric."""
    for kind in ("sum", "gauge", "histogram"):
        if kind in metric:
            out = []
            for p in metric[kind]["dataPoints"]:
                if kind == "histogram":
                    v = p
                elif "asInt" in p:
                    v = int(p["asInt"])
                else:
                    v = p.get("asDouble", 0.0)
                out.append((attrs(p.get("attributes")), v, p))
            return kind, out
    raise AssertionError(f"unknown metric type: {metric}")


def value(metrics, name, **want):
    """The one point of metric @name whose attributes include @want."""
    _, pts = points(metrics[name])
    hits = [v for a, v, _ in pts if all(a.get(k) == w for k, w in want.items())]
    assert len(hits) == 1, (name, want, pts)
    return hits[0]


def test_self_metrics_reach_the_collector(spanprof, workload, procs, tmp_path, otelcol):
    port = free_port()
    out_file = tmp_path / "profiles.jsonl"
    metrics_file = Path(str(out_file) + ".metrics")
    col = start_otelcol(procs, otelcol, port, out_file)
    chain = procs.start(workload("chain"), "30")
    env = dict(os.environ, OTEL_SERVICE_NAME="spanprof-it",
               OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=it%20run,k8s.node.name=n1")
    t_start = time.time_ns()
    agent = procs.start(spanprof, "record", "--endpoint", f"127.0.0.1:{port}", "--self-metrics",
                        "--stats-interval", "2", "--duration", "8", "--export-interval", "2",
                        "--pid", chain.pid, "--frequency", "99", "--stats-json",
                        tmp_path / "stats.json", env=env, stderr=subprocess.PIPE, text=True)
    # While it runs: connected to the Collector (once the first export is due), listening
    # nowhere.
    deadline = time.monotonic() + 30
    connected = []
    while not connected and agent.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
        listening, connected = sockets_of(agent.pid)
        assert not listening, listening
    assert connected, "the agent's connection to the Collector should be visible here"
    _, err = agent.communicate(timeout=120)
    t_end = time.time_ns()
    assert agent.returncode == 0, err
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    assert nums["recorded"] > 0, err

    # Stats lines on stderr, every 2 s: 8 s gives 4 (3 on a machine too loaded to keep up).
    lines = stats_lines(err)
    samples_lines = [kv for g, kv in lines if g == "samples"]
    assert 3 <= len(samples_lines) <= 5, err
    ups = [float(kv["uptime_s"]) for kv in samples_lines]
    assert all(b - a >= 1.9 for a, b in zip(ups, ups[1:])), ups
    rec = [int(kv["recorded"]) for kv in samples_lines]
    assert rec == sorted(rec) and rec[-1] > 0, rec
    groups = {g for g, _ in lines}
    assert {"samples", "unwind", "symbols", "processes", "maps", "export.profiles",
            "export.metrics", "agent"} <= groups, groups
    agent_kv = [kv for g, kv in lines if g == "agent"][-1]
    assert float(agent_kv["rss_mb"]) > 1 and float(agent_kv["cpu_s"]) > 0, agent_kv

    time.sleep(0.5)
    col.terminate()
    col.wait(timeout=30)
    reqs = [json.loads(line) for line in metrics_file.read_text().splitlines()]
    # One request per stats interval plus the final one; a loaded machine may merge none away.
    assert len(reqs) >= 4, len(reqs)
    instance_ids, starts = set(), set()
    last_recorded = -1
    for req in reqs:
        assert len(req["resourceMetrics"]) == 1
        rm = req["resourceMetrics"][0]
        res = attrs(rm["resource"]["attributes"])
        assert res["service.name"] == "spanprof-it"
        assert res["deployment.environment.name"] == "it run"
        assert res["k8s.node.name"] == "n1"
        assert res["process.pid"] == agent.pid
        assert res["host.name"] == socket.gethostname()
        assert res["service.version"] == (ROOT / "VERSION").read_text().strip()
        instance_ids.add(res["service.instance.id"])
        sm = rm["scopeMetrics"][0]
        assert sm["scope"]["name"] == "spanprof"
        metrics = {m["name"]: m for m in sm["metrics"]}
        missing = ALWAYS - set(metrics)
        assert not missing, missing
        for m in sm["metrics"]:
            assert m["name"].startswith("spanprof.") and m.get("unit"), m["name"]
            kind, pts = points(m)
            for _, _, p in pts:
                assert t_start <= int(p["timeUnixNano"]) <= t_end
                if kind != "gauge":
                    starts.add(p["startTimeUnixNano"])
            if kind == "sum":
                assert m["sum"]["aggregationTemporality"] == 2  # CUMULATIVE
                assert m["sum"].get("isMonotonic"), m["name"]
        recorded = value(metrics, "spanprof.samples", outcome="recorded")
        assert recorded >= last_recorded
        last_recorded = recorded
        assert value(metrics, "spanprof.process.memory.rss") > 1 << 20
        assert 0 < value(metrics, "spanprof.bpf.map.capacity", **{"bpf.map.name": "unwind_procs"})
    assert len(instance_ids) == 1 and len(starts) == 1, (instance_ids, starts)

    # The last request holds the final figures: they match the closing summary.
    metrics = {m["name"]: m for m in reqs[-1]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]}
    assert value(metrics, "spanprof.samples", outcome="recorded") == nums["recorded"]
    assert value(metrics, "spanprof.export.samples", outcome="sent") == nums["sent"]
    assert value(metrics, "spanprof.export.requests", signal="profiles", outcome="sent") > 0
    assert value(metrics, "spanprof.export.requests", signal="metrics", outcome="sent") >= 3
    assert value(metrics, "spanprof.export.calls", signal="profiles",
                 **{"rpc.grpc.status_code": 0}) > 0
    cpu = sum(v for _, v, _ in points(metrics["spanprof.process.cpu.time"])[1])
    assert cpu > 0
    hist = value(metrics, "spanprof.export.duration", signal="profiles")
    assert int(hist["count"]) == sum(int(c) for c in hist["bucketCounts"]) > 0
    assert len(hist["bucketCounts"]) == len(hist["explicitBounds"]) + 1
    assert value(metrics, "spanprof.processes.seen") >= 1


PY_SPIN = "def spin():\n    while True:\n        sum(range(100))\n\nspin()\n"


def test_python_counters_reach_the_collector(spanprof, procs, tmp_path, otelcol):
    """The python section of --stats-json (docs/stats-json.md) as self-metrics: a CPU-bound
    CPython process profiled; the last request's spanprof.python.* series hold the closing
    figures, each sample and frame in one series."""
    exe = os.environ.get("SPANPROF_TEST_PYTHON") or next(
        (p for p in ("/usr/bin/python3.11", "/usr/bin/python3") if os.access(p, os.X_OK)), None)
    if not exe:
        pytest.skip("no /usr/bin/python3 to profile")
    port = free_port()
    out_file = tmp_path / "profiles.jsonl"
    metrics_file = Path(str(out_file) + ".metrics")
    col = start_otelcol(procs, otelcol, port, out_file)
    py = procs.start(exe, "-c", PY_SPIN)
    agent = procs.start(spanprof, "record", "--endpoint", f"127.0.0.1:{port}", "--self-metrics",
                        "--stats-interval", "2", "--duration", "6", "--export-interval", "2",
                        "--pid", py.pid, "--frequency", "99", "--quiet", "--stats-json",
                        tmp_path / "stats.json", stderr=subprocess.PIPE, text=True)
    _, err = agent.communicate(timeout=120)
    assert agent.returncode == 0, err
    stats = read_stats(tmp_path / "stats.json")
    pys = stats["python"]
    assert pys is not None and pys["walks"] > 0 and pys["samples_placed"] > 0, (pys, err)
    # The stats line of the python group, every interval.
    line = [kv for g, kv in stats_lines(err) if g == "python"]
    assert line and int(line[-1]["walks"]) > 0, err

    time.sleep(0.5)
    col.terminate()
    col.wait(timeout=30)
    reqs = [json.loads(line) for line in metrics_file.read_text().splitlines()]
    metrics = {m["name"]: m for m in reqs[-1]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]}
    for reason, n in pys["walks_ended"].items():
        assert value(metrics, "spanprof.python.walks", reason=reason) == n, reason
    _, walks = points(metrics["spanprof.python.walks"])
    assert sum(v for _, v, _ in walks) == pys["walks"]
    assert value(metrics, "spanprof.python.processes", outcome="described") == pys["processes"] >= 1
    for reason, n in pys["processes_not_described"].items():
        assert value(metrics, "spanprof.python.processes", outcome="not_described",
                     reason=reason) == n
    assert value(metrics, "spanprof.python.processes.tracked") == pys["processes_now"]
    assert value(metrics, "spanprof.python.files_not_cpython") == pys["files_not_cpython"]
    placed = value(metrics, "spanprof.python.samples", outcome="placed")
    cut = value(metrics, "spanprof.python.samples", outcome="placed_cut")
    assert placed + cut == pys["samples_placed"] and cut == pys["samples_cut"]
    assert value(metrics, "spanprof.python.samples", outcome="not_placed") == \
        pys["samples_not_placed"]
    assert value(metrics, "spanprof.python.samples", outcome="dropped") == pys["samples_dropped"]
    assert value(metrics, "spanprof.python.samples", outcome="process_not_described") == \
        pys["samples_not_described"]
    assert value(metrics, "spanprof.python.frames", outcome="named") == pys["frames_named"] > 0
    assert value(metrics, "spanprof.python.frames", outcome="unnamed") + \
        value(metrics, "spanprof.python.frames", outcome="stale") == pys["frames_unnamed"]
    assert value(metrics, "spanprof.python.frames", outcome="stale") == pys["frames_stale"]
    for reason, n in pys["reads_failed"].items():
        assert value(metrics, "spanprof.python.read_errors", reason=reason) == n
    assert value(metrics, "spanprof.python.code_objects", source="cache") == \
        pys["code_objects_cached"]
    assert value(metrics, "spanprof.python.code_objects", source="read") == \
        pys["code_objects_read"] > 0


def test_default_run_listens_nowhere_and_logs_stats(spanprof, workload, procs, tmp_path):
    chain = procs.start(workload("chain"), "30")
    agent = procs.start(spanprof, "record", "--duration", "5", "--stats-interval", "1",
                        "--pid", chain.pid, "--output-dir", tmp_path / "out",
                        stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    listening, _ = sockets_of(agent.pid)
    assert not listening, listening
    _, err = agent.communicate(timeout=120)
    assert agent.returncode == 0, err
    lines = stats_lines(err)
    assert len([1 for g, _ in lines if g == "samples"]) >= 3, err
    # Without an endpoint there is nothing to report about exports.
    assert not [g for g, _ in lines if g.startswith("export")], err

    # Below info, no stats line; the summary stays.
    res = subprocess.run([str(spanprof), "record", "--duration", "2.5", "--stats-interval", "1",
                          "--log-level", "warn", "--pid", str(chain.pid), "--output-dir",
                          str(tmp_path / "out2")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert not stats_lines(res.stderr), res.stderr
    assert re.search(r"^spanprof: \d+ samples from \d+ processes in ", res.stderr, re.M), \
        res.stderr


def test_unreachable_collector_does_not_hold_sampling(spanprof, workload, procs, tmp_path):
    port = free_port()  # nobody listens there
    chain = procs.start(workload("chain"), "30")
    t0 = time.monotonic()
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{port}",
                          "--self-metrics", "--stats-interval", "1", "--duration", "5",
                          "--export-interval", "1", "--flush-timeout", "1", "--pid",
                          str(chain.pid), "--frequency", "49"],
                         capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    assert res.returncode == 1, res.stderr  # no sample reached a Collector
    # Sampling ran its course: the samples recorded keep growing while nothing is sent.
    rec = [int(kv["recorded"]) for g, kv in stats_lines(res.stderr) if g == "samples"]
    assert len(rec) >= 3 and rec[-1] > rec[0] > 0, res.stderr
    # The self-metrics queue stays within its bound (1 MiB).
    for g, kv in stats_lines(res.stderr):
        if g == "export.metrics":
            assert int(kv["queue_kb"]) <= 1024, kv
            assert int(kv["sent"]) == 0, kv
    # 5 s of sampling, two 1 s flushes: a hung sender would show here.
    assert elapsed < 60, elapsed


def test_self_metrics_usage_errors(spanprof, tmp_path):
    for args in (["--self-metrics"],  # no endpoint
                 ["--self-metrics", "--endpoint", "127.0.0.1:1", "--stats-interval", "0"],
                 ["--stats-interval", "0.5"], ["--stats-interval", "x"],
                 ["--log-level", "loud"]):
        res = subprocess.run([str(spanprof), "record", "--duration", "1", "--output-dir",
                              str(tmp_path / "o"), *args], capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items()
                                  if not k.startswith("OTEL_EXPORTER_OTLP")})
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.strip(), args
        assert not (tmp_path / "o").exists(), args


def test_unprivileged_user_refused_without_partial_state(spanprof, tmp_path):
    """As nobody, with the export and --self-metrics: one clear line, exit 1, and nothing done:
    no bpf() call at all, no connection to the Collector, no output directory."""
    os.chmod(tmp_path, 0o777)
    out = tmp_path / "out"
    trace = tmp_path / "strace.log"
    with socket.socket() as lsn:
        lsn.bind(("127.0.0.1", 0))
        lsn.listen(4)
        lsn.settimeout(0.5)
        port = lsn.getsockname()[1]
        res = subprocess.run(["strace", "-f", "-qq", "-e", "trace=bpf,perf_event_open,connect",
                              "-o", str(trace),
                              *as_nobody(spanprof, "record", "--endpoint", f"127.0.0.1:{port}",
                                         "--self-metrics", "--stats-interval", "1",
                                         "--duration", "2", "--output-dir", out)],
                             capture_output=True, text=True, timeout=60)
        try:
            conn, _ = lsn.accept()
            conn.close()
            connected = True
        except socket.timeout:
            connected = False
    assert res.returncode == 1, res.stderr
    assert "CAP_BPF" in res.stderr and "root" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not out.exists()
    assert not connected, "the refused agent connected to the Collector"
    calls = trace.read_text()
    assert not re.search(r"\bbpf\(|perf_event_open\(", calls), calls
    assert f"htons({port})" not in calls, calls


def test_collector_without_metrics_pipeline(spanprof, workload, procs, tmp_path, otelcol):
    """span-links.yaml has no metrics pipeline: the metrics calls fail (UNIMPLEMENTED, counted
    as failed, not dropped), one error line, and the profiles go through untouched."""
    port = free_port()
    env = dict(os.environ, OTLP_GRPC_ENDPOINT=f"127.0.0.1:{port}",
               OTLP_HTTP_ENDPOINT=f"127.0.0.1:{free_port()}",
               OTLP_TRACES_FILE=str(tmp_path / "traces.jsonl"),
               OTLP_PROFILES_FILE=str(tmp_path / "profiles.jsonl"))
    col = procs.start(otelcol, "--config", ROOT / "collector-config/span-links.yaml", env=env,
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, col)
    chain = procs.start(workload("chain"), "30")
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{port}",
                          "--self-metrics", "--stats-interval", "1", "--duration", "4",
                          "--export-interval", "1", "--pid", str(chain.pid), "--quiet",
                          "--stats-json", str(tmp_path / "stats.json")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    assert nums["sent"] == nums["recorded"] > 0 and nums["failed"] == 0, res.stderr
    assert len(re.findall(r"failed: UNIMPLEMENTED", res.stderr)) == 1, res.stderr
    last = [kv for g, kv in stats_lines(res.stderr) if g == "export.metrics"][-1]
    assert int(last["failed"]) >= 1 and int(last["calls.UNIMPLEMENTED"]) == int(last["failed"])
    assert int(last["dropped"]) == 0 and int(last["sent"]) == 0, last
