"""Frame-pointer steps through code without CFI (issue 34, docs/unwinding.md "Truncation markers"):
a marker only where the walk stopped before the root, and never a frame skipped without one.

- A program built with frame pointers and without unwind tables (C, and Rust when rustc is
  there) is walked by frame pointers to _start: its complete stacks carry no marker, and each is
  the exact chain.
- A library without CFI and without frame pointers, as the leaf or in the middle of the chain
  of a program with both: a frame-pointer step there reads its caller's frame and skips a
  frame, so every sample is the exact chain or ends in a marker (never a frame missing
  unmarked).
"""
import shutil
import subprocess
import time

import pytest

from conftest import WORKLOADS, loaded, read_folded, read_stats, stats_path
from test_stack_truth import CLOCK, START, cpu_seconds, is_marker, markers_of, user_frames
from test_unwind import ours, record_watched

NO_CFI = ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]
FP = ["-O2", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls"]
FRAME_SECTIONS = (".eh_frame", ".eh_frame_hdr", ".debug_frame")


def frame_sections(path):
    """The CFI sections of ELF file @path."""
    out = subprocess.run(["readelf", "-SW", str(path)], check=True, capture_output=True,
                         text=True).stdout
    return [s for s in FRAME_SECTIONS if f" {s} " in out]


def without_cfi(path):
    """Removes the CFI sections of executable @path; checks that none is left."""
    subprocess.run(["objcopy", *[a for s in FRAME_SECTIONS for a in ("--remove-section", s)],
                    str(path)], check=True)
    assert frame_sections(path) == [], f"{path} still has CFI"
    return path


@pytest.fixture(scope="module")
def fpbins(tmp_path_factory):
    d = tmp_path_factory.mktemp("fpm")
    w = WORKLOADS
    b = {}
    b["fp_c"] = d / "fp_chain"
    subprocess.run(["gcc", *FP, *NO_CFI, "-fno-plt", "-o", str(b["fp_c"]),
                    str(w / "fp_chain.c")], check=True)
    without_cfi(b["fp_c"])
    # A library: no objcopy (it would break its segments); no start files, whose CFI it would
    # carry, and no linker-made CFI for its PLT.
    lib = d / "libnocfi.so"
    subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", *NO_CFI, "-fPIC", "-shared",
                    "-nostartfiles", "-Wl,--no-ld-generated-unwind-info", "-o", str(lib),
                    str(w / "nocfi_lib.c")], check=True)
    assert frame_sections(lib) == [], f"{lib} has CFI"
    host = d / "nocfi_host"
    subprocess.run(["gcc", *FP, "-o", str(host), str(w / "nocfi_host.c"), f"-L{d}", "-lnocfi",
                    f"-Wl,-rpath,{d}"], check=True)
    # The same program under two names (comm tells the two chains apart).
    b["leaf"] = host
    b["mid"] = d / "nocfi_mid"
    shutil.copy(host, b["mid"])
    rustc = shutil.which("rustc")
    if rustc:
        b["fp_rs"] = d / "fp_chain_rs"
        subprocess.run([rustc, "-O", "-C", "force-frame-pointers=yes", "-C", "panic=abort",
                        "-o", str(b["fp_rs"]), str(w / "fp_chain.rs")], check=True)
        without_cfi(b["fp_rs"])
    return b


def profile(spanprof, procs, tmp_path, binary, *args):
    """Runs @binary (@args, 60 s) and records it by PID for 5 s at 99 Hz: (its folded stacks once
    loaded, the samples before its tables, its CPU seconds while sampled, the agent's stderr)."""
    p = procs.start(binary, *args)
    time.sleep(0.2)
    out = tmp_path / "out"
    cpu0 = []
    err = record_watched(spanprof, out, "--pid", p.pid, "--duration", 5, "--frequency", 99,
                         on_start=lambda: cpu0.append(cpu_seconds(p.pid)))
    cpu = cpu_seconds(p.pid) - cpu0[0]
    stacks, early = loaded(ours(read_folded(out / "profile.folded"), binary.name[:15]))
    return stacks, early, cpu, err


def enough(stacks, early, cpu, err):
    """At least half the samples 99 Hz of the workload's CPU time gives (timer slack)."""
    total = sum(c for _, c in stacks)
    assert total + early >= max(20, cpu * 99 * 0.5), \
        f"only {total} + {early} samples for {cpu:.2f} s\n{err}"
    return total


# Frames a sample in the Rust program's clock read may name below the chain's main.
def rust_clock(name):
    return name in CLOCK or "time" in name.lower() or "elapsed" in name


@pytest.mark.parametrize("lang", ["c", "rust"])
def test_frame_pointer_walk_reaching_start_is_complete(spanprof, fpbins, procs, tmp_path, lang):
    """The C (or Rust) program without CFI: >= 95% of its samples are complete, unmarked, the
    exact chain _start ... main -> fp_a -> fp_b -> fp_c; every marked one is a leaf-side part of
    that chain under its marker."""
    key = {"c": "fp_c", "rust": "fp_rs"}[lang]
    if key not in fpbins:
        pytest.skip("rustc is not installed: no Rust program to build")
    stacks, early, cpu, err = profile(spanprof, procs, tmp_path, fpbins[key], "60")
    total = enough(stacks, early, cpu, err)
    # C: main calls fp_a; Rust: main -> std's lang_start ... fp_chain::main -> fp_a.
    tail = ["fp_a", "fp_b", "fp_c"]
    complete = 0
    for f, c in stacks:
        user = user_frames(f[1:])
        assert sum(is_marker(x) for x in user) <= 1, f
        if user and is_marker(user[0]):
            rest = user[1:]
            assert rest, f"a marker without the leaf: {f}"
            if rest[-1] in tail:
                k = tail.index(rest[-1])
                assert rest[-(k + 1):] == tail[:k + 1], f"not the chain: {f}"
            continue
        assert user[:len(START) + 1] == START + ["main"], f"neither complete nor marked: {f}"
        if lang == "c":
            chain = user[len(START) + 1:]
            rest = [x for x in chain if x not in CLOCK]
            assert rest == tail[:len(rest)], f"wrong chain: {f}"
        else:
            assert "fp_chain::main" in user, f"wrong chain: {f}"
            chain = user[user.index("fp_chain::main") + 1:]
            rest = [x for x in chain if not rust_clock(x)]
            assert rest == tail[:len(rest)], f"wrong chain: {f}"
        complete += c  # fp_c's, or main's loop and clock read: complete too
    assert complete >= 0.95 * total, \
        f"{complete} of {total} complete; markers: {markers_of(stacks)}\n{err}"
    # Complete because the agent proved the walk's frame-pointer steps (resolve/fpproof.c).
    frames = read_stats(stats_path(tmp_path / "out"))["frames"]
    assert frames["frame_pointer_walks_proven"] >= 0.9 * complete, (frames, complete)


@pytest.mark.parametrize("where", ["leaf", "mid"])
def test_library_without_cfi_or_frame_pointers(spanprof, fpbins, procs, tmp_path, where):
    """main -> host_outer -> the library (leaf), or -> the library -> host_inner (mid): the step
    out of the library reads host_outer's frame; every sample is the exact chain or ends in a
    marker, none with host_outer missing and unmarked."""
    chain = ["main", "host_outer", "nocfi_leaf"] if where == "leaf" else \
        ["main", "host_outer", "nocfi_mid", "host_inner"]
    stacks, early, cpu, err = profile(spanprof, procs, tmp_path, fpbins[where], where, "60")
    total = enough(stacks, early, cpu, err)
    full = START + chain
    complete = marked = 0
    for f, c in stacks:
        user = [x for x in user_frames(f[1:]) if x not in CLOCK]
        assert sum(is_marker(x) for x in user) <= 1, f
        if user and is_marker(user[0]):
            # Cut: the frames kept are a contiguous part of the real stack, down to the
            # sampled function (any function of the chain: the library runs code of its own).
            rest = user[1:]
            assert rest and any(rest == full[k:k + len(rest)] for k in range(len(full))), \
                f"not a part of the chain: {f}"
            marked += c
            continue
        # Complete: from _start, exactly the chain down to where the program was.
        assert user and user == full[:len(user)], f"wrong stack: {f}"
        complete += c
    lib = chain[2]
    # The library is where the program spends its time: its samples are there, all marked.
    inlib = sum(c for f, c in stacks if lib in f)
    assert inlib >= 0.5 * total, f"{inlib} of {total} in {lib}\n{err}"
    assert complete + marked == total
    # The library's samples are cut by the agent's check of the step out of it (fpproof.c).
    frames = read_stats(stats_path(tmp_path / "out"))["frames"]
    assert frames["frame_pointer_steps_unproven"] > 0, (frames, marked)
