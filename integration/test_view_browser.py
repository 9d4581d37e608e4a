"""The page of `spanprof view` in a real browser: headless Chromium (Debian's /usr/bin/chromium)
driven by playwright-core (view/node_modules, from `npm ci`) through integration/view_browser.mjs.

Pages are loaded from file:// with no network; every test fails on a console error or warning,
an uncaught exception, or a request for anything but the page itself. Screenshots of each state
go to $(BUILD)/test-artifacts/view/.

The fixture tests build their page from integration/view_fixture.py's document and the template
$(BUILD)/view/page.html. The end-to-end tests record the span-link test server and run the real
`spanprof view` on the recording.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

import view_fixture as vf
from conftest import BUILD, ROOT, WORKLOADS, Procs, free_port, read_folded, record, record_gated

TEMPLATE = BUILD / "view" / "page.html"
ARTIFACTS = BUILD / "test-artifacts" / "view"
DRIVER = ROOT / "integration" / "view_browser.mjs"
CHROMIUM = os.environ.get("SPANPROF_CHROMIUM", "/usr/bin/chromium")
WRITER = ROOT / "writer"
SERVER_FLAGS = ["-O2", "-g", "-fomit-frame-pointer", "-pthread", f"-I{WRITER}"]


class Run:
    """What the driver reported for one page load."""

    def __init__(self, out):
        self.out = out
        self.by_name = out["results_by_name"]

    def __getitem__(self, name):
        return self.by_name[name]


class Browser:
    def run(self, url, actions, allowed_requests=None, timeout=180):
        """Loads url, runs the actions, checks the console and the requests; returns a Run."""
        job = {"url": url, "viewport": {"width": 1400, "height": 1000}, "timeout_ms": 60000,
               "actions": actions}
        res = subprocess.run(["node", str(DRIVER)], input=json.dumps(job), capture_output=True,
                             text=True, timeout=timeout)
        try:
            out = json.loads(res.stdout)
        except json.JSONDecodeError:
            raise AssertionError(f"browser driver failed ({res.returncode}):\n{res.stderr}")
        for path in (r["value"] for r in out["results"] if r["op"] == "screenshot"):
            print(f"screenshot: {path}")
        assert out["error"] is None, (out["error"], out["console"], out["page_errors"])
        assert not out["page_errors"], out["page_errors"]
        bad = [m for m in out["console"] if m["type"] in ("error", "warning", "assert")]
        assert not bad, f"console errors or warnings: {bad}"
        pages = {url.split("#")[0]} | {a["url"].split("#")[0] for a in actions if a["op"] == "goto"}
        allowed = allowed_requests or (lambda u: u.split("#")[0] in pages)
        assert all(allowed(u) for u in out["requests"]), f"unexpected requests: {out['requests']}"
        return Run(out)


@pytest.fixture(scope="session")
def browser():
    assert TEMPLATE.exists(), f"{TEMPLATE} is missing: run 'make' first"
    assert (ROOT / "view/node_modules/playwright-core").exists(), \
        "view/node_modules is missing: run 'make' first (it runs npm ci --prefix view)"
    assert shutil.which("node"), "node is missing: install Node.js >= 20 (see scripts/install-deps.sh)"
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install chromium (make deps)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    print(f"screenshots go to {ARTIFACTS}")
    return Browser()


def shot(name):
    return {"op": "screenshot", "path": str(ARTIFACTS / name)}


def ev(name, expr):
    return {"op": "eval", "name": name, "expr": expr}


SETTLE = {"op": "sleep", "ms": 600}  # lets the flame graph's transitions end before a screenshot
READY = {"op": "ready", "name": "error"}


@pytest.fixture
def fixture_page(tmp_path):
    """(doc, meta, file URL) of the fixture document's page."""
    doc, meta = vf.make_document()
    page = vf.build_page(TEMPLATE, doc, tmp_path / "profile.html")
    return doc, meta, page.as_uri()


def endpoints(frames):
    return {f for f in frames if f.startswith("endpoint_")}


def span_index(meta, span_id):
    return next(i for i, s in enumerate(meta["spans"]) if s["span_id"] == span_id)


def test_page_loads_offline_without_errors(browser, fixture_page):
    doc, meta, url = fixture_page
    r = browser.run(url, [
        READY,
        ev("root", "spanprofView.rootValue()"),
        ev("frames", "spanprofView.visibleFrames()"),
        ev("spans", "spanprofView.spans()"),
        ev("title", "document.title"),
        {"op": "count", "name": "rows", "selector": "#spans tr.span-row"},
        ev("link_texts", "Object.fromEntries([...document.querySelectorAll('#spans tr.span-row')]"
                         ".map(r => [r.dataset.spanId, r.querySelector('a.span-link').innerText]))"),
        {"op": "count", "name": "inputs", "selector": "#inputs li.input"},
        {"op": "text", "name": "failed", "selector": "#inputs li.failed"},
        {"op": "text", "name": "summary", "selector": "#inputs-summary"},
        ev("types", "[...document.querySelectorAll('#profile-types .ptype')].map(b => b.dataset.name)"),
        ev("pressed", "document.querySelector('.ptype[aria-pressed=true]').dataset.name"),
        ev("bars", "document.querySelectorAll('#timeline .bars rect').length"),
        SETTLE, shot("overview.png"),
    ])
    assert r["error"] is None
    assert r["title"] == doc["title"]
    assert r["root"] == vf.total(doc, "cpu") > 1000
    assert endpoints(r["frames"]) == {f"endpoint_{e}" for e in vf.ENDPOINTS}
    listed = {(s["trace_id"], s["span_id"]) for s in r["spans"]}
    assert listed == {(s["trace_id"], s["span_id"]) for s in meta["spans"]}
    assert r["rows"] == 20
    # Sorted by sample count, largest first; counts are the spans' CPU totals.
    counts = [s["count"] for s in r["spans"]]
    assert counts == sorted(counts, reverse=True)
    for s in r["spans"]:
        assert s["count"] == vf.total(doc, "cpu", spans={span_index(meta, s["span_id"])})
    # Span names from the traces files: "name (service) duration" where known, else the id.
    for s in r["spans"]:
        m = meta["spans"][span_index(meta, s["span_id"])]
        assert (s["name"], s["label"]) == (m["name"], m["label"])
    assert r["link_texts"] == {m["span_id"]: m["label"] or m["span_id"] for m in meta["spans"]}
    # Attributes come through the embedding unchanged, markup included.
    notes = [s["attrs"]["note"] for s in r["spans"] if "note" in s["attrs"]]
    assert notes == ["</script><!--<script> & \"quotes\""]
    # Every input is listed; the failed one with its error, the others still loaded.
    assert r["inputs"] == 3
    assert "out/profiles-000002.binpb" in r["failed"] and "truncated message" in r["failed"]
    assert "1 could not be read" in r["summary"]
    assert r["types"] == ["cpu", "alloc", "offcpu"] and r["pressed"] == "cpu"
    assert r["bars"] == 60


def test_span_selection_shows_that_span(browser, fixture_page):
    doc, meta, url = fixture_page
    # A backend span of the "search" endpoint and its trace.
    i = next(k for k, s in enumerate(meta["spans"]) if s["endpoint"] == "search" and s["process"] == 1)
    s = meta["spans"][i]
    trace_spans = {k for k, m in enumerate(meta["spans"]) if m["trace_id"] == s["trace_id"]}
    row = f'#spans tr.span-row[data-span-id="{s["span_id"]}"]'
    r = browser.run(url, [
        READY,
        {"op": "click", "selector": f"{row} td.attrs"},
        ev("frames", "spanprofView.visibleFrames()"),
        ev("root", "spanprofView.rootValue()"),
        ev("hash", "location.hash"),
        ev("sel", "spanprofView.selection()"),
        {"op": "visible", "name": "banner", "selector": "#selection"},
        {"op": "text", "name": "banner_text", "selector": "#selection-text"},
        {"op": "count", "name": "selected", "selector": "#spans tr.span-row.selected"},
        SETTLE, shot("span.png"),
        {"op": "click", "selector": "#clear-selection"},
        ev("frames_all", "spanprofView.visibleFrames()"),
        ev("hash_all", "location.hash"),
        ev("root_all", "spanprofView.rootValue()"),
        {"op": "visible", "name": "banner_after", "selector": "#selection"},
        # Back in history returns to the span.
        ev("back", "history.back()"),
        {"op": "wait_for", "expr": "spanprofView.selection() !== null"},
        ev("sel_back", "spanprofView.selection()"),
        # The trace link selects both spans of the trace.
        {"op": "click", "selector": f"{row} a.trace-link"},
        ev("trace_frames", "spanprofView.visibleFrames()"),
        ev("trace_root", "spanprofView.rootValue()"),
        ev("trace_hash", "location.hash"),
        {"op": "text", "name": "trace_banner", "selector": "#selection-text"},
        SETTLE, shot("trace.png"),
    ])
    assert endpoints(r["frames"]) == {"endpoint_search"}
    assert "backend [4202]" in r["frames"] and "frontend [4101]" not in r["frames"]
    assert r["root"] == vf.total(doc, "cpu", spans={i}) > 0
    assert r["hash"] == f"#span={s['span_id']}"
    assert r["sel"] == {"span_id": s["span_id"], "trace_id": s["trace_id"], "spans": 1}
    assert r["banner"] and s["span_id"] in r["banner_text"] and s["trace_id"] in r["banner_text"]
    assert s["label"] == "Shop.Search (shop-backend) 6.00 ms" and s["label"] in r["banner_text"]
    assert r["selected"] == 1
    assert endpoints(r["frames_all"]) == {f"endpoint_{e}" for e in vf.ENDPOINTS}
    assert r["hash_all"] == "" and r["root_all"] == vf.total(doc, "cpu")
    assert not r["banner_after"]
    assert r["sel_back"]["span_id"] == s["span_id"]
    assert endpoints(r["trace_frames"]) == {"endpoint_search"}
    assert {"backend [4202]", "frontend [4101]"} <= set(r["trace_frames"])
    assert r["trace_root"] == vf.total(doc, "cpu", spans=trace_spans)
    assert r["trace_hash"] == f"#trace={s['trace_id']}"
    assert "2 spans" in r["trace_banner"]


def pct_of(text):
    m = re.fullmatch(r"([\d.]+)% of (\w+) match", text)
    assert m, text
    return float(m.group(1)), m.group(2)


def test_search_highlights_matching_frames(browser, fixture_page):
    doc, meta, url = fixture_page
    r = browser.run(url, [
        READY,
        {"op": "fill", "selector": "#search", "text": "endpoint_search"},
        {"op": "wait_for", "expr": "document.getElementById('search-result').textContent !== ''"},
        ev("hl", "spanprofView.highlightedFrames()"),
        {"op": "text", "name": "result", "selector": "#search-result"},
        ev("fills", "[...document.querySelectorAll('#flamegraph g.frame')]"
                    ".filter(g => g.getAttribute('name') === 'endpoint_search')"
                    ".map(g => g.querySelector('rect').getAttribute('fill'))"),
        SETTLE, shot("search.png"),
        ev("share_sha", "spanprofView.search('SHA256')"),
        ev("hl_sha", "spanprofView.highlightedFrames()"),
        ev("share_none", "spanprofView.search('no_such_function(')"),
        ev("hl_none", "spanprofView.highlightedFrames()"),
        {"op": "text", "name": "result_none", "selector": "#search-result"},
        # The search stays on through a filter change and counts against the shown total.
        ev("s", "spanprofView.search('endpoint_search')"),
        {"op": "select", "selector": "#filter-service", "value": "0"},
        ev("share_front", "spanprofView.search('endpoint_search')"),
        ev("hl_front", "spanprofView.highlightedFrames()"),
    ])
    share = vf.total(doc, "cpu", frame_contains="endpoint_search") / vf.total(doc, "cpu")
    assert r["hl"] == ["endpoint_search"]
    pct, what = pct_of(r["result"])
    assert what == "samples" and abs(pct - 100 * share) < 0.1, (r["result"], share)
    assert r["fills"] and all(f == "#E600E6" for f in r["fills"]), r["fills"]
    assert r["hl_sha"] == ["sha256_block"]
    assert r["share_sha"] == pytest.approx(
        vf.total(doc, "cpu", frame_contains="sha256") / vf.total(doc, "cpu"))
    assert r["share_none"] == 0 and r["hl_none"] == [] and pct_of(r["result_none"])[0] == 0
    assert r["hl_front"] == ["endpoint_search"]
    assert r["share_front"] == pytest.approx(
        vf.total(doc, "cpu", service=0, frame_contains="endpoint_search") /
        vf.total(doc, "cpu", service=0))


FRAME_FILLS = ("[...document.querySelectorAll('#flamegraph g.frame')]"
               ".map(g => [g.getAttribute('name'), g.querySelector('rect').getAttribute('fill')])")
LEGEND = ("[...document.querySelectorAll('#legend .legend-item')]"
          ".map(e => [e.dataset.type, e.textContent, e.querySelector('.swatch').style.background])")


def rgb_of(fill):
    m = re.fullmatch(r"rgb\((\d+), ?(\d+), ?(\d+)\)", fill)
    assert m, fill
    return [int(x) for x in m.groups()]


def check_colours(fills, types, styles):
    """Every drawn frame that has a type is filled from its type's colour family."""
    checked = 0
    for name, fill in fills:
        if name not in types:
            continue
        st = styles.get(types[name], styles["other"])
        c = rgb_of(fill)
        assert all(b - 1 <= x <= b + d + 1 for x, b, d in zip(c, st["base"], st["spread"])), \
            (name, types[name], fill, st)
        checked += 1
    return checked


def test_frame_types_legend_and_colours(browser, fixture_page):
    doc, meta, url = fixture_page
    worker = 2
    r = browser.run(url, [
        READY,
        ev("styles", "spanprofView.frameTypeStyles()"),
        ev("types_all", "spanprofView.frameTypes()"),
        ev("legend_all", LEGEND),
        {"op": "select", "selector": "#filter-process", "value": str(worker)},
        SETTLE,
        ev("types", "spanprofView.frameTypes()"),
        ev("fills", FRAME_FILLS),
        ev("legend", LEGEND),
        shot("frame-types.png"),
        {"op": "hover", "selector": '#flamegraph g.frame[name="run_report"]'},
        {"op": "text", "name": "tip", "selector": "#frame-tooltip"},
        # The frontend has native and kernel frames only: so has the legend.
        {"op": "select", "selector": "#filter-process", "value": "0"},
        ev("legend_front", LEGEND),
        {"op": "visible", "name": "spans_box", "selector": "#spans-box"},
    ])
    styles = r["styles"]
    want = {"native": "native", "kernel": "kernel", "go": "Go", "cpython": "Python",
            "v8js": "JavaScript (V8)", "jvm": "Java (JVM)", "dotnet": ".NET",
            "jit": "JIT (other)", "abort": "stack cut here"}
    assert {t: styles[t]["label"] for t in want} == want
    # Each type its own colour family: no two share a base colour.
    assert len({tuple(styles[t]["base"]) for t in want}) == len(want)
    # Types come from frames.type, else (Go's frame here) from frames.kind.
    types = r["types"]
    assert types["run_report"] == types["aggregate"] == "cpython"
    assert types["main.handlePlugin"] == "go" and types["processBatch"] == "v8js"
    assert types["com.shop.Plugin.run"] == "jvm" and types["Shop.Plugin.Run"] == "dotnet"
    assert types["jit_stub_0x7f00"] == "jit" and types["[truncated: depth limit]"] == "abort"
    assert types["plugin_host"] == "native" and types.get("__libc_start_main") == "native"
    assert r["types_all"]["do_syscall_64"] == "kernel"
    # Every drawn frame of every type in its family.
    assert check_colours(r["fills"], types, styles) >= 10
    # The legend lists the types of the graph shown, in a fixed order, with their swatches.
    assert [t for t, _, _ in r["legend_all"]] == list(want)
    assert [(t, label) for t, label, _ in r["legend"]] == \
        [(t, want[t]) for t in want if t != "kernel"]
    for t, _, swatch in r["legend"]:
        assert rgb_of(swatch) == [round(b + d / 2) for b, d in zip(styles[t]["base"],
                                                                   styles[t]["spread"])]
    assert r["tip"].splitlines()[2] == "no module · Python"
    assert [t for t, _, _ in r["legend_front"]] == ["native", "kernel"]
    assert r["spans_box"]


def test_no_spans_hides_the_span_list(browser, tmp_path):
    doc, _ = vf.make_document()
    doc["spans"] = {"trace_id": [], "span_id": [], "attrs": [], "process": []}
    doc["rows"]["span"] = [-1] * len(doc["rows"]["span"])
    url = vf.build_page(TEMPLATE, doc, tmp_path / "nospans.html").as_uri()
    r = browser.run(url, [
        READY,
        {"op": "visible", "name": "spans_box", "selector": "#spans-box"},
        {"op": "visible", "name": "graph", "selector": "#flamegraph"},
        ev("root", "spanprofView.rootValue()"),
        SETTLE, shot("no-spans.png"),
    ])
    assert not r["spans_box"] and r["graph"]
    assert r["root"] == vf.total(doc, "cpu")


def test_fragment_and_initial_selection(browser, tmp_path):
    doc, meta = vf.make_document()
    url = vf.build_page(TEMPLATE, doc, tmp_path / "profile.html").as_uri()
    a, b = meta["spans"][0], meta["spans"][5]
    assert a["endpoint"] != b["endpoint"]
    r = browser.run(f"{url}#span={a['span_id']}", [
        READY,
        ev("sel", "spanprofView.selection()"),
        ev("frames", "spanprofView.visibleFrames()"),
        ev("root", "spanprofView.rootValue()"),
        SETTLE, shot("fragment-span.png"),
        # Editing the fragment follows it.
        {"op": "goto", "url": f"{url}#trace={b['trace_id']}"},
        {"op": "wait_for", "expr": f"(spanprofView.selection() || {{}}).trace_id === '{b['trace_id']}'"},
        ev("sel_trace", "spanprofView.selection()"),
        ev("frames_trace", "spanprofView.visibleFrames()"),
        # A span that is not in the profile: a notice, and everything is shown.
        {"op": "goto", "url": f"{url}#span=00000000000000ff"},
        {"op": "wait_for", "expr": "spanprofView.selection() === null"},
        {"op": "text", "name": "notice", "selector": "#notice"},
        ev("root_all", "spanprofView.rootValue()"),
        SETTLE, shot("fragment-missing.png"),
    ])
    assert r["sel"]["span_id"] == a["span_id"] and r["sel"]["trace_id"] == a["trace_id"]
    assert endpoints(r["frames"]) == {"endpoint_" + a["endpoint"]}
    assert r["root"] == vf.total(doc, "cpu", spans={0})
    assert r["sel_trace"] == {"span_id": None, "trace_id": b["trace_id"], "spans": 2}
    assert endpoints(r["frames_trace"]) == {"endpoint_" + b["endpoint"]}
    assert "00000000000000ff" in r["notice"] and "not in this profile" in r["notice"]
    assert r["root_all"] == vf.total(doc, "cpu")

    # initial (--span-id / --trace-id) opens the page on that span and goes into the URL; a
    # fragment wins over it.
    doc, meta = vf.make_document(initial_span=b["span_id"])
    url = vf.build_page(TEMPLATE, doc, tmp_path / "initial.html").as_uri()
    doc, meta = vf.make_document(initial_trace=a["trace_id"])
    url_trace = vf.build_page(TEMPLATE, doc, tmp_path / "initial-trace.html").as_uri()
    r = browser.run(url, [
        READY, ev("sel", "spanprofView.selection()"), ev("hash", "location.hash"),
        ev("frames", "spanprofView.visibleFrames()"),
        {"op": "goto", "url": url_trace}, READY, ev("sel_trace", "spanprofView.selection()"),
        {"op": "goto", "url": f"{url}#span={a['span_id']}"}, READY,
        ev("sel_frag", "spanprofView.selection()"),
    ])
    assert r["sel"]["span_id"] == b["span_id"] and r["hash"] == f"#span={b['span_id']}"
    assert endpoints(r["frames"]) == {"endpoint_" + b["endpoint"]}
    assert r["sel_trace"] == {"span_id": None, "trace_id": a["trace_id"], "spans": 2}
    assert r["sel_frag"]["span_id"] == a["span_id"]


def test_profile_type_switch(browser, fixture_page):
    doc, meta, url = fixture_page
    r = browser.run(url, [
        READY,
        {"op": "click", "selector": '#profile-types .ptype[data-name="alloc"]'},
        ev("type", "spanprofView.profileType()"),
        ev("root", "spanprofView.rootValue()"),
        ev("frames", "spanprofView.visibleFrames()"),
        ev("spans", "spanprofView.spans()"),
        ev("pressed", "document.querySelector('.ptype[aria-pressed=true]').dataset.name"),
        {"op": "text", "name": "header", "selector": "#span-count-header"},
        {"op": "text", "name": "shown", "selector": "#shown-total"},
        SETTLE, shot("alloc.png"),
        {"op": "click", "selector": '#profile-types .ptype[data-name="offcpu"]'},
        ev("root_off", "spanprofView.rootValue()"),
        ev("frames_off", "spanprofView.visibleFrames()"),
        SETTLE, shot("offcpu.png"),
        # A span chosen under one type keeps its selection under another.
        ev("x", f"spanprofView.selectSpan('{meta['spans'][1]['span_id']}')"),
        {"op": "click", "selector": '#profile-types .ptype[data-name="cpu"]'},
        ev("root_cpu_span", "spanprofView.rootValue()"),
    ])
    assert r["type"] == "alloc" and r["pressed"] == "alloc"
    assert r["root"] == vf.total(doc, "alloc") > 0
    assert "malloc" in r["frames"] and "sha256_block" not in r["frames"]
    # Only the frontend spans allocate in the fixture.
    assert {s["span_id"] for s in r["spans"]} == \
        {s["span_id"] for s in meta["spans"] if s["process"] == 0}
    assert r["header"] == "bytes" and "iB shown" in r["shown"]
    assert r["root_off"] == vf.total(doc, "offcpu") > 0
    assert "schedule" in r["frames_off"] and "endpoint_login" in r["frames_off"]
    assert r["root_cpu_span"] == vf.total(doc, "cpu", spans={1})


def test_filters_and_time_range(browser, fixture_page):
    doc, meta, url = fixture_page
    r = browser.run(url, [
        READY,
        {"op": "select", "selector": "#filter-service", "value": "1"},
        ev("root_svc", "spanprofView.rootValue()"),
        ev("procs", "[...document.querySelectorAll('#filter-process option')].map(o => o.text)"),
        ev("spans_svc", "spanprofView.spans().length"),
        {"op": "select", "selector": "#filter-process", "value": "2"},
        ev("frames_worker", "spanprofView.visibleFrames()"),
        {"op": "select", "selector": "#filter-process", "value": ""},
        ev("range", "spanprofView.setTimeRange(10, 20)"),
        ev("root_range", "spanprofView.rootValue()"),
        {"op": "text", "name": "range_text", "selector": "#time-range"},
        ev("spans_range", "spanprofView.spans().map(s => s.span_id)"),
        SETTLE, shot("filters.png"),
        {"op": "click", "selector": "#time-reset"},
        ev("root_reset", "spanprofView.rootValue()"),
        # Dragging over the histogram selects buckets.
        {"op": "drag", "selector": "#timeline svg .overlay", "from": [0.25, 0.5], "to": [0.5, 0.5]},
        ev("root_drag", "spanprofView.rootValue()"),
        {"op": "text", "name": "drag_text", "selector": "#time-range"},
        SETTLE, shot("timeline-drag.png"),
    ])
    backend = 1
    assert r["root_svc"] == vf.total(doc, "cpu", service=backend) > 0
    assert len(r["procs"]) == 3 and all("shop-backend" in p for p in r["procs"][1:])
    assert r["spans_svc"] == 10
    assert "run_report" in r["frames_worker"] and not endpoints(r["frames_worker"])
    assert r["root_range"] == vf.total(doc, "cpu", service=backend, buckets=(10, 20))
    assert "+10.0 s – +20.0 s" in r["range_text"]
    in_range = {m["span_id"] for m in meta["spans"] if m["process"] == 1 and
                vf.total(doc, "cpu", spans={span_index(meta, m["span_id"])}, buckets=(10, 20))}
    assert set(r["spans_range"]) == in_range and in_range
    assert r["root_reset"] == r["root_svc"]
    assert 0 < r["root_drag"] < r["root_svc"]
    assert re.search(r"\+1\d\.\d s – \+\d\d\.\d s", r["drag_text"]), r["drag_text"]


def test_tooltip_and_zoom(browser, fixture_page):
    doc, meta, url = fixture_page
    frame = '#flamegraph g.frame[name="endpoint_checkout"]'
    r = browser.run(url, [
        READY,
        {"op": "select", "selector": "#filter-service", "value": "0"},
        SETTLE,
        {"op": "hover", "selector": frame},
        {"op": "visible", "name": "tip_visible", "selector": "#frame-tooltip"},
        {"op": "text", "name": "tip", "selector": "#frame-tooltip"},
        shot("tooltip.png"),
        {"op": "click", "selector": frame},
        SETTLE,
        ev("frames_zoom", "spanprofView.visibleFrames()"),
        {"op": "text", "name": "zoom_info", "selector": "#zoom-info"},
        ev("reset_enabled", "!document.getElementById('reset-zoom').disabled"),
        shot("zoom.png"),
        {"op": "click", "selector": "#reset-zoom"},
        ev("frames_reset", "spanprofView.visibleFrames()"),
    ])
    value = vf.total(doc, "cpu", service=0, frame_contains="endpoint_checkout")
    shown = vf.total(doc, "cpu", service=0)
    lines = r["tip"].splitlines()
    assert r["tip_visible"]
    assert lines[0] == "endpoint_checkout"
    assert lines[1] == "src/frontend/handlers.c:40, 44"  # call sites of two callees, merged
    assert lines[2] == "frontend · native"
    assert lines[3].startswith(f"{value} samples (≈ "), lines
    assert re.search(r"· [\d.]+% of the shown total$", lines[3])
    assert float(re.search(r"([\d.]+)%", lines[3]).group(1)) == pytest.approx(100 * value / shown, abs=0.1)
    assert endpoints(r["frames_zoom"]) == {"endpoint_checkout"}
    assert {"handle_request", "compute_checkout"} <= set(r["frames_zoom"])
    assert r["zoom_info"] == "zoomed to endpoint_checkout" and r["reset_enabled"]
    assert endpoints(r["frames_reset"]) == {f"endpoint_{e}" for e in vf.ENDPOINTS}


def test_bad_pages_say_why(browser, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text(TEMPLATE.read_text().replace(vf.PLACEHOLDER, '{"format": "something-else"}'))
    doc, _ = vf.make_document()
    doc["rows"]["span"].pop()
    damaged = vf.build_page(TEMPLATE, doc, tmp_path / "damaged.html")
    r = browser.run(TEMPLATE.as_uri(), [
        # The template itself: no profile in it.
        READY, {"op": "text", "name": "msg", "selector": "#error"}, shot("template.png"),
        {"op": "goto", "url": bad.as_uri()}, {"op": "ready", "name": "bad"},
        {"op": "goto", "url": damaged.as_uri()}, {"op": "ready", "name": "damaged"},
    ])
    assert "holds no profile" in r["error"] and "spanprof view" in r["msg"]
    assert "not a spanprof view document" in r["bad"]
    assert "damaged" in r["damaged"] and "span" in r["damaged"]


def test_large_document_stays_responsive(browser, tmp_path):
    """A million samples' worth of rows: the page opens and each interaction stays fast."""
    doc = vf.make_large_document(1_000_000)
    page = vf.build_page(TEMPLATE, doc, tmp_path / "large.html")
    span_id = doc["spans"]["span_id"][123]
    timed = "(() => { const t = performance.now(); %s; return performance.now() - t; })()"
    r = browser.run(page.as_uri(), [
        READY,
        ev("t_ready", "performance.now()"),
        ev("root", "spanprofView.rootValue()"),
        ev("t_span", timed % f"spanprofView.selectSpan('{span_id}')"),
        ev("t_clear", timed % "spanprofView.selectSpan(null)"),
        ev("t_search", timed % "spanprofView.search('fn_01')"),
        ev("t_thread", timed % "spanprofView.setFilter('thread', 3)"),
        ev("t_time", timed % "spanprofView.setTimeRange(50, 150)"),
        ev("t_nogroup", timed % "document.getElementById('group-process').click()"),
        SETTLE, shot("large.png"),
    ], timeout=300)
    rows = len(doc["rows"]["value"])
    times = {k: round(r[k]) for k in ("t_span", "t_clear", "t_search", "t_thread", "t_time",
                                       "t_nogroup")}
    print(f"large document: {rows} rows, {r['root']} samples, {page.stat().st_size >> 20} MiB page; "
          f"ready after {r['t_ready']:.0f} ms; interactions (ms): {times}")
    assert r["root"] == vf.total(doc, "cpu") >= 1_000_000
    assert r["t_ready"] < 20000
    for k, ms in times.items():
        assert ms < 3000, (k, ms)


# --- end to end: the real `spanprof view` on a recording of the span-link test server --------

def view_command(spanprof):
    """None when `spanprof view` exists, else why not (the C side may not have landed)."""
    res = subprocess.run([str(spanprof), "view", "--help"], capture_output=True, text=True,
                         timeout=30)
    if res.returncode != 0:
        return f"'spanprof view --help' exited {res.returncode}: {(res.stderr or res.stdout).strip()[:200]}"
    return None


def parse_spans(text):
    """The span server's log: (trace_id, span_id) -> {tid, endpoint}."""
    spans = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 7 and f[0] == "span":
            spans[(f[2], f[3])] = {"tid": int(f[1]), "endpoint": f[4]}
    return spans


@pytest.fixture(scope="module")
def recorded_spanserver(spanprof, workdir, tmp_path_factory):
    """Records the span-link test server (the executable build) for 4 s: (dir, span log)."""
    why = view_command(spanprof)
    if why:
        pytest.skip(f"spanprof has no view subcommand yet ({why})")
    d = tmp_path_factory.mktemp("view-e2e")
    exe = d / "spanserver-exe"
    subprocess.run(["gcc", *SERVER_FLAGS, "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1",
                    "-o", str(exe), str(WORKLOADS / "spanserver.c"),
                    str(WRITER / "spanprof_ctx.c")], check=True)
    log = d / "spans.log"
    procs = Procs()
    try:
        with open(log, "w") as f:
            srv = procs.start(exe, "7", "2", "-", stdout=f, stdin=subprocess.PIPE, text=True)
            deadline = time.time() + 10
            while "ready" not in log.read_text() and time.time() < deadline:
                time.sleep(0.05)
            out = d / "rec"
            record_gated(spanprof, out, srv, "-p", srv.pid, "-F", "97", "-d", "4")
            srv.wait(timeout=30)
    finally:
        procs.close()
    spans = parse_spans(log.read_text())
    assert len(spans) > 30, f"the server logged only {len(spans)} spans"
    return out, spans


def check_real_page(browser, url, spans, allowed=None, prefix="e2e"):
    """The checks of the fixture tests against a page of the span server's recording."""
    top_row = "#spans tbody tr.span-row:first-child"
    r = browser.run(url, [
        READY,
        ev("spans", "spanprofView.spans()"),
        ev("types", "spanprofView.profileTypes()"),
        ev("frames", "spanprofView.visibleFrames()"),
        {"op": "count", "name": "failed", "selector": "#inputs li.failed"},
        SETTLE, shot(f"{prefix}-overview.png"),
        ev("share", "spanprofView.search('endpoint_search')"),
        ev("hl", "spanprofView.highlightedFrames()"),
        {"op": "text", "name": "result", "selector": "#search-result"},
        SETTLE, shot(f"{prefix}-search.png"),
        ev("x", "spanprofView.search('')"),
        # The largest span (the table's first row), by clicking it.
        {"op": "click", "selector": f"{top_row} td.count"},
        ev("span_frames", "spanprofView.visibleFrames()"),
        ev("span_root", "spanprofView.rootValue()"),
        ev("span_hash", "location.hash"),
        SETTLE, shot(f"{prefix}-span.png"),
        ev("type_names", "[...document.querySelectorAll('#profile-types .ptype')]"
                         ".map(b => (b.click(), spanprofView.profileType()))"),
    ], allowed_requests=allowed)
    assert r["error"] is None and r["failed"] == 0
    listed = r["spans"]
    assert len(listed) >= 20, f"only {len(listed)} spans with samples in the page"
    for s in listed:
        key = (s["trace_id"], s["span_id"])
        assert key in spans, f"span {key} is not in the server's log"
        assert s["attrs"].get("http.route") == spans[key]["endpoint"], (s, spans[key])
        assert s["count"] > 0
    assert "cpu" in [t["name"] for t in r["types"]]
    assert {"endpoint_checkout", "endpoint_search", "endpoint_login"} <= endpoints(r["frames"])
    assert r["hl"] == ["endpoint_search"] and 0 < r["share"] < 1
    assert pct_of(r["result"])[0] > 0
    top = listed[0]
    assert endpoints(r["span_frames"]) == \
        {"endpoint_" + spans[(top["trace_id"], top["span_id"])]["endpoint"]}
    assert r["span_root"] == top["count"]
    assert r["span_hash"] == f"#span={top['span_id']}"
    assert r["type_names"] == [t["name"] for t in r["types"]]

    # Another span, through the fragment of a fresh load.
    other = listed[len(listed) // 2]
    r = browser.run(f"{url.split('#')[0]}#span={other['span_id']}", [
        READY, ev("frames", "spanprofView.visibleFrames()"), ev("root", "spanprofView.rootValue()"),
        ev("sel", "spanprofView.selection()")], allowed_requests=allowed)
    assert r["sel"]["span_id"] == other["span_id"]
    assert endpoints(r["frames"]) == \
        {"endpoint_" + spans[(other["trace_id"], other["span_id"])]["endpoint"]}
    assert r["root"] == other["count"]


def test_spanprof_view_end_to_end(browser, spanprof, recorded_spanserver, tmp_path):
    rec, spans = recorded_spanserver
    page = tmp_path / "profile.html"
    res = subprocess.run([str(spanprof), "view", str(rec), "--output", str(page)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    print(res.stderr)
    assert page.exists() and vf.PLACEHOLDER not in page.read_text()
    check_real_page(browser, page.as_uri(), spans)

    # A local recording: its samples come from profile.otlp.pb.gz (times and frame types), the
    # pprof file beside it (the same samples) is not read too.
    r = browser.run(page.as_uri(), [
        READY,
        ev("inputs", "[...document.querySelectorAll('#inputs li.input .input-path')]"
                     ".map(e => e.textContent)"),
        ev("root", "spanprofView.rootValue()"),
        ev("bars", "document.querySelectorAll('#timeline .bars rect').length"),
        {"op": "visible", "name": "timeline", "selector": "#timeline svg"},
        {"op": "text", "name": "range", "selector": "#time-range"},
        ev("styles", "spanprofView.frameTypeStyles()"),
        ev("types", "spanprofView.frameTypes()"),
        ev("fills", FRAME_FILLS),
        ev("legend", LEGEND),
        # The two halves of the time axis, each alone.
        ev("halves", "(() => { const n = document.querySelectorAll('#timeline .bars rect').length;"
                     " const h = n >> 1; spanprofView.setTimeRange(0, h);"
                     " const a = spanprofView.rootValue(); spanprofView.setTimeRange(h, n);"
                     " return [a, spanprofView.rootValue()]; })()"),
        SETTLE, shot("e2e-local-timeline.png"),
    ])
    assert [Path(p).name for p in r["inputs"]] == ["profile.otlp.pb.gz"]
    assert r["root"] == sum(n for _, n in read_folded(rec / "profile.folded"))
    assert r["timeline"] and r["bars"] > 0 and "no timestamps" not in r["range"], r["range"]
    # The agent's own frame types: the server's code is native (plus kernel frames, if any).
    assert r["types"]["endpoint_search"] == "native"
    assert set(r["types"].values()) <= {"native", "kernel", "abort"}
    assert "native" in [t for t, _, _ in r["legend"]]
    assert check_colours(r["fills"], r["types"], r["styles"]) >= 5
    # A time range keeps the samples taken in it: the halves add up to the whole.
    assert r["bars"] > 1 and sum(r["halves"]) == r["root"], (r["halves"], r["root"])


def wait_listening(port, proc, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, f"spanprof view --serve exited with {proc.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def test_spanprof_view_serve(browser, spanprof, recorded_spanserver, procs):
    res = subprocess.run([str(spanprof), "view", "--help"], capture_output=True, text=True)
    if "--serve" not in res.stdout + res.stderr:
        pytest.skip("spanprof view has no --serve yet")
    rec, spans = recorded_spanserver
    port = free_port()
    srv = procs.start(spanprof, "view", rec, "--serve", f"127.0.0.1:{port}",
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_listening(port, srv)
    origin = f"http://127.0.0.1:{port}/"
    check_real_page(browser, origin, spans, allowed=lambda u: u.startswith(origin), prefix="serve")


def folded_share(folded, pattern):
    """Share of the samples of a folded file whose stack has a frame matching the regex."""
    total = hit = 0
    rx = re.compile(pattern)
    for line in folded.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        total += int(n)
        if any(rx.search(f) for f in stack.split(";")):
            hit += int(n)
    return hit / total


def test_flamegraph_svg_search(browser, recorded_spanserver):
    """flamegraph.svg of `spanprof record`: the search box highlights matches, gives their share."""
    rec, _ = recorded_spanserver
    svg = rec / "flamegraph.svg"
    hits = ("[...document.querySelectorAll('#frames > g.hit')].map(g => g.n)")
    fills = ("[...document.querySelectorAll('#frames > g')].filter(g => g.classList.contains('hit'))"
             ".map(g => g.querySelector('rect').getAttribute('fill'))")
    others = ("[...document.querySelectorAll('#frames > g:not(.hit)')]"
              ".filter(g => g.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)').length")
    r = browser.run(svg.as_uri(), [
        {"op": "fill", "selector": "#search", "text": "endpoint_search"},
        ev("matched", "document.getElementById(\'matched\').textContent"),
        ev("hits", hits), ev("fills", fills), ev("others", others),
        # A regular expression; then text that is not a valid one is matched literally.
        {"op": "fill", "selector": "#search", "text": "endpoint_(search|login)$"},
        ev("matched_re", "document.getElementById(\'matched\').textContent"),
        ev("hits_re", hits),
        {"op": "fill", "selector": "#search", "text": "endpoint_search("},
        ev("matched_bad", "document.getElementById(\'matched\').textContent"),
        # Cleared: no highlight, no share, every fill back.
        {"op": "fill", "selector": "#search", "text": ""},
        ev("matched_none", "document.getElementById(\'matched\').textContent"),
        ev("hits_none", hits), ev("others_none", others),
    ])

    def pct(text):
        m = re.fullmatch(r"Matched: ([\d.]+)%", text)
        assert m, text
        return float(m.group(1))

    share = folded_share(rec / "profile.folded", r"^endpoint_search$")
    assert 0 < share < 1
    assert set(r["hits"]) == {"endpoint_search"}
    assert r["fills"] and set(r["fills"]) == {"rgb(230,0,230)"} and r["others"] == 0
    # Frames under 0.1% of the samples are not drawn: their matches are missing from the share.
    assert pct(r["matched"]) == pytest.approx(100 * share, abs=1.0)
    assert set(r["hits_re"]) == {"endpoint_search", "endpoint_login"}
    assert pct(r["matched_re"]) == pytest.approx(
        100 * folded_share(rec / "profile.folded", r"^endpoint_(search|login)$"), abs=1.0)
    assert pct(r["matched_bad"]) == 0
    assert r["matched_none"] == "" and r["hits_none"] == [] and r["others_none"] == 0
