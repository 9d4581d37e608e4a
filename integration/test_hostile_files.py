"""Files a profiled program controls can't stall the agent (issue: containers and hostile files).
A program's debug link may name a FIFO (whose open(2) blocks until a writer comes) or a device
(whose open has effects): the agent refuses both without opening them, counts the refusal
(--stats-json symbols.not_regular), ends the run on time and names the program's frames from
what the file itself holds. Root (BPF)."""
import os
import subprocess

import pytest

from conftest import WORKLOADS, compile_c, read_folded, record

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
