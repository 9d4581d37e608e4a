"""Unwinding through JIT code by the CFI a runtime writes into its jitdump file (docs/jit.md,
"Unwinding"), against the real kernel.

integration/workloads/jit_cfi.c copies a stub of machine code into anonymous executable memory;
the stub sets RBP to 0 (a frame-pointer step through it proves nothing) and calls a CPU-burning
C function. Its jit-PID.dump holds a code load naming the stub and, unless --no-unwind, the
unwinding record before it whose .eh_frame describes the stub. With the record every sample must
cross the stub into main (the exact chain, the stub named from the jitdump); without it the
stacks must end at the stub under a truncation marker, never with a frame beyond it.

CPython 3.13's `-X perf_jit` writes an unwinding record for each of its trampolines: when pyenv
has a 3.13, its trampolines must be crossed by the rows built from those records.
"""
import os
import subprocess
from pathlib import Path

import pytest

from conftest import read_stats
from test_jit import FREQ, run, share

CHAIN = ["main", "jit_stub_[j]", "jit_cfi_burn"]
# Kernel frames (a sample taken in an interrupt) come after the user leaf.
MARKER = "[truncated: "


def user_frames(frames):
    """The user frames of a folded stack, root first, without the process name and kernel
    frames."""
    return [f for f in frames[1:] if not f.endswith("_[k]")]


def exact_chain(frames, strict=True):
    """_start at the root, no marker, and main -> the stub -> jit_cfi_burn as the leaf end."""
    user = user_frames(frames)
    return (bool(user) and user[0] == "_start" and "main" in user and
            not any(f.startswith("[") for f in user) and user[user.index("main"):] == CHAIN)


def stops_at_stub(frames, strict=True):
    """Ends at the stub under a marker: [truncated: ...];jit_stub;jit_cfi_burn, nothing more."""
    user = user_frames(frames)
    return len(user) == 3 and user[0].startswith(MARKER) and user[1:] == CHAIN[1:]


def run_stub(spanprof, tmp_path, workload, *flags):
    exe = workload("jit_cfi")
    _, ours, _, cpu_s, pid = run(spanprof, tmp_path, [], cmd=[str(exe), "3", *flags],
                                 cwd=tmp_path)
    assert (tmp_path / f"jit-{pid}.dump").exists()
    good_pred = exact_chain if not flags else stops_at_stub
    good, total = share(ours, good_pred)
    # The program's own CPU time at FREQ Hz, with room for a loaded machine's lost ticks.
    assert total >= 0.5 * cpu_s * FREQ, f"{total} samples for {cpu_s:.1f} s of CPU"
    return ours, good, total, read_stats(tmp_path / "stats.json")


def test_jitdump_cfi_crosses_the_stub(spanprof, tmp_path, workload):
    ours, good, total, stats = run_stub(spanprof, tmp_path, workload)
    line = f"stub crossed by jitdump CFI: exact chain {good}/{total} = {good / total:.1%}"
    print(line)
    # Never a wrong frame: what is not the exact chain is a sample taken before the process was
    # loaded (its leaf under "[truncated: not loaded yet]") or before the jitdump was read (the
    # stacks of the run without the record).
    for frames, _ in ours:
        if not exact_chain(frames):
            user = user_frames(frames)
            if not user:
                continue  # kernel frames only (the process exiting): no user frame to check
            if not any(f in user for f in CHAIN[1:]):
                # main's own calls (cpu_s: its CPU clock): whole or marked
                assert user[0] == "_start" or user[0].startswith(MARKER), frames
                continue
            assert user[0].startswith(MARKER) and user[1:] in (CHAIN[1:], CHAIN[2:]), frames
    # 98% alone (297 of 303: the first samples, before the agent had read the process).
    assert good / total >= 0.90, line
    unw = stats["jit"]["unwinding"]
    assert unw["records"] == 1 and unw["used"] == 1, unw
    assert unw["tables_built"] >= 1 and unw["fdes"] >= 1 and unw["mappings"] >= 1, unw
    assert unw["skipped"] == {"no_eh_frame": 0, "bad_size": 0, "no_code_load": 0,
                              "over_cap": 0}, unw


def test_jitdump_without_cfi_stops_at_the_stub(spanprof, tmp_path, workload):
    ours, good, total, stats = run_stub(spanprof, tmp_path, workload, "--no-unwind")
    print(f"stub without CFI: ends at the stub under a marker {good}/{total} = "
          f"{good / total:.1%}")
    for frames, _ in ours:
        user = user_frames(frames)
        if not any(f in user for f in CHAIN[1:]):
            continue  # main's own calls (cpu_s: its CPU clock), not through the stub
        assert "main" not in user, frames  # RBP is 0 there: nothing proves a caller
        assert user[0].startswith(MARKER), frames
    assert good / total >= 0.90, f"{good}/{total}"
    assert any("[truncated: no unwind info]" in f for f, _ in ours)
    unw = stats["jit"]["unwinding"]
    assert unw["records"] == 0 and unw["tables_built"] == 0 and unw["mappings"] == 0, unw


def pyenv_313():
    """pyenv's CPython 3.13 (the first with -X perf_jit), or None."""
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        root = ""
    root = Path(root or os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted((root / "versions").glob("3.13*/bin/python3.13"))
    return found[0] if found else None


PY313 = pyenv_313()

PY_CHAIN = """
import json, sys, time
def inner(end):
    x = 0
    while time.process_time() < end:
        for i in range(10000):
            x += i * 7
    return x
def middle(end):
    return inner(end)
def outer(end):
    return middle(end)
# CPython writes its jitdump through a stdio buffer: the records of outer, middle and inner reach
# the file once enough later code objects (each with its trampoline) fill the buffer.
outer(0)
for i in range(400):
    exec(f"def f{i}(): return {i}\\nf{i}()")
sys.stdin.readline()
t0 = time.process_time()
outer(t0 + float(sys.argv[1]))
print(json.dumps({"cpu_s": time.process_time()}), flush=True)
"""


@pytest.mark.skipif(PY313 is None, reason="no CPython 3.13 under pyenv (-X perf_jit)")
def test_cpython_perf_jit_trampolines_crossed_by_cfi(spanprof, tmp_path):
    """-X perf_jit: a trampoline per Python function, each with its unwinding record in
    /tmp/jit-PID.dump. The stacks through them reach _start, and the trampolines are stepped
    by CFI rows: no frame-pointer step (the walker's special case for -X perf trampolines) is
    needed any more, except in samples taken before the jitdump was read."""
    script = tmp_path / "chain.py"
    script.write_text(PY_CHAIN)
    _, ours, _, cpu_s, pid = run(spanprof, tmp_path, [],
                                 cmd=[str(PY313), "-X", "perf_jit", str(script), "3"])
    Path(f"/tmp/jit-{pid}.dump").unlink(missing_ok=True)  # CPython writes it in /tmp
    stats = read_stats(tmp_path / "stats.json")
    unw = stats["jit"]["unwinding"]
    assert unw["records"] > 0 and unw["used"] > 0, unw
    assert unw["tables_built"] >= 1 and unw["fdes"] >= 1 and unw["mappings"] >= 1, unw

    def through_trampolines(frames, strict=True):
        """_start reached, no marker, and the Python chain (each Python call went through a
        trampoline, hidden where the Python frames are placed: docs/python.md)."""
        user = user_frames(frames)
        py = [f for f in user if f.startswith("chain.")]
        return (bool(user) and user[0] == "_start" and
                not any(f.startswith("[") for f in user) and
                py[-3:] == ["chain.outer", "chain.middle", "chain.inner"])

    good, total = share(ours, through_trampolines)
    print(f"CPython 3.13 -X perf_jit: outer -> middle -> inner to _start {good}/{total} = "
          f"{good / total:.1%}; unwind {stats['unwind']['frames_cfi']} CFI frames, "
          f"{stats['unwind']['frames_fp']} frame-pointer frames")
    assert total >= 0.5 * cpu_s * FREQ, f"{total} samples for {cpu_s:.1f} s of CPU"
    assert good / total >= 0.90, f"{good}/{total}"
    # Three trampolines per sample: frame-pointer steps in at most a tenth of the samples.
    assert stats["unwind"]["frames_fp"] <= 0.3 * total, stats["unwind"]


def test_jit_leaf_outside_its_frame_keeps_its_caller(spanprof, tmp_path, workload):
    """integration/workloads/jit_leaf.c: main -> caller_fn -> leaf_stub, a 10-byte JIT stub
    sampled mostly at its push %rbp, mov %rsp,%rbp and ret, where RBP is still caller_fn's. A
    stack with leaf_stub right under main (caller_fn lost) is a wrong stack; it was every one
    of them (595 of 595 at 199 Hz) before the walk read the leaf's code. The step is provable
    from it (push %rbp or ret at the PC: the return address at RSP; after a push %rbp: at
    RSP + 8), else the stack must stop under a marker."""
    exe = workload("jit_leaf")
    _, ours, _, cpu_s, _ = run(spanprof, tmp_path, [], cmd=[str(exe), "3"], seconds=3)
    right = wrong = 0
    for frames, count in ours:
        user = user_frames(frames)
        if user[-1:] != ["leaf_stub_[j]"]:
            continue
        above = user[-2] if len(user) > 1 else ""
        if above == "caller_fn":
            right += count
        elif not above.startswith(MARKER):
            wrong += count
    print(f"leaf_stub under caller_fn {right}, under another caller {wrong}")
    assert right + wrong >= 0.25 * cpu_s * FREQ, (right, wrong)
    assert wrong == 0, f"{wrong} stacks lost caller_fn ({right} kept it)"
