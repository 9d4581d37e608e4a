"""All four profile types at once: one OTLP request to the real Collector carries them, valid."""
import os
import subprocess
import time

from conftest import free_port
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


def test_four_types_in_one_request(spanprof, workload, procs, tmp_path, otelcol, otlpcheck):
    port = free_port()
    out_file = tmp_path / "profiles.jsonl"
    col = start_otelcol(procs, otelcol, port, out_file)
    w = procs.start(workload("mixedload", ("-pthread",)))
    time.sleep(0.3)
    reqdir = tmp_path / "requests"
    # One interval longer than the run: the whole recording is one request.
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
        assert len(msgs) == 1, f"expected one request, got {len(msgs)}"
        m = msgs[0]
        assert not m["errors"] and not m["warnings"], (m["errors"][:3], m["warnings"][:3])
        rps = [rp for rp in m["resource_profiles"] if rp["attributes"]["process.pid"] == w.pid]
        assert len(rps) == 1, "one resource for the process, holding every type"
        found = {}
        for sc in rps[0]["scopes"]:
            for p in sc["profiles"]:
                shown = [st for st in p["stacks"] if EXPECTED.get(p["sample_type"], "?")
                         in st["frames"]]
                found[p["sample_type"]] = sum(st["events"] for st in shown)
        for stype in EXPECTED:
            assert found.get(stype, 0) > 0, f"no {stype} in {EXPECTED[stype]}: {found}\n{res.stderr}"
