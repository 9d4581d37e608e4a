"""Python frames of CPython processes (docs/python.md) against the real kernel, for each CPython
installed here: pyenv's 3.8-3.13 (libpython3.X.so), Debian's /usr/bin/python3.11 and Debian
sid's python3.14 (`make cpython-3.14`, in the build directory; the interpreter linked into the
executable).

The workload (integration/workloads/pythreads.py) runs threads with known call chains: three
burn CPU in their own Python functions, one in a C extension (zlib) called from Python, one in
functions compiled at run time and dropped at once, one sleeps, one waits on a lock. Each thread
writes down its chain as the interpreter sees it (sys._getframe) and its native TID before the
agent samples. Checked on the agent's pprof output, sample by sample (pprof's tid label):
  - at least 95% of each CPU thread's samples show exactly its Python chain, root to leaf, with
    the workload's file and a leaf line of its loop; no sample of any thread shows a function of
    another thread's chain;
  - native frames are where they belong: start-up (start_thread) before the first Python frame,
    the C extension's frames (deflate) after the Python frame that called it, never a Python
    frame after them;
  - functions compiled at run time are never misnamed (churn_fK always calls churn_gK);
  - with --profile offcpu (one version): the sleeping and the waiting threads' off-CPU samples
    show their own chains.
The expected counts are sized from each thread's CPU time. Processes started before the agent
(one per version, no --pid) carry Python frames from the agent's first samples: the only ones
without are leaf-only stacks taken before the interpreter's CFI table was in. A second test runs py-spy (PyPI) on
the same process in the same run and prints the share of spanprof's samples whose Python
function sequence py-spy saw too (target 95%). The agent's OTLP frame kind and the view's colour
are checked by unit tests (test/profile, test/view).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import BUILD, SLOWDOWN, WORKLOADS, cpu_seconds, record_gated, wait_sampling

SECONDS = 3
FREQ = 499
WORKLOAD = WORKLOADS / "pythreads.py"
CPU_THREADS = ("alpha", "beta", "gamma", "delta", "churn")
OFFCPU_THREADS = ("sleeper", "waiter")
OFFCPU_VERSION = "3.12"
XPERF_VERSION = "3.13"  # python -X perf: the perf trampolines (3.12+) must not stop the walk


def pyenv_root():
    try:
        out = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return Path(out.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    return Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))


def pythons():
    """(id, path) of each CPython 3.8+ installed: pyenv's versions, then Debian's 3.11, then
    Debian sid's 3.14 (make cpython-3.14)."""
    out = []
    versions = pyenv_root() / "versions"
    for d in sorted(versions.glob("3.*")) if versions.is_dir() else []:
        m = re.match(r"^3\.(\d+)\.\d+$", d.name)
        exe = d / "bin" / f"python3.{m.group(1)}" if m else None
        if m and 8 <= int(m.group(1)) <= 13 and exe.exists():
            out.append((f"pyenv-{d.name}", exe))
    if Path("/usr/bin/python3.11").exists():
        out.append(("debian-3.11", Path("/usr/bin/python3.11")))
    if CPYTHON314.exists():
        out.append(("debian-sid-3.14", CPYTHON314))
    else:
        print(f"no CPython 3.14 ({CPYTHON314} is absent: `make cpython-3.14` puts Debian sid's "
              "there): its Python tests are not run")
    return out


# Debian sid's CPython 3.14, unpacked by `make cpython-3.14` (scripts/cpython-3.14.py).
CPYTHON314 = BUILD / "cpython-3.14" / "root" / "usr" / "bin" / "python3.14"
PYTHONS = pythons()
pytestmark = pytest.mark.skipif(not PYTHONS, reason="no CPython 3.8-3.14 installed")


def is_python(loc, line):
    """A pprof line of a CPython frame: no mapping, and Python source ("*.py", "<string>")."""
    f = line.get("file") or ""
    return not loc.get("mapping") and (f.endswith(".py") or f.startswith("<"))


def frames_root_first(sample):
    """The sample's frames, root first: (function, file, line, is_python)."""
    out = []
    for loc in reversed(sample["stack"]):
        for ln in reversed(loc["lines"] or []):
            out.append((ln["function"], ln.get("file") or "", ln.get("line") or 0,
                        is_python(loc, ln)))
        if not loc["lines"]:
            out.append(("?", "", 0, False))
    return out


def run(spanprof, pprofcheck, procs, tmp_path, exe, *agent_args, py_args=()):
    prog = procs.start(exe, *py_args, WORKLOAD, SECONDS, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    info = json.loads(prog.stdout.readline())
    out = tmp_path / "out"
    res = record_gated(spanprof, out, prog, "--pid", prog.pid, "-F", FREQ, *agent_args,
                       timeout=120)
    cpu = json.loads(prog.stdout.readline())["cpu"]
    prog.wait(timeout=30)
    decoded = {}
    for stem in ("profile", "offcpu"):
        path = out / f"{stem}.pb.gz"
        if path.exists():
            prof = pprofcheck(path)
            assert not prof["check_error"], prof["check_error"]
            decoded[stem] = [s for s in prof["samples"] if s["values"][0] > 0]
    return info, cpu, decoded, res


def count(samples):
    """Samples in pprof samples (each one stack and thread, its count in values[0])."""
    return sum(s["values"][0] for s in samples)


def by_thread(info, samples):
    tids = {t["tid"]: name for name, t in info["threads"].items()}
    out = {name: [] for name in info["threads"]}
    for s in samples:
        tid = (s["num_labels"].get("tid") or [0])[0]
        if tid in tids:
            out[tids[tid]].append(s)
    return out


def own_functions(info):
    """Each thread's workload functions (the ones no other thread runs)."""
    funcs = {n: {c["function"] for c in t["chain"] if c["file"] == info["file"]}
             for n, t in info["threads"].items()}
    shared = set.intersection(*funcs.values())
    return {n: f - shared for n, f in funcs.items()}


def check_thread(name, samples, info, others):
    """(exact, problems, inexact): samples of thread @name with exactly its chain and a leaf line
    of its loop; the descriptions of any sample showing another thread's function or a misplaced
    frame (those must never happen); the other samples' stacks."""
    t = info["threads"][name]
    chain = [c["function"] for c in t["chain"]]
    files = [c["file"] for c in t["chain"]]
    exact, problems, inexact = 0, [], []
    for s in samples:
        weight = s["values"][0]  # pprof adds up the samples of one stack and thread
        frames = frames_root_first(s)
        py = [(f, file, line) for f, file, line, is_py in frames if is_py]
        names = [f for f, _, _ in py]
        stray = set(names) & others
        if stray:
            problems.append(f"{name}: another thread's function {sorted(stray)}: {names}")
        # Native start-up before the first Python frame (unless the stack is marked as cut).
        first_py = next((i for i, f in enumerate(frames) if f[3]), None)
        cut = frames and frames[0][0].startswith("[truncated")
        if first_py is not None and not cut and \
                "start_thread" not in [f[0] for f in frames[:first_py]]:
            problems.append(f"{name}: no start_thread before the Python frames: "
                            f"{[f[0] for f in frames]}")
        head = py[:len(chain)]
        if ([f for f, _, _ in head] == chain and [file for _, file, _ in head] == files and
                head and head[-1][2] in t["leaf_lines"]):
            rest = names[len(chain):]
            if t["work"] == "cpu-churn":
                ok = all(re.match(r"^(<module>|churn_[fg]\d+)$", f) for f in rest)
                problems += check_churn(rest)
            else:
                ok = not rest
            if ok:
                exact += weight
                continue
        inexact.append(";".join(f"{f}:{line}" if is_py else f for f, _, line, is_py in frames))
    return exact, problems, inexact


def in_report(name, samples, info):
    """How many of thread @name's samples are in report() (waiting for GO, or for the GIL once
    GO is set), called by its leaf function exactly as its chain says: a true stack before the
    thread's loop."""
    t = info["threads"][name]
    chain = [c["function"] for c in t["chain"]]
    report = os.path.basename(t["chain"][-1]["file"])[:-len(".py")] + ".report"
    n = 0
    for s in samples:
        names = [f for f, _, _, is_py in frames_root_first(s) if is_py]
        if names[:len(chain)] == chain and names[len(chain):len(chain) + 1] == [report]:
            n += s["values"][0]
    return n


def check_churn(names):
    """Frames of functions compiled at run time: churn_gK is only ever called by churn_fK."""
    out = []
    for caller, callee in zip(names, names[1:]):
        if callee.startswith("churn_g") and caller != "churn_f" + callee[len("churn_g"):]:
            out.append(f"churn: {callee} under {caller}: a misnamed frame")
    return out


def check_native_above(samples):
    """delta's samples in zlib: the C extension's frames after (leaf-side of) the Python frame
    that called it, and no Python frame after them. Returns (in zlib, problems)."""
    in_zlib, problems = 0, []
    for s in samples:
        frames = frames_root_first(s)
        z = [i for i, f in enumerate(frames) if re.search(r"deflate|zlib_compress", f[0])]
        if not z:
            continue
        in_zlib += s["values"][0]
        py = [i for i, f in enumerate(frames) if f[3]]
        if not py or py[-1] > z[0] or frames[py[-1]][0] != "pythreads.delta_leaf":
            problems.append(f"delta: zlib not above delta_leaf: {[f[0] for f in frames]}")
    return in_zlib, problems


RUNS = [(i, p, ()) for i, p in PYTHONS] + \
    [(i + "-X-perf", p, ("-X", "perf")) for i, p in PYTHONS if i.startswith(f"pyenv-{XPERF_VERSION}.")]


@pytest.mark.parametrize("exe,py_args", [(p, a) for _, p, a in RUNS], ids=[i for i, _, _ in RUNS])
def test_threads_show_their_own_chains(spanprof, pprofcheck, procs, tmp_path, exe, py_args):
    version = subprocess.run([str(exe), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    offcpu = version == OFFCPU_VERSION and "pyenv" in str(exe)
    args = ["--profile", "cpu,offcpu"] if offcpu else []
    info, cpu, decoded, res = run(spanprof, pprofcheck, procs, tmp_path, exe, *args,
                                  py_args=py_args)
    assert res.stats and res.stats["python"] and res.stats["python"]["processes"] >= 1, \
        res.stderr
    own = own_functions(info)
    cpu_samples = by_thread(info, decoded["profile"])
    problems, report = [], []
    for name in CPU_THREADS:
        samples = cpu_samples[name]
        # Half the ticks the thread's CPU time is worth (a third with offcpu's tracepoint
        # programs: the kernel runs one BPF program per CPU at a time, and skips the tick's),
        # and enough to measure 95% on.
        expected = cpu[name] * FREQ * (0.67 if offcpu else 1)
        others = set().union(*(f for n, f in own.items() if n != name))
        exact, bad, inexact = check_thread(name, samples, info, others)
        problems += bad
        report.append(f"{name}: {exact}/{count(samples)} exact ({cpu[name]:.2f} s CPU)")
        assert count(samples) >= max(20, 0.5 * expected), \
            f"{version} {name}: {count(samples)} samples for {cpu[name]:.2f} s of CPU"
        # With -X perf each function compiled at run time gets a trampoline, and a new arena
        # of them is unknown mapping to the unwinder until the agent re-reads the maps: those
        # stacks are cut and marked ("[truncated: unknown mapping]"), true but not whole.
        share = 0.85 if py_args and name == "churn" else 0.95
        assert exact >= share * count(samples), \
            f"{version} {name}: {exact} of {count(samples)} samples show its exact chain; " \
            "others:\n" + "\n".join(inexact[:5])
    # Whole stacks: no cut (with -X perf too: its trampolines have no CFI nor frame pointer).
    mine = [s for name in CPU_THREADS for s in cpu_samples[name]
            if not (py_args and name == "churn")]
    cut = sum(s["values"][0] for s in mine
              if any(f[0].startswith("[truncated") for f in frames_root_first(s)))
    report.append(f"cut stacks: {cut}/{count(mine)}")
    assert cut <= 0.05 * count(mine), report
    in_zlib, bad = check_native_above(cpu_samples["delta"])
    problems += bad
    report.append(f"delta in zlib: {in_zlib}")
    assert in_zlib >= 0.5 * count(cpu_samples["delta"]), report
    # Every sample of the process, the sleeping and waiting threads' too: never another's.
    for name in OFFCPU_THREADS:
        others = set().union(*(f for n, f in own.items() if n != name))
        problems += check_thread(name, cpu_samples[name], info, others)[1]
    if offcpu:
        off = by_thread(info, decoded["offcpu"])
        for name in OFFCPU_THREADS:
            others = set().union(*(f for n, f in own.items() if n != name))
            exact, bad, inexact = check_thread(name, off[name], info, others)
            problems += bad
            # Before its loop, the thread waits in report() for GO, and then for the GIL that
            # the CPU-bound threads hold (seconds on a loaded machine): true stacks, not its loop.
            waiting = in_report(name, off[name], info)
            report.append(f"offcpu {name}: {exact}/{count(off[name])} exact, "
                          f"{waiting} waiting in report()")
            assert count(off[name]) - waiting >= 10, \
                f"{name}: {count(off[name])} off-CPU samples\n" + \
                str(res.stats["events"] if res.stats else res.stderr)
            assert exact >= 0.95 * (count(off[name]) - waiting), (report, inexact[:5])
    py = (getattr(res, "stats", None) or {}).get("python")
    if py:
        report.append(f"frames named {py['frames_named']}, not named {py['frames_unnamed']} "
                      f"({py['frames_stale']} freed and reused since the sample)")
    print(f"{version} ({exe} {' '.join(py_args)}): " + "; ".join(report))
    assert not problems, "\n".join(problems[:20])


def py_spy():
    """py-spy (PyPI: make deps installs it), or None."""
    found = shutil.which("py-spy")
    if found:
        return found
    res = subprocess.run(["python3", "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"],
                         capture_output=True, text=True)
    path = Path(res.stdout.strip()) / "py-spy"
    return str(path) if res.returncode == 0 and path.exists() else None


def normalized(names):
    """A Python function sequence with the names of run-time compiled functions made equal."""
    return tuple(re.sub(r"^(churn_[fg])\d+$", r"\1#", n) for n in names)


def spy_sequences(path, tids):
    """py-spy's raw output ("thread (TID): name;func (file:line);... count") as
    {thread name: {function sequence: samples}}."""
    out = {name: {} for name in tids.values()}
    for line in Path(path).read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        m = re.match(r"^thread \((\d+)\): [^;]*;?(.*)$", stack)
        if not m or int(m.group(1)) not in tids:
            continue
        names = normalized(re.sub(r" \([^()]*:\d+\)$", "", f) for f in m.group(2).split(";") if f)
        seqs = out[tids[int(m.group(1))]]
        seqs[names] = seqs.get(names, 0) + int(n)
    return out


# py-spy reads 3.12 and 3.14 (checked with py-spy 0.4.3, PyPI).
SPY_PYTHONS = [(i, p) for i, p in PYTHONS
               if i.startswith(f"pyenv-{OFFCPU_VERSION}.") or i == "debian-sid-3.14"]


@pytest.mark.skipif(py_spy() is None, reason="py-spy is not installed (make deps installs it)")
@pytest.mark.parametrize("exe", [p for _, p in SPY_PYTHONS], ids=[i for i, _ in SPY_PYTHONS])
def test_same_python_stacks_as_py_spy(spanprof, pprofcheck, procs, tmp_path, exe):
    """py-spy (a real peer, reading the same process in the same run) and spanprof see the same
    Python function sequences: the share of spanprof's CPU samples whose sequence (qualified
    names, root to leaf) py-spy saw for that thread too, target 95%."""
    prog = procs.start(exe, WORKLOAD, SECONDS, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True)
    info = json.loads(prog.stdout.readline())
    out = tmp_path / "out"
    agent = procs.start(spanprof, "record", "--output-dir", out, "--pid", prog.pid, "-F", FREQ,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_sampling(agent)
    spy_out = tmp_path / "py-spy.txt"
    spy = procs.start(py_spy(), "record", "--pid", prog.pid, "--rate", 99, "--duration",
                      SECONDS, "--format", "raw", "--threads", "--nonblocking", "--output",
                      spy_out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # py-spy attached
    prog.stdin.write("go\n")
    prog.stdin.close()
    spy.wait(timeout=60)
    agent.communicate(timeout=120)
    prog.wait(timeout=30)
    assert agent.returncode == 0
    tids = {t["tid"]: name for name, t in info["threads"].items()}
    spy_seqs = spy_sequences(spy_out, tids)
    samples = by_thread(info, pprofcheck(out / "profile.pb.gz")["samples"])
    report = []
    for name in CPU_THREADS:
        ours = {}
        for s in samples[name]:
            seq = normalized(ln["system_name"] for loc in reversed(s["stack"])
                             for ln in reversed(loc["lines"] or []) if is_python(loc, ln))
            ours[seq] = ours.get(seq, 0) + s["values"][0]
        total = sum(ours.values())
        matched = sum(n for seq, n in ours.items() if seq in spy_seqs[name])
        report.append(f"{name}: {matched}/{total} of spanprof's samples in a sequence py-spy "
                      f"saw ({sum(spy_seqs[name].values())} py-spy samples)")
        assert total >= 20 and sum(spy_seqs[name].values()) >= 10, report
        assert matched >= 0.95 * total, report
    print(f"py-spy vs spanprof ({exe}): " + "; ".join(report))


DEEP = WORKLOADS / "pydeep.py"
DEEP_CALLS = 300
DEEP_MIN_FRAMES = 64
PY_UNNAMED = "[python frame not named]"  # exporter/resolve/resolve.c, PY_UNNAMED_NAME


@pytest.mark.parametrize("exe", [p for _, p in PYTHONS], ids=[i for i, _ in PYTHONS])
def test_deep_recursion_keeps_its_leaf_python_frames(spanprof, pprofcheck, procs, tmp_path, exe):
    """300 Python calls deep (before 3.11 each costs the native walk 3-4 interpreter frames, more
    than the 512 slots of a sample hold): every sample keeps the leaf-most Python frames, exactly
    deep x k then spin at a line of its body, and is marked as cut (the Python frame limit or
    the native depth limit); at least 64 Python frames in 90% of them. Never a frame of another
    function, never a stack that looks whole. (The process's own end, once spin has returned,
    is deep x k as the recursion unwinds, then <module> alone.)"""
    prog = procs.start(exe, DEEP, DEEP_CALLS, SECONDS, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    json.loads(prog.stdout.readline())
    out = tmp_path / "out"
    record_gated(spanprof, out, prog, "--pid", prog.pid, "-F", FREQ, timeout=120)
    cpu = json.loads(prog.stdout.readline())["cpu"]
    prog.wait(timeout=30)
    # spin's body: its loop, and the lines around it (a sample may catch it reading "go").
    src = DEEP.read_text().splitlines()
    first = src.index("def spin(seconds):") + 2
    lines = set(range(first, next(i for i in range(first, len(src)) if not src[i].strip()) + 1))
    samples = [s for s in pprofcheck(out / "profile.pb.gz")["samples"] if s["values"][0] > 0]
    total = count(samples)
    assert total >= max(20, 0.5 * cpu * FREQ), f"{total} samples for {cpu:.2f} s of CPU"
    deep_enough, unnamed_root, problems = 0, 0, []
    for s in samples:
        frames = frames_root_first(s)
        py = [(f, line) for f, _, line, is_py in frames if is_py]
        names = [f for f, _ in py]
        marked = any(f.startswith("[truncated") or f.startswith("[python stack cut")
                     for f, _, _, _ in frames)
        shown = ";".join(f for f, _, _, _ in frames)
        if not py:
            continue  # a sample with no Python frame (not walked): nothing to check here
        # The true stacks: <module> (unless cut off), deep x k, then spin at a line of its
        # loop; or, once spin has returned, deep x k as the recursion unwinds and <module>
        # alone at the end (the process's last lines).
        whole = names[:1] == ["pydeep.<module>"]
        # <module>'s frame is deeper than the walk's limit until the recursion unwinds at the
        # process's end: a sample of those last moments may be named after the process is gone
        # and its code object can no longer be read. It says so (the frame not named, counted),
        # and must stay rare.
        at = next(i for i, fr in enumerate(frames) if fr[3])
        if not whole and at > 0 and frames[at - 1][0] == PY_UNNAMED:
            whole = True
            unnamed_root += s["values"][0]
        body = names[1:] if names[:1] == ["pydeep.<module>"] else names
        k = len(body) - (body[-1:] == ["pydeep.spin"])
        if body[:k] != ["pydeep.deep"] * k or \
                (body[-1:] == ["pydeep.spin"] and py[-1][1] not in lines):
            problems.append(f"not <module>, deep... then spin: {shown}")
        if not whole and not marked:
            problems.append(f"a cut stack without a marker: {shown}")
        if len(names) >= DEEP_MIN_FRAMES:
            deep_enough += s["values"][0]
    assert not problems, problems[:3]
    assert unnamed_root <= max(2, 0.02 * total), \
        f"{unnamed_root} of {total} samples with <module>'s frame not named"
    assert deep_enough >= 0.9 * total, \
        f"{deep_enough} of {total} samples show {DEEP_MIN_FRAMES}+ Python frames"


SAMENAME = WORKLOADS / "pysamename.py"


SUBINTERP_PYTHONS = [(i, p) for i, p in PYTHONS if re.search(r"3\.1[2-9]", i)]
SAMENAME_CASES = ([(p, "ascii", False) for _, p in PYTHONS]
                  + [(p, "latin", False) for _, p in PYTHONS]
                  + [(p, "ascii", True) for _, p in SUBINTERP_PYTHONS])
SAMENAME_IDS = ([f"ascii-{i}" for i, _ in PYTHONS] + [f"latin-{i}" for i, _ in PYTHONS]
                + [f"subinterp-{i}" for i, _ in SUBINTERP_PYTHONS])


@pytest.mark.parametrize("exe,paths,subinterp", SAMENAME_CASES, ids=SAMENAME_IDS)
def test_a_freed_code_object_never_lends_its_name_to_the_next_at_its_address(
        spanprof, pprofcheck, procs, tmp_path, exe, paths, subinterp):
    """Two threads compile and drop, again and again, a function `handler` at line 1 of two
    files whose paths differ by one character at their end (workloads/pysamename.py: short
    ASCII paths, or non-ASCII ones of 300 characters): one thread's code object is often made
    where the other's was, with the same name, first line and size. No sample of either thread
    names a handler of the other's file, or a line outside its own handler's body (the def line
    included: a call not started yet). Frames the agent cannot prove stay unnamed; enough are
    named for the check to mean something. With a second interpreter made as the run starts
    (3.12+; 3.13 numbers code objects per interpreter), the same holds: from then on the walk
    keys frames by their contents, and the frames are still named."""
    prog = procs.start(exe, SAMENAME, SECONDS, paths, *(["subinterp"] if subinterp else []),
                       stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    json.loads(prog.stdout.readline())
    out = tmp_path / "out"
    record_gated(spanprof, out, prog, "--pid", prog.pid, "-F", FREQ, timeout=120)
    json.loads(prog.stdout.readline())
    prog.wait(timeout=30)
    own = {"pysamename.run_first": ("spanprof-code-a.py", {1, 2, 3, 4, 5}),
           "pysamename.run_second": ("spanprof-code-b.py", {1, 7, 8, 9, 10})}
    named, problems = {root: 0 for root in own}, []
    for s in pprofcheck(out / "profile.pb.gz")["samples"]:
        frames = frames_root_first(s)
        names = [f for f, _, _, _ in frames]
        for root, (path, lines) in own.items():
            if root not in names:
                continue
            for f, file, line, is_py in frames[names.index(root) + 1:]:
                if not is_py or not f.endswith("handler"):
                    continue
                named[root] += s["values"][0]
                if not file.endswith(path) or line not in lines:
                    problems.append(f"{root}: {f} {file}:{line} in {';'.join(names)}")
    assert not problems, problems[:3]
    assert all(n >= 10 for n in named.values()), f"named handler samples per thread: {named}"


TURNS = WORKLOADS / "pyturns.py"
TURNS_SECONDS = 6


@pytest.mark.parametrize("exe", [p for _, p in PYTHONS], ids=[i for i, _ in PYTHONS])
def test_code_objects_made_one_after_another_keep_their_own_names(
        spanprof, pprofcheck, procs, tmp_path, exe):
    """workloads/pyturns.py makes, turn after turn, a function turn_N (its def N % 17 lines
    down its own file) and a lambda, calls each once from its own line of drive() and drops
    them: code objects a few versions and a few first lines apart, each made where an earlier
    one was freed. A frame called from drive()'s turn line is turn_N (file spanprof-turn-N.py,
    line in its body or its def line), from its lambda line a <lambda>; turn_N calls no Python
    function. A fingerprint that confused (version v, line l) with (v ^ l ^ l', l') named a
    lambda turn_M (a try-out on 3.12: 14-37 samples in 10 s; this test: about 50 in 6 s);
    frames the agent cannot prove stay unnamed."""
    prog = procs.start(exe, TURNS, TURNS_SECONDS, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True)
    info = json.loads(prog.stdout.readline())
    out = tmp_path / "out"
    record_gated(spanprof, out, prog, "--pid", prog.pid, "-F", 999, timeout=120)
    done = json.loads(prog.stdout.readline())
    prog.wait(timeout=30)
    checked = {"turn": 0, "lambda": 0}
    calls_lambda, problems = 0, []
    for s in pprofcheck(out / "profile.pb.gz")["samples"]:
        frames = [f for f in frames_root_first(s)]
        for i, (f, file, line, is_py) in enumerate(frames[:-1]):
            if not (is_py and f.endswith("drive")):
                continue
            # The frame drive() called: the first Python frame or Python marker after it.
            callee = next((g for g in frames[i + 1:] if g[3] or g[0].startswith("[python")),
                          None)
            if callee is None:
                break  # drive() itself, or a C function it called
            if line == info["lambda_line"]:
                calls_lambda += s["values"][0]
            if not callee[3]:
                break  # a frame not named (its code object gone before it was read)
            name, cfile, cline, _ = callee
            if line == info["turn_line"]:
                m = re.fullmatch(r"(?:.*\.)?turn_(\d+)", name)
                n = int(m.group(1)) if m else -1
                first = 1 + n % 17
                if not m or not cfile.endswith(f"spanprof-turn-{n}.py") or \
                        not first <= cline <= first + 4:  # the def line: not started yet
                    problems.append(f"turn line: {name} {cfile}:{cline}")
                checked["turn"] += s["values"][0]
            elif line == info["lambda_line"]:
                if not name.endswith("<lambda>"):
                    problems.append(f"lambda line: {name} {cfile}:{cline}")
                checked["lambda"] += s["values"][0]
            break
        for j, (f, _, _, is_py) in enumerate(frames):
            if is_py and re.search(r"turn_\d+$", f) and any(g[3] for g in frames[j + 1:]):
                problems.append(f"{f} calls Python: {';'.join(g[0] for g in frames[j:])}")
    assert not problems, f"{len(problems)} wrong frames, first: {problems[:3]}"
    # Enough samples for the check to mean something (the run made done["turns"] of each):
    # turn_N named, and the lambda called (its frame is mostly not named: its code object is
    # freed, and its memory taken, a turn later, before the agent reads it).
    assert checked["turn"] >= 50 and calls_lambda >= 50, (checked, calls_lambda, done)


RELAY = WORKLOADS / "pyrelay.py"
RELAY_SECONDS = 6


def relay_check(samples, info):
    """pyrelay.py's samples under drive()'s turn line: (samples naming their turn, samples
    with the turn's frame not named, wrong frames: a name, file or line that is not the
    turn's, or a hop depth that is not its N % 4 + 1)."""
    named = unnamed = 0
    problems = []
    for s in samples:
        frames = frames_root_first(s)
        at = next((i for i, (f, _, line, is_py) in enumerate(frames)
                   if is_py and f.endswith("drive") and line == info["turn_line"]), None)
        if at is None:
            continue
        rest = [g for g in frames[at + 1:] if g[3] or g[0].startswith("[python")]
        if not rest:
            continue  # drive() in its own call of turn_N, before it
        if not rest[0][3]:
            unnamed += s["values"][0]
            continue
        name, cfile, cline, _ = rest[0]
        m = re.fullmatch(r"(?:.*\.)?turn_(\d+)", name)
        n = int(m.group(1)) if m else -1
        first = 1 + n % 17
        below = [g[0].split(".")[-1] if g[3] else "?" for g in rest[1:]]
        hops = next((i for i, f in enumerate(below) if f != "hop"), len(below))
        spins = hops < len(below) and below[hops] == "spin"
        if not m or not cfile.endswith(f"spanprof-relay-{n}.py") or \
                cline not in (first, first + 1) or \
                (hops != n % 4 + 1 if spins else hops > n % 4 + 1):
            problems.append(f"{name} {cfile}:{cline} over {hops} hop frames: {';'.join(below)}")
        else:
            named += s["values"][0]
    return named, unnamed, problems


@pytest.mark.parametrize("exe", [p for _, p in PYTHONS], ids=[i for i, _ in PYTHONS])
def test_code_objects_cached_by_the_walk_are_forgotten_when_freed(
        spanprof, pprofcheck, procs, tmp_path, exe):
    """workloads/pyrelay.py makes, turn after turn, a function turn_N (as if from its own file,
    its def N % 17 lines down) at the address of the last turn's freed code object, and runs
    it for 0.6 s of CPU time in a call chain under it of exactly N % 4 + 1 hop frames. The
    BPF walk keeps turn_N's code object in its code-object cache (turn_N is never the
    innermost frame); the deallocation uprobe has to void that entry when turn_N is freed,
    else turn_M's frames would carry turn_N's fingerprint (and be named turn_N wherever the
    agent still has turn_N's name for that address, or not named at all): a turn whose name
    disagrees with its hop depth, or turns that go unnamed, show that."""
    # At least 12 turns however loaded the machine. A turn's samples are named only while its
    # code object lives (see the last assertion), so a turn is 0.6 s of CPU time, times the
    # slowdown of a TCG guest (SLOWDOWN): there the agent's lag behind the workload grows
    # and 0.6 s turns left 24% named.
    prog = procs.start(exe, RELAY, RELAY_SECONDS, 12, 0.6 * SLOWDOWN, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    info = json.loads(prog.stdout.readline())
    out, stats = tmp_path / "out", tmp_path / "stats.json"
    record_gated(spanprof, out, prog, "--pid", prog.pid, "-F", 999, "--stats-json", stats,
                 "--python-code-cache-after", 0, timeout=120 * SLOWDOWN)
    done = json.loads(prog.stdout.readline())
    prog.wait(timeout=30)
    # The workload did what the test is about: its turns' code objects shared addresses.
    assert done["turns"] >= 10 and done["addresses"] <= done["turns"] // 2, done
    named, unnamed, problems = relay_check(pprofcheck(out / "profile.pb.gz")["samples"], info)
    assert not problems, f"{len(problems)} wrong frames, first: {problems[:3]}"
    py = json.loads(stats.read_text())["python"]
    cache = {k: v for k, v in py.items() if k.startswith(("walk", "dealloc"))}
    # The cache was used, and voided at every turn: the uprobe saw each turn's code object go.
    assert py["walk_code_objects_cached"] > 0 and py["dealloc_hooks"] == 1, json.dumps(cache)
    assert py["walk_code_objects_freed"] >= done["turns"] - 1, (cache, done)
    # Most samples under a turn name it. The rest are refused by the agent, not the walk: it
    # names a batch of samples after their turn's code object was freed (measured on 3.12:
    # as many refused with the cache off). With the cache not voided at each free: none named.
    assert named >= (named + unnamed) / 3 and named >= 100, (named, unnamed, done)


def test_short_lived_neighbours_leave_the_cache_of_a_long_one_alone(
        spanprof, pprofcheck, procs, tmp_path):
    """Whole host, the cache after 2 s: pyrelay.py runs 12 s while short interpreters, one
    after another beside it, are found and exit before their own 2 s. Their table entries go
    without ever having had a uprobe, and must never take the relay's with them (a review
    found that the entry of an interpreter left without a descriptor kept a handle of 0,
    whose removal would detach the first uprobe attached and freeze that process's code
    epoch; run against a build with that bug, this test still passed: it covers the
    scenario, not that exact case). The relay keeps its uprobe and its names, never wrong
    ones."""
    exe = PYTHONS[0][1]
    # Neighbours of a version the agent finds but does not describe (3.7: their entries stay
    # without a descriptor, as the buggy ones did), else of the relay's own. Only these
    # executables are sampled (--exe), so the relay's is the first uprobe attached.
    old = sorted(pyenv_root().glob("versions/3.7.*/bin/python3.7"))
    neighbour = old[0] if old else exe
    prog = procs.start(exe, RELAY, 12, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    info = json.loads(prog.stdout.readline())
    stop = threading.Event()
    runs = []

    def neighbours():
        while not stop.is_set():
            runs.append(subprocess.run([str(neighbour), "-c", "sum(range(3000000))"]).returncode)

    helper = threading.Thread(target=neighbours)
    helper.start()
    try:
        res = record_gated(spanprof, tmp_path / "out", prog, "-d", 16, "-F", 199,
                           "--python-code-cache-after", 2, "--exe", exe, "--exe", neighbour,
                           timeout=120)
    finally:
        stop.set()
        helper.join(timeout=60)
    done = json.loads(prog.stdout.readline())
    prog.wait(timeout=30)
    named, unnamed, problems = relay_check(
        pprofcheck(tmp_path / "out" / "profile.pb.gz")["samples"], info)
    assert not problems, f"{len(problems)} wrong frames, first: {problems[:3]}"
    py = res.stats["python"]
    cache = {k: v for k, v in py.items() if k.startswith(("walk", "dealloc"))}
    seen = py["processes"] + py["processes_not_described"]["unsupported"]
    assert len(runs) >= 5 and seen >= 5, (len(runs), py)
    assert py["dealloc_hooks"] == 1 and py["walk_code_objects_cached"] > 0, json.dumps(cache)
    # Its uprobe stayed: it saw the code object of every turn go.
    assert py["walk_code_objects_freed"] >= done["turns"] - 1, (json.dumps(cache), done)
    # At 199 Hz, 12 s of the relay's CPU: most of its samples under a turn name it.
    assert named >= (named + unnamed) / 3 and named >= 200, (named, unnamed, done)


FREES = WORKLOADS / "pyfrees.py"
FREES_SECONDS = 12


def test_a_program_freeing_code_objects_all_the_time_loses_the_uprobe(
        spanprof, procs, tmp_path):
    """The code-deallocation uprobe costs a program about 1 us per code object it frees:
    workloads/pyfrees.py frees them non-stop, and the agent's sweep (every 5 s) takes the
    uprobe off that process (above PYTAB_MAX_FREES_PER_S), says so once, and counts it; the
    program keeps its Python frames (every code object read again at each walk)."""
    exe = PYTHONS[0][1]
    prog = procs.start(exe, FREES, FREES_SECONDS, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True)
    json.loads(prog.stdout.readline())
    res = record_gated(spanprof, tmp_path / "out", prog, "--pid", prog.pid, "-F", 99,
                       "--python-code-cache-after", 0, timeout=120)
    freed = json.loads(prog.stdout.readline())["freed"]
    prog.wait(timeout=30)
    py = res.stats["python"]
    assert py["dealloc_hooks"] == 1 and py["dealloc_hooks_dropped"] == 1, (py, res.stderr)
    assert res.stderr.count("code-deallocation uprobe is off") == 1, res.stderr
    # Off within two sweeps (10 s) of a run of 12: the program freed code objects without it.
    assert py["walk_code_objects_freed"] < freed, (py, freed)
    assert py["frames_named"] > 0 and py["walks_ended"]["end"] > 0, py


EARLY_SECONDS = 2
LOOP = ("_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault.cold")


def test_processes_started_before_the_agent_have_python_frames_from_its_first_samples(
        spanprof, pprofcheck, procs, tmp_path):
    """Every installed CPython already burning CPU in Python when the agent starts (whole host, no --pid:
    found by the agent's start-up scan, not by their first sample reaching it), sampled for the
    agent's first 2 s. The only samples allowed without Python frames are those whose native
    stack was cut before their tables were in ("[truncated: not loaded yet]") at a leaf outside
    the interpreter loop, where no Python frame has a proven place, and the few in the loop taken
    before the scan (run once sampling has started) described the process: at most a tenth of
    them (without the scan, the first samples of each process, until one reached the agent's
    main thread, had none). Python frames are pydeep's own, spin at a line of its loop
    innermost. The expected count is sized from the workloads' CPU time while sampled."""
    workloads = {}
    for ident, exe in PYTHONS:
        p = procs.start(exe, DEEP, 3, 600, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        text=True)
        workloads[p.pid] = (ident, p)
    for _, p in workloads.values():
        json.loads(p.stdout.readline())
        p.stdin.write("go\n")
        p.stdin.flush()
    out = tmp_path / "out"
    stats = tmp_path / "stats.json"
    args = [str(spanprof), "record", "--output-dir", str(out), "--stats-json", str(stats),
            "-F", str(FREQ)]  # the whole host: the scan queues their tables too
    agent = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        seen = wait_sampling(agent)
        cpu0 = {pid: cpu_seconds(pid) for pid in workloads}
        # Ended by SIGINT rather than --duration: the CPU time counted is the sampled time's,
        # not the time the agent then takes to write its outputs.
        time.sleep(EARLY_SECONDS)
        cpu = {pid: cpu_seconds(pid) - cpu0[pid] for pid in workloads}
        agent.send_signal(signal.SIGINT)
        _, err = agent.communicate(timeout=120)
    except BaseException:  # never leave the agent running
        agent.kill()
        agent.wait()
        raise
    assert agent.returncode == 0, "".join(seen) + err
    lines = {i + 1 for i, text in enumerate(DEEP.read_text().splitlines())
             if "# leaf:spin" in text}
    total, with_py, problems, report = {}, {}, [], []
    early, early_shown = {}, []
    for s in pprofcheck(out / "profile.pb.gz")["samples"]:
        pid = (s["num_labels"].get("pid") or [0])[0]
        if pid not in workloads or s["values"][0] <= 0:
            continue
        frames = frames_root_first(s)
        shown = ";".join(f for f, _, _, _ in frames)
        py = [(f, file, line) for f, file, line, is_py in frames if is_py]
        total[pid] = total.get(pid, 0) + s["values"][0]
        if py:
            with_py[pid] = with_py.get(pid, 0) + s["values"][0]
            if py[-1][0] != "pydeep.spin" or py[-1][2] not in lines or \
                    any(Path(file).name != DEEP.name for _, file, _ in py):
                problems.append(f"{workloads[pid][0]}: not pydeep's frames: {shown}")
        elif any(f in LOOP for f, _, _, _ in frames) and \
                not any(f.startswith("[python") for f, _, _, _ in frames):
            # Taken before the scan, which runs once sampling has started, described the
            # process: a few at most (its first tens of milliseconds).
            early[pid] = early.get(pid, 0) + s["values"][0]
            early_shown.append(f"{workloads[pid][0]}: {shown}")
        elif not frames or frames[0][0] != "[truncated: not loaded yet]":
            problems.append(f"{workloads[pid][0]}: no Python frame in a whole stack: {shown}")
    for pid, (ident, _) in workloads.items():
        n = total.get(pid, 0)
        report.append(f"{ident}: {with_py.get(pid, 0)}/{n} with Python frames, "
                      f"{early.get(pid, 0)} in the loop before the scan ({cpu[pid]:.2f} s CPU)")
        # A third of the ticks its CPU time is worth (a loaded machine, every version's
        # tables being built: the agent's busiest seconds).
        assert n >= max(10, 0.33 * cpu[pid] * FREQ), report
        assert with_py.get(pid, 0) >= 1, report
        # Without the scan, every loop sample until the process's first one reached the
        # agent's main thread (25-96% of them here); with it, those of the scan's own time.
        assert early.get(pid, 0) <= max(3, 0.1 * n), early_shown[:5] + report
    print("; ".join(report))
    assert not problems, "\n".join(problems[:10] + report)
