"""The alloc profile (--profile alloc): uprobes on the allocator entry points, sampling by bytes.

A program compiled here (workloads/alloc_sites.cpp) allocates at known sites with known sizes and
counts (malloc small and large, calloc, realloc, realloc(NULL), aligned_alloc, posix_memalign,
C++ new[], and a dlopen()ed library with a malloc of its own) and prints the truth. The agent's
pprof output (alloc.pb.gz, decoded by the reference Go implementation) must give:
  - at the default rate (one sample per 512 KiB on average), each site's estimated bytes and
    allocations within 10 % of the truth (the counts are sized so that 10 % is >= 4 standard
    errors of the Poisson sampling estimate);
  - with --alloc-sample-bytes 0 --alloc-min-bytes 4096, every allocation >= 4096 bytes exactly
    once, and none smaller;
  - the stacks: site function, then the allocator entry point as the leaf;
  - span links: allocations made inside a request's span carry that span (workloads/alloc_spans.c).
"""
import math
import re
import signal
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, WORKLOADS, read_stats, stats_path, wait_sampling

WRITER = ROOT / "writer"
MEAN = 512 << 10  # the default --alloc-sample-bytes


@pytest.fixture(scope="session")
def alloc_bins(workdir):
    d = workdir / "alloc"
    d.mkdir(exist_ok=True)
    sites, plugin, spans = d / "alloc_sites", d / "liballoc_plugin.so", d / "alloc_spans"
    subprocess.run(["g++", "-O2", "-g", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls",
                    "-o", sites, WORKLOADS / "alloc_sites.cpp", "-ldl"], check=True)
    subprocess.run(["gcc", "-O2", "-g", "-fPIC", "-shared", "-Wl,-Bsymbolic", "-o", plugin,
                    WORKLOADS / "alloc_plugin.c"], check=True)
    subprocess.run(["gcc", "-O2", "-g", "-pthread", f"-I{WRITER}",
                    "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1", "-o", spans,
                    WORKLOADS / "alloc_spans.c", WRITER / "spanprof_ctx.c"], check=True)
    return {"sites": sites, "plugin": plugin, "spans": spans}


def wait_line(proc, prefix, timeout=180):
    """Lines of proc's stdout up to the first starting with prefix."""
    lines = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith(prefix):
            return lines
    raise AssertionError(f"no '{prefix}' line from the workload: {lines[-5:]}")


def run_agent(spanprof, outdir, args, workload_cmd, procs, timeout=300):
    """Starts the workload, then the agent on it, lets the workload go once the agent samples,
    and stops the agent once the workload is done. Returns (workload stdout lines, stderr)."""
    wl = procs.start(*workload_cmd, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    ready = wait_line(wl, "ready")
    agent = procs.start(spanprof, "record", "--profile", "alloc", "-p", wl.pid,
                        "--output-dir", outdir, "--stats-json", stats_path(outdir), *args,
                        stderr=subprocess.PIPE, text=True)
    wait_sampling(agent)
    wl.stdin.write("go\n")
    wl.stdin.close()
    lines = ready + wait_line(wl, "done", timeout)
    assert wl.wait(timeout=60) == 0
    agent.send_signal(signal.SIGINT)
    _, err = agent.communicate(timeout=120)
    assert agent.returncode == 0, err
    return lines, err


def truth(lines):
    return {f[1]: (int(f[2]), int(f[3])) for f in (l.split() for l in lines)
            if len(f) == 4 and f[0] == "site"}


def functions(sample):
    return [ln["function"] for loc in sample["stack"] or [] for ln in loc["lines"] or []]


# site_realloc mallocs 16 bytes before each realloc. When one of those is sampled (about one run
# in ten at the default rate) it weighs 1/p = ~33000 allocations of its own: an unbiased estimate
# of the small mallocs, not of the reallocs the site reports. Its samples are told apart by leaf.
OTHER_ALLOCATION = {"site_realloc": ("malloc", "__libc_malloc")}


def per_site(prof, sites):
    """site -> [allocations, bytes, samples, leaf functions seen]."""
    out = {s: [0, 0, 0, set()] for s in sites}
    for s in prof["samples"]:
        fns = functions(s)
        for site in sites:
            if site in fns and not (fns and fns[0] in OTHER_ALLOCATION.get(site, ())):
                o = out[site]
                o[0] += s["values"][0]
                o[1] += s["values"][1]
                o[2] += 1
                o[3].add(fns[0] if fns else "")
    return out


def drops(outdir):
    """alloc samples lost to a full ring buffer in the run_agent() run writing @outdir."""
    return read_stats(stats_path(outdir))["samples"]["by_type"]["alloc"]["lost_ring_buffer"]


ENTRY = re.compile(r"malloc|calloc|realloc|memalign|aligned_alloc|operator new")


def test_estimates_at_default_rate(spanprof, alloc_bins, pprofcheck, procs, tmp_path):
    out = tmp_path / "out"
    lines, err = run_agent(spanprof, out, [], [alloc_bins["sites"], "stats", alloc_bins["plugin"]],
                           procs)
    t = truth(lines)
    prof = pprofcheck(out / "alloc.pb.gz")
    assert prof["sample_types"] == ["alloc_objects/count", "alloc_space/bytes"]
    assert not prof["check_error"], prof["check_error"]
    assert drops(out) == 0, err
    got = per_site(prof, t)
    print({k: (v[:3], t[k]) for k, v in got.items()})
    for site, (n, size) in t.items():
        est_n, est_b, nsamples, leaves = got[site]
        p = -math.expm1(-size / MEAN)
        sigma = math.sqrt((1 - p) / (p * n))  # relative standard error of the estimate
        assert nsamples > 0, f"{site}: no sample\n{err}"
        assert all(ENTRY.search(f) for f in leaves), (site, leaves)
        if sigma > 0.025:  # the plugin site: too few bytes for 10 %; present is enough
            continue
        assert abs(est_b / (n * size) - 1) < 0.10, (site, est_b, n * size, nsamples)
        assert abs(est_n / n - 1) < 0.10, (site, est_n, n, nsamples)


def test_every_allocation_above_min(spanprof, alloc_bins, pprofcheck, procs, tmp_path):
    out = tmp_path / "out"
    lines, err = run_agent(spanprof, out, ["--alloc-sample-bytes", "0", "--alloc-min-bytes",
                                           "4096"],
                           [alloc_bins["sites"], "exact", alloc_bins["plugin"]], procs)
    t = truth(lines)
    prof = pprofcheck(out / "alloc.pb.gz")
    assert drops(out) == 0, err
    got = per_site(prof, t)
    print({k: (v[:3], sorted(v[3]), t[k]) for k, v in got.items()})
    for site, (n, size) in t.items():
        est_n, est_b, nsamples, leaves = got[site]
        if size < 4096:
            assert nsamples == 0, (site, nsamples)
            continue
        # Every allocation once: realloc(NULL) is not counted again by the malloc it jumps to.
        assert (est_n, est_b) == (n, n * size), (site, est_n, est_b, n, size)
        assert all(ENTRY.search(f) for f in leaves), (site, leaves)
    # Nothing below the minimum anywhere in the profile.
    for s in prof["samples"]:
        assert s["values"][1] >= 4096 * s["values"][0], s
    # The expected frames, leaf first.
    stacks = {}
    for s in prof["samples"]:
        fns = functions(s)
        for site in t:
            if site in fns:
                stacks.setdefault(site, fns[:fns.index(site) + 1])
    assert stacks["site_big"][0] in ("malloc", "__libc_malloc"), stacks["site_big"]
    assert stacks["site_calloc"][0] in ("calloc", "__libc_calloc"), stacks["site_calloc"]
    assert stacks["site_realloc"][0] in ("realloc", "__libc_realloc"), stacks["site_realloc"]
    assert stacks["site_realloc_null"][0] in ("realloc", "__libc_realloc"), \
        stacks["site_realloc_null"]
    assert stacks["site_memalign"][0] in ("posix_memalign", "__posix_memalign"), \
        stacks["site_memalign"]
    new = stacks["site_new"]
    # libstdc++'s operator new[] jumps to operator new, which calls malloc.
    assert new[0] in ("malloc", "__libc_malloc") and new[1] == "operator new(unsigned long)", new
    plugin = stacks["plugin_site"]
    assert plugin[0] == "malloc", plugin
    # main calls every site: the stacks are whole.
    for site, st in stacks.items():
        s = next(x for x in prof["samples"] if site in functions(x))
        assert "main" in functions(s), (site, functions(s))


def test_new_process_whole_host(spanprof, alloc_bins, pprofcheck, procs, tmp_path):
    """Whole host: libc is probed at start, so a process started later that only allocates is
    profiled from its first allocation; nothing stays attached after the agent exits."""
    out = tmp_path / "out"
    agent = procs.start(spanprof, "record", "--profile", "alloc", "--alloc-sample-bytes", "0",
                        "--alloc-min-bytes", str(16 << 20), "--output-dir", out,
                        stderr=subprocess.PIPE, text=True)
    wait_sampling(agent)
    wl = procs.start(alloc_bins["sites"], "huge", stdout=subprocess.PIPE,
                     stdin=subprocess.PIPE, text=True)
    wl.stdin.write("go\n")
    wl.stdin.flush()
    wait_line(wl, "done")
    agent.send_signal(signal.SIGINT)
    _, err = agent.communicate(timeout=120)
    assert agent.returncode == 0, err
    wl.stdin.close()
    assert wl.wait(timeout=60) == 0
    prof = pprofcheck(out / "alloc.pb.gz")
    got = per_site(prof, ["site_huge"])["site_huge"]
    assert (got[0], got[1]) == (50, 50 * (16 << 20)), (got, err)
    # The uprobes are gone: a new process's malloc starts with its own instruction again.
    res = subprocess.run([alloc_bins["sites"], "check"], capture_output=True, text=True,
                         check=True)
    assert res.stdout.strip() != "first-byte cc", res.stdout


def test_span_links(spanprof, alloc_bins, pprofcheck, procs, tmp_path):
    out = tmp_path / "out"
    # 2 threads x 40 requests x 12 allocations of 4 KiB and more: 960 samples, fewer than the
    # event ring buffer holds (about 1300), so none is lost however slowly the agent drains it
    # (9600 lost some in a TCG guest).
    lines, err = run_agent(spanprof, out, ["--alloc-sample-bytes", "0", "--alloc-min-bytes",
                                           "4096"], [alloc_bins["spans"], "40", "2"], procs)
    spans = {}
    for f in (l.split() for l in lines):
        if len(f) == 6 and f[0] == "span":
            spans[(f[2], f[3])] = int(f[1])
    assert len(spans) == 80
    prof = pprofcheck(out / "alloc.pb.gz")
    assert drops(out) == 0, err
    linked, outside, per_span = 0, 0, {}
    for s in prof["samples"]:
        fns = functions(s)
        lab = s.get("labels") or {}
        link = (lab.get("trace_id", [None])[0], lab.get("span_id", [None])[0])
        tid = (s.get("num_labels") or {}).get("tid", [None])[0]
        n = s["values"][0]
        if "endpoint_alloc" in fns:
            assert link in spans, (link, fns[:4])
            assert spans[link] == tid
            per_span[link] = per_span.get(link, 0) + n
            linked += n
        elif "between_requests" in fns:
            assert link[0] is None, (link, fns[:4])
            outside += n
    # Every allocation of every span, with its span; none outside carries one.
    assert linked == 8 * 80 and outside == 4 * 80, (linked, outside)
    assert set(per_span.values()) == {8}
