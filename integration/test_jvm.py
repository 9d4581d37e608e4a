"""Java frames of a plain JVM, no flag (docs/java.md): HotSpot's own tables (VMStructs) give the
code cache, the interpreter and the layouts; BPF walks interpreted, compiled and stub frames
(bpf/hotspot.bpf.h); the agent proves and names each method (exporter/runtime/jvm/).

integration/workloads/JvmChain.java runs known chains on a thread named after the scenario, for
a known CPU time, on every JDK of the machine (OpenJDK 17 from Debian, Temurin 25):
  - the chain run -> outer -> middle -> leaf interpreted (-Xint), C1 only, and tiered (C2, with
    and without inlining): its samples show the exact chain down to the thread's start, the
    leaf's line when it runs interpreted, and never a frame that is not on the real stack;
  - a lambda, exceptions thrown and caught, a JNI call into C and back into Java, and classes
    defined, run and unloaded one after the other (G001.s001, G002.s002, ...: a name never
    pairs one class with another's method);
  - JFR's own execution samples of the same run agree on the share of the chain.
Expected counts are sized from the thread's CPU time.
"""
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import SLOWDOWN, WORKLOADS, record_gated

FREQ = 99
SECONDS = 4
# Seconds the workload stays after its work: the agent names a sample's Java frames from the
# process's memory, so samples it names after the JVM exited stay unnamed (docs/java.md); a
# slow guest's agent lags behind by seconds.
LINGER = 1.0 * SLOWDOWN


def jdks():
    """Every JDK on the machine: (name, java, javac, home)."""
    found = {}
    for home in sorted(Path("/usr/lib/jvm").glob("*")):
        java, javac = home / "bin/java", home / "bin/javac"
        if java.exists() and javac.exists() and not home.is_symlink():
            found[os.path.realpath(java)] = (home.name, java, javac, home)
    return list(found.values())


JDKS = jdks()


def java_major(java):
    """The feature version of @java (17, 25)."""
    res = subprocess.run([str(java), "-XshowSettings:properties", "-version"],
                         capture_output=True, text=True)
    m = re.search(r"java\.specification\.version = (\d+)", res.stderr)
    return int(m.group(1)) if m else 0
pytestmark = pytest.mark.skipif(not JDKS, reason="no JDK (java and javac) under /usr/lib/jvm")
LEAF_LINE = next(i + 1 for i, line in enumerate(
    (WORKLOADS / "JvmChain.java").read_text().splitlines()) if "// LEAF_LINE" in line)


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    """JvmChain compiled by each JDK's javac (class files of its own version), and the JNI
    library: {jdk name: directory}."""
    out = {}
    for name, _, javac, home in JDKS:
        d = tmp_path_factory.mktemp(f"classes-{name}")
        subprocess.run([str(javac), "-g", "-d", str(d), str(WORKLOADS / "JvmChain.java"),
                        str(WORKLOADS / "G000.java")], check=True)
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", f"-I{home}/include",
                        f"-I{home}/include/linux", "-o", str(d / "libjvmchain.so"),
                        str(WORKLOADS / "jvmchain.c")], check=True)
        out[name] = d
    return out


def frames_root_first(sample):
    """The sample's frames, root first: (function, file, line)."""
    out = []
    for loc in reversed(sample["stack"]):
        for ln in reversed(loc["lines"] or []):
            out.append((ln["function"], ln.get("file") or "", ln.get("line") or 0))
        if not loc["lines"]:
            out.append(("?", "", 0))
    return out


def run(spanprof, pprofcheck, procs, tmp_path, jdk, classes, scenario, *java_args,
        seconds=SECONDS, agent_args=()):
    """JvmChain @scenario under @jdk's java with @java_args, held at its gate until the agent
    samples it (--pid). Returns (the thread's samples as frames root first with their counts,
    the thread's CPU seconds, the agent's result)."""
    name, java = jdk[0], jdk[1]
    d = classes[name]
    # JDK 22+ warns about System.loadLibrary unless told.
    quiet = ["--enable-native-access=ALL-UNNAMED"] if java_major(java) >= 22 else []
    prog = procs.start(java, *java_args, *quiet, f"-Djava.library.path={d}",
                       "-cp", d, "JvmChain", scenario, seconds, LINGER, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    out = tmp_path / f"out-{scenario}"
    res = record_gated(spanprof, out, prog, "--pid", prog.pid, "-F", FREQ, *agent_args,
                       timeout=180)
    # (JFR prints a line of its own first when it records.)
    cpu = next(json.loads(x) for x in prog.stdout if x.startswith("{"))["cpu_s"]
    prog.wait(timeout=60)
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    samples = [(frames_root_first(s), s["values"][0]) for s in prof["samples"]
               if s["values"][0] > 0 and (s["labels"].get("comm") or [""])[0] == scenario]
    return samples, cpu, res


def java_frames(frames, prefix="JvmChain."):
    return [f for f in frames if f[0].startswith(prefix)]


def lambda_normal(name):
    """javac numbers lambdas per class (lambda$main$0 in one JDK, lambda$main$1 in another)."""
    return re.sub(r"(lambda\$\w+)\$\d+$", r"\1$N", name)


def contiguous_in(seq, truth):
    """@seq (names) is a contiguous run of @truth: true frames, in order, none skipped."""
    seq, truth = [lambda_normal(x) for x in seq], [lambda_normal(x) for x in truth]
    n = len(seq)
    return n == 0 or any(truth[i:i + n] == seq for i in range(len(truth) - n + 1))


def wrong_frames(frames, truth):
    """Runs of JvmChain frames (nothing else between them) that are not a contiguous run of
    @truth: a frame not on the real stack, or one skipped. (JvmChain.run calls into the JDK
    too, e.g. ManagementFactory at its start: a JvmChain frame followed by other code ends a
    run.)"""
    runs, cur = [], []
    for f in frames:
        if f[0].startswith("JvmChain."):
            cur.append(f[0])
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return [r for r in runs if not contiguous_in(r, truth)]


def share(samples, pred):
    total = sum(c for _, c in samples)
    return sum(c for f, c in samples if pred(f)), total


def enough(total, cpu):
    """Samples expected from the thread's CPU time: half, on a loaded machine."""
    assert total >= 0.5 * cpu * FREQ, f"{total} samples for {cpu:.2f} s of CPU"


CHAIN = ["JvmChain.run", "JvmChain.outer", "JvmChain.middle", "JvmChain.leaf"]
MODES = {
    "interpreted": ["-Xint"],
    "c1": ["-XX:TieredStopAtLevel=1", "-XX:CompileCommand=quiet",
           "-XX:CompileCommand=dontinline,JvmChain::*"],
    "c2": ["-XX:-TieredCompilation", "-XX:CompileCommand=quiet",
           "-XX:CompileCommand=dontinline,JvmChain::*"],
    "tiered-inlining": [],
}


def whole_chain(frames):
    """The chain, from the thread's start (start_thread, the JVM's thread entry, the call stub)
    down to leaf, nothing below leaf but the JVM's and the kernel's own code."""
    names = [f[0] for f in frames]
    if "start_thread" not in names[:4] or any(n.startswith("[truncated") for n in names):
        return False
    return [f[0] for f in java_frames(frames)][-4:] == CHAIN and frames[-1][0] != "?"


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("jdk", JDKS, ids=[j[0] for j in JDKS])
def test_chain_named_without_flags(spanprof, pprofcheck, procs, tmp_path, classes, jdk, mode):
    samples, cpu, res = run(spanprof, pprofcheck, procs, tmp_path, jdk, classes, "chain",
                            *MODES[mode])
    good, total = share(samples, whole_chain)
    enough(total, cpu)
    line = f"{jdk[0]} {mode}: whole chain {good}/{total} = {good / total:.1%}"
    print(line)
    if good < 0.9 * total:  # what the walk saw, for the failure below
        other = Counter(";".join(x[0] for x in f[-7:]) for f, c in samples if not whole_chain(f))
        line += f"\njvm: {(res.stats or {}).get('jvm')}\nothers: {other.most_common(6)}"
    # Never a frame that is not on the real stack: the Java frames, whatever is missing, are a
    # contiguous run of the true chain (inlined methods shown as lines of their caller).
    truth = ["JvmChain.lambda$main$0"] + CHAIN
    wrong = [f for f, _ in samples if wrong_frames(f, truth)]
    assert not wrong, f"{line}\nwrong frames: {wrong[:3]}"
    if mode == "tiered-inlining":
        # C2 inlines middle and leaf into outer: the leaf instruction of a compiled method names
        # its own method only where no debug record covers it (never a guessed inlined one),
        # so the chain may end at outer or middle: run -> outer at least.
        part, _ = share(samples, lambda f: [x[0] for x in java_frames(f)][-4:-2] == CHAIN[:2]
                        or [x[0] for x in java_frames(f)][-3:] == CHAIN[:3]
                        or [x[0] for x in java_frames(f)][-4:] == CHAIN)
        assert part / total >= 0.90, line + f"; run -> outer {part}/{total}"
        return
    assert good / total >= 0.90, f"{line}\n{[f for f, _ in samples if not whole_chain(f)][:3]}"
    if mode == "interpreted":
        # The leaf's line, from its bytecode pointer and its line-number table.
        at_line, _ = share(samples, lambda f: whole_chain(f) and java_frames(f)[-1][2] ==
                           LEAF_LINE and java_frames(f)[-1][1] == "JvmChain.java")
        assert at_line / total >= 0.85, line + f"; leaf at line {LEAF_LINE}: {at_line}"


SCENARIOS = {
    # scenario: (the true chain of JvmChain frames, the part every good sample shows, its floor)
    "lambda": (["JvmChain.lambda$main$0", "JvmChain.run", "JvmChain.lambdaOuter",
                "JvmChain.lambda$run$1", "JvmChain.lambdaLeaf"],
               ["JvmChain.run", "JvmChain.lambdaOuter"], 0.90),
    "exception": (["JvmChain.lambda$main$0", "JvmChain.run", "JvmChain.catcher",
                   "JvmChain.thrower", "JvmChain.thrower", "JvmChain.thrower"],
                  ["JvmChain.run", "JvmChain.catcher"], 0.80),
    "jni": (["JvmChain.lambda$main$0", "JvmChain.run", "JvmChain.jniOuter", "JvmChain.nativeCall",
             "JvmChain.callback", "JvmChain.callbackLeaf"],
            ["JvmChain.run", "JvmChain.jniOuter", "JvmChain.nativeCall", "JvmChain.callback"],
            0.90),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("jdk", JDKS, ids=[j[0] for j in JDKS])
def test_lambdas_exceptions_and_jni(spanprof, pprofcheck, procs, tmp_path, classes, jdk,
                                    scenario):
    truth, must, floor = SCENARIOS[scenario]
    samples, cpu, res = run(spanprof, pprofcheck, procs, tmp_path, jdk, classes, scenario)
    total = sum(c for _, c in samples)
    enough(total, cpu)
    wrong = [f for f, _ in samples if wrong_frames(f, truth)]
    good, _ = share(samples, lambda f: contiguous_in(must, [x[0] for x in java_frames(f)])
                    and "start_thread" in [x[0] for x in f[:4]])
    line = f"{jdk[0]} {scenario}: {good}/{total} = {good / total:.1%} show {' -> '.join(must)}"
    print(line)
    assert not wrong, f"{line}\nwrong frames: {wrong[:3]}"
    if scenario == "jni":
        # Java -> C -> Java: the C function between the two Java parts.
        def c_between(f):
            n = [x[0] for x in f]
            return (all(x in n for x in ("JvmChain.nativeCall", "Java_JvmChain_nativeCall",
                                         "JvmChain.callback")) and
                    n.index("JvmChain.nativeCall") < n.index("Java_JvmChain_nativeCall") <
                    n.index("JvmChain.callback"))
        between, _ = share(samples, c_between)
        assert between >= floor * total, f"{line}; C between the Java parts {between}"
    assert good / total >= floor, f"{line}\n{[f for f, _ in samples][:2]}"


@pytest.mark.parametrize("jdk", JDKS, ids=[j[0] for j in JDKS])
def test_unloaded_classes_never_lend_their_names(spanprof, pprofcheck, procs, tmp_path, classes,
                                                 jdk):
    samples, cpu, res = run(spanprof, pprofcheck, procs, tmp_path, jdk, classes, "unload",
                            seconds=6)
    total = sum(c for _, c in samples)
    enough(total, cpu)
    named, pairs, bad = 0, Counter(), []
    for f, c in samples:
        gen = [x[0] for x in f if re.match(r"G\d{3}\.", x[0])]
        for g in gen:
            m = re.match(r"G(\d{3})\.s(\d{3})$", g)
            if not m or m.group(1) != m.group(2):
                bad.append(f)
            pairs[g] += c
        named += c if gen else 0
    line = (f"{jdk[0]}: {named}/{total} samples in a generated class, {len(pairs)} classes, "
            f"{sum(pairs.values())} frames")
    print(line)
    assert not bad, f"{line}\na class named with another's method: {bad[:2]}"
    assert len(pairs) >= 10 and named / total >= 0.5, line


def jfr_chain_share(jdk, path):
    """The share of JFR's execution samples of thread "chain" whose top frames are the chain."""
    jfr = Path(jdk[3]) / "bin/jfr"
    res = subprocess.run([str(jfr), "print", "--json", "--events", "jdk.ExecutionSample",
                          str(path)], capture_output=True, text=True, check=True, timeout=300)
    events = json.loads(res.stdout)["recording"]["events"]
    good = total = 0
    for e in events:
        v = e["values"]
        if (v.get("sampledThread") or {}).get("javaName") != "chain":
            continue
        frames = [f"{f['method']['type']['name']}.{f['method']['name']}"
                  for f in v["stackTrace"]["frames"]]
        total += 1
        good += frames[:4] == CHAIN[::-1]
    return good, total


@pytest.mark.parametrize("jdk", JDKS, ids=[j[0] for j in JDKS])
def test_agrees_with_jfr(spanprof, pprofcheck, procs, tmp_path, classes, jdk):
    """The same run sampled by JFR (the JVM's own profiler): both show the chain as often."""
    rec = tmp_path / "rec.jfr"
    samples, cpu, res = run(spanprof, pprofcheck, procs, tmp_path, jdk, classes, "chain",
                            "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,JvmChain::*",
                            f"-XX:StartFlightRecording=filename={rec},settings=profile")
    good, total = share(samples, whole_chain)
    jgood, jtotal = jfr_chain_share(jdk, rec)
    line = (f"{jdk[0]}: spanprof {good}/{total} = {good / total:.1%}, JFR {jgood}/{jtotal} = "
            f"{jgood / max(jtotal, 1):.1%}")
    print(line)
    assert jtotal >= 20, line
    assert good / total >= 0.90 and abs(good / total - jgood / jtotal) <= 0.05, line
