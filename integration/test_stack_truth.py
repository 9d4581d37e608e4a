"""Never a wrong stack (issue 16): a stack that does not end at a known outermost frame ends in one
marker frame naming why (bpf/sampler.h SP_USTACK_END_LIST, exporter/stackend/), in the folded
stacks, pprof (decoded by the reference Go implementation) and OTLP; and no frame that is not on
the real stack.

Workloads are built -O2 -fomit-frame-pointer (test_unwind.py's flags); each test asserts the
exact chain, or the exact marker where the chain can't be had.
"""
import time

from conftest import WORKLOADS, read_folded
from test_unwind import build, from_main, ours, record_watched

DEPTH_MARKER = "[truncated: depth limit]"
MAX_USTACK = 512  # SP_MAX_USTACK: frames the CFI walk records


def user_frames(frames):
    return [f for f in frames if not f.endswith("_[k]")]


def test_recursion_1000_deep_ends_in_depth_marker(spanprof, pprofcheck, procs, tmp_path):
    """main -> spin_start -> rec x 1000 -> leaf: the walk stops after 512 frames; every sample
    is exactly rec... -> leaf (and what leaf calls: the clock) under the depth-limit marker."""
    binary = build(WORKLOADS / "unw_recurse.c", tmp_path / "unw_recurse")
    p = procs.start(binary, "60", "1000")
    time.sleep(0.2)
    out = tmp_path / "out"
    err = record_watched(spanprof, out, "--pid", p.pid, "--duration", 3, "--frequency", 99)
    stacks = ours(read_folded(out / "profile.folded"), "unw_recurse")
    total = sum(c for _, c in stacks)
    assert total >= 100, f"only {total} samples\n{err}"
    for f, c in stacks:
        assert f[1] == DEPTH_MARKER, f"{c} samples without the marker: {f[:6]}"
        assert DEPTH_MARKER not in f[2:], f[:6]
        u = user_frames(f[2:])
        assert len(u) == MAX_USTACK, f"{len(u)} user frames: {u[:3]}...{u[-3:]}"
        assert "leaf" in u, u[-5:]
        i = u.index("leaf")
        assert u[:i] == ["rec"] * i, f"not only rec above leaf: {sorted(set(u[:i]))}"
        # Below leaf only its clock read (now() -> clock_gettime -> the vDSO).
        assert all("clock_gettime" in x or x == "now" for x in u[i + 1:]), u[i + 1:]
        assert from_main(f) is None, "main cannot be reached through 1000 frames"
    # The summary still counts them: one "depth limit" stop per CFI walk of the workload.
    m = err.split("CFI walks ended:")[1]
    assert f"{total} depth limit" in m, m

    # pprof: the marker is the last location (leaf first) of every sample, without mapping.
    prof = pprofcheck(out / "profile.pb.gz")
    mine = [s for s in prof["samples"] if "unw_recurse" in s["labels"].get("comm", [])]
    assert sum(s["values"][0] for s in mine) == total
    for s in mine:
        root = s["stack"][-1]
        assert [ln["function"] for ln in root["lines"]] == [DEPTH_MARKER], root
        assert root["mapping"] == "", root
        assert all(DEPTH_MARKER not in [ln["function"] for ln in loc["lines"]]
                   for loc in s["stack"][:-1])
