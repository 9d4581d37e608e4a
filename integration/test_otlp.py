"""OTLP export into a real OpenTelemetry Collector, and the agent's behaviour when it misbehaves."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (NOT_LOADED, ROOT, cpu_seconds, free_port, read_stats, summary_numbers,
                      wait_listening, wait_sampling)


def is_subsequence(needle, hay):
    it = iter(hay)
    return all(x in it for x in needle)


def start_otelcol(procs, otelcol, port, out_file):
    env = dict(os.environ, OTLP_FILE=str(out_file), OTLP_GRPC_ENDPOINT=f"127.0.0.1:{port}")
    p = procs.start(otelcol, "--config", ROOT / "collector-config/file.yaml",
                    "--feature-gates=service.profilesSupport", env=env,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, p)
    return p


def start_testcollector(procs, binary, port, out_file, *args):
    p = procs.start(binary, "-listen", f"127.0.0.1:{port}", "-out", out_file, *args,
                    stderr=subprocess.DEVNULL)
    wait_listening(port, p)
    return p


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


def received(path):
    """testcollector output: {profile_id: samples} over every accepted request."""
    got = {}
    if not Path(path).exists():
        return got
    for line in Path(path).read_text().splitlines():
        for prof in json.loads(line).get("profiles") or []:
            got[prof["profile_id"]] = prof["samples"]
    return got


def vm_rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def spanprof_bg(procs, spanprof, stats, *args, env=None):
    """'spanprof record ARGS' in the background, its --stats-json file at @stats."""
    return procs.start(spanprof, "record", "--stats-json", stats, *map(str, args),
                       stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("sample_attrs", ["default", "all"])
def test_real_collector_receives_valid_profiles(spanprof, workload, procs, tmp_path, otelcol,
                                                otlpcheck, sample_attrs):
    """By default a sample carries thread.name only (no series per thread id or CPU in a
    backend that makes sample attributes labels); --sample-attributes all adds thread.id and
    cpu.logical_number."""
    port = free_port()
    out_file = tmp_path / "profiles.jsonl"
    col = start_otelcol(procs, otelcol, port, out_file)
    env = dict(os.environ, OTEL_SERVICE_NAME="chain-svc",
               OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=it,SECRET_NOT=x")
    env["UNRELATED_SECRET"] = "hunter2"
    # Runs until the test ends (procs kills it): the agent's start-up takes seconds on a loaded
    # machine and longer in a TCG guest, so a workload of fixed length could end before sampling.
    chain = procs.start(workload("chain"), "600", env=env)
    reqdir = tmp_path / "requests"
    t_start = time.time_ns()
    stats = tmp_path / "stats.json"
    agent = procs.start(spanprof, "record", "--endpoint", f"127.0.0.1:{port}", "--pid",
                        chain.pid, "--duration", "8", "--export-interval", "2", "--frequency",
                        "99", "--output-dir", reqdir, "--stats-json", stats,
                        *(["--sample-attributes", "all"] if sample_attrs == "all" else []),
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)
    seen = wait_sampling(agent)
    cpu0 = cpu_seconds(chain.pid)  # the expected count comes from the workload's CPU time
    time.sleep(8)
    cpu = cpu_seconds(chain.pid) - cpu0
    _, err = agent.communicate(timeout=600)
    t_end = time.time_ns()
    res = subprocess.CompletedProcess(agent.args, agent.returncode, "", "".join(seen) + err)
    assert res.returncode == 0, res.stderr
    st = read_stats(stats)
    nums = summary_numbers(st)
    # About 99 samples per CPU second on a host, 46% of that in a loaded TCG guest (its timer
    # interrupts come late): 0.4 of the nominal rate, counting the samples BPF took (an agent
    # starved of CPU in a guest loses some to a full ring buffer, accounted for).
    samples = st["samples"]
    assert samples["taken"] == nums["recorded"] + samples["lost_out_of_memory"], st
    taken = samples["taken"] + samples["lost_ring_buffer"]
    assert taken >= 0.4 * cpu * 99 and nums["recorded"] >= 50, (cpu, res.stderr)
    assert nums["sent"] == nums["recorded"] and nums["dropped"] == 0, res.stderr
    time.sleep(0.5)
    stop(col)

    got = otlpcheck(out_file)
    assert got["ok"], got["errors"][:5]
    msgs = [m for i in got["inputs"] for m in i["messages"]]
    assert len(msgs) >= 4, "expected one request per 2 s interval"
    events = full = marked = 0
    for m in msgs:
        assert not m["errors"], m["errors"][:3]
        for rp in m["resource_profiles"]:
            a = rp["attributes"]
            assert a["process.pid"] == chain.pid
            assert a["service.name"] == "chain-svc"
            assert a["deployment.environment.name"] == "it"
            assert a["process.executable.name"] == "chain"
            assert a["process.executable.path"].endswith("/chain")
            assert a["host.name"] == socket.gethostname()
            assert not any("hunter2" in str(v) for v in a.values())
            for sc in rp["scopes"]:
                assert sc["name"] == "spanprof"
                for p in sc["profiles"]:
                    assert p["sample_type"] == "samples:count"
                    assert p["period_type"] == "cpu:nanoseconds"
                    assert p["period"] == 1_000_000_000 // 99
                    assert t_start <= p["time_unix_nano"] <= t_end
                    assert p["time_unix_nano"] + p["duration_nano"] <= t_end + 10**9
                    for d in p["sample_details"]:
                        assert d["timestamps"], "CPU samples carry timestamps"
                        for ts in d["timestamps"]:
                            assert t_start <= ts <= t_end
                        assert d["attributes"]["thread.name"] == "chain"
                        if sample_attrs == "all":
                            assert d["attributes"]["thread.id"] == chain.pid
                            assert "cpu.logical_number" in d["attributes"]
                        else:
                            assert "thread.id" not in d["attributes"], d["attributes"]
                            assert "cpu.logical_number" not in d["attributes"], d
                        assert set(d["attributes"]) <= {
                            "thread.name", "thread.id", "cpu.logical_number"}, d
                        # Samples before the tables were built end in the "not loaded yet"
                        # marker, an "abort" frame (the OpenTelemetry profiler's error frames).
                        abort = {"abort"} if d["frames"][-1:] == [NOT_LOADED] else set()
                        assert set(d["frame_types"]) <= {"native", "kernel"} | abort, d
                    for st in p["stacks"]:
                        events += st["events"]
                        # frames are leaf first
                        if is_subsequence(["c", "b", "a", "main"], st["frames"]):
                            full += st["events"]
                        elif st["frames"][-1:] == [NOT_LOADED]:
                            marked += st["events"]
    assert events == nums["sent"], "the Collector holds a different number of samples"
    assert full >= 0.9 * (events - marked), \
        f"only {full}/{events} samples with c<b<a<main ({marked} before the tables)"

    # The same requests, as written locally, decode the same.
    files = sorted(reqdir.glob("profiles-*.binpb"))
    assert len(files) == len(msgs)
    local = otlpcheck(*files)
    assert local["ok"]
    assert sum(m["totals"]["events"] for i in local["inputs"] for m in i["messages"]) == events


def test_collector_down_at_start_then_up(spanprof, workload, procs, tmp_path,
                                         testcollector_bin):
    port = free_port()
    out = tmp_path / "recv.jsonl"
    chain = procs.start(workload("chain"), "30")
    agent = spanprof_bg(procs, spanprof, tmp_path / "stats.json", "--endpoint",
                        f"127.0.0.1:{port}", "--pid", chain.pid,
                        "--duration", 16, "--export-interval", 1, "--frequency", 49,
                        "--flush-timeout", 20)
    time.sleep(4)
    rss_early = vm_rss_kib(agent.pid)
    time.sleep(6)
    rss_late = vm_rss_kib(agent.pid)
    # While the Collector is away requests wait in the bounded queue: memory must not run away.
    assert rss_late - rss_early < 16 * 1024, (rss_early, rss_late)
    assert not received(out)
    start_testcollector(procs, testcollector_bin, port, out)
    _, err = agent.communicate(timeout=90)
    assert agent.returncode == 0, err
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    assert nums["retries"] > 0, err
    assert nums["dropped"] == 0 and nums["failed"] == 0, err
    assert sum(received(out).values()) == nums["recorded"] == nums["sent"], err


def test_collector_restarted_mid_run(spanprof, workload, procs, tmp_path, testcollector_bin):
    port = free_port()
    out1, out2 = tmp_path / "recv1.jsonl", tmp_path / "recv2.jsonl"
    col = start_testcollector(procs, testcollector_bin, port, out1)
    chain = procs.start(workload("chain"), "30")
    agent = spanprof_bg(procs, spanprof, tmp_path / "stats.json", "--endpoint",
                        f"127.0.0.1:{port}", "--pid", chain.pid,
                        "--duration", 16, "--export-interval", 1, "--frequency", 49,
                        "--flush-timeout", 20)
    time.sleep(5)
    col.kill()
    col.wait()
    time.sleep(4)
    start_testcollector(procs, testcollector_bin, port, out2)
    _, err = agent.communicate(timeout=90)
    assert agent.returncode == 0, err
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    assert nums["dropped"] == 0 and nums["failed"] == 0, err
    got = {**received(out1), **received(out2)}
    assert received(out1) and received(out2), "both Collector lives should have received data"
    assert sum(got.values()) == nums["recorded"] == nums["sent"], err


def test_collector_slower_than_deadline(spanprof, workload, procs, tmp_path, testcollector_bin):
    port = free_port()
    out = tmp_path / "recv.jsonl"
    # Slow (3 s per call against a 1 s deadline) for its first 8 s, then prompt.
    start_testcollector(procs, testcollector_bin, port, out, "-delay", "3s", "-slow-for", "8s")
    chain = procs.start(workload("chain"), "30")
    agent = spanprof_bg(procs, spanprof, tmp_path / "stats.json", "--endpoint",
                        f"127.0.0.1:{port}", "--pid", chain.pid,
                        "--duration", 14, "--export-interval", 1, "--export-timeout", 1,
                        "--frequency", 49, "--flush-timeout", 30)
    _, err = agent.communicate(timeout=120)
    assert agent.returncode == 0, err
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    assert nums["retries"] > 0, err
    # The client's deadline fires (DEADLINE_EXCEEDED), or the server cancels the call past the
    # grpc-timeout it was sent first (CANCELLED, RST_STREAM 8): both are retried.
    assert re.search(r"failed: (DEADLINE_EXCEEDED|CANCELLED).*\(retrying with backoff\)", err), err
    assert nums["dropped"] == 0 and nums["failed"] == 0, err
    assert sum(received(out).values()) == nums["recorded"] == nums["sent"], err


def test_full_queue_drops_oldest_and_counts(spanprof, workload, procs, tmp_path):
    port = free_port()  # nobody listens: every request waits in the queue
    chain = procs.start(workload("chain"), "30")
    agent = spanprof_bg(procs, spanprof, tmp_path / "stats.json", "--endpoint",
                        f"127.0.0.1:{port}", "--pid", chain.pid,
                        "--duration", 6, "--export-interval", 0.5, "--frequency", 99,
                        "--queue-bytes", 8192, "--flush-timeout", 1)
    _, err = agent.communicate(timeout=60)
    assert agent.returncode == 1 and "no sample reached the Collector" in err, err
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    assert nums["sent"] == 0
    assert nums["dropped"] > 0
    # Every recorded sample is accounted for: none sent, all dropped.
    assert nums["dropped_samples"] == nums["recorded"], err


def test_unreachable_collector_does_not_block_sigterm(spanprof, workload, procs, tmp_path):
    port = free_port()
    agent = spanprof_bg(procs, spanprof, tmp_path / "stats.json", "--endpoint",
                        f"127.0.0.1:{port}", "--duration", 60,
                        "--export-interval", 1, "--flush-timeout", 2)
    time.sleep(4)
    t0 = time.time()
    agent.send_signal(signal.SIGTERM)
    _, err = agent.communicate(timeout=60)
    assert agent.returncode in (0, 1), err
    assert time.time() - t0 < 6, "shutdown is not bounded by --flush-timeout"
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    assert nums["dropped_samples"] == nums["recorded"]


def test_env_endpoint_and_bad_tls_file(spanprof, tmp_path):
    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT="https://127.0.0.1:1")
    res = subprocess.run([str(spanprof), "record", "--duration", "1", "--tls-ca",
                          str(tmp_path / "missing.pem")], capture_output=True, text=True, env=env)
    assert res.returncode != 0
    assert "missing.pem" in res.stderr and "127.0.0.1:1" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    res = subprocess.run([str(spanprof), "record", "--duration", "1", "--tls-ca", str(garbage)],
                         capture_output=True, text=True, env=env)
    assert res.returncode != 0
    assert "garbage.pem holds no PEM certificate" in res.stderr, res.stderr
    env = dict(os.environ, OTEL_EXPORTER_OTLP_TIMEOUT="soon")
    res = subprocess.run([str(spanprof), "record", "--duration", "1"], capture_output=True,
                         text=True, env=env)
    assert res.returncode == 2 and "OTEL_EXPORTER_OTLP_TIMEOUT" in res.stderr


def test_refused_type_loses_only_its_own_samples(spanprof, workload, procs, tmp_path,
                                                 testcollector_bin):
    """A backend refusing one profile type with a non-retryable status (Grafana Pyroscope on
    off-CPU: INVALID_ARGUMENT "sample values length mismatch") loses that type only: each
    request carries one type, so every CPU sample the agent says it sent is received, the
    off-CPU ones are counted as refused for their type, and the report names the type."""
    port = free_port()
    out = tmp_path / "recv.jsonl"
    start_testcollector(procs, testcollector_bin, port, out, "-refuse-type", "off_cpu")
    chain = procs.start(workload("chain"), "600")  # on CPU
    sleeper = procs.start(sys.executable, "-c",  # off CPU: 5 ms sleeps
                          "import time\nwhile True: time.sleep(0.005)")
    stats = tmp_path / "stats.json"
    agent = spanprof_bg(procs, spanprof, stats, "--endpoint", f"127.0.0.1:{port}",
                        "--profile", "cpu,offcpu", "--offcpu-min", "2ms",
                        "--pid", f"{chain.pid},{sleeper.pid}", "--duration", 6,
                        "--export-interval", 1, "--frequency", 99, "--flush-timeout", 20)
    seen = wait_sampling(agent)
    cpu0 = cpu_seconds(chain.pid)  # the expected count comes from the workload's CPU time
    _, err = agent.communicate(timeout=120)
    cpu = cpu_seconds(chain.pid) - cpu0
    err = "".join(seen) + err
    assert agent.returncode == 0, err
    st = read_stats(stats)
    recorded = {t: v["recorded"] for t, v in st["samples"]["by_type"].items()}
    e = st["export"]
    by_type = e["by_type"]
    assert set(by_type) == {"cpu", "offcpu"}, by_type

    recs = [json.loads(line) for line in out.read_text().splitlines()]
    kept = [p for r in recs if not r.get("refused") for p in r["profiles"]]
    refused = [r for r in recs if r.get("refused")]
    # One type per request: the accepted ones hold CPU only, the refused ones off-CPU only.
    assert kept and all(p["sample_type"] == "samples" for p in kept), recs[:3]
    assert refused, "the sleeper's off-CPU samples should have been sent (and refused)"
    assert all(p["sample_type"] == "off_cpu" for r in refused for p in r["profiles"]), refused[:3]

    # Every CPU sample recorded is sent, every one sent is received: none lost with off-CPU.
    c = by_type["cpu"]
    assert c["samples_sent"] == sum(p["samples"] for p in kept), (c, err)
    assert c["samples_sent"] == recorded["cpu"] and c["failed_samples"] == 0, (c, recorded, err)
    assert c["dropped_samples"] == 0 and c["failed_status"] is None, c
    assert recorded["cpu"] >= 0.4 * cpu * 99 and recorded["cpu"] >= 50, (cpu, recorded)

    # Every off-CPU sample is refused, and counted so for its type.
    o = by_type["offcpu"]
    assert o["samples_sent"] == 0 and o["requests_sent"] == 0, o
    assert o["failed"] == len(refused), (o, len(refused))
    assert o["failed_samples"] == recorded["offcpu"] > 0, (o, recorded)
    assert o["failed_samples"] == sum(p["samples"] for r in refused for p in r["profiles"]), o
    assert o["failed_status"] == "INVALID_ARGUMENT", o
    assert "refusing sample type off_cpu" in o["failed_message"], o
    assert e["samples_sent"] == c["samples_sent"] and e["failed_samples"] == o["failed_samples"]
    assert e["retries"] == 0, "INVALID_ARGUMENT is not retryable"

    # The report names the refused type, with the status, and says what to do.
    line = (f"offcpu: {o['failed_samples']} samples refused by the Collector at "
            f"127.0.0.1:{port} (INVALID_ARGUMENT: testcollector: refusing sample type off_cpu "
            f"on purpose): not retried")
    problems = {p["id"]: p["message"] for p in st["problems"]}
    assert problems.get("export_type_refused", "").startswith(line), st["problems"]
    assert "leave it out of --profile" in problems["export_type_refused"]
    assert "export_failed" not in problems, st["problems"]
    assert f"spanprof: {line}" in err, err


def test_large_intervals_are_split(spanprof, workload, procs, tmp_path, testcollector_bin,
                                   otlpcheck):
    port = free_port()
    out = tmp_path / "recv.jsonl"
    start_testcollector(procs, testcollector_bin, port, out)
    procs.start(workload("chain"), "8")  # enough samples whatever else the machine does
    procs.start(workload("syscalls"), "8")
    reqdir = tmp_path / "requests"
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{port}",
                          "--duration", "4", "--export-interval", "2", "--frequency", "99",
                          "--max-request-bytes", "8192", "--output-dir", str(reqdir),
                          "--stats-json", str(tmp_path / "stats.json")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    files = sorted(reqdir.glob("profiles-*.binpb"))
    assert len(files) > 2, "a whole-machine interval should need several 8 KiB requests"
    assert all(f.stat().st_size <= 8192 for f in files)
    assert otlpcheck(*files)["ok"]
    assert sum(received(out).values()) == nums["recorded"] == nums["sent"], res.stderr


def test_conflicting_tls_options_are_refused(spanprof, tmp_path):
    for args, env, needle in (
            (["--endpoint", "http://127.0.0.1:1", "--tls-ca", "/etc/hostname"], {}, "https://"),
            (["--endpoint", "https://127.0.0.1:1", "--insecure"], {}, "contradicts"),
            (["--endpoint", "https://127.0.0.1:1"], {"OTEL_EXPORTER_OTLP_INSECURE": "true"},
             "contradicts"),
            (["--endpoint", "127.0.0.1:1"], {"OTEL_EXPORTER_OTLP_INSECURE": "maybe"},
             "OTEL_EXPORTER_OTLP_INSECURE")):
        res = subprocess.run([str(spanprof), "record", "--duration", "1", *args],
                             capture_output=True, text=True, env=dict(os.environ, **env))
        assert res.returncode == 2, (args, res.stderr)
        assert needle in res.stderr, (args, res.stderr)


def test_headers_from_env_and_flags_reach_the_collector(spanprof, workload, procs, tmp_path,
                                                         testcollector_bin):
    port = free_port()
    out = tmp_path / "recv.jsonl"
    start_testcollector(procs, testcollector_bin, port, out, "-record-headers")
    chain = procs.start(workload("chain"), "10")  # samples to send, whatever the machine does
    env = dict(os.environ, OTEL_EXPORTER_OTLP_HEADERS="X-Team=prof%20team,x-override=env")
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{port}",
                          "--pid", str(chain.pid), "--duration", "2", "--export-interval", "1",
                          "--header", "X-Override=flag"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(l) for l in out.read_text().splitlines()]
    assert lines, "nothing received"
    for rec in lines:
        assert rec["headers"]["x-team"] == "prof team"
        assert rec["headers"]["x-override"] == "flag"


def test_flush_timeout_bounds_the_end_of_a_timed_run(spanprof, workload, procs, tmp_path):
    chain = procs.start(workload("chain"), "30")
    t0 = time.time()
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{free_port()}",
                          "--pid", str(chain.pid), "--duration", "2", "--export-interval", "1",
                          "--flush-timeout", "3", "--stats-json", str(tmp_path / "stats.json")],
                         capture_output=True, text=True, timeout=60)
    elapsed = time.time() - t0
    assert res.returncode == 1, res.stderr
    # start-up + 2 s of sampling + at most 3 s of flushing, with slack for start-up
    assert elapsed < 2 + 3 + 4, f"took {elapsed:.1f} s"
    duration = read_stats(tmp_path / "stats.json")["run"]["duration_s"]
    assert 2.0 <= duration < 2.2, "the summary should report the sampling time"
    # No sample reached the Collector: the problem line says so, with what to do.
    assert re.search(r"^spanprof: no sample reached the Collector at .*; check that the "
                     r"Collector runs", res.stderr, re.M), res.stderr


def test_second_signal_abandons_the_flush(spanprof, workload, procs, tmp_path):
    chain = procs.start(workload("chain"), "30")
    agent = spanprof_bg(procs, spanprof, tmp_path / "stats.json", "--endpoint",
                        f"127.0.0.1:{free_port()}", "--pid",
                        chain.pid, "--export-interval", 0.5, "--flush-timeout", 60)
    wait_sampling(agent)  # a loaded machine can take seconds to start
    time.sleep(3)
    agent.send_signal(signal.SIGINT)
    time.sleep(1)
    t0 = time.time()
    agent.send_signal(signal.SIGINT)
    _, err = agent.communicate(timeout=30)
    # Well under the 60 s flush timeout it abandons (a loaded machine takes seconds to exit).
    assert time.time() - t0 < 15, err
    assert "Ctrl-C again" in err


def test_header_names_are_checked(spanprof):
    for hdr in ("bad key=1", ":authority=x", "a=b\r\nx: y"):
        res = subprocess.run([str(spanprof), "record", "--endpoint", "127.0.0.1:1", "--duration",
                              "1", "--header", hdr], capture_output=True, text=True)
        assert res.returncode == 2, (hdr, res.stderr)
        assert "header" in res.stderr, res.stderr


def test_export_interval_holds_with_the_cpus_saturated(spanprof, workload, procs, tmp_path, otelcol,
                                                        otlpcheck):
    """Every CPU busy with work started before the agent: the run still sends one request per
    export interval, each holding the samples taken in it, and every sample reaches the Collector
    (a main thread behind, reading maps or building tables, once merged the intervals into one).
    The intervals are in sample time, so a late agent still counts them right."""
    port = free_port()
    out_file = tmp_path / "profiles.jsonl"
    col = start_otelcol(procs, otelcol, port, out_file)
    burners = [procs.start(workload("chain"), "600") for _ in range(os.cpu_count() or 2)]
    interval, duration = 2, 10
    stats = tmp_path / "stats.json"
    agent = procs.start(spanprof, "record", "--endpoint", f"127.0.0.1:{port}",
                        *[a for b in burners for a in ("--pid", str(b.pid))],
                        "--duration", str(duration), "--export-interval", str(interval),
                        "--frequency", "99", "--output-dir", tmp_path / "requests",
                        "--stats-json", stats, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)
    seen = wait_sampling(agent)
    _, err = agent.communicate(timeout=600)
    err = "".join(seen) + err
    assert agent.returncode == 0, err
    nums = summary_numbers(read_stats(stats))
    assert nums["sent"] == nums["recorded"] > 0 and nums["dropped"] == 0, err
    time.sleep(0.5)
    stop(col)

    got = otlpcheck(out_file)
    assert got["ok"], got["errors"][:5]
    msgs = [m for i in got["inputs"] for m in i["messages"]]
    # duration / interval intervals; one may hold no sample of a burner starved by the load.
    expected = duration // interval
    assert len(msgs) >= expected - 1, (len(msgs), err)
    events, windows = 0, []
    for m in msgs:
        for rp in m["resource_profiles"]:
            for sc in rp["scopes"]:
                for p in sc["profiles"]:
                    start, end = p["time_unix_nano"], p["time_unix_nano"] + p["duration_nano"]
                    windows.append((start, end))
                    # A sample's CPU may stamp it a few ms before another CPU's later one.
                    for d in p["sample_details"]:
                        for ts in d["timestamps"]:
                            assert start - 50_000_000 <= ts <= end + 50_000_000, (ts, start, end)
                    for st in p["stacks"]:
                        events += st["events"]
    assert events == nums["recorded"], "the Collector holds a different number of samples"
    # Each request is its own interval: no two overlap, none is longer than the interval.
    starts = sorted(set(windows))
    for (s0, e0), (s1, _) in zip(starts, starts[1:]):
        assert e0 <= s1, starts
    assert all(e - s <= interval * 1_000_000_000 + 1_000_000 for s, e in starts), starts
