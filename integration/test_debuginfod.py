"""Debug files fetched from a debuginfod server (exporter/symbols/debuginfod.c), against elfutils'
own server (Debian package debuginfod) started here on a free port over a directory holding the
debug file of a binary the test builds and strips. The agent runs as users run it: --debuginfod
URL, the client cache in DEBUGINFOD_CACHE_PATH. Root (BPF)."""
import http.server
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import (WORKLOADS, compile_c, free_port, read_folded, read_stats, stats_path,
                      wait_sampling)

DURATION = 3
# The agent's own bounds: 5 s waiting at the end of a local run, then in-flight requests are
# cancelled (the library checks about once a second). Slack for a loaded machine on top.
END_BOUND = DURATION + 5 + 6



def build_id(path):
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


@pytest.fixture(scope="module")
def stripped_chain(tmp_path_factory):
    """The chain workload stripped of every symbol, and its debug file (elsewhere)."""
    d = tmp_path_factory.mktemp("debuginfod")
    full = compile_c(WORKLOADS / "chain.c", d / "chain.full")
    (d / "srv").mkdir()
    debug = d / "srv" / "chain.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(debug)], check=True)
    binary = d / "chain"
    subprocess.run(["strip", "--strip-all", str(full), "-o", str(binary)], check=True)
    full.unlink()
    sections = subprocess.run(["readelf", "-S", str(binary)], capture_output=True, text=True,
                              check=True).stdout
    # What makes the test mean something: nothing on this host names the binary's frames.
    assert ".symtab" not in sections and ".debug_info" not in sections
    return binary, debug, build_id(binary)


@pytest.fixture(scope="module")
def server(stripped_chain, tmp_path_factory):
    """elfutils' debuginfod over the directory holding the debug file; its URL once it serves it."""
    exe = shutil.which("debuginfod")
    if not exe:
        pytest.skip("elfutils' debuginfod server is not installed (Debian package debuginfod)")
    _, debug, bid = stripped_chain
    d = tmp_path_factory.mktemp("debuginfod-db")
    port = free_port()
    srv = subprocess.Popen([exe, "-F", "-p", str(port), "-d", str(d / "db.sqlite"), "-t", "0",
                            "-g", "0", str(debug.parent)], stdout=subprocess.DEVNULL,
                           stderr=open(d / "server.log", "w"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert srv.poll() is None, (d / "server.log").read_text()
            try:
                with urllib.request.urlopen(f"{url}/buildid/{bid}/debuginfo", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "debuginfod never served the debug file:\n" + \
                (d / "server.log").read_text()
            time.sleep(0.3)
        yield url
    finally:
        srv.terminate()
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


class OddServer(http.server.ThreadingHTTPServer):
    """A debuginfod stand-in on loopback: 'slow' never answers in time, 'garbage' answers 200
    with bytes that are no ELF file."""
    daemon_threads = True

    def __init__(self, mode):
        self.mode = mode
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.hits += 1
                if outer.mode == "slow":
                    time.sleep(120)
                    return
                body = b"this is not a debug file\n" * 64
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self):
        self.shutdown()
        self.server_close()


def run_agent(spanprof, out, pid, url, cache, *extra):
    """One local run of DURATION s on @pid with --debuginfod @url; returns (stderr, seconds from
    the start of sampling to the exit, CPU seconds @pid used inside the sampling window). Its
    --stats-json document: end_counts(out)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env["DEBUGINFOD_CACHE_PATH"] = str(cache)
    agent = subprocess.Popen([str(spanprof), "record", "--output-dir", str(out), "--pid", str(pid),
                              "--duration", str(DURATION), "--frequency", "99", "--debuginfod",
                              url, "--stats-json", str(stats_path(out)), *map(str, extra)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env)
    try:
        seen = wait_sampling(agent)
        t0 = time.monotonic()
        cpu0 = cpu_seconds(pid)
        time.sleep(DURATION - 0.3)
        cpu = cpu_seconds(pid) - cpu0
        _, err = agent.communicate(timeout=120)
        secs = time.monotonic() - t0
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    err = "".join(seen) + err
    assert agent.returncode == 0, err
    return err, secs, cpu


def cpu_seconds(pid):
    """User + system CPU time of @pid so far (proc(5) stat fields 14 and 15)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def end_counts(out, stats=None):
    """The debuginfod outcome of the run writing @out (its --stats-json document, or @stats)."""
    d = (stats or read_stats(stats_path(out)))["debuginfod"]
    assert d is not None, "debuginfod was off"
    return dict(d, named=d["named_at_end"])


def chain_share(out):
    folded = read_folded(out / "profile.folded")
    total = sum(c for _, c in folded)
    named = sum(c for f, c in folded if "c" in f and "b" in f and "a" in f and "main" in f)
    return total, named, folded


def test_debug_file_only_the_server_has(spanprof, stripped_chain, server, procs, tmp_path,
                                         pprofcheck):
    binary, _, bid = stripped_chain
    p = procs.start(binary, "30")
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    err, secs, cpu = run_agent(spanprof, out, p.pid, server, cache)
    counts = end_counts(out)
    assert counts["fetched"] == 1 and counts["failed"] == 0 and counts["rejected"] == 0, err
    total, named, folded = chain_share(out)
    # Sized from the CPU time the workload got (a loaded machine gives it less), not the clock.
    assert total >= max(10, 0.5 * cpu * 99), f"{total} samples for {cpu:.2f} s of CPU:\n{err}"
    assert named / total >= 0.9, folded[:5]
    # file:line from the fetched DWARF, in the pprof read by the reference decoder.
    prof = pprofcheck(out / "profile.pb.gz")
    assert prof["check_error"] == ""
    c = [loc for s in prof["samples"] for loc in s["stack"]
         if loc["lines"] and loc["lines"][-1]["function"] == "c"]
    assert c, "function c never named in pprof"
    assert c[0]["build_id"] == bid
    assert c[0]["lines"][-1]["file"].endswith("chain.c") and c[0]["lines"][-1]["line"] > 0
    # Kept by the client library, under the cache path the agent was given.
    assert (cache / bid / "debuginfo").is_file()

    # The cache is reused: a second run with no server at all names the frames the same way.
    # It also keeps the cache within --debuginfod-cache-mb: an old file of another build ID
    # that would put it over goes, the file in use stays.
    junk = cache / ("ab" * 20) / "debuginfo"
    junk.parent.mkdir()
    junk.write_bytes(b"\0" * (2 << 20))
    os.utime(junk, (time.time() - 86400, time.time() - 86400))
    out2 = tmp_path / "out2"
    err2, _, _ = run_agent(spanprof, out2, p.pid, f"http://127.0.0.1:{free_port()}", cache,
                        "--debuginfod-cache-mb", 1)
    assert not junk.exists() and (cache / bid / "debuginfo").is_file()
    assert sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) <= 1 << 20
    counts2 = end_counts(out2)
    assert counts2["fetched"] == 1 and counts2["failed"] == 0, err2
    total2, named2, folded2 = chain_share(out2)
    assert total2 and named2 / total2 >= 0.9, folded2[:5]


def assert_unnamed_on_time(err, secs, out, key):
    counts = end_counts(out)
    assert counts[key] >= 1, err
    assert counts["fetched"] == 0 or key == "rejected", err
    assert secs <= END_BOUND, f"the run took {secs:.1f} s after sampling began:\n{err}"
    total, named, folded = chain_share(out)
    assert total > 0, err
    # Never a wrong name: the stripped binary's frames stay unnamed.
    assert named == 0, folded[:5]
    assert any(f[0] == "chain" for f, _ in folded)


def test_server_down(spanprof, stripped_chain, procs, tmp_path):
    binary, _, _ = stripped_chain
    p = procs.start(binary, "30")
    out = tmp_path / "out"
    err, secs, _ = run_agent(spanprof, out, p.pid, f"http://127.0.0.1:{free_port()}",
                          tmp_path / "cache")
    assert_unnamed_on_time(err, secs, out, "failed")
    # The end of the run names what to do: the file without symbols, the failing server.
    assert re.search(r"^spanprof: chain: no symbols, \d+% of its frames unnamed", err, re.M), err
    assert re.search(r"^spanprof: debuginfod: \d+ fetches failed .*; check DEBUGINFOD_URLS",
                     err, re.M), err


def test_server_slow(spanprof, stripped_chain, procs, tmp_path):
    binary, _, _ = stripped_chain
    slow = OddServer("slow")
    try:
        p = procs.start(binary, "30")
        out = tmp_path / "out"
        err, secs, _ = run_agent(spanprof, out, p.pid, slow.url, tmp_path / "cache")
        assert slow.hits >= 1, "the agent never asked the server"
        counts = end_counts(out)
        # Still waiting at the end (cancelled), or given up on by the per-request deadline.
        assert counts["unfinished"] + counts["failed"] >= 1, err
        assert counts["fetched"] == 0, err
        assert secs <= END_BOUND, f"the run took {secs:.1f} s after sampling began:\n{err}"
        total, named, folded = chain_share(out)
        assert total > 0 and named == 0, folded[:5]
    finally:
        slow.close()


def test_server_answers_garbage(spanprof, stripped_chain, procs, tmp_path):
    binary, _, _ = stripped_chain
    bad = OddServer("garbage")
    try:
        p = procs.start(binary, "30")
        out = tmp_path / "out"
        err, secs, _ = run_agent(spanprof, out, p.pid, bad.url, tmp_path / "cache")
        assert bad.hits >= 1, "the agent never asked the server"
        assert_unnamed_on_time(err, secs, out, "rejected")
    finally:
        bad.close()


def test_export_names_frames_from_the_next_interval(spanprof, stripped_chain, server, procs,
                                                    tmp_path, testcollector_bin, otlpcheck):
    """Sending to a Collector: frames answered before the debug file arrived keep their name for
    that interval only; later requests name them. The process is started through a symlink with
    another name (and a comm cut to 15 bytes): its resource names it so."""
    from test_otlp import start_testcollector
    binary, _, _ = stripped_chain
    link = binary.parent / "chain-started-as"
    if not link.exists():
        link.symlink_to(binary.name)
    p = procs.start(link, "40")
    port = free_port()
    start_testcollector(procs, testcollector_bin, port, tmp_path / "recv.jsonl")
    reqdir = tmp_path / "requests"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env["DEBUGINFOD_CACHE_PATH"] = str(tmp_path / "cache")
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{port}", "--pid",
                          str(p.pid), "--duration", "6", "--export-interval", "1", "--frequency",
                          "99", "--output-dir", str(reqdir), "--debuginfod", server,
                          "--stats-json", str(tmp_path / "stats.json")],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    assert end_counts(None, read_stats(tmp_path / "stats.json"))["fetched"] == 1, res.stderr
    per_request = []
    for f in sorted(reqdir.glob("profiles-*.binpb")):
        got = otlpcheck(f)
        assert got["ok"], got["errors"][:5]
        events = full = 0
        for m in (m for i in got["inputs"] for m in i["messages"]):
            for rp in m["resource_profiles"]:
                a = rp["attributes"]
                assert a["process.executable.name"] == "chain-started-as", a
                assert a["process.executable.path"] == str(link), a
                assert a["service.name"] == "unknown_service:chain-started-as", a
                for sc in rp["scopes"]:
                    for prof in sc["profiles"]:
                        for st in prof["stacks"]:
                            events += st["events"]
                            if all(x in st["frames"] for x in ("c", "b", "a", "main")):
                                full += st["events"]
        per_request.append((events, full))
    busy = [(e, f) for e, f in per_request if e >= 5]
    assert len(busy) >= 2, per_request
    # The last interval with samples: the debug file had long arrived.
    events, full = busy[-1]
    assert full / events >= 0.9, per_request
