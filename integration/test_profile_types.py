"""All four profile types at once: one OTLP request per type to the real Collector, valid."""
import os
import re
import subprocess
import time

from conftest import free_port, record
from test_otlp import start_otelcol, stop

# (sample type, unit) of each OTLP Profile, and the workload function it must show.
EXPECTED = {
    "samples:count": "burn_cpu",
    "alloc_objects:count": "alloc_site",
    "alloc_space:bytes": "alloc_site",
    "contentions:count": "lock_site",
    "delay:nanoseconds": "lock_site",
    "off_cpu:nanoseconds": "sleep_site",
}


def test_four_types_one_request_each(spanprof, workload, procs, tmp_path, otelcol, otlpcheck):
    port = free_port()
    out_file = tmp_path / "profiles.jsonl"
    col = start_otelcol(procs, otelcol, port, out_file)
    w = procs.start(workload("mixedload", ("-pthread",)))
    time.sleep(0.3)
    reqdir = tmp_path / "requests"
    # One interval longer than the run: the whole recording is one request per profile type
    # (docs/otlp.md: a backend refusing one type must not take the others with it).
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{port}",
                          "--profile", "cpu,alloc,lock,offcpu", "--pid", str(w.pid),
                          "--duration", "5", "--export-interval", "60", "--frequency", "99",
                          "--output-dir", str(reqdir)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    time.sleep(0.5)
    stop(col)

    for source in (otlpcheck(out_file), otlpcheck(*sorted(reqdir.glob("profiles-*.binpb")))):
        assert source["ok"], source["errors"][:5]
        msgs = [m for i in source["inputs"] for m in i["messages"]]
        assert len(msgs) == 4, f"expected one request per type, got {len(msgs)}"
        found, kinds = {}, []
        for m in msgs:
            assert not m["errors"] and not m["warnings"], (m["errors"][:3], m["warnings"][:3])
            rps = [rp for rp in m["resource_profiles"]
                   if rp["attributes"]["process.pid"] == w.pid]
            assert len(rps) == 1, "one resource for the process in each request"
            types = set()
            for sc in rps[0]["scopes"]:
                for p in sc["profiles"]:
                    shown = [st for st in p["stacks"] if EXPECTED.get(p["sample_type"], "?")
                             in st["frames"]]
                    found[p["sample_type"]] = sum(st["events"] for st in shown)
                    types.add(p["sample_type"])
            kinds.append(frozenset(types))
        # Each request holds the Profiles (values) of one type: cpu, alloc, lock, offcpu.
        assert sorted(kinds, key=sorted) == sorted(
            [frozenset({"samples:count"}),
             frozenset({"alloc_objects:count", "alloc_space:bytes"}),
             frozenset({"contentions:count", "delay:nanoseconds"}),
             frozenset({"off_cpu:nanoseconds"})], key=sorted), kinds
        for stype in EXPECTED:
            assert found.get(stype, 0) > 0, f"no {stype} in {EXPECTED[stype]}: {found}\n{res.stderr}"


def test_start_line_and_counts_per_type(spanprof, workload, procs, tmp_path):
    """The start line says what each type samples (no CPUs without cpu); with several types
    the progress line and the summary count each type, and the counts add up."""
    w = procs.start(workload("mixedload", ("-pthread",)))
    time.sleep(0.3)
    res = record(spanprof, tmp_path / "alloc", "--profile", "alloc", "--pid", w.pid,
                 "--duration", 1.5)
    lines = res.stderr.splitlines()
    assert lines[0] == ("spanprof: sampling the targeted processes: alloc every 512 KiB "
                        "allocated; Ctrl-C to stop"), lines[0]
    assert not re.search(r"\bCPUs?\b|\bHz\b", res.stderr), res.stderr
    assert res.stats["run"]["profile_types"] == ["alloc"], res.stats["run"]
    assert re.search(r"^spanprof: \d+ samples from \d+ processes in [\d.]+ s "
                     r"\(alloc every 512 KiB allocated\)$", res.stderr, re.M), res.stderr
    assert not re.search(r"samples .*\| ", res.stderr), "a breakdown for a single type"

    res = record(spanprof, tmp_path / "mixed", "--profile", "cpu,offcpu", "--pid", w.pid,
                 "--duration", 1.5, "--frequency", 49, "--offcpu-min", "2ms")
    first = res.stderr.splitlines()[0]
    assert first.startswith("spanprof: sampling the targeted processes: cpu at 49 Hz on "), first
    assert first.endswith(" CPUs, offcpu periods from 2ms; Ctrl-C to stop"), first
    m = re.search(r"^spanprof: (\d+) samples from \d+ processes in [\d.]+ s \(cpu (\d+) at 49 Hz "
                  r"on \d+ CPUs?, offcpu (\d+) periods from 2ms\)$", res.stderr, re.M)
    assert m, res.stderr
    total, cpu, offcpu = map(int, m.groups())
    assert cpu > 0 and offcpu > 0 and cpu + offcpu == total, res.stderr
    by_type = res.stats["samples"]["by_type"]
    assert by_type["offcpu"]["recorded"] == offcpu and by_type["cpu"]["recorded"] == cpu, by_type
    progress = [l for l in res.stderr.splitlines() if re.match(r"spanprof: +[\d.]+s ", l)]
    assert progress and progress[-1].endswith(f"| cpu {cpu}  offcpu {offcpu}"), progress
