"""End to end in Go: the OpenTelemetry Go SDK, a real Collector, spans joined with profile samples.

A Go HTTP service instrumented with the OpenTelemetry Go SDK v1.47.0 (workloads/gosdkapp, its
own module: go.mod/go.sum committed, modules from the Go module proxy) exports its spans to the
pinned Collector over OTLP gRPC and runs each span's work under pprof goroutine labels span_id,
trace_id and span_name, as Grafana's otel-profiling-go marks spans. spanprof reads the labels
in BPF (docs/go.md) and sends its profiles to the same Collector. The test joins the
Collector's traces and profiles on span_id: every span over 100 ms has linked samples whose
stacks contain its endpoint's handler function, and no sample is linked to a span of another
endpoint.
"""
import os
import signal
import subprocess
import time

import pytest

from conftest import BUILD, WORKLOADS, go_fetch, wait_sampling
from test_span_e2e import linked_samples, otlp_json_spans, start_span_collector

APP = WORKLOADS / "gosdkapp"
HANDLER = {"checkout": "main.handleCheckout", "search": "main.handleSearch",
           "render": "main.handleRender"}
CPU_SECONDS = 6
FREQ = 97
GO_ENV = dict(os.environ, GOTOOLCHAIN="local")


@pytest.fixture(scope="session")
def gosdkapp():
    """The service, built once per session; its modules fetched from the Go module proxy
    (or found in the module cache, where `make deps` puts them)."""
    go_fetch(["go", "mod", "download"], "the OpenTelemetry Go SDK (gosdkapp's go.sum)",
             cwd=APP, env=GO_ENV)
    out = BUILD / "gosdkapp"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=APP, env=GO_ENV, check=True,
                   timeout=900)
    return out


def test_go_sdk_spans_join_profile_samples(spanprof, otelcol, otlpcheck, procs, tmp_path,
                                           gosdkapp):
    col, grpc_port, _, traces, profiles = start_span_collector(procs, otelcol, tmp_path)

    app = procs.start(gosdkapp, f"127.0.0.1:{grpc_port}", str(CPU_SECONDS), "-",
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert app.stdout.readline().strip() == "ready"
    # The workload starts once the agent samples (it stops when the service exits: --pid).
    agent = procs.start(spanprof, "record", "-p", app.pid, "-F", FREQ, "--endpoint",
                        f"127.0.0.1:{grpc_port}", "--export-interval", "1",
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = wait_sampling(agent)
    app.stdin.write("go\n")
    app.stdin.close()
    done = app.stdout.read()
    assert app.wait(timeout=300) == 0, done
    _, err = agent.communicate(timeout=120)
    err = "".join(seen) + err
    assert agent.returncode == 0, err
    time.sleep(1.5)  # the file exporters flush every 100 ms
    col.send_signal(signal.SIGTERM)
    col.wait(timeout=30)

    spans = otlp_json_spans(traces)
    assert spans, "the Collector received no spans"
    assert {sp["name"] for sp in spans.values()} == set(HANDLER), spans
    out = otlpcheck(profiles)
    assert out["ok"], out["errors"][:5]
    by_span, stamps, _ = linked_samples(out)
    assert stamps, "no sample timestamps"
    first, last = min(stamps) / 1e9, max(stamps) / 1e9
    # Spans whose work ran while spanprof sampled (the gate opens once it samples; its last
    # export may end a little before the service's last span).
    window = {sid: sp for sid, sp in spans.items()
              if sp["start"] >= first - 0.5 and sp["end"] <= last - 0.3}
    long_spans = {sid: sp for sid, sp in window.items() if sp["ms"] > 100}
    # A span over 100 ms of wall-clock time had its CPU time (burn.cpu_ms, from the thread's
    # CPU clock) sampled at FREQ Hz: render spans (10 ms of CPU) last that long only on a
    # loaded machine, and then have about one sample to show. The others burn >= 130 ms:
    # about 12 samples each, P(none) < 1e-5.
    sure = {sid: sp for sid, sp in long_spans.items()
            if float(sp["attributes"].get("burn.cpu_ms", 0)) >= 100}
    print(f"{len(spans)} spans, {len(window)} while sampling, {len(long_spans)} over 100 ms, "
          f"{len(sure)} of them with >= 100 ms of CPU; {len(by_span)} spans linked")
    assert len(sure) >= 10, f"only {len(sure)} long spans: {err}"
    missing, wrong = [], []
    for sid, sp in sure.items():
        samples = by_span.get(sid, [])
        if not any(HANDLER[sp["name"]] in s["frames"] and "go" in (s.get("frame_types") or [])
                   for s in samples):
            missing.append((sid, sp["name"], sp["ms"], [s["frames"][:8] for s in samples]))
    for sid, samples in by_span.items():
        sp = spans.get(sid)
        # Every linked sample belongs to a span the Collector received, with its trace id,
        # and shows no other endpoint's handler.
        if sp is None:
            wrong.append((sid, "no such span", samples[0]["frames"][:8]))
            continue
        others = set(HANDLER.values()) - {HANDLER[sp["name"]]}
        for s in samples:
            if s["link"]["trace_id"].lower() != sp["trace_id"]:
                wrong.append((sid, "trace id", s["link"]))
            if others & set(s["frames"]):
                wrong.append((sid, sp["name"], s["frames"][:8]))
    assert not wrong, wrong[:5]
    assert not missing, f"{len(missing)} of {len(sure)} long spans unlinked: {missing[:3]}"
    # Short spans are linked too when sampled: render's handler appears under its own spans.
    assert any(spans[sid]["name"] == "render" for sid in by_span), "no render span linked"
