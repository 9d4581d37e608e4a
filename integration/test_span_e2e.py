"""End to end: a real OpenTelemetry SDK, a real Collector, spans joined with profile samples.

An application instrumented with the OpenTelemetry Python SDK (workloads/sdkapp.py) exports
its spans to the pinned Collector over OTLP/HTTP and publishes its active span through the
writer library (writer/python). spanprof sends its profiles to the same Collector over gRPC.
The test joins the Collector's traces and profiles on span_id: every span longer than 100 ms
has linked samples whose stacks contain that span's Python handler (a CPython frame,
docs/python.md) with its native function above it; every span carries pyroscope.profile.id
(its own span id, for Grafana's traces-to-profiles).
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BUILD, ROOT, WORKLOADS, compile_c, free_port, wait_listening

VENV = BUILD / "otel-sdk-venv"
SDK_PACKAGES = ["opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"]
FUNCTION = {"checkout": "burn_checkout", "search": "burn_search", "render": "burn_render"}
HANDLER = {name: f"sdkapp.handle_{name}" for name in FUNCTION}


@pytest.fixture(scope="session")
def sdk_python():
    """A virtualenv with the OpenTelemetry Python SDK from PyPI, made once per build dir."""
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    res = subprocess.run([str(py), "-c", "import opentelemetry.sdk, "
                          "opentelemetry.exporter.otlp.proto.http"], capture_output=True)
    if res.returncode != 0:
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *SDK_PACKAGES], check=True, timeout=600)
    return py


def otlp_json_spans(path):
    """Spans from the Collector's file exporter (OTLP/JSON lines): span_id hex -> span (trace_id,
    name, start/end in seconds, ms, attributes: key -> the OTLP/JSON value, e.g. a string)."""
    spans = {}
    for line in Path(path).read_text().splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    attrs = {a["key"]: next(iter(a["value"].values()), None)
                             for a in sp.get("attributes", [])}
                    spans[sp["spanId"].lower()] = {
                        "attributes": attrs,
                        "trace_id": sp["traceId"].lower(), "name": sp["name"],
                        "start": int(sp["startTimeUnixNano"]) / 1e9,
                        "end": int(sp["endTimeUnixNano"]) / 1e9,
                        "ms": (int(sp["endTimeUnixNano"]) - int(sp["startTimeUnixNano"])) / 1e6}
    return spans


def start_span_collector(procs, otelcol, tmp_path):
    """The pinned Collector with collector-config/span-links.yaml, listening (OTLP gRPC and
    HTTP on free ports), writing traces and profiles as OTLP/JSON lines into @tmp_path.
    Returns (process, grpc_port, http_port, traces_file, profiles_file)."""
    grpc_port, http_port = free_port(), free_port()
    traces, profiles = tmp_path / "traces.jsonl", tmp_path / "profiles.jsonl"
    env = dict(os.environ, OTLP_GRPC_ENDPOINT=f"127.0.0.1:{grpc_port}",
               OTLP_HTTP_ENDPOINT=f"127.0.0.1:{http_port}", OTLP_TRACES_FILE=str(traces),
               OTLP_PROFILES_FILE=str(profiles))
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        col = procs.start(otelcol, "--config", ROOT / "collector-config/span-links.yaml",
                          env=env, stdout=out, stderr=subprocess.STDOUT)
    wait_listening(grpc_port, col, log=log)
    wait_listening(http_port, col, log=log)
    return col, grpc_port, http_port, traces, profiles


def linked_samples(out):
    """From an otlpcheck result: the samples with a link by span id (hex, lower case), every
    sample's timestamp (ns: when spanprof really sampled) and the service.name of every
    resource."""
    by_span, stamps, service_names = {}, [], set()
    for inp in out["inputs"]:
        for msg in inp["messages"]:
            for rp in msg["resource_profiles"]:
                service_names.add(rp["attributes"].get("service.name"))
                for scope in rp["scopes"]:
                    for p in scope["profiles"]:
                        for s in p.get("sample_details") or []:
                            stamps.extend(s.get("timestamps") or [])
                            if s.get("link"):
                                by_span.setdefault(s["link"]["span_id"].lower(), []).append(s)
    return by_span, stamps, service_names


class LinkJudge:
    """Judges span links in the async span-link tests (test_span_python_async.py,
    test_span_node.py), whose workloads burn CPU in native functions named ENDPOINT_before,
    _between, _after (inside the endpoint's span), ENDPOINT_unspanned or outside_span (in no
    span). @slack_ns: how far a sample's time may be outside its span's [start, end]."""

    def __init__(self, endpoints, slack_ns):
        alt = "|".join(endpoints)
        self.in_span = re.compile(r"^(%s)_(before|between|after)$" % alt)
        self.outside = re.compile(r"^((%s)_unspanned|outside_span)$" % alt)
        self.slack_ns = slack_ns

    def endpoint_of(self, frames):
        """(endpoint, in_span) of the first endpoint function in a stack, or (None, None)."""
        for f in frames:
            m = self.in_span.match(f or "")
            if m:
                return m.group(1), True
            m = self.outside.match(f or "")
            if m:
                return m.group(2) or "outside", False
        return None, None

    def judge(self, spans, frames, link, t_ns):
        """'right', 'wrong: why', 'unlinked' or None (a sample of no endpoint, unlinked), for a
        sample taken at @t_ns with @frames and @link (trace id, span id), against @spans {span
        id: {trace_id, name, start_ns, end_ns}}."""
        ep, in_span = self.endpoint_of(frames)
        if not link[1]:
            return "unlinked" if in_span else None
        sp = spans.get(link[1])
        if sp is None:
            return "wrong: an id the SDK never exported"
        if sp["trace_id"] != link[0]:
            return "wrong: trace id"
        if in_span is False:
            return "wrong: CPU outside any span is linked"
        if ep is not None and sp["name"] != ep:
            return f"wrong: {ep} sample linked to a {sp['name']} span"
        if not sp["start_ns"] - self.slack_ns <= t_ns <= sp["end_ns"] + self.slack_ns:
            return "wrong: the span's time does not hold the sample"
        return "right" if ep is not None else None


def sample_times(out):
    """From an otlpcheck result: (link (trace id, span id; hex, lower case, "" when none),
    frames, timestamp ns) for every timestamp of every sample."""
    for inp in out["inputs"]:
        for msg in inp["messages"]:
            for rp in msg["resource_profiles"]:
                for scope in rp["scopes"]:
                    for p in scope["profiles"]:
                        for s in p.get("sample_details") or []:
                            link = s.get("link") or {}
                            link = (link.get("trace_id", "").lower(),
                                    link.get("span_id", "").lower())
                            for t in s.get("timestamps") or []:
                                yield link, s["frames"], t


def test_sdk_spans_join_profile_samples(spanprof, otelcol, otlpcheck, procs, workdir,
                                        tmp_path, sdk_python):
    burnlib = compile_c(WORKLOADS / "burnlib.c", workdir / "libburn.so",
                        ["-fPIC", "-shared", "-fomit-frame-pointer"])
    col, grpc_port, http_port, traces, profiles = start_span_collector(procs, otelcol, tmp_path)

    app_env = dict(os.environ, PYTHONPATH=str(ROOT / "writer" / "python"),
                   SPANPROF_CTX_LIB=str(BUILD / "writer" / "libspanprof_ctx.so"))
    app = procs.start(sdk_python, WORKLOADS / "sdkapp.py", burnlib,
                      f"http://127.0.0.1:{http_port}/v1/traces", "9", env=app_env,
                      stdout=subprocess.PIPE, text=True)
    first = app.stdout.readline()
    assert first.startswith("ready"), first
    t_launch = time.time()
    prof = procs.start(spanprof, "record", "-p", app.pid, "-F", "97", "-d", "7", "-q",
                       "--endpoint", f"127.0.0.1:{grpc_port}", "--export-interval", "1",
                       stderr=subprocess.PIPE, text=True)
    _, err = prof.communicate(timeout=120)
    t_exit = time.time()
    assert prof.returncode == 0, err
    app.stdout.read()
    assert app.wait(timeout=60) == 0
    time.sleep(1.5)  # the file exporters flush every 100 ms
    col.send_signal(signal.SIGTERM)
    col.wait(timeout=30)

    spans = otlp_json_spans(traces)
    assert spans, "the Collector received no spans"
    out = otlpcheck(profiles)
    assert out["ok"], out["errors"][:5]
    by_span, stamps, service_names = linked_samples(out)
    # service.name comes from the process context the SDK published (OTEP 4719).
    assert "sdk-e2e" in service_names, service_names
    # Spans that ran while spanprof sampled: between its first and last sample (start-up
    # takes a while on a loaded machine; CFI tables of python3 and its libraries are built).
    assert stamps, "no sample timestamps"
    first, last = min(stamps) / 1e9, max(stamps) / 1e9
    assert t_launch <= first + 1 and last <= t_exit + 1, (t_launch, first, last, t_exit)
    long_spans = {sid: sp for sid, sp in spans.items() if sp["ms"] > 100 and
                  sp["start"] >= first + 0.3 and sp["end"] <= last - 0.3}
    assert len(long_spans) >= 10, f"only {len(long_spans)} long spans"
    missing, wrong = [], []
    for sid, sp in long_spans.items():
        samples = by_span.get(sid, [])
        # Some of a span's samples are in the interpreter around the native call; at least
        # one must be in the span's own function under its Python handler, and none in
        # another endpoint's.
        # The handler is a CPython frame: OTLP profile.frame.type "cpython".
        if not any(FUNCTION[sp["name"]] in s["frames"] and HANDLER[sp["name"]] in s["frames"]
                   and "cpython" in (s.get("frame_types") or []) for s in samples):
            missing.append((sid, sp, [s["frames"][:6] for s in samples]))
        for s in samples:
            if s["link"]["trace_id"].lower() != sp["trace_id"]:
                wrong.append((sid, "trace id", s["link"]))
            others = (set(FUNCTION.values()) | set(HANDLER.values())) - \
                {FUNCTION[sp["name"]], HANDLER[sp["name"]]}
            if others & set(s["frames"]):
                wrong.append((sid, sp["name"], s["frames"][:5]))
    assert not wrong, wrong[:5]
    assert not missing, f"{len(missing)} of {len(long_spans)} long spans unlinked: {missing[:3]}"
    # Every linked sample belongs to a span the Collector received.
    assert set(by_span) <= set(spans), set(by_span) - set(spans)
    # Grafana's traces-to-profiles: spanprof_context.install() set pyroscope.profile.id = the
    # span's own id on every span (roots and children), so the span selector Tempo builds from
    # it reaches each span's linked samples.
    bad_ids = {sid: sp["attributes"].get("pyroscope.profile.id") for sid, sp in spans.items()
               if sp["attributes"].get("pyroscope.profile.id") != sid}
    assert not bad_ids, f"{len(bad_ids)} of {len(spans)} spans: {list(bad_ids.items())[:5]}"
