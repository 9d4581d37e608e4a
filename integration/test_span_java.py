"""Span links in Java (issue 29): a service run under the real OpenTelemetry Java agent (Maven
Central io.opentelemetry.javaagent:opentelemetry-javaagent) with the spanprof extension
(writer/java, `make java-extension`), no OpenTelemetry code in the service: every sample of a
request links to that request's own span, never to another request's.

workloads/JavaShop.java is an HTTP service (the JDK's com.sun.net.httpserver, which the agent
instruments: one SERVER span per request, its url.path the endpoint) with three endpoints; each
request burns CPU in methods named after the endpoint and the phase: before (the handler's
thread), between (a task of a second executor, which the agent's executor instrumentation hands
the request's context) and after (the handler's thread, after a 1 ms sleep). Clients in the same
JVM (raw sockets: no client span) burn outside_span between requests. Spans go by OTLP/HTTP to
the pinned Collector, the ground truth; spanprof sends its profiles to the same Collector.
Java methods are named from the JVM's own structures, with no flag (docs/java.md), so a sample's
stack tells which endpoint and phase ran. A sample in an endpoint's
in-span method is right when it links to a span of that endpoint whose time holds it;
everything else a link points at is wrong (LinkJudge).

Two runs:
- platform threads (JDK 17, fixed thread pools): >= 90% of each endpoint's in-span samples
  right, zero wrong links;
- virtual threads (JDK 21+, Temurin 25; virtual-thread-per-task executors on one carrier, so a
  virtual thread unmounting in its sleep leaves the carrier to another request): the extension
  publishes nothing on virtual threads (docs/java.md): zero wrong links, the linked fraction
  printed (0%).
Also: the native part missing, the service runs unchanged and the extension says so once; and
writer/java/test ContextCheck (no agent, no spanprof): what a thread publishes, read back from
otel_thread_ctx_v1, is the current context's recording span at every step of nested scopes,
executor tasks and, on JDK 25, 200 virtual threads sharing one carrier that unmount between steps.
"""
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, ROOT, WORKLOADS, record_gated
from test_span_e2e import LinkJudge, linked_samples, sample_times, start_span_collector

EXTENSION = BUILD / "writer" / "java" / "spanprof-java.jar"
AGENT = BUILD / "java" / "opentelemetry-javaagent.jar"
ENDPOINTS = ["checkout", "search", "render"]
FREQ = 199
SECONDS = 6
# Sample times against span times: 3 ms as in test_span_python_async.py (an endpoint's requests
# are at least 20 ms apart: a link to its previous request's span is still caught).
JUDGE = LinkJudge(ENDPOINTS, slack_ns=3_000_000)
JDK17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")
JDK25 = Path("/usr/lib/jvm/temurin-25-jdk-amd64")
# (id, thread kind, JDK, extra JVM flags, whether in-span samples must link)
RUNS = [("platform-jdk17", "platform", JDK17, [], True),
        ("virtual-jdk25", "virtual", JDK25, [], True),
        # Virtual threads without the mount hooks: nothing published, nothing wrong.
        ("virtual-jdk25-unhooked", "virtual", JDK25, ["-Dspanprof.virtualThreads=false"], False)]


def java_method(frame):
    """The method of a Java frame ("JavaShop.checkout_before"; a perf-map name "long
    JavaShop.checkout_before(long)" too), or the frame unchanged."""
    m = re.search(r"JavaShop[.:]+(\w+)(\(|$)", frame or "")
    return m.group(1) if m else frame


def built():
    for p in (EXTENSION, AGENT):
        assert p.exists(), f"{p} is missing: run 'make java-extension' (make check does)"


def compile_shop(jdk, tmp_path):
    classes = tmp_path / "classes"
    subprocess.run([str(jdk / "bin" / "javac"), "-nowarn", "-d", str(classes),
                    str(WORKLOADS / "JavaShop.java")], check=True)
    return classes


def java_cmd(jdk, classes, mode, seconds, *extra):
    cmd = [str(jdk / "bin" / "java"),
           # The burners stay methods of their own (C2 would inline them into phase()).
           "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,JavaShop::*",
           f"-javaagent:{AGENT}", f"-Dotel.javaagent.extensions={EXTENSION}",
           "-Dotel.service.name=java-shop", *extra]
    if mode == "virtual":
        # One carrier: virtual threads that unmount (the handler's sleep, waiting for its task)
        # hand it to another request's virtual thread.
        cmd.append("-Djdk.virtualThreadScheduler.parallelism=1")
    return cmd + ["-cp", str(classes), "JavaShop", mode, str(seconds)]


def java_env(http_port=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "SPANPROF_JAVA_", "JAVA_TOOL_OPTIONS"))}
    # The service name as a system property (java_cmd), not OTEL_SERVICE_NAME: spanprof reads
    # that variable from the process's environment, and the test wants the process context's.
    env.update(OTEL_METRICS_EXPORTER="none",
               OTEL_LOGS_EXPORTER="none", OTEL_BSP_SCHEDULE_DELAY="200")
    if http_port:
        env.update(OTEL_TRACES_EXPORTER="otlp", OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                   OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{http_port}")
    else:
        env["OTEL_TRACES_EXPORTER"] = "none"
    return env


def collector_spans(path):
    """Span id -> {trace_id, name (the endpoint of its url.path, else the span's name),
    start_ns, end_ns, profile_id (the attribute pyroscope.profile.id, or None)}."""
    spans = {}
    for line in Path(path).read_text().splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    attrs = {a["key"]: next(iter(a["value"].values()), None)
                             for a in sp.get("attributes", [])}
                    path = attrs.get("url.path") or ""
                    spans[sp["spanId"].lower()] = {
                        "trace_id": sp["traceId"].lower(),
                        "name": path.lstrip("/") or sp["name"],
                        "start_ns": int(sp["startTimeUnixNano"]),
                        "end_ns": int(sp["endTimeUnixNano"]),
                        "profile_id": attrs.get("pyroscope.profile.id")}
    return spans


@pytest.mark.parametrize("run", RUNS, ids=[r[0] for r in RUNS])
def test_java_samples_link_to_their_own_request(spanprof, otelcol, otlpcheck, procs, tmp_path,
                                                run):
    name, mode, jdk, flags, linked = run
    if not (jdk / "bin" / "java").exists():
        pytest.skip(f"{jdk} is not installed")
    built()
    classes = compile_shop(jdk, tmp_path)
    col, grpc_port, http_port, traces, profiles = start_span_collector(procs, otelcol, tmp_path)
    err_log = tmp_path / "java.stderr"
    with open(err_log, "w") as err:
        app = procs.start(*java_cmd(jdk, classes, mode, SECONDS, *flags), env=java_env(http_port),
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
    first = app.stdout.readline()
    assert first.startswith("ready"), first + err_log.read_text()[-3000:]
    rec = record_gated(spanprof, tmp_path / "out", app, "-p", app.pid, "-F", FREQ, "-d",
                 str(SECONDS + 3), "--endpoint", f"127.0.0.1:{grpc_port}",
                 "--export-interval", "1")
    done = app.stdout.read()
    assert app.wait(timeout=60) == 0, done + err_log.read_text()[-3000:]
    col.send_signal(signal.SIGTERM)
    col.wait(timeout=30)
    stderr = err_log.read_text()
    assert "spanprof: publishing each thread's current span" in stderr, stderr[-3000:]
    assert "spanprof: the native part did not load" not in stderr, stderr[-3000:]
    m = re.match(r"done (\d+) ([\d.]+) (\d+) (\d+)", done.strip())
    assert m, done
    requests, work = int(m.group(1)), float(m.group(2))
    virtual_handlers, handlers = int(m.group(3)), int(m.group(4))
    assert requests >= 30 and handlers >= requests, done
    # The handlers ran on the threads the run is about.
    assert virtual_handlers == (handlers if mode == "virtual" else 0), done

    spans = collector_spans(traces)
    served = [s for s in spans.values() if s["name"] in ENDPOINTS]
    assert len(served) >= requests, f"the Collector got {len(served)} request spans: {done}"
    # The extension's span processor: pyroscope.profile.id = the span's own id, on every span
    # (Grafana's traces-to-profiles).
    bad_ids = [(sid, s["name"], s["profile_id"]) for sid, s in spans.items()
               if s["profile_id"] != sid]
    assert not bad_ids, f"{len(bad_ids)} of {len(spans)} spans: {bad_ids[:5]}"

    otlp = otlpcheck(profiles)
    assert otlp["ok"], otlp["errors"][:5]
    per, per_phase, wrong, linked_other, farthest, total = {}, {}, [], 0, 0, 0
    for link, frames, t in sample_times(otlp):
        total += 1
        names = [java_method(f) for f in frames]
        ep, in_span = JUDGE.endpoint_of(names)
        v = JUDGE.judge(spans, names, link, t)
        sp = spans.get(link[1])
        if sp:  # how far a linked sample is outside its span's time
            farthest = max(farthest, sp["start_ns"] - t, t - sp["end_ns"])
        if v and v.startswith("wrong"):
            wrong.append((v, link, names[:12], t))
        if in_span:
            c = per.setdefault(ep, {"in_span": 0, "right": 0})
            c["in_span"] += 1
            c["right"] += v == "right"
            # by phase: "between" runs in the second executor's threads
            phase = next(n for n in names if JUDGE.in_span.match(n or "")).split("_")[1]
            c = per_phase.setdefault(phase, {"in_span": 0, "right": 0})
            c["in_span"] += 1
            c["right"] += v == "right"
        elif link[1] and ep is None:
            linked_other += 1
    summary = (f"{name}: right/in-span samples " + ", ".join(
        f"{ep} {c['right']}/{c['in_span']}" for ep, c in sorted(per.items())) +
        " (by phase: " + ", ".join(
            f"{ph} {c['right']}/{c['in_span']}" for ph, c in sorted(per_phase.items())) + ")" +
        f"; wrong links {len(wrong)}; other linked samples {linked_other}; linked samples at "
        f"most {farthest / 1e6:.2f} ms outside their span; samples {total}; spans {len(spans)};"
        f" app: {done.strip()}")
    print(summary)
    assert not wrong, f"{len(wrong)} wrong links: {wrong[:5]}\n{summary}"
    # Sized from the in-span work the app did (calibrated CPU time), shared by three
    # endpoints; ask for a third of it.
    need = max(8, int(work * FREQ / len(ENDPOINTS) / 3))
    for ep in ENDPOINTS:
        c = per.get(ep, {"in_span": 0, "right": 0})
        assert c["in_span"] >= need, f"too few {ep} samples (want {need}): {summary}"
        if linked:
            assert c["right"] >= 0.90 * c["in_span"], f"{ep}: {c}\n{summary}"
        else:
            assert c["right"] == 0, f"{ep}: {c}\n{summary}"
    # Thread pools: the tasks of the second executor link to the request that submitted them.
    between = per_phase.get("between", {"in_span": 0, "right": 0})
    assert between["in_span"] >= need, summary
    if linked:
        assert between["right"] >= 0.90 * between["in_span"], summary
    # The process context (OTEP 4719): the agent's resource (its service.name from the system
    # property), published by the extension.
    assert rec.stats["span_links"]["processes_with_process_context"] >= 1, rec.stats["span_links"]
    assert "java-shop" in linked_samples(otlp)[2], summary


CHECK_JDKS = [("jdk17", JDK17, 0), ("jdk25", JDK25, 200)]


@pytest.mark.parametrize("jdk_run", CHECK_JDKS, ids=[c[0] for c in CHECK_JDKS])
def test_java_context_check(tmp_path, jdk_run):
    """ContextCheck: the published span is the current context's recording span (or none) at
    every check point: nested scopes, executor tasks, virtual threads that unmount."""
    name, jdk, virtual = jdk_run
    if not (jdk / "bin" / "java").exists():
        pytest.skip(f"{jdk} is not installed")
    built()
    cp = f"{EXTENSION}:" + (BUILD / "writer" / "java" / "api.classpath").read_text().strip()
    classes = tmp_path / "check"
    subprocess.run([str(jdk / "bin" / "javac"), "-nowarn", "-cp", cp, "-d", str(classes),
                    str(ROOT / "writer" / "java" / "test" / "spanprof" / "context" /
                        "ContextCheck.java")], check=True)
    res = subprocess.run([str(jdk / "bin" / "java"), "-Djdk.virtualThreadScheduler.parallelism=1",
                          "-cp", f"{cp}:{classes}", "spanprof.context.ContextCheck",
                          str(virtual)], capture_output=True, text=True, timeout=120)
    print(f"{name}: {res.stdout.strip()}")
    assert res.returncode == 0 and res.stdout.startswith("ok "), res.stdout + res.stderr[-2000:]
    # 50 check points per thread: main, 4 platform threads, the virtual ones; + 1 at the end;
    # + 5 of pyroscope.profile.id (3 spans, the switch on and off)
    assert int(res.stdout.split()[1]) == 50 * (5 + virtual) + 1 + 5, res.stdout


def test_java_extension_without_its_native_part(tmp_path):
    """The native part missing: the service runs and answers as without the extension, and the
    extension says why, once."""
    if not (JDK17 / "bin" / "java").exists():
        pytest.skip(f"{JDK17} is not installed")
    built()
    classes = compile_shop(JDK17, tmp_path)
    res = subprocess.run(java_cmd(JDK17, classes, "platform", 1,
                                  f"-Dspanprof.native={tmp_path}/missing.so"),
                         input="go\n", capture_output=True, text=True, timeout=180,
                         env=java_env())
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert re.search(r"^done \d+", res.stdout, re.M), res.stdout
    assert res.stderr.count("spanprof: the native part did not load") == 1, res.stderr[-3000:]
    assert "spanprof: publishing" not in res.stderr, res.stderr[-3000:]
