"""`spanprof view` on real recordings: the page from `record`'s directory, the Collector's file
exporter output (JSON lines and length-prefixed proto, as the pinned Collector's pdata writes
them) against the requests spanprof sent, the loopback server, and damaged inputs.

The span test server (workloads/spanserver.c) runs requests in spans with random ids and logs
each span (thread, ids, endpoint), so every span of the page is checked against that log.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, WORKLOADS, free_port, record_gated, summary_numbers, wait_listening

WRITER = ROOT / "writer"
SERVER_FLAGS = ["-O2", "-g", "-fomit-frame-pointer", "-pthread", f"-I{WRITER}"]
DATA_RE = re.compile(r'<script id="spanprof-data" type="application/json">(.*?)</script>', re.S)


@pytest.fixture(scope="session")
def spanserver(workdir):
    exe = workdir / "view-spanserver"
    subprocess.run(["gcc", *SERVER_FLAGS, "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1",
                    "-o", str(exe), str(WORKLOADS / "spanserver.c"),
                    str(WRITER / "spanprof_ctx.c")], check=True)
    return exe


def start_server(procs, exe, seconds, threads=3):
    """The span server, held until a line on its stdin (record_gated sends it)."""
    p = procs.start(exe, str(seconds), str(threads), "-", stdout=subprocess.PIPE,
                    stdin=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("ready "), line
    return p


def span_log(p):
    """{span_id: (tid, trace_id, endpoint)} from the server's log (after it exited)."""
    out = {}
    for line in p.stdout.read().splitlines():
        f = line.split()
        if len(f) == 7 and f[0] == "span":
            out[f[3]] = (int(f[1]), f[2], f[4])
    return out


def view(spanprof, *args, check=True):
    res = subprocess.run([str(spanprof), "view", *map(str, args)], capture_output=True,
                         text=True, timeout=120)
    if check:
        assert res.returncode == 0, res.stderr
    return res


def page_doc(path):
    m = DATA_RE.search(Path(path).read_text())
    assert m, f"{path}: no data script element"
    assert "__SPANPROF_DATA__" not in m.group(1)
    return json.loads(m.group(1))


def canon(doc):
    """{(type, stack names root first, pid, tid, thread name, span id): value}, bucket-free."""
    s = doc["strings"]
    fr = doc["frames"]
    out = {}
    r = doc["rows"]
    for i in range(len(r["value"])):
        stack = tuple(s[fr["name"][f]] for f in doc["stacks"][r["stack"][i]])
        t = r["thread"][i]
        th = doc["threads"]
        thread = (doc["processes"]["pid"][th["process"][t]], th["tid"][t],
                  s[th["name"][t]]) if t >= 0 else None
        span = doc["spans"]["span_id"][r["span"][i]] if r["span"][i] >= 0 else None
        key = (doc["profile_types"][r["type"][i]]["name"], stack, thread, span)
        out[key] = out.get(key, 0) + r["value"][i]
    return out


def check_spans(doc, log):
    """Every span of the page ran on the server, on the thread its samples carry, in its
    endpoint (whose function its samples show), with the attributes the server set."""
    s = doc["strings"]
    sp = doc["spans"]
    assert sp["span_id"], "no span in the page"
    for i, sid in enumerate(sp["span_id"]):
        assert sid in log, f"span {sid} was never logged by the server"
        tid, trace, endpoint = log[sid]
        assert sp["trace_id"][i] == trace
        assert sp["attrs"][i].get("http.route") == endpoint, sp["attrs"][i]
        assert sp["attrs"][i].get("enduser.id", "").startswith("user-")
    r = doc["rows"]
    for k in range(len(r["value"])):
        if r["span"][k] < 0:
            continue
        sid = sp["span_id"][r["span"][k]]
        assert doc["threads"]["tid"][r["thread"][k]] == log[sid][0]
        names = {s[doc["frames"]["name"][f]] for f in doc["stacks"][r["stack"][k]]}
        others = {f"endpoint_{e}" for e in ("checkout", "search", "login")} - {
            f"endpoint_{log[sid][2]}"}
        assert not names & others, (sid, log[sid], names)


@pytest.fixture(scope="session")
def recording(spanprof, spanserver, workdir):
    """A local recording (pprof) of the span server: (directory, summary numbers, span log)."""
    out = workdir / "view-rec"

    class P:  # a Procs for a session fixture
        procs = []

        def start(self, *a, **kw):
            p = subprocess.Popen([str(x) for x in a], **kw)
            self.procs.append(p)
            return p

    procs = P()
    try:
        srv = start_server(procs, spanserver, 4)
        res = record_gated(spanprof, out, srv, "--pid", srv.pid, "--duration", "3",
                           "--frequency", "199")
        srv.wait(timeout=30)
        return out, summary_numbers(res.stats), span_log(srv)
    finally:
        for p in procs.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_record_then_view_directory(spanprof, recording):
    out, nums, log = recording
    res = view(spanprof, out)
    page = out / "profile.html"
    assert res.stdout.strip() == str(page)
    doc = page_doc(page)
    assert doc["format"] == "spanprof-view/1"
    # The directory's profile.otlp.pb.gz (sample times, frame types), not profile.pb.gz too.
    assert [(Path(i["path"]).name, i["format"]) for i in doc["inputs"]] == \
        [("profile.otlp.pb.gz", "otlp-proto-stream")]
    assert doc["inputs"][0]["error"] is None
    assert doc["inputs"][0]["samples"] == nums["recorded"] > 100
    assert sum(doc["rows"]["value"]) == nums["recorded"]
    assert [t["name"] for t in doc["profile_types"]] == ["cpu"]
    assert doc["time"]["buckets"] > 1
    assert "native" in {doc["strings"][t] for t in doc["frames"]["type"]}
    names = {doc["strings"][n] for n in doc["processes"]["name"]}
    assert names == {"view-spanserver"}
    check_spans(doc, log)
    # The pprof file alone: the same samples, no timestamps.
    res = view(spanprof, out / "profile.pb.gz", "--output", out / "pprof.html")
    pdoc = page_doc(out / "pprof.html")
    assert [i["format"] for i in pdoc["inputs"]] == ["pprof"]
    assert sum(pdoc["rows"]["value"]) == nums["recorded"]
    assert pdoc["time"]["buckets"] == 0  # pprof carries no timestamps
    check_spans(pdoc, log)
    # --span-id opens the page on a span; the path printed is the page written.
    sid = doc["spans"]["span_id"][0]
    res = view(spanprof, out / "profile.pb.gz", "--span-id", sid.upper(), "--output",
               out / "span.html")
    assert res.stdout.strip() == str(out / "span.html")
    assert page_doc(out / "span.html")["initial"] == {"span_id": sid, "trace_id": None}


def start_otelcol(procs, otelcol, port, out_file, fmt):
    env = dict(os.environ, OTLP_FILE=str(out_file), OTLP_GRPC_ENDPOINT=f"127.0.0.1:{port}",
               OTLP_FILE_FORMAT=fmt)
    p = procs.start(otelcol, "--config", ROOT / "collector-config/file.yaml",
                    "--feature-gates=service.profilesSupport", env=env,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, p)
    return p


@pytest.mark.parametrize("fmt", ["json", "proto"])
def test_collector_file_matches_requests_sent(spanprof, spanserver, otelcol, procs, tmp_path,
                                              fmt):
    """What the Collector's file exporter wrote and what spanprof sent make the same page."""
    port = free_port()
    out_file = tmp_path / ("profiles.jsonl" if fmt == "json" else "profiles.binpb")
    col = start_otelcol(procs, otelcol, port, out_file, fmt)
    srv = start_server(procs, spanserver, 5)
    reqdir = tmp_path / "requests"
    # The page's threads come from thread.id, sent only when asked (docs/otlp.md, "Series").
    res = record_gated(spanprof, reqdir, srv, "--endpoint", f"127.0.0.1:{port}", "--pid",
                       srv.pid, "--duration", "4", "--export-interval", "1", "--frequency", "199",
                       "--sample-attributes", "all")
    nums = summary_numbers(res.stats)
    assert nums["sent"] == nums["recorded"] > 100, res.stderr
    srv.wait(timeout=30)
    log = span_log(srv)
    time.sleep(0.5)
    col.send_signal(signal.SIGTERM)
    col.wait(timeout=30)

    view(spanprof, out_file, "--output", tmp_path / "collector.html")
    view(spanprof, reqdir, "--output", tmp_path / "requests.html")
    got = page_doc(tmp_path / "collector.html")
    sent = page_doc(tmp_path / "requests.html")
    assert got["inputs"][0]["format"] == ("otlp-json" if fmt == "json" else "otlp-proto-stream")
    assert all(i["format"] == "otlp-proto" and i["error"] is None for i in sent["inputs"])
    assert len(sent["inputs"]) >= 3
    assert got["inputs"][0]["error"] is None
    assert got["inputs"][0]["samples"] == sum(i["samples"] for i in sent["inputs"]) \
        == nums["sent"]
    assert canon(got) == canon(sent)
    assert got["time"] == sent["time"]
    assert got["time"]["buckets"] > 0 and got["time"]["bucket_ns"] % 1_000_000 == 0
    assert [got["strings"][i] for i in got["services"]] == ["spanserver-test"]
    check_spans(got, log)
    # The time axis covers the recording: 4 s cut in whole milliseconds, at most 200 buckets.
    assert 3e9 <= got["time"]["bucket_ns"] * got["time"]["buckets"] <= 6e9


def http_get(port, path, host=None, method="GET"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.putrequest(method, path, skip_host=True)
    c.putheader("Host", host or f"127.0.0.1:{port}")
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, r.getheader("Content-Type"), body


def test_serve_on_loopback(spanprof, recording, procs):
    out, nums, _ = recording
    p = procs.start(spanprof, "view", out, "--serve", "127.0.0.1:0", stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
    url = p.stdout.readline().strip()
    m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/", url)
    assert m, url
    port = int(m.group(1))
    status, ctype, body = http_get(port, "/")
    assert status == 200 and ctype.startswith("text/html")
    doc = json.loads(DATA_RE.search(body.decode()).group(1))
    assert sum(doc["rows"]["value"]) == nums["recorded"]
    assert http_get(port, "/other")[0] == 404
    assert http_get(port, "/", method="POST")[0] == 405
    # A name that is not loopback (DNS rebinding) gets nothing.
    assert http_get(port, "/", host=f"attacker.example:{port}")[0] == 403
    assert http_get(port, "/", host=f"localhost:{port}")[0] == 200
    assert not (out / "profile.html.tmp").exists()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=10) == 0

    res = view(spanprof, out, "--serve", "0.0.0.0:8080", check=False)
    assert res.returncode == 2 and "loopback only" in res.stderr
    res = view(spanprof, out, "--serve", "192.168.1.1:8080", check=False)
    assert res.returncode == 2 and "loopback only" in res.stderr


def test_damaged_input_is_named_and_the_rest_loads(spanprof, recording, tmp_path):
    out, nums, _ = recording
    data = (out / "profile.pb.gz").read_bytes()
    bad = tmp_path / "profile.pb.gz"
    bad.write_bytes(data[:len(data) // 2])
    junk = tmp_path / "notes.json"
    junk.write_text("{\"not\": \"a profile\"}\n")
    res = view(spanprof, bad, junk, out / "profile.pb.gz", "--output", tmp_path / "p.html")
    assert f"{bad}: " in res.stderr and "truncated" in res.stderr, res.stderr
    assert f"{junk}: " in res.stderr, res.stderr
    doc = page_doc(tmp_path / "p.html")
    assert [bool(i["error"]) for i in doc["inputs"]] == [True, True, False]
    assert sum(doc["rows"]["value"]) == nums["recorded"]
    # Nothing readable: no page, exit status 1.
    res = view(spanprof, bad, junk, "--output", tmp_path / "none.html", check=False)
    assert res.returncode == 1 and not (tmp_path / "none.html").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    res = view(spanprof, empty, check=False)
    assert res.returncode == 1 and "no profiles in this directory" in res.stderr


def traces_line(service, spans):
    """One OTLP/JSON TracesData line as the Collector file exporter (pdata) writes it."""
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "spanserver"}, "spans": [
            {"traceId": t, "spanId": s, "parentSpanId": "", "flags": 257, "name": name,
             "kind": 2, "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
             "status": {}} for t, s, name, start, end in spans]}]}]}) + "\n"


def test_traces_file_names_the_spans(spanprof, recording, tmp_path):
    """A Collector's traces file next to the profiles names the spans of the page; one that
    names no sampled span is a note; a damaged one is named in the error and the rest loads."""
    out, nums, log = recording
    d = tmp_path / "collector-out"
    d.mkdir()
    (d / "profile.otlp.pb.gz").write_bytes((out / "profile.otlp.pb.gz").read_bytes())
    sids = sorted(log)
    assert len(sids) >= 4, log
    named = {sid: f"GET {log[sid][2]} #{k}" for k, sid in enumerate(sids[:-1])}  # the last: no name
    t0 = 1_764_441_600_000_000_000
    spans = [(log[sid][1], sid, name, t0 + k * 10**9, t0 + k * 10**9 + 1_500_000 * (k + 1))
             for k, (sid, name) in enumerate(named.items())]
    spans.append(("ab" * 16, "cd" * 8, "never sampled", t0, t0 + 1))
    (d / "traces.jsonl").write_text(traces_line("span-frontend", spans[:2]) +
                                    traces_line("span-backend", spans[2:]))
    res = view(spanprof, d)
    assert "traces.jsonl" not in res.stderr, res.stderr
    doc = page_doc(d / "profile.html")
    assert [(Path(i["path"]).name, i["format"], i["error"]) for i in doc["inputs"]] == [
        ("profile.otlp.pb.gz", "otlp-proto-stream", None),
        ("traces.jsonl", "otlp-traces-json", None)]
    sp, s = doc["spans"], doc["strings"]
    check_spans(doc, log)
    assert "never sampled" not in {s[n] for n in sp["name"]}  # listed only with samples
    shown = 0
    for i, sid in enumerate(sp["span_id"]):
        if sid in named:
            k = list(named).index(sid)
            assert s[sp["name"][i]] == named[sid]
            assert s[sp["service"][i]] == ("span-frontend" if k < 2 else "span-backend")
            assert sp["duration_ns"][i] == 1_500_000 * (k + 1)
            assert sp["parent_span_id"][i] is None
            shown += 1
        else:
            assert sp["name"][i] == 0 and sp["duration_ns"][i] == 0
    assert shown > 0
    inp = doc["inputs"][1]
    assert inp["spans"] == len(spans) and inp["spans_matched"] == shown
    assert inp["samples"] == 0 and sum(doc["rows"]["value"]) == nums["recorded"]

    # Given on the command line too; a traces file naming no span of the profiles: a note.
    other = tmp_path / "other-traces.jsonl"
    other.write_text(traces_line("elsewhere", spans[-1:]))
    res = view(spanprof, other, out / "profile.otlp.pb.gz", "--output", tmp_path / "o.html")
    assert f"{other}: note: none of its 1 spans" in res.stderr, res.stderr
    assert page_doc(tmp_path / "o.html")["inputs"][0]["error"] is None

    # A damaged traces file: its name and the reason on stderr, the profiles still load.
    bad = tmp_path / "bad-traces.jsonl"
    bad.write_text(traces_line("x", spans[:1]) + traces_line("x", [("zz", "cd" * 8, "n", 1, 2)]))
    res = view(spanprof, bad, out / "profile.otlp.pb.gz", "--output", tmp_path / "b.html")
    assert f"{bad}: line 2: " in res.stderr and "traceId" in res.stderr, res.stderr
    bdoc = page_doc(tmp_path / "b.html")
    assert bdoc["inputs"][0]["error"] and bdoc["inputs"][0]["spans"] == 1
    assert sum(bdoc["rows"]["value"]) == nums["recorded"]
