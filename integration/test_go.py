"""Go binaries named from their own PC/line table (.gopclntab, exporter/runtime/go/).

Every test runs once per Go toolchain (TOOLCHAINS: the machine's Go, and go1.27.3 fetched
through the Go module proxy by GOTOOLCHAIN, skipped only when the proxy is unreachable).
The test program (test/runtime/go-progs/goprog, built here with that Go) spins in a known
chain main.main -> main.outer -> main.middle -> main.leaf, with fnv.Mix and fnv.rotate inlined
into main.leaf. Built with -ldflags='-s -w' it has no .symtab and no DWARF: every name, file
and line must come from .gopclntab. The workload runs for a fixed CPU time, started once the
agent samples; the agent stops when it exits (--pid).
"""
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import ROOT, go_fetch, record_gated

GO_PROGS = ROOT / "test" / "runtime" / "go-progs"
CPU_SECONDS = 3
FREQ = 97
# Root to leaf, as Go's own tracebacks show it; the fnv frames are inlined calls in main.leaf.
CHAIN = ["runtime.main", "main.main", "main.outer", "main.middle", "main.leaf"]
MISSING = "[caller unknown: Go function without its frame yet]"
INLINED = ["spanprof.test/goprogs/fnv.Mix", "spanprof.test/goprogs/fnv.rotate"]


# "local": the machine's Go (1.26 here); the others by GOTOOLCHAIN (the go command fetches them
# from the Go module proxy into the module cache: `make deps` does it ahead).
TOOLCHAINS = ["local", "go1.27.3"]


@pytest.fixture(scope="session", params=TOOLCHAINS)
def toolchain(request):
    """A Go toolchain name for GOTOOLCHAIN, fetched if needed; the test is skipped only when
    it is not in the module cache and the Go module proxy is unreachable."""
    if request.param != "local":
        go_fetch(["go", "version"], f"the Go toolchain {request.param}",
                 env=dict(os.environ, GOTOOLCHAIN=request.param))
    return request.param


def go_build(out, toolchain, *flags, pkg="./goprog"):
    """Builds @pkg of test/runtime/go-progs with @toolchain into @out, and checks that the
    binary says it was built by that toolchain (what makes a per-version test mean something)."""
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN=toolchain)
    subprocess.run(["go", "build", *flags, "-o", str(out), pkg], cwd=GO_PROGS, env=env,
                   check=True)
    built = subprocess.run(["go", "version", str(out)], capture_output=True, text=True,
                           env=dict(os.environ, GOTOOLCHAIN="local"), check=True).stdout
    if toolchain != "local":
        assert built.split()[-1] == toolchain, built
    return out


@pytest.fixture(scope="session")
def goprog_stripped(workdir, toolchain):
    out = go_build(workdir / f"goprog-stripped-{toolchain}", toolchain, "-ldflags=-s -w")
    sections = subprocess.run(["readelf", "-SW", str(out)], capture_output=True, text=True,
                              check=True).stdout
    # What makes the test mean something: no symbols, no DWARF, the Go table present.
    assert ".gopclntab" in sections
    assert ".symtab" not in sections and ".debug_info" not in sections
    return out


def names(loc):
    """Function names of a pprof location, root-most (physical) first."""
    return [ln["function"] for ln in reversed(loc["lines"] or [])]


def profile_run(spanprof, pprofcheck, procs, tmp_path, binary, *mode):
    prog = procs.start(binary, str(CPU_SECONDS), "-", *mode, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    assert prog.stdout.readline().strip() == "ready"
    out = tmp_path / "out"
    res = record_gated(spanprof, out, prog, "-p", prog.pid, "-F", FREQ, timeout=180)
    prog.wait(timeout=60)
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    samples = [s for s in prof["samples"]
               if s["num_labels"].get("pid") == [prog.pid] and s["values"][0] > 0]
    return samples, res


def test_stripped_go_named_from_pclntab(spanprof, pprofcheck, procs, tmp_path, goprog_stripped):
    samples, res = profile_run(spanprof, pprofcheck, procs, tmp_path, goprog_stripped)
    total = sum(s["values"][0] for s in samples)
    # Sized by the workload's own CPU time: at least half of what FREQ Hz would give.
    assert total >= CPU_SECONDS * FREQ // 2, (total, res.stderr)
    exact = inlined = 0
    for s in samples:
        # Root to leaf, inlined calls expanded after the function they are inlined into.
        frames = [fn for loc in reversed(s["stack"]) for fn in names(loc)]
        if "runtime.main" not in frames:
            continue
        chain = frames[frames.index("runtime.main"):]
        # The exact chain, then at most the inlined fnv calls or leaf's checkpoint() below it.
        if chain[:len(CHAIN)] == CHAIN and (
                chain[len(CHAIN):] in ([], INLINED[:1], INLINED, ["main.checkpoint"])):
            exact += s["values"][0]
            inlined += s["values"][0] if chain[len(CHAIN):] else 0
    share = exact / total
    print(f"exact chain: {exact}/{total} samples ({share:.1%}), {inlined} with inlined frames")
    assert share >= 0.90, (share, res.stderr)
    # Inlined calls are named too (the loop body is fnv.Mix and fnv.rotate).
    assert inlined > 0
    # File and line from the table: main.leaf's frames point into goprog/main.go.
    leaf_lines = [ln for s in samples for loc in s["stack"] for ln in loc["lines"] or []
                  if ln["function"] == "main.leaf"]
    assert leaf_lines and all(ln["file"].endswith("goprog/main.go") and ln["line"] > 0
                              for ln in leaf_lines)


def test_frameless_go_leaf_caller_marked(spanprof, pprofcheck, procs, tmp_path, goprog_stripped):
    """main.flatLeaf has no stack frame: a frame-pointer walk from inside it reads its caller's
    saved frame and goes on at main.outerFlat. The stack must say a caller is missing there,
    never show main.outerFlat calling main.flatLeaf."""
    samples, res = profile_run(spanprof, pprofcheck, procs, tmp_path, goprog_stripped,
                               "frameless")
    total = sum(s["values"][0] for s in samples)
    assert total >= CPU_SECONDS * FREQ // 2, (total, res.stderr)
    marked = wrong = 0
    for s in samples:
        frames = [fn for loc in reversed(s["stack"]) for fn in names(loc)]
        if "main.flatLeaf" not in frames:
            continue
        above = frames[frames.index("main.flatLeaf") - 1]
        if above == "main.outerFlat":
            wrong += s["values"][0]
        chain = frames[frames.index("runtime.main"):] if "runtime.main" in frames else []
        if chain == ["runtime.main", "main.main", "main.outerFlat", MISSING, "main.flatLeaf"]:
            marked += s["values"][0]
    print(f"marked chain: {marked}/{total} samples, wrong adjacency: {wrong}")
    assert wrong == 0
    # ... and counted in the summary.
    assert res.stats["frames"]["go_callers_missing"] >= marked, res.stats["frames"]
    assert marked / total >= 0.90, (marked, total, res.stderr)


@pytest.fixture(scope="session", params=["internal", "external"])
def goprog_full(workdir, toolchain, request):
    """With DWARF; linked by Go's linker, or by gcc (-linkmode=external, as every cgo program
    is): then the crt files' .eh_frame comes along, and Go's functions are only in the
    .debug_frame."""
    out = go_build(workdir / f"goprog-full-{toolchain}-{request.param}", toolchain,
                   f"-ldflags=-linkmode={request.param}")
    sections = subprocess.run(["readelf", "-SW", str(out)], capture_output=True, text=True,
                              check=True).stdout
    assert ".debug_frame" in sections  # CFI for every Go function: the agent walks by it
    assert (".eh_frame " in sections) == (request.param == "external")
    return out


def test_frameless_go_leaf_with_cfi(spanprof, pprofcheck, procs, tmp_path, goprog_full):
    """With DWARF the binary has .debug_frame, the agent walks its stacks by CFI, which finds
    the caller of a frameless function: the exact chain, and no "caller unknown" marker where
    the walk left the leaf by a CFI row (SP_SAMPLE_LEAF_CFI). Linked externally, the binary has
    an .eh_frame too (gcc's crt files): the agent read that one alone, and every stack had the
    marker in place of main.middleFlat."""
    samples, res = profile_run(spanprof, pprofcheck, procs, tmp_path, goprog_full, "frameless")
    total = sum(s["values"][0] for s in samples)
    assert total >= CPU_SECONDS * FREQ // 2, (total, res.stderr)
    exact = wrong = 0
    for s in samples:
        frames = [fn for loc in reversed(s["stack"]) for fn in names(loc)]
        if "main.flatLeaf" not in frames:
            continue
        if frames[frames.index("main.flatLeaf") - 1] == "main.outerFlat":
            wrong += s["values"][0]
        chain = frames[frames.index("runtime.main"):] if "runtime.main" in frames else []
        if chain == ["runtime.main", "main.main", "main.outerFlat", "main.middleFlat",
                     "main.flatLeaf"]:
            exact += s["values"][0]
    print(f"exact chain: {exact}/{total} samples, wrong adjacency: {wrong}")
    assert wrong == 0
    assert exact / total >= 0.90, (exact, total, res.stderr)


@pytest.fixture(scope="session")
def golabels_prog(workdir, toolchain):
    """The labelled HTTP service (test/runtime/go-progs/golabels), built -s -w: no DWARF, so
    the offsets come from the agent's table for the toolchain's Go version; and a build with
    DWARF, where they come from the binary itself."""
    out = {}
    for name, flags in (("stripped", ["-ldflags=-s -w"]), ("dwarf", [])):
        out[name] = go_build(workdir / f"golabels-{name}-{toolchain}", toolchain, *flags,
                             pkg="./golabels")
    return out


BURN_FN = {"checkout": "main.burnCheckout", "search": "main.burnSearch"}


def go_label_links(samples, spans):
    """Counts by verdict: in-span samples (in a burn function), linked ones, wrong links (a
    span the program never printed, outside pprof.Do, or in the other endpoint), links outside
    spans."""
    c = dict(in_span=0, linked=0, wrong=0, outside=0, outside_linked=0, span_name=0)
    wrong = []
    for s in samples:
        n = s["values"][0]
        fns = [fn for loc in s["stack"] for fn in names(loc)]
        lab = s.get("labels") or {}
        link = (lab.get("trace_id", [None])[0], lab.get("span_id", [None])[0])
        in_ep = [ep for ep, fn in BURN_FN.items() if fn in fns]
        if in_ep:
            c["in_span"] += n
        if "main.betweenRequests" in fns:
            c["outside"] += n
            c["outside_linked"] += n if link[0] or link[1] else 0
        if not link[0]:
            continue
        ep = spans.get(link)
        # Labels are set inside pprof.Do only: a linked sample is under it, in the span's
        # endpoint or in Do's own code around the call, never in the other endpoint. A stack
        # cut short (a signal handler's: sigtramp, then an unproven return address) may not
        # show Do.
        whole = not any(fn.startswith("[truncated") for fn in fns)
        if ep is None or (whole and "runtime/pprof.Do" not in fns) or in_ep not in ([ep], []):
            c["wrong"] += n
            wrong.append((link, ep, fns[:8]))
            continue
        c["linked"] += n
        if lab.get("span_name") == [ep]:
            c["span_name"] += n
    return c, wrong


@pytest.mark.parametrize("build", ["stripped", "dwarf"])
def test_go_goroutine_labels_link_spans(spanprof, pprofcheck, procs, tmp_path, golabels_prog,
                                        build):
    """Requests served under pprof.Do labels (span_id, trace_id, span_name): the samples of each
    request's CPU carry its span as their link, its span_name as an attribute; nothing outside
    a request is linked, no sample names a span it was not in."""
    check_label_links(spanprof, pprofcheck, procs, tmp_path, golabels_prog[build], build)


# Releases whose goroutine labels are a map[string]string (Go 1.18-1.23), built for real: the
# ones of the 1.18-1.20 table row that the Go module proxy serves here (test/runtime/gopclntab.mk
# fetches the same toolchains for the pclntab layouts).
MAP_LABEL_RELEASES = ["go1.18.10", "go1.19.13"]


@pytest.fixture(scope="session", params=MAP_LABEL_RELEASES)
def map_golabels_prog(workdir, request):
    """golabels_prog built by a release whose labels are a map (stripped: the agent's table row
    for the release; with DWARF: the offsets and the map's form from the binary)."""
    # GOFLAGS set, as for the builds: `go env` may hold flags an older release does not know.
    go_fetch(["go", "version"], f"the Go toolchain {request.param}",
             env=dict(os.environ, GOTOOLCHAIN=request.param, GOFLAGS="-mod=mod"))
    return {name: go_build(workdir / f"golabels-{name}-{request.param}", request.param, *flags,
                           pkg="./golabels")
            for name, flags in (("stripped", ["-ldflags=-s -w"]), ("dwarf", []))}


@pytest.mark.parametrize("build", ["stripped", "dwarf"])
def test_go_goroutine_labels_of_a_map_release_link_spans(spanprof, pprofcheck, procs, tmp_path,
                                                         map_golabels_prog, build):
    """The same service built by Go 1.18 and 1.19, whose pprof.Do keeps labels in a
    map[string]string that BPF walks bucket by bucket (docs/go.md): the same links, names and
    verdicts as the slice of Go 1.24+."""
    check_label_links(spanprof, pprofcheck, procs, tmp_path, map_golabels_prog[build], build)


def check_label_links(spanprof, pprofcheck, procs, tmp_path, binary, build):
    """Profiles the golabels service @binary (@build names it in the output) and checks each
    request's samples are linked to its own span, with its span_name, and nothing else is."""
    log = tmp_path / "spans.log"
    with open(log, "w") as f:
        prog = procs.start(binary, str(CPU_SECONDS), "-", stdin=subprocess.PIPE,
                           stdout=f, text=True)
        deadline = time.time() + 20
        while "ready" not in log.read_text() and time.time() < deadline:
            time.sleep(0.05)
        out = tmp_path / "out"
        res = record_gated(spanprof, out, prog, "-p", prog.pid, "-F", FREQ, timeout=180)
        prog.wait(timeout=60)
    spans = {}
    for line in log.read_text().splitlines():
        f = line.split()
        if len(f) == 4 and f[0] == "span":
            spans[(f[2], f[3])] = f[1]
    assert len(spans) > 10, f"the program served only {len(spans)} requests"
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    samples = [s for s in prof["samples"]
               if s["num_labels"].get("pid") == [prog.pid] and s["values"][0] > 0]
    c, wrong = go_label_links(samples, spans)
    gl = res.stats["span_links"]["go_labels"]
    print(build, c, gl)
    # Sized by the workload's own CPU time: most of it is in the two burn functions.
    assert c["in_span"] >= CPU_SECONDS * FREQ // 4, (c, res.stderr)
    assert c["wrong"] == 0, f"samples linked to the wrong span: {wrong[:5]}"
    assert c["outside"] > 0 and c["outside_linked"] == 0, c
    assert c["linked"] >= 0.90 * c["in_span"], (c, res.stderr)
    assert c["span_name"] == c["linked"], c
    assert gl["linked"] >= c["linked"], gl
    # Goroutine stacks end at runtime.goexit, whole: by CFI with DWARF; without, the
    # frame-pointer step to goexit + 1 (a return address the runtime plants, after no call)
    # is proven by goexit's own code (bpf/unwind_walk.h). 99% alone.
    total = sum(s["values"][0] for s in samples)
    rooted = sum(s["values"][0] for s in samples if names(s["stack"][-1]) == ["runtime.goexit"])
    assert rooted >= 0.90 * total, (rooted, total)


def test_go_span_id_label_without_trace_id(spanprof, pprofcheck, procs, tmp_path, golabels_prog):
    """otel-profiling-go before v0.6.0 set span_id and span_name only: no link (an OTLP link
    needs a trace id), the span id and name as sample attributes (pprof labels), which Pyroscope joins on."""
    log = tmp_path / "spans.log"
    with open(log, "w") as f:
        prog = procs.start(golabels_prog["stripped"], str(CPU_SECONDS), "-", "spanonly",
                           stdin=subprocess.PIPE, stdout=f, text=True)
        deadline = time.time() + 20
        while "ready" not in log.read_text() and time.time() < deadline:
            time.sleep(0.05)
        out = tmp_path / "out"
        res = record_gated(spanprof, out, prog, "-p", prog.pid, "-F", FREQ, timeout=180)
        prog.wait(timeout=60)
    spans = {f[3]: f[1] for f in (ln.split() for ln in log.read_text().splitlines())
             if len(f) == 4 and f[0] == "span"}
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    in_span = labelled = wrong = 0
    for s in prof["samples"]:
        if s["num_labels"].get("pid") != [prog.pid]:
            continue
        n = s["values"][0]
        fns = [fn for loc in s["stack"] for fn in names(loc)]
        lab = s.get("labels") or {}
        assert "trace_id" not in lab, lab
        ep = [e for e, fn in BURN_FN.items() if fn in fns]
        in_span += n if ep else 0
        sid = lab.get("span_id", [None])[0]
        if sid is None:
            continue
        if spans.get(sid) is None or ep not in ([spans[sid]], []) or \
                lab.get("span_name") != [spans[sid]]:
            wrong += n
        else:
            labelled += n
    print(f"span_id only: {labelled}/{in_span} in-span samples labelled, {wrong} wrong")
    assert in_span >= CPU_SECONDS * FREQ // 4, (in_span, res.stderr)
    assert wrong == 0
    assert labelled >= 0.90 * in_span, (labelled, in_span, res.stderr)
    gl = res.stats["span_links"]["go_labels"]
    assert gl["samples_labeled"] >= labelled and gl["linked"] == 0, gl


@pytest.fixture(scope="session")
def golib(workdir, toolchain):
    """Go in a shared library: test/runtime/go-progs/golib built -buildmode=c-shared, with its
    symbols and stripped (-s -w: named only from its .gopclntab, whose moduledata the file
    leaves to relocations), and the C program that loads it (workloads/golib_host.c)."""
    from conftest import WORKLOADS, compile_c
    out = {"host": compile_c(WORKLOADS / "golib_host.c", workdir / "golib_host", ["-ldl"])}
    for name, flags in (("stripped", ["-ldflags=-s -w"]), ("symbols", [])):
        out[name] = go_build(workdir / f"libgolib-{name}-{toolchain}.so", toolchain,
                             "-buildmode=c-shared", *flags, pkg="./golib")
    sections = subprocess.run(["readelf", "-SW", str(out["stripped"])], capture_output=True,
                              text=True, check=True).stdout
    assert ".gopclntab" in sections and ".symtab" not in sections
    return out


LIB_CHAIN = ["main.libOuter", "main.libMiddle", "main.libLeaf"]


@pytest.mark.parametrize("build", ["stripped", "symbols"])
def test_go_c_shared_library_named(spanprof, pprofcheck, procs, tmp_path, golib, build):
    """A C program calls into a Go library it loaded with dlopen: the library's Go frames are
    named from its own .gopclntab (addresses relative to its load bias), the exact chain
    main.libOuter -> main.libMiddle -> main.libLeaf in at least 90% of the samples in it."""
    prog = procs.start(golib["host"], golib[build], str(CPU_SECONDS), stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    assert prog.stdout.readline().strip() == "ready"
    out = tmp_path / "out"
    res = record_gated(spanprof, out, prog, "-p", prog.pid, "-F", FREQ, timeout=180)
    assert prog.wait(timeout=60) == 0
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    samples = [s for s in prof["samples"]
               if s["num_labels"].get("pid") == [prog.pid] and s["values"][0] > 0]
    total = sum(s["values"][0] for s in samples)
    assert total >= CPU_SECONDS * FREQ // 2, (total, res.stderr)
    in_lib = exact = 0
    for s in samples:
        frames = [fn for loc in reversed(s["stack"]) for fn in names(loc)]
        if not any(fn.startswith("main.lib") for fn in frames):
            continue
        in_lib += s["values"][0]
        if "main.libOuter" not in frames:
            continue
        chain = frames[frames.index("main.libOuter"):]
        if chain[:3] == LIB_CHAIN and chain[3:] in ([], INLINED[:1], INLINED,
                                                    ["main.checkpoint"]):
            exact += s["values"][0]
    print(f"{build}: {in_lib}/{total} samples in the library's chain, {exact} exact")
    assert in_lib >= 0.80 * total, (in_lib, total, res.stderr)
    assert exact >= 0.90 * in_lib, (exact, in_lib, res.stderr)


GOLIB_SPAN = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")  # golib's fixed ids


@pytest.mark.parametrize("build,when", [("stripped", "loaded"), ("symbols", "loaded"),
                                        ("stripped", "late")])
def test_go_c_shared_library_labels_link_spans(spanprof, pprofcheck, procs, tmp_path, golib,
                                               build, when):
    """Goroutine labels set by Go code in a -buildmode=c-shared library that a C program
    loaded (before the agent started, or after it samples: "late"): g's TLS offset comes from
    the GOT slot the loader filled. The library's samples carry its span as their link and its
    span_name; no sample carries another id or a link outside pprof.Do; nothing is linked when
    the call sets no labels."""
    for labelled in (True, False):
        args = [golib["host"], golib[build], str(CPU_SECONDS)]
        args += ["labelled"] if labelled else []
        args += ["late"] if when == "late" else []
        prog = procs.start(*args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert prog.stdout.readline().strip() == "ready"
        out = tmp_path / f"out-{labelled}"
        res = record_gated(spanprof, out, prog, "-p", prog.pid, "-F", FREQ, timeout=180)
        assert prog.wait(timeout=60) == 0
        prof = pprofcheck(out / "profile.pb.gz")
        assert not prof["check_error"], prof["check_error"]
        c = dict(in_lib=0, linked=0, other=0, named=0)
        wrong = []
        for s in prof["samples"]:
            if s["num_labels"].get("pid") != [prog.pid] or s["values"][0] <= 0:
                continue
            n = s["values"][0]
            lab = s.get("labels") or {}
            link = (lab.get("trace_id", [None])[0], lab.get("span_id", [None])[0])
            frames = [fn for loc in s["stack"] for fn in names(loc)]
            in_lib = any(fn.startswith("main.lib") for fn in frames)
            c["in_lib"] += n if in_lib else 0
            if link == (None, None):
                continue
            # Labels are set inside pprof.Do only (the spin loop's getrusage calls too); a
            # stack cut short (a signal handler's, asyncPreempt's) may not show that.
            whole = not any(fn.startswith("[truncated") for fn in frames)
            if link != GOLIB_SPAN or (whole and "runtime/pprof.Do" not in frames):
                c["other"] += n
                wrong.append((link, frames[:12]))
            elif in_lib:
                c["linked"] += n
                c["named"] += n if lab.get("span_name") == ["golib"] else 0
        gl = res.stats["span_links"]["go_labels"]
        print(build, when, "labelled" if labelled else "unlabelled", c, gl)
        assert c["in_lib"] >= CPU_SECONDS * FREQ // 2, (c, res.stderr)
        assert c["other"] == 0, (c, wrong[:3])
        if not labelled:
            assert c["linked"] == 0, c
            continue
        # Late: the slot is read once the loader relocated it (looked at again every 0.5 s).
        share = 0.90 if when == "loaded" else 0.70
        assert c["linked"] >= share * c["in_lib"], (c, res.stderr)
        assert c["named"] == c["linked"], c
        assert gl["processes"] >= 1, gl


@pytest.fixture(scope="session")
def golabelsmap_prog(workdir):
    """test/runtime/go-progs/golabelsmap (built with the machine's Go, DWARF uncompressed), in a
    copy whose DWARF says what a Go 1.18-1.23 build's says: runtime/pprof.labelMap of kind map
    (DW_AT_go_kind 21, where the newer labelMap struct has 25). The agent then walks the labels
    as that map[string]string, which the program lays out itself (built with the machine's Go
    only: the reader is checked against Go's documented layout, not a real old build); the other
    offsets stay the binary's own, from its DWARF."""
    built = go_build(workdir / "golabelsmap-built", "local", "-ldflags=-compressdwarf=false",
                     pkg="./golabelsmap")
    out = workdir / "golabelsmap"
    subprocess.run([sys.executable, GO_PROGS / "labelmap_kind.py", built, out, "21"], check=True)
    return out


# What the program's maps hold, as it prints them: exact label sets for these.
MAP_EXACT = ("main.burnSmall", "main.burnOverflow")
MAP_NONE = {"main.burnGrowing": "skipped", "main.burnHuge": "skipped",
            "main.burnGarbage": "dropped", "main.burnMiscount": "dropped"}


def test_go_labels_map_layout(spanprof, pprofcheck, procs, tmp_path, golabelsmap_prog):
    """Goroutine labels of Go 1.18-1.23 (a map[string]string), as that map.go lays them out:
    the samples of each labelled goroutine carry exactly its map's labels (one bucket with a
    deleted cell, two buckets with an overflow bucket), the first 16 of 20 labels (the rest
    counted); a map being grown or with 64 buckets is skipped, one with an evacuated mark or a
    wrong count dropped: no labels, counted."""
    prog = procs.start(golabelsmap_prog, str(2 * CPU_SECONDS), stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    want = {}
    for line in iter(prog.stdout.readline, "ready\n"):
        f = line.split()
        assert f and f[0] == "labels", line
        want[f[1]] = dict(kv.split("=", 1) for kv in f[2:])
    res = record_gated(spanprof, tmp_path / "out", prog, "-p", prog.pid, "-F", FREQ,
                       timeout=180)
    assert prog.wait(timeout=60) == 0
    prof = pprofcheck(tmp_path / "out" / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    got = {fn: [] for fn in want}
    for s in prof["samples"]:
        if s["num_labels"].get("pid") != [prog.pid] or s["values"][0] <= 0:
            continue
        fns = [fn for loc in s["stack"] for fn in names(loc)]
        for fn in want:
            if fn in fns:
                lab = {k: v[0] for k, v in (s.get("labels") or {}).items()}
                got[fn] += [lab] * s["values"][0]
    gl = res.stats["span_links"]["go_labels"]
    print({fn: len(v) for fn, v in got.items()}, gl)
    for fn in want:
        # Sized by the workload's own CPU time: 7 goroutines share it.
        assert len(got[fn]) >= 2 * CPU_SECONDS * FREQ // 7 // 4, (fn, len(got[fn]), res.stderr)
    go_keys = set().union(*(w.keys() for w in want.values()))
    for fn in MAP_EXACT:
        exact = sum(1 for lab in got[fn] if {k: v for k, v in lab.items() if k in go_keys}
                    == want[fn])
        wrong = [lab for lab in got[fn] if set(lab) & go_keys and
                 {k: v for k, v in lab.items() if k in go_keys} != want[fn]]
        assert not wrong, (fn, wrong[:3])
        assert exact >= 0.90 * len(got[fn]), (fn, exact, len(got[fn]))
    many = [{k: v for k, v in lab.items() if k in go_keys} for lab in got["main.burnMany"]]
    assert all(len(lab) in (0, 16) and lab.items() <= want["main.burnMany"].items()
               for lab in many), many[:3]
    assert sum(1 for lab in many if lab) >= 0.90 * len(many), many[:3]
    # counted once per sample that left labels out
    assert gl["labels_left_out"] >= sum(1 for lab in many if lab), gl
    # The trace and span ids of the small map link its samples.
    assert gl["linked"] >= 0.90 * len(got["main.burnSmall"]), gl
    for fn, why in MAP_NONE.items():
        assert not [lab for lab in got[fn] if set(lab) & go_keys], (fn, got[fn][:3])
    skipped = sum(len(got[fn]) for fn, why in MAP_NONE.items() if why == "skipped")
    dropped = sum(len(got[fn]) for fn, why in MAP_NONE.items() if why == "dropped")
    assert gl["maps_skipped"] >= skipped > 0, gl
    assert gl["dropped_inconsistent"] >= dropped > 0, gl


@pytest.fixture(scope="session")
def gosched_prog(workdir, toolchain):
    """test/runtime/go-progs/gosched: labelled goroutines that keep the scheduler (Gosched)
    and the runtime's system stack (large allocations, runtime.GC) busy."""
    return go_build(workdir / f"gosched-{toolchain}", toolchain, pkg="./gosched")


# Entered by a switch to g0 (or gsignal): a function the unwinder shows leaf-ward of one of
# these ran on the runtime's stack, not the goroutine's (src/runtime/asm_amd64.s, proc.go,
# signal_unix.go). A leaf in one of them may be before its switch: left unclassified.
G0_ENTRIES = {"runtime.mcall", "runtime.systemstack", "runtime.morestack", "runtime.mstart",
              "runtime.mstart0", "runtime.mstart1", "runtime.asmcgocall", "runtime.sigtramp",
              "runtime.sigtrampgo"}
# Run on g0 only (proc.go: mcall's callees and the scheduler they call; mgc.go's background
# mark worker, a goroutine without labels: never linked either).
G0_ONLY = {"runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.gosched_m",
           "runtime.goschedImpl", "runtime.execute", "runtime.stopm", "runtime.gcBgMarkWorker"}


def g0_sample(frames):
    """Whether a stack (function names, leaf first) shows code of g0 or gsignal at its leaf
    side: a G0_ONLY function, or any function called from a G0_ENTRIES one, before the first
    main.* function."""
    for i, fn in enumerate(frames):
        if fn.startswith("main."):
            return False
        if fn in G0_ONLY or (i > 0 and fn in G0_ENTRIES):
            return True
    return False


def test_go_labels_not_linked_on_g0(spanprof, pprofcheck, procs, tmp_path, gosched_prog):
    """Labelled goroutines that switch all the time (runtime.Gosched), allocate large blocks
    (the heap's allocLarge on systemstack) and run runtime.GC(): while the thread runs g0
    (scheduler, systemstack) or gsignal, m.curg still names the labelled goroutine, but the
    CPU is not running it. No such sample is linked (bpf/golabels.bpf.h: g must be m.curg and
    SP in its stack); the goroutines' own samples in main.burnLabelled are, 95% at least."""
    prog = procs.start(gosched_prog, str(CPU_SECONDS), "-", stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    f = prog.stdout.readline().split()
    assert len(f) == 4 and f[0] == "span", f
    span = (f[2], f[3])
    assert prog.stdout.readline().strip() == "ready"
    out = tmp_path / "out"
    res = record_gated(spanprof, out, prog, "-p", prog.pid, "-F", FREQ, timeout=180)
    assert prog.wait(timeout=60) == 0
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    c = dict(labelled=0, labelled_linked=0, g0=0, g0_linked=0, wrong=0, total=0)
    bad = []
    for s in prof["samples"]:
        if s["num_labels"].get("pid") != [prog.pid] or s["values"][0] <= 0:
            continue
        n = s["values"][0]
        c["total"] += n
        frames = [fn for loc in s["stack"] for fn in reversed(names(loc))]
        lab = s.get("labels") or {}
        link = (lab.get("trace_id", [None])[0], lab.get("span_id", [None])[0])
        linked = link != (None, None)
        whole = not any(fn.startswith("[truncated") for fn in frames)
        if linked and (link != span or (whole and "runtime/pprof.Do" not in frames)):
            c["wrong"] += n
            bad.append(("wrong", link, frames[:10]))
        if g0_sample(frames):
            c["g0"] += n
            if linked:
                c["g0_linked"] += n
                bad.append(("g0", link, frames[:10]))
        elif "main.burnLabelled" in frames:
            c["labelled"] += n
            c["labelled_linked"] += n if link == span else 0
    gl = res.stats["span_links"]["go_labels"]
    print(c, gl)
    # Sized by the workload's own CPU time (its shares are set in rounds of work, not in wall
    # time): the labelled function had 39% of the samples here, 11% in a TCG guest (6.1),
    # where the runtime's memory clearing and GC cost most. The runtime's share is never nil
    # with four goroutines yielding in a loop, allocating and collecting.
    assert c["total"] >= CPU_SECONDS * FREQ // 2, (c, res.stderr)
    assert c["labelled"] >= max(10, c["total"] // 20), (c, res.stderr)
    assert c["g0"] > 0, c
    assert c["g0_linked"] == 0 and c["wrong"] == 0, (c, bad[:5])
    assert c["labelled_linked"] >= 0.95 * c["labelled"], (c, res.stderr)
    assert gl["system_goroutine"] > 0, gl
