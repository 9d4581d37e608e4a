"""Data documents for the page of `spanprof view` (docs/view-format.md), made without the C side.

make_document() is a small, realistic profile: two services (a frontend and a backend, plus a
backend worker running Python), five threads, 20 spans in 10 traces (each trace is a frontend
span and the backend span it called), three profile types (cpu, alloc, offcpu) over 60 one-second
buckets, and three inputs, one of which failed. Every span's samples go through its own endpoint
function (endpoint_checkout, endpoint_search, ...); work outside spans goes through
between_requests. make_large_document() is a million samples' worth, for the timing test.

build_page() puts a document into the page template the way `spanprof view` does.

    python3 integration/view_fixture.py OUT.json [--large SAMPLES]     # writes a document
    python3 integration/view_fixture.py OUT.html --page TEMPLATE [...]  # writes a page
"""
import json
import random
import sys
from pathlib import Path

PLACEHOLDER = '"__SPANPROF_DATA__"'
FORMAT = "spanprof-view/1"
START_NS = 1764441600000000000
ENDPOINTS = ["checkout", "search", "login", "cart", "profile"]


class Builder:
    """String and frame tables with de-duplication, and the row columns."""

    def __init__(self):
        self.strings = [""]
        self.string_ix = {"": 0}
        self.frames = {"name": [], "file": [], "line": [], "module": [], "kind": [], "type": []}
        self.frame_ix = {}
        self.stacks = []
        self.stack_ix = {}
        self.rows = {k: [] for k in ("type", "stack", "thread", "span", "bucket", "value")}

    def s(self, text):
        if text not in self.string_ix:
            self.string_ix[text] = len(self.strings)
            self.strings.append(text)
        return self.string_ix[text]

    def frame(self, name, file="", line=0, module="", kind=0, type_=""):
        """type_: profile.frame.type ("" unknown: the page goes by kind)."""
        key = (name, file, line, module, kind, type_)
        if key not in self.frame_ix:
            self.frame_ix[key] = len(self.frames["name"])
            for col, v in zip(("name", "file", "line", "module", "kind", "type"),
                              (self.s(name), self.s(file), line, self.s(module), kind,
                               self.s(type_))):
                self.frames[col].append(v)
        return self.frame_ix[key]

    def stack(self, frames):
        key = tuple(frames)
        if key not in self.stack_ix:
            self.stack_ix[key] = len(self.stacks)
            self.stacks.append(list(frames))
        return self.stack_ix[key]

    def row(self, type_, stack, thread, span, bucket, value):
        for k, v in zip(("type", "stack", "thread", "span", "bucket", "value"),
                        (type_, stack, thread, span, bucket, value)):
            self.rows[k].append(v)


PROFILE_TYPES = [
    {"name": "cpu", "sample_type": "samples", "unit": "count", "period_type": "cpu",
     "period_unit": "nanoseconds", "period": 52631578},
    {"name": "alloc", "sample_type": "alloc_space", "unit": "bytes", "period_type": "space",
     "period_unit": "bytes", "period": 524288},
    {"name": "offcpu", "sample_type": "offcpu_time", "unit": "nanoseconds",
     "period_type": "offcpu", "period_unit": "nanoseconds", "period": 1},
]
CPU, ALLOC, OFFCPU = 0, 1, 2


# Frames of the runtimes the agent names: (name, kind, profile.frame.type). Go's has no type:
# the page takes it from its kind (documents older than frames.type).
RUNTIME_FRAMES = [("main.handlePlugin", 4, ""), ("processBatch", 2, "v8js"),
                  ("com.shop.Plugin.run", 2, "jvm"), ("Shop.Plugin.Run", 2, "dotnet"),
                  ("jit_stub_0x7f00", 2, "jit")]


def _kernel(b, *names):
    return [b.frame(n, module="[kernel]", kind=1, type_="kernel") for n in names]


def make_document(seed=1, initial_span=None, initial_trace=None):
    """Returns (doc, meta); meta["spans"][i] = {trace_id, span_id, endpoint, process, thread,
    trace, name, label}: name and label (the span list's "name (service) duration") None for a
    span no traces file names."""
    rnd = random.Random(seed)
    b = Builder()
    services = ["shop-frontend", "shop-backend"]
    processes = [("frontend", 4101, 0), ("backend", 4202, 1), ("backend-worker", 4203, 1)]
    threads = [(0, 4102, "http-1"), (0, 4103, "http-2"), (1, 4205, "api-1"), (1, 4206, "api-2"),
               (2, 4210, "jobs")]
    libc = "libc.so.6"

    def prefix(proc):
        exe = processes[proc][0]
        src = f"src/{exe}/main.c"
        loop = {0: "server_loop", 1: "api_loop", 2: "job_loop"}[proc]
        return [b.frame("_start", module=exe), b.frame("__libc_start_main", module=libc),
                b.frame("main", src, 31, exe), b.frame(loop, src, 77, exe),
                b.frame("handle_request" if proc < 2 else "run_job", src, 120, exe)]

    def endpoint(proc, ep, line):
        exe = processes[proc][0]
        return b.frame(f"endpoint_{ep}", f"src/{exe}/handlers.c", line, exe)

    def leaf_cpu(proc, ep):
        """Stacks (below the endpoint) of CPU work, with relative weights."""
        exe = processes[proc][0]
        src = f"src/{exe}/handlers.c"
        out = [([b.frame(f"compute_{ep}", src, 300 + ENDPOINTS.index(ep), exe),
                 b.frame("sha256_block", "src/lib/sha256.c", 88, exe)], 5),
               ([b.frame("json_encode", "src/lib/json.c", 41, exe),
                 b.frame("memcpy", module=libc)], 3),
               ([b.frame("db_query", "src/lib/db.c", 12, exe),
                 b.frame("__send", module=libc)] +
                _kernel(b, "entry_SYSCALL_64", "do_syscall_64", "__x64_sys_sendto",
                        "tcp_sendmsg"), 2)]
        if ep == "search":
            out.append(([b.frame("search_index_lookup", "src/lib/index.cc", 210, exe),
                         b.frame("std::vector<int>::operator[](unsigned long)",
                                 "/usr/include/c++/12/bits/stl_vector.h", 1123, exe)], 4))
        return out

    ep_line = {ep: 40 + 20 * i for i, ep in enumerate(ENDPOINTS)}
    # Spans: trace k = a frontend span on a frontend thread and the backend span it called.
    # The optional columns of a traces file read with the profiles (docs/view-format.md): every
    # span but those of traces 3 and 8 is named; trace 6's backend span names no service (the
    # page then takes its process's).
    spans = {"trace_id": [], "span_id": [], "attrs": [], "process": [], "name": [],
             "service": [], "start_unix_ns": [], "end_unix_ns": [], "duration_ns": [],
             "parent_span_id": []}
    meta_spans = []
    for k in range(10):
        trace = "%032x" % rnd.getrandbits(128)
        ep = ENDPOINTS[k % len(ENDPOINTS)]
        for proc, thread in ((0, k % 2), (1, 2 + k % 2)):
            sid = "%016x" % rnd.getrandbits(64)
            if proc == 0:
                attrs = {"http.route": f"/{ep}", "http.method": "POST" if ep == "checkout" else "GET",
                         "enduser.id": f"user-{100 + k}"}
            else:
                attrs = {"http.route": f"/api/{ep}", "rpc.method": f"Shop.{ep.title()}"}
            if k == 7 and proc == 0:
                attrs["note"] = "</script><!--<script> & \"quotes\""  # must survive embedding
            spans["trace_id"].append(trace)
            spans["span_id"].append(sid)
            spans["attrs"].append(attrs)
            spans["process"].append(proc)
            named = k not in (3, 8)
            name = ((f"{'POST' if ep == 'checkout' else 'GET'} /{ep}" if proc == 0
                     else f"Shop.{ep.title()}") if named else None)
            dur = (k + 1) * 2_500_000 + proc * 1_000_000 if named else 0
            start = START_NS + (2 + 5 * k + proc) * 10**9 if named else 0
            spans["name"].append(b.s(name) if named else 0)
            spans["service"].append(b.s(services[proc]) if named and (k, proc) != (6, 1) else 0)
            spans["start_unix_ns"].append(start)
            spans["end_unix_ns"].append(start + dur if named else 0)
            spans["duration_ns"].append(dur)
            spans["parent_span_id"].append(spans["span_id"][-2] if named and proc == 1 else None)
            label = f"{name} ({services[proc]}) {dur / 1e6:.2f} ms" if named else None
            meta_spans.append({"trace_id": trace, "span_id": sid, "endpoint": ep,
                               "process": proc, "thread": thread, "trace": k, "name": name,
                               "label": label})

    for i, m in enumerate(meta_spans):
        proc, thread, ep, k = m["process"], m["thread"], m["endpoint"], m["trace"]
        pre = prefix(proc)
        first = 2 + 5 * k + (0 if proc == 0 else 1)
        for bucket in range(first, first + 3):
            for leaf, weight in leaf_cpu(proc, ep):
                # The endpoint's call-site line differs between callees (frames merge by name).
                line = ep_line[ep] + (4 if leaf[0] == b.frame("json_encode", "src/lib/json.c", 41,
                                                              processes[proc][0]) else 0)
                st = b.stack(pre + [endpoint(proc, ep, line)] + leaf)
                b.row(CPU, st, thread, i, bucket, weight * rnd.randint(1, 3))
            if proc == 0:
                st = b.stack(pre + [endpoint(proc, ep, ep_line[ep] + 4),
                                    b.frame("json_encode", "src/lib/json.c", 41, "frontend"),
                                    b.frame("malloc", module=libc)])
                b.row(ALLOC, st, thread, i, bucket, 4096 * rnd.randint(1, 64))
            else:
                st = b.stack(pre + [endpoint(proc, ep, ep_line[ep] + 8),
                                    b.frame("db_query", "src/lib/db.c", 12, "backend"),
                                    b.frame("__recv", module=libc)] +
                             _kernel(b, "entry_SYSCALL_64", "do_syscall_64", "__x64_sys_recvfrom",
                                     "schedule"))
                b.row(OFFCPU, st, thread, i, bucket, 1_000_000 * rnd.randint(5, 200))

    # Outside spans: between requests on the servers, a Python job loop on the worker.
    for t, (proc, _, _) in enumerate(threads):
        pre = prefix(proc)
        for bucket in range(0, 60, 2):
            if proc < 2:
                exe = processes[proc][0]
                st = b.stack(pre[:4] + [b.frame("between_requests", f"src/{exe}/main.c", 90, exe),
                                        b.frame("burn", f"src/{exe}/main.c", 12, exe)])
                b.row(CPU, st, t, -1, bucket, rnd.randint(1, 4))
                st = b.stack(pre[:4] + [b.frame("epoll_wait", module=libc)] +
                             _kernel(b, "entry_SYSCALL_64", "do_syscall_64", "do_epoll_wait",
                                     "schedule"))
                b.row(OFFCPU, st, t, -1, bucket, 250_000_000)
            else:
                st = b.stack(pre[:2] + [b.frame("Py_RunMain", module="libpython3.11.so.1.0"),
                                        b.frame("_PyEval_EvalFrameDefault",
                                                module="libpython3.11.so.1.0"),
                                        b.frame("run_report", "jobs/report.py", 18, kind=2,
                                                type_="cpython"),
                                        b.frame("aggregate", "jobs/report.py", 44, kind=2,
                                                type_="cpython")])
                b.row(CPU, st, t, -1, bucket, rnd.randint(2, 6))
                # The worker's other runtimes (RUNTIME_FRAMES), and a stack cut at depth.
                for name, kind, type_ in RUNTIME_FRAMES:
                    st = b.stack(pre[:2] + [b.frame("plugin_host", "src/worker/plugins.c", 7,
                                                    "backend-worker"),
                                            b.frame(name, module="plugin", kind=kind, type_=type_)])
                    b.row(CPU, st, t, -1, bucket, rnd.randint(2, 6))
                st = b.stack([b.frame("[truncated: depth limit]", kind=3, type_="abort"),
                              b.frame("deep_recursion", "src/worker/deep.c", 3, "backend-worker")])
                b.row(CPU, st, t, -1, bucket, rnd.randint(2, 6))
    # An input without timestamps or threads: rows with no bucket and no thread.
    st = b.stack([b.frame("_start", module="frontend"), b.frame("__libc_start_main", module=libc),
                  b.frame("main", "src/frontend/main.c", 31, "frontend"),
                  b.frame("load_config", "src/frontend/config.c", 55, "frontend")])
    b.row(CPU, st, -1, -1, -1, 7)

    samples = sum(v for t, v in zip(b.rows["type"], b.rows["value"]) if t == CPU)
    doc = {
        "format": FORMAT,
        "title": f"spanprof: 3 inputs, 2 services, {samples} samples",
        "generated_unix_ns": START_NS + 61 * 10**9,
        "inputs": [
            {"path": "out/profiles-000001.binpb", "format": "otlp-proto",
             "samples": samples - 7, "error": None},
            {"path": "old/profile.pb.gz", "format": "pprof", "samples": 7, "error": None},
            {"path": "out/profiles-000002.binpb", "format": "otlp-proto", "samples": 0,
             "error": "truncated message: 4096 of 9000 bytes"},
        ],
        "strings": b.strings,
        "frames": b.frames,
        "stacks": b.stacks,
        "profile_types": PROFILE_TYPES,
        "services": [b.s(s) for s in services],
        "processes": {"pid": [p[1] for p in processes], "name": [b.s(p[0]) for p in processes],
                      "service": [p[2] for p in processes]},
        "threads": {"process": [t[0] for t in threads], "tid": [t[1] for t in threads],
                    "name": [b.s(t[2]) for t in threads]},
        "spans": spans,
        "time": {"start_unix_ns": START_NS, "bucket_ns": 10**9, "buckets": 60},
        "rows": b.rows,
        "initial": {"span_id": initial_span, "trace_id": initial_trace},
        "some_future_key": {"readers": "ignore it"},
    }
    return doc, {"spans": meta_spans, "services": services}


def make_large_document(samples=1_000_000, seed=2):
    """About `samples` CPU samples: 2,000 functions, ~5,000 spans, 200 buckets, deep stacks."""
    rnd = random.Random(seed)
    b = Builder()
    nfunc = 2000
    funcs = [b.frame(f"fn_{i:04d}", f"src/mod{i % 40}.c", 10 + i % 500, "bigapp") for i in range(nfunc)]
    roots = [b.frame("_start", module="bigapp"), b.frame("main", "src/main.c", 5, "bigapp")]
    eps = [b.frame(f"endpoint_{i:02d}", "src/api.c", 100 + i, "bigapp") for i in range(50)]
    # A pool of distinct stacks: a random walk, so prefixes are shared the way real ones are.
    stacks = []
    for _ in range(20000):
        depth = rnd.randint(8, 40)
        ep = rnd.randrange(len(eps))
        path = roots + [eps[ep]]
        f = rnd.randrange(nfunc)
        for _ in range(depth):
            f = (f * 7 + rnd.randrange(3)) % nfunc
            path.append(funcs[f])
        stacks.append((ep, b.stack(path)))
    nthreads = 16
    nspans = 5000
    spans = {"trace_id": [], "span_id": [], "attrs": [], "process": []}
    for i in range(nspans):
        spans["trace_id"].append("%032x" % rnd.getrandbits(128))
        spans["span_id"].append("%016x" % rnd.getrandbits(64))
        spans["attrs"].append({"http.route": f"/api/{i % 50}", "enduser.id": f"u{i}"})
        spans["process"].append(0)
    total = 0
    while total < samples:
        ep, st = stacks[rnd.randrange(len(stacks))]
        v = rnd.randint(1, 8)
        span = rnd.randrange(nspans) if rnd.random() < 0.8 else -1
        b.row(CPU, st, rnd.randrange(nthreads), span, rnd.randrange(200), v)
        total += v
    return {
        "format": FORMAT,
        "title": f"spanprof: 1 input, 1 service, {total} samples",
        "generated_unix_ns": START_NS,
        "inputs": [{"path": "big/profiles-000001.binpb", "format": "otlp-proto",
                    "samples": total, "error": None}],
        "strings": b.strings,
        "frames": b.frames,
        "stacks": b.stacks,
        "profile_types": PROFILE_TYPES[:1],
        "services": [b.s("bigapp")],
        "processes": {"pid": [9000], "name": [b.s("bigapp")], "service": [0]},
        "threads": {"process": [0] * nthreads, "tid": [9001 + i for i in range(nthreads)],
                    "name": [b.s(f"worker-{i}") for i in range(nthreads)]},
        "spans": spans,
        "time": {"start_unix_ns": START_NS, "bucket_ns": 50_000_000, "buckets": 200},
        "rows": b.rows,
        "initial": {"span_id": None, "trace_id": None},
    }


def embed(doc):
    """The document as the page embeds it: JSON in which '<' never appears as such, so the text
    can neither end the script element ("</script") nor open an HTML comment ("<!--")."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


def build_page(template, doc, out):
    """Writes the page for `doc` (what `spanprof view --output` does) and returns its path."""
    text = Path(template).read_text()
    assert text.count(PLACEHOLDER) == 1, f"{template} must hold {PLACEHOLDER} exactly once"
    Path(out).write_text(text.replace(PLACEHOLDER, embed(doc)))
    return Path(out)


# --- what the page should show, computed from the document alone ---------------------------

def names_of_stack(doc, s):
    return [doc["strings"][doc["frames"]["name"][f]] for f in doc["stacks"][s]]


def type_index(doc, name):
    return next(i for i, t in enumerate(doc["profile_types"]) if t["name"] == name)


def total(doc, type_name="cpu", spans=None, frame_contains=None, service=None, buckets=None):
    """Sum of the values of the rows of that type in those spans (indices), whose stack has a
    frame name containing `frame_contains`, in that service (index), in [b0, b1) buckets."""
    t = type_index(doc, type_name)
    rows = doc["rows"]
    out = 0
    for i in range(len(rows["value"])):
        if rows["type"][i] != t:
            continue
        if spans is not None and rows["span"][i] not in spans:
            continue
        if buckets is not None and not (buckets[0] <= rows["bucket"][i] < buckets[1]):
            continue
        if service is not None:
            th = rows["thread"][i]
            if th < 0 or doc["processes"]["service"][doc["threads"]["process"][th]] != service:
                continue
        if frame_contains is not None and not any(
                frame_contains.lower() in n.lower() for n in names_of_stack(doc, rows["stack"][i])):
            continue
        out += rows["value"][i]
    return out


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--large", type=int, metavar="SAMPLES")
    ap.add_argument("--page", metavar="TEMPLATE", help="write a page from this template")
    a = ap.parse_args(argv)
    doc = make_large_document(a.large) if a.large else make_document()[0]
    if a.page:
        build_page(a.page, doc, a.out)
    else:
        Path(a.out).write_text(json.dumps(doc))


if __name__ == "__main__":
    main(sys.argv[1:])
