"""Ruby frames of Ruby processes (docs/ruby.md) against the real kernel: Debian's Ruby 3.1
(ruby3.1, libruby-3.1.so, stripped: its symbols are the dynamic ones only).

The workload (integration/workloads/rubychain.rb) forks one child per mode before the agent
samples; each burns CPU in a chain of known shape: a class's method (Shape#area), a recursion six
deep (recurse), a block yielded to (block in run_block), a C function calling back into Ruby
(Array#map running a block), an exception raised and rescued each round (catcher -> thrower), and
the methods chain in a thread of its own (the main thread waiting in join). Checked on the
agent's pprof output, per child (pprof's pid label):
  - at least 90% of each child's samples show exactly its Ruby chain, root to leaf, with a leaf
    line of its loop (the lines marked "leaf: MODE");
  - no sample shows a Ruby frame outside the child's own chain;
  - the C function between two Ruby levels: Array#map's own native frames sit between
    run_callback and the block it calls back (in stacks not cut);
  - no native frame of the VM's rb_vm_exec is left where Ruby frames were placed.
The expected counts are sized from each child's CPU time. Ground truth is the workload's own
knowledge of its chains, and rbspy (test_ruby_rbspy_agreement).
"""
import json
import os
import re
import shutil
import signal
import struct
from pathlib import Path
import subprocess

import pytest

from conftest import ROOT, SLOWDOWN, WORKLOADS, record_gated

RUBY = shutil.which("ruby3.1") or shutil.which("ruby")
SECONDS = 3
FREQ = 499
WORKLOAD = WORKLOADS / "rubychain.rb"
MODES = ("methods", "recursion", "block", "callback", "exception", "thread")

pytestmark = pytest.mark.skipif(not RUBY, reason="ruby not installed (make deps: ruby)")

LOOP = ["<main>", "child_loop", "chain_round"]
# Each mode's Ruby chain, root first (C methods by their names).
CHAINS = {
    "methods": LOOP + ["run_methods", "area"],
    "recursion": LOOP + ["run_recursion"] + ["recurse"] * 6 + ["spin"],
    "block": LOOP + ["run_block", "with_block", "block in run_block"],
    "callback": LOOP + ["run_callback", "map", "block in run_callback"],
    "exception": LOOP + ["run_exception", "catcher", "thrower"],
    "thread": ["block in start_thread", "child_loop", "chain_round", "run_methods", "area"],
}
# The child's own loop: its CPU time read between rounds, and reported after them (JSON.generate
# of Ruby's json library, its C generator, the pipe's write).
COMMON = {"cpu_seconds", "clock_gettime", "generate", "to_json", "puts", "write", "flush"}
# What else a child runs: its main thread waiting for the thread (thread mode), Shape's
# constructor, the exception's making and the rescue clause's own frame, the sum of the
# callback's results.
EXTRA = {
    # Exception#message calls the exception's to_s (error.c, exc_message: rb_funcallv).
    "exception": {"rescue in catcher", "raise", "new", "initialize", "exception", "message",
                  "to_s", "size", "==="},
    "thread": {"<main>", "start_thread", "initialize", "new", "join"},
    "methods": {"initialize", "new"},
    "callback": {"sum"},
}


def leaf_lines():
    """Mode -> the workload's lines marked "leaf: MODE" (1-based)."""
    out = {}
    for i, text in enumerate(WORKLOAD.read_text().splitlines(), 1):
        for mode in re.findall(r"leaf: (\w+)", text):
            out.setdefault(mode, set()).add(i)
    return out


def frames_root_first(sample):
    """(function, file, line, kind) root first: kind "ruby", "native", "marker", "kernel"."""
    out = []
    for loc in reversed(sample["stack"]):
        for ln in reversed(loc["lines"] or []):
            name = ln["function"]
            if loc.get("mapping"):
                kind = "native"
            elif name.startswith("["):
                kind = "marker"
            elif (ln.get("file") or "").endswith(".rb") or loc.get("address", 0) < 1 << 32:
                kind = "ruby"  # a C method's frame has no file
            else:
                kind = "kernel"
            out.append((name, ln.get("file") or "", ln.get("line") or 0, kind))
        if not loc["lines"]:
            out.append(("?", "", 0, "native" if loc.get("mapping") else "kernel"))
    return out


def run(spanprof, pprofcheck, procs, tmp_path):
    prog = procs.start(RUBY, WORKLOAD, SECONDS, *MODES, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    children = json.loads(prog.stdout.readline())["children"]
    out = tmp_path / "out"
    try:
        res = record_gated(spanprof, out, prog, "--pid",
                           ",".join(str(p) for p in [prog.pid, *children.values()]),
                           "-F", FREQ, timeout=120 * SLOWDOWN)
        cpu = json.loads(prog.stdout.readline())["cpu"]
        prog.wait(timeout=30)
    finally:
        for pid in children.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    samples = [s for s in prof["samples"] if s["values"][0] > 0]
    return children, cpu, samples, res


def test_ruby_chains(spanprof, pprofcheck, procs, tmp_path):
    children, cpu, samples, res = run(spanprof, pprofcheck, procs, tmp_path)
    lines = leaf_lines()
    by_pid = {}
    for s in samples:
        pid = (s["num_labels"].get("pid") or [0])[0]
        by_pid.setdefault(pid, []).append(s)
    report = []
    failures = []
    for mode, pid in children.items():
        mine = by_pid.get(pid, [])
        total = sum(s["values"][0] for s in mine)
        expected = cpu[mode] * FREQ
        assert total >= 0.5 * expected, (
            f"{mode}: {total} samples for {cpu[mode]:.2f} s of CPU at {FREQ} Hz\n"
            f"{res.stderr[-3000:]}")
        exact = 0
        allowed = set(CHAINS[mode]) | EXTRA.get(mode, set()) | set(LOOP) | COMMON
        bad = []
        for s in mine:
            fr = frames_root_first(s)
            rb = [(f, fl, ln) for f, fl, ln, k in fr if k == "ruby"]
            names = [f for f, _, _ in rb]
            foreign = [f for f in names if f not in allowed]
            if foreign:
                bad.append(f"foreign Ruby frames {foreign}: {fr}")
            if any(fl not in (str(WORKLOAD), "") and not (f in COMMON and "/json/" in fl)
                   for f, fl, _ in rb):
                bad.append(f"Ruby frames of another file: {fr}")
            # The VM's own frame never stays beside placed Ruby frames.
            if names and any(f == "rb_vm_exec" for f, _, _, k in fr if k == "native"):
                bad.append(f"rb_vm_exec left beside Ruby frames: {fr}")
            whole = not any(k == "marker" for _, _, _, k in fr)
            if mode == "callback" and whole and names == CHAINS[mode]:
                kinds = [(f, k) for f, _, _, k in fr]
                i = kinds.index(("run_callback", "ruby"))
                j = kinds.index(("block in run_callback", "ruby"))
                if not any(k == "native" for _, k in kinds[i + 1:j]):
                    bad.append(f"Array#map's native frames missing before its block: {fr}")
            if names == CHAINS[mode] and rb[-1][2] in lines[mode]:
                exact += s["values"][0]
        share = exact / total if total else 0
        report.append(f"{mode}: {exact}/{total} exact ({100 * share:.1f}%)")
        assert not bad, f"{mode}: {len(bad)} bad samples, e.g.\n" + "\n".join(bad[:5])
        if share < 0.9:
            common = {}
            for s in mine:
                key = " ; ".join(f"{f}@{ln}" for f, _, ln, k in frames_root_first(s)
                                 if k in ("ruby", "marker"))
                common[key] = common.get(key, 0) + s["values"][0]
            top = sorted(common.items(), key=lambda kv: -kv[1])[:6]
            failures.append(f"{mode}: {exact}/{total} samples show the exact chain "
                            f"{CHAINS[mode]} at a leaf line {sorted(lines[mode])}; most common:\n"
                            + "\n".join(f"{v} {k}" for k, v in top))
    print("\n".join(report))
    rb = res.stats["ruby"]
    print(f"ruby stats {json.dumps(rb)}")
    assert not failures, "\n".join(failures)
    assert rb["processes"] >= len(MODES), rb
    assert rb["frames_named"] > 0 and rb["samples_placed"] > 0, rb
    # Unnamed: only iseqs no longer readable (a child gone before its last samples were named),
    # never one that changed or whose strings are not plausible.
    why = rb["frames_unnamed_why"]
    assert why["stale"] == 0 and why["bad_name"] == 0, rb
    assert rb["frames_unnamed"] <= 0.01 * rb["frames_named"], rb


def hide_symbol(data, name):
    """@data (an ELF64 shared object) with dynamic symbol @name's type made STT_NOTYPE: the
    dynamic linker still binds it, a reader looking for the variable (an STT_OBJECT) finds
    none."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = bytearray(data)
    for sh in secs:
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        strtab = secs[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            st_name, st_info = struct.unpack_from("<IB", data, off)
            start = strtab[4] + st_name
            if data[start:data.index(b"\0", start)] == name:
                out[off + 4] = st_info & 0xf0
                return bytes(out)
    raise AssertionError(f"{name} not in the dynamic symbols")


def test_ruby_without_symbols(spanprof, procs, tmp_path):
    """A Ruby whose libruby exports no ruby_current_vm_ptr variable (a copy with that symbol's
    type taken away): one clear message, counted, its native frames kept."""
    src = subprocess.run(["sh", "-c", f"ldd {shutil.which(RUBY)} | awk '/libruby/ {{print $3}}'"],
                         capture_output=True, text=True).stdout.strip()
    if not src:
        pytest.skip("this ruby links no libruby (static): nothing to change")
    libdir = tmp_path / "lib"
    libdir.mkdir()
    data = open(os.path.realpath(src), "rb").read()
    (libdir / os.path.basename(src)).write_bytes(hide_symbol(data, b"ruby_current_vm_ptr"))
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
    prog = procs.start(RUBY, WORKLOAD, 1, "methods", stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True, env=env)
    children = json.loads(prog.stdout.readline())["children"]
    out = tmp_path / "out"
    res = record_gated(spanprof, out, prog, "--pid",
                       ",".join(str(p) for p in [prog.pid, *children.values()]), "-F", FREQ,
                       timeout=120 * SLOWDOWN)
    prog.stdout.readline()
    prog.wait(timeout=30)
    assert "exports no ruby_current_vm_ptr symbol" in res.stderr, res.stderr[-3000:]
    rb = res.stats["ruby"]
    assert rb["files_or_processes_failed"]["symbols"] >= 1 and rb["processes"] == 0, rb


RBSPY = Path(shutil.which("rbspy") or "/usr/local/bin/rbspy")


def test_ruby_rbspy_agreement(spanprof, pprofcheck, procs, tmp_path):
    """Ground truth: rbspy 0.34.0 (crates.io; make deps builds it into /usr/local) samples the same process as
    the agent (the workload's mixed mode: the recursion, block and callback chains in turn). Both
    sides' Ruby frames of the workload's file (C methods left out on both) agree on the leaf function's callers: for each leaf function both saw at least
    20 times, the share of its samples with each chain, compared (sum of the smaller shares),
    weighted by rbspy's samples: >= 95%; and on the shares of those leaf functions among
    themselves: >= 90%."""
    if not RBSPY.exists():
        pytest.skip("rbspy is not installed (make deps: cargo install rbspy 0.34.0 into /usr/local)")
    prog = procs.start(RUBY, WORKLOAD, SECONDS, "mixed", stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    pid = json.loads(prog.stdout.readline())["children"]["mixed"]
    truth_path = tmp_path / "rbspy.txt"
    rbspy = procs.start(RBSPY, "record", "--pid", pid, "--nonblocking", "--silent",
                        "--rate", "99", "--format", "collapsed", "--file", truth_path,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    out = tmp_path / "out"
    res = record_gated(spanprof, out, prog, "--pid", pid, "-F", FREQ, timeout=120 * SLOWDOWN)
    prog.wait(timeout=30)
    _, err = rbspy.communicate(timeout=60)
    assert truth_path.exists(), err
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    ours = {}
    for s in prof["samples"]:
        if s["values"][0] <= 0:
            continue
        chain = tuple(f for f, fl, _, k in frames_root_first(s) if k == "ruby"
                      and fl == str(WORKLOAD))
        if chain:
            ours[chain] = ours.get(chain, 0) + s["values"][0]
    theirs = {}
    for line in truth_path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        chain = []
        for fr in stack.split(";"):
            # "label - path:line"
            label, sep, where = fr.rpartition(" - ")
            if sep and where.rpartition(":")[0] == str(WORKLOAD):
                chain.append(label)
        if chain:
            theirs[tuple(chain)] = theirs.get(tuple(chain), 0) + int(count)

    def by_leaf(d):
        out = {}
        for k, v in d.items():
            out.setdefault(k[-1], {})[k] = v
        return out

    def overlap(a, b):
        ta, tb = sum(a.values()), sum(b.values())
        return sum(min(a.get(k, 0) / ta, b.get(k, 0) / tb) for k in set(a) | set(b))

    ol, tl = by_leaf(ours), by_leaf(theirs)
    common = [f for f in tl if sum(tl[f].values()) >= 20 and sum(ol.get(f, {}).values()) >= 20]
    top = lambda d: "\n".join(f"  {v} {' ; '.join(k)}" for k, v in
                              sorted(d.items(), key=lambda kv: -kv[1])[:6])
    assert common, f"spanprof:\n{top(ours)}\nrbspy:\n{top(theirs)}\n{err[-2000:]}"
    weight = sum(sum(tl[f].values()) for f in common)
    callers = sum(sum(tl[f].values()) * overlap(ol[f], tl[f]) for f in common) / weight
    # rbspy samples wall-clock time: also the child waiting at its gate (leaf <main>), before
    # the agent samples. The leaf functions of the chains are compared among themselves.
    leaves = overlap({f: sum(ol[f].values()) for f in common},
                     {f: sum(tl[f].values()) for f in common})
    print(f"rbspy: {sum(theirs.values())} samples, spanprof {sum(ours.values())} with Ruby "
          f"frames; leaf functions compared {common}: their callers agree {100 * callers:.1f}%;"
          f" the leaf functions' shares agree {100 * leaves:.1f}%")
    assert {"spin", "block in run_block", "block in run_callback"} <= set(common), \
        f"spanprof:\n{top(ours)}\nrbspy:\n{top(theirs)}"
    assert callers >= 0.95, f"spanprof:\n{top(ours)}\nrbspy:\n{top(theirs)}"
    assert leaves >= 0.9, f"spanprof:\n{top(ours)}\nrbspy:\n{top(theirs)}"
