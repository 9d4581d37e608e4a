"""Files a profiled program controls can't stall the agent (issue: containers and hostile files).
A program's debug link may name a FIFO (whose open(2) blocks until a writer comes) or a device
(whose open has effects): the agent refuses both without opening them, counts the refusal
(--stats-json symbols.not_regular), ends the run on time and names the program's frames from
what the file itself holds. The same for the files a JIT writes about its code: a perf map
/tmp/perf-PID.map or a jitdump swapped for a FIFO is refused unopened (--stats-json
jit.files_refused.not_regular) and the run ends on time. Root (BPF)."""
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import WORKLOADS, compile_c, read_folded, record, record_gated

DURATION = 3
# A hang guard, not a time budget: a run that blocks in open() never ends by itself.
HANG_GUARD = 120


def sh(*cmd):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True)


def linked_binary(tmp_path, kind):
    """chain.c built without build ID and without DWARF (so the agent looks for a separate
    debug file) whose .gnu_debuglink names chain.debug beside it, then replaced by @kind: a
    FIFO, or a character device node (/dev/null's numbers)."""
    binary = compile_c(WORKLOADS / "chain.c", tmp_path / "chain",
                       flags=("-g0", "-Wl,--build-id=none"))
    debug = tmp_path / "chain.debug"
    debug.write_bytes(b"not a debug file")
    sh("objcopy", f"--add-gnu-debuglink={debug}", binary)
    debug.unlink()
    if kind == "fifo":
        os.mkfifo(debug)
    else:
        os.mknod(debug, 0o644 | 0o020000, os.makedev(1, 3))
    sections = sh("readelf", "-S", "-n", binary).stdout
    # What makes the test mean something: the debug link is there, nothing else names the file.
    assert ".gnu_debuglink" in sections
    assert ".debug_info" not in sections and "Build ID" not in sections
    return binary


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_debug_link_to_a_fifo_or_device_is_refused_and_the_run_ends(spanprof, procs,
                                                                      tmp_path, kind):
    binary = linked_binary(tmp_path, kind)
    p = procs.start(binary, str(DURATION + 60))
    out = tmp_path / "out"
    try:
        res = record(spanprof, out, "--pid", p.pid, "--duration", DURATION, "--frequency", 99,
                     "--debuginfod", "", timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the agent did not end within {HANG_GUARD} s of a {DURATION} s run: "
                    f"it blocked on the {kind} named by the debug link")
    syms = res.stats["symbols"]
    assert syms["not_regular"] >= 1, f"the {kind} was not refused as not regular: {syms}"
    mine = [(frames, n) for frames, n in read_folded(out / "profile.folded")
            if frames[0] == "chain"]
    total = sum(n for _, n in mine)
    assert total, "no sample of the workload"
    # Named from the file's own symbol table all the same: the leaf is the spinning c().
    named = sum(n for frames, n in mine if frames[-1] == "c")
    assert named >= 0.8 * total, f"the spinning function unnamed: {mine[:5]}"


def wait_for(pred, what, seconds=30):
    for _ in range(int(seconds * 20)):
        if pred():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def swap_for_fifo(path):
    """Replaces the file at @path by a FIFO (no writer: an open(2) for reading blocks)."""
    path.unlink()
    os.mkfifo(path, 0o644)


def gated_run(spanprof, tmp_path, work, what):
    """record_gated() of @work (held at its gate) with a hang guard that fails the test."""
    try:
        return record_gated(spanprof, tmp_path / "out", work, "--pid", work.pid, "--duration",
                            DURATION, "--frequency", 99, timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the agent did not end within {HANG_GUARD} s of a {DURATION} s run: it "
                    f"blocked on {what}, a FIFO")


def test_a_perf_map_that_is_a_fifo_is_refused_and_the_run_ends(spanprof, procs, workload,
                                                                tmp_path):
    """integration/workloads/jit_leaf.c runs JIT code that its /tmp/perf-PID.map names; the map
    is swapped for a FIFO before the agent starts."""
    work = procs.start(workload("jit_leaf"), DURATION, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    perf_map = Path(f"/tmp/perf-{work.pid}.map")
    try:
        wait_for(lambda: perf_map.exists() and perf_map.read_text().endswith("\n"),
                 f"{perf_map} to be written")
        swap_for_fifo(perf_map)
        res = gated_run(spanprof, tmp_path, work, perf_map)
    finally:
        perf_map.unlink(missing_ok=True)
    refused = res.stats["jit"]["files_refused"]
    assert refused["not_regular"] >= 1, f"the FIFO was not refused as not regular: {refused}"
    assert f"{perf_map} not read: not a regular file" in res.stderr, res.stderr
    assert res.stats["jit"]["perf_maps"] == 0, res.stats["jit"]


def test_a_jitdump_swapped_for_a_fifo_is_refused_and_the_run_ends(spanprof, procs, workload,
                                                                   tmp_path):
    """integration/workloads/jit_cfi.c writes jit-PID.dump in its directory and maps it (the
    marker perf looks for); the file's path is then swapped for a FIFO: the agent, finding the
    path in the process's maps, must not block opening it."""
    work = procs.start(workload("jit_cfi"), DURATION, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    dump = tmp_path / f"jit-{work.pid}.dump"
    wait_for(lambda: str(dump) in Path(f"/proc/{work.pid}/maps").read_text(),
             f"{dump} to be mapped")
    swap_for_fifo(dump)
    res = gated_run(spanprof, tmp_path, work, dump)
    jit = res.stats["jit"]
    assert jit["files_refused"]["not_regular"] >= 1, f"the FIFO was not refused: {jit}"
    assert f"{dump} not read: not a regular file" in res.stderr, res.stderr
    assert jit["jitdumps"] == 0, jit
