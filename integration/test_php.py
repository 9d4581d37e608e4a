"""PHP frames of PHP processes (docs/php.md) against the real kernel: Debian's PHP 8.2 CLI
(php8.2-cli), with opcache off (the CLI's default), on, and on with its tracing JIT.

The workload (integration/workloads/phpchain.php) forks one child per mode before the agent
samples; each burns CPU in a chain of known shape: a class method (Shape::area), a recursion six
deep (recurse), a closure ({closure}), a C function calling back into PHP (array_map calling a
closure), an exception thrown and caught each round (catcher -> thrower). Checked on the agent's
pprof output, per child (pprof's pid label):
  - at least 90% of each child's samples show exactly its PHP chain, root to leaf ({main} first),
    with a leaf line of its loop (the lines marked "leaf: MODE"); under the JIT, whose code does
    not keep the running opline where the walk reads it, the leaf line may be unknown (0, counted
    and printed), never another line;
  - no sample shows a PHP function outside the child's own chain (and the functions the engine
    runs for it: the exception's constructor, array_sum);
  - the C function between two PHP levels: array_map's own native frames (zend_call_function)
    sit between the array_map frame and the closure it calls back (in stacks not cut);
  - no native frame of the Zend VM's executor (execute_ex) is left where PHP frames were placed.
The expected counts are sized from each child's CPU time. The agent's OTLP frame kind and the
flame graph's colour are checked by unit tests (test/profile).
"""
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SLOWDOWN, WORKLOADS, record_gated

PHP = shutil.which("php8.2")
SECONDS = 3
FREQ = 499
WORKLOAD = WORKLOADS / "phpchain.php"
MODES = ("methods", "recursion", "closure", "callback", "exception")

pytestmark = pytest.mark.skipif(not PHP, reason="php8.2 not installed (make deps: php8.2-cli)")

# Each mode's PHP chain, root first.
CHAINS = {
    "methods": ["{main}", "phpchain_round", "run_methods", "Shape::area"],
    "recursion": ["{main}", "phpchain_round", "run_recursion"] + ["recurse"] * 6 + ["spin"],
    "closure": ["{main}", "phpchain_round", "run_closure", "{closure}"],
    "callback": ["{main}", "phpchain_round", "run_callback", "array_map", "{closure}"],
    "exception": ["{main}", "phpchain_round", "run_exception", "catcher", "thrower"],
}
# The child's own loop: its CPU time read between rounds.
# And the child's own {main} around its rounds (integration/workloads/phpchain.php): its gate
# read before them, its CPU time reported after them (a slow guest samples both).
COMMON = {"cpu_seconds", "getrusage", "fgets", "fwrite", "json_encode"}
# What else the engine runs inside a chain (constructors, the sum of the callback's results).
EXTRA = {
    "methods": {"Shape::__construct"},
    "exception": {"Exception::__construct", "Exception::getMessage", "strlen"},
    "callback": {"array_sum"},
}

VARIANTS = {
    "opcache-off": [],
    "opcache-on": ["-d", "opcache.enable_cli=1", "-d", "opcache.jit=off"],
    "jit-tracing": ["-d", "opcache.enable_cli=1", "-d", "opcache.jit=tracing",
                    "-d", "opcache.jit_buffer_size=64M"],
}


def leaf_lines():
    """Mode -> the workload's lines marked "leaf: MODE" (1-based)."""
    out = {}
    for i, text in enumerate(WORKLOAD.read_text().splitlines(), 1):
        if "// leaf: " in text:
            out.setdefault(text.split("// leaf: ")[1].strip(), set()).add(i)
    return out


def frames_root_first(sample):
    """(function, file, line, kind) root first: kind "php", "native", "marker"."""
    out = []
    for loc in reversed(sample["stack"]):
        for ln in reversed(loc["lines"] or []):
            name = ln["function"]
            if loc.get("mapping"):
                kind = "native"
            elif name.startswith("["):
                kind = "marker"
            elif (ln.get("file") or "").endswith(".php") or loc.get("address", 0) < 1 << 32:
                kind = "php"
            else:
                kind = "kernel"
            out.append((name, ln.get("file") or "", ln.get("line") or 0, kind))
        if not loc["lines"]:
            out.append(("?", "", 0, "native" if loc.get("mapping") else "kernel"))
    return out


def run(spanprof, pprofcheck, procs, tmp_path, php_args):
    prog = procs.start(PHP, *php_args, WORKLOAD, SECONDS, *MODES, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    children = json.loads(prog.stdout.readline())["children"]
    out = tmp_path / "out"
    try:
        res = record_gated(spanprof, out, prog, "--pid", ",".join(str(p) for p in [prog.pid, *children.values()]),
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


def check_chains(children, cpu, samples, res, variant, unknown_line_ok=False):
    """@unknown_line_ok: a leaf line 0 (unknown: JIT code that did not save its opline) counts
    as exact; a known leaf line must still be one of the loop's."""
    lines = leaf_lines()
    by_pid = {}
    for s in samples:
        pid = (s["num_labels"].get("pid") or [0])[0]
        by_pid.setdefault(pid, []).append(s)
    report = []
    for mode, pid in children.items():
        mine = by_pid.get(pid, [])
        total = sum(s["values"][0] for s in mine)
        expected = cpu[mode] * FREQ
        assert total >= 0.5 * expected, (
            f"{variant} {mode}: {total} samples for {cpu[mode]:.2f} s of CPU at {FREQ} Hz\n"
            f"{res.stderr[-3000:]}")
        exact = no_line = 0
        allowed = set(CHAINS[mode]) | EXTRA.get(mode, set()) | COMMON
        bad = []
        for s in mine:
            fr = frames_root_first(s)
            php = [(f, fl, ln) for f, fl, ln, k in fr if k == "php"]
            names = [f for f, _, _ in php]
            foreign = [f for f in names if f not in allowed]
            if foreign:
                bad.append(f"foreign PHP frames {foreign}: {fr}")
            # The VM's own loop frame never stays beside placed PHP frames.
            if names and any(f.startswith("execute_ex") for f, _, _, k in fr if k == "native"):
                bad.append(f"execute_ex left beside PHP frames: {fr}")
            # (A native stack cut in JIT code lost those frames: its marker says so.)
            whole = not any(k == "marker" for _, _, _, k in fr)
            if mode == "callback" and whole and "array_map" in names and names[-1] == "{closure}":
                i = [f for f, _, _, k in fr].index("array_map")
                j = len(fr) - 1 - [f for f, _, _, k in fr][::-1].index("{closure}")
                between = [f for f, _, _, k in fr[i + 1:j]]
                if "zend_call_function" not in between:
                    bad.append(f"array_map's native frames missing before its callback: {fr}")
            if names == CHAINS[mode] and php[-1][1] == str(WORKLOAD):
                if php[-1][2] in lines[mode]:
                    exact += s["values"][0]
                elif php[-1][2] == 0 and unknown_line_ok:
                    exact += s["values"][0]
                    no_line += s["values"][0]
        share = exact / total if total else 0
        report.append(f"{variant} {mode}: {exact}/{total} exact ({100 * share:.1f}%), "
                      f"{no_line} with the leaf line unknown")
        assert not bad, f"{variant} {mode}: {len(bad)} bad samples, e.g.\n" + "\n".join(bad[:5])
        if share < 0.9:
            common = {}
            for s in mine:
                key = " ; ".join(f"{f}@{ln}" for f, _, ln, k in frames_root_first(s)
                                 if k in ("php", "marker"))
                common[key] = common.get(key, 0) + s["values"][0]
            top = sorted(common.items(), key=lambda kv: -kv[1])[:6]
            raise AssertionError(f"{variant} {mode}: {exact}/{total} samples show the exact "
                                 f"chain {CHAINS[mode]} at a leaf line {sorted(lines[mode])};"
                                 f" most common:\n" + "\n".join(f"{v} {k}" for k, v in top)
                                 + f"\nphp stats {json.dumps(res.stats.get('php'))}"
                                 f"\nunwind stats {json.dumps(res.stats.get('unwind'))}"
                                 f"\nprocesses {json.dumps(res.stats.get('processes'))}"
                                 f"\n{res.stderr[-3000:]}")
    print("\n".join(report))
    return report


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_php_cli_chains(spanprof, pprofcheck, procs, tmp_path, variant):
    children, cpu, samples, res = run(spanprof, pprofcheck, procs, tmp_path, VARIANTS[variant])
    check_chains(children, cpu, samples, res, variant, unknown_line_ok=variant == "jit-tracing")
    php = res.stats["php"]
    assert php["processes"] >= len(MODES), php
    assert php["frames_named"] > 0 and php["samples_placed"] > 0, php
    print(f"{variant}: php stats {json.dumps(php)}")


PHP_FPM = shutil.which("php-fpm8.2") or (Path("/usr/sbin/php-fpm8.2")
                                        if Path("/usr/sbin/php-fpm8.2").exists() else None)
CGI_FCGI = shutil.which("cgi-fcgi")
FPM_SCRIPT = WORKLOADS / "phpfpm.php"
FPM_MODES = ("methods", "callback")
FPM_REQUESTS = 8       # sequential requests, alternating FPM_MODES
FPM_REQUEST_CPU = 0.5  # seconds of a worker's CPU per request
# A request's chain: the pool's script includes phpchain.php (an include runs in the VM's same
# execute_ex call) and serves one mode.
FPM_CHAINS = {m: ["{main}", "phpchain_request"] + CHAINS[m][1:] for m in FPM_MODES}

# The request loop, held at the test's gate (a line on stdin): FPM_REQUESTS FastCGI requests
# through cgi-fcgi (Debian libfcgi-bin), each answer's JSON line printed; then it stops the pool.
FPM_DRIVER = r"""
import os, signal, subprocess, sys
addr, script, n, cpu, master = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
modes = sys.argv[6:]
sys.stdin.readline()
for i in range(n):
    env = dict(os.environ, SCRIPT_FILENAME=script, REQUEST_METHOD="GET",
               QUERY_STRING=f"mode={modes[i % len(modes)]}&seconds={cpu}")
    out = subprocess.run(["cgi-fcgi", "-bind", "-connect", addr], env=env,
                         capture_output=True, text=True, check=True).stdout
    print(out.strip().splitlines()[-1], flush=True)  # the body's one line
os.kill(int(master), signal.SIGQUIT)  # the pool ends gracefully: the agent, its targets gone, too
"""


@pytest.fixture
def fpm_pool(tmp_path):
    """A php-fpm pool of 2 static workers on a Unix socket, started (and its workers forked)
    before the agent; yields (socket path, worker PIDs); stopped after the test."""
    if not PHP_FPM or not CGI_FCGI:
        pytest.skip("php-fpm8.2 or cgi-fcgi not installed (make deps: php8.2-fpm, libfcgi-bin)")
    sock = tmp_path / "fpm.sock"
    conf = tmp_path / "fpm.conf"
    conf.write_text(f"""[global]
error_log = {tmp_path}/fpm.log
daemonize = no
[chain]
user = root
listen = {sock}
pm = static
pm.max_children = 2
clear_env = no
""")
    master = subprocess.Popen([str(PHP_FPM), "-F", "-R", "-y", str(conf)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        workers = []
        for _ in range(200):
            if sock.exists():
                out = subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True,
                                     text=True).stdout.split()
                workers = [int(p) for p in out]
                if len(workers) == 2:
                    break
            time.sleep(0.05)
        assert len(workers) == 2, (workers, (tmp_path / "fpm.log").read_text()
                                   if (tmp_path / "fpm.log").exists() else "")
        yield sock, master.pid, workers
    finally:
        master.terminate()
        try:
            master.wait(timeout=10)
        except subprocess.TimeoutExpired:
            master.kill()
            master.wait()


def test_php_fpm_pool(spanprof, pprofcheck, procs, tmp_path, fpm_pool):
    """Requests served by php-fpm workers started before the agent: each request's samples
    show its chain ({main} of the pool's script, phpchain_request, the mode's chain) with a leaf
    line of its loop in >= 90% of the workers' samples, sized from the CPU time the requests
    report."""
    sock, master, workers = fpm_pool
    driver = procs.start("python3", "-c", FPM_DRIVER, sock, FPM_SCRIPT, FPM_REQUESTS,
                         FPM_REQUEST_CPU, master, *FPM_MODES, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    out = tmp_path / "out"
    res = record_gated(spanprof, out, driver, "--pid",
                       ",".join(str(p) for p in [master, *workers]), "-F", FREQ,
                       timeout=120 * SLOWDOWN)
    answers = [json.loads(line) for line in driver.stdout.read().splitlines() if line.strip()]
    driver.wait(timeout=30)
    assert len(answers) == FPM_REQUESTS, answers
    assert {a["pid"] for a in answers} <= set(workers), (answers, workers)
    cpu = sum(a["cpu"] for a in answers)
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    lines = leaf_lines()
    total = exact = 0
    bad = []
    common = {}
    for s in prof["samples"]:
        pid = (s["num_labels"].get("pid") or [0])[0]
        if pid not in workers or s["values"][0] <= 0:
            continue
        fr = frames_root_first(s)
        php = [(f, fl, ln) for f, fl, ln, k in fr if k == "php"]
        names = [f for f, _, _ in php]
        n = s["values"][0]
        total += n
        allowed = set().union(*FPM_CHAINS.values()) | COMMON | EXTRA["methods"] | \
            EXTRA["callback"]
        if any(f not in allowed for f in names):
            bad.append(fr)
        for m in FPM_MODES:
            if names == FPM_CHAINS[m] and php[-1][2] in lines[m] and php[-1][1] == str(WORKLOAD):
                exact += n
        key = " ; ".join(f"{f}@{ln}" for f, _, ln, k in fr if k in ("php", "marker"))
        common[key] = common.get(key, 0) + n
    top = "\n".join(f"{v} {k}" for k, v in sorted(common.items(), key=lambda kv: -kv[1])[:6])
    print(f"php-fpm: {exact}/{total} worker samples exact for {cpu:.2f} s of request CPU; "
          f"php stats {json.dumps(res.stats['php'])}")
    assert not bad, f"{len(bad)} samples with PHP frames of no request chain, e.g. {bad[:3]}"
    assert total >= 0.5 * cpu * FREQ, (total, cpu, res.stderr[-3000:])
    assert exact >= 0.9 * total, f"{exact}/{total} exact; most common:\n{top}"


def test_php_excimer_agreement(spanprof, pprofcheck, procs, tmp_path):
    """Ground truth: php-excimer (Debian php-excimer) samples the same process as the agent
    (integration/workloads/phpexcimer.php: three chains mixed, two of them with the same leaf
    function, {closure}, under other callers). Excimer's stacks (user functions only: it shows
    no internal function) and the agent's agree on the leaf function's callers: for each leaf
    function both saw at least 20 times, the share of its samples with each chain, compared
    (sum of the smaller shares), weighted by excimer's samples: >= 95%.
    Excimer takes its sample where the VM next checks for an interrupt, not where its timer
    fired, and handles several periods at once (about 4 per entry here): which leaf gets a
    sample wanders from run to run even without the agent (in three runs of 3 s: spin 28, 93,
    257 entries; cpu_seconds, called once per round, 338, 218, 0), so the shares of the leaf
    functions themselves are printed, not held to a bound."""
    if subprocess.run([PHP, "-r", "exit(extension_loaded('excimer') ? 0 : 1);"]).returncode:
        pytest.skip("php-excimer not installed (make deps: php-excimer)")
    truth_path = tmp_path / "excimer.json"
    prog = procs.start(PHP, WORKLOADS / "phpexcimer.php", SECONDS, truth_path, "recursion",
                       "closure", "callback", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True)
    pid = json.loads(prog.stdout.readline())["pid"]
    out = tmp_path / "out"
    res = record_gated(spanprof, out, prog, "--pid", pid, "-F", FREQ, timeout=120 * SLOWDOWN)
    prog.wait(timeout=30)
    truth = json.loads(truth_path.read_text())
    prof = pprofcheck(out / "profile.pb.gz")
    assert not prof["check_error"], prof["check_error"]
    ours = {}
    for s in prof["samples"]:
        if s["values"][0] <= 0:
            continue
        chain = tuple(f for f, fl, _, k in frames_root_first(s) if k == "php" and fl)
        if chain:
            ours[chain] = ours.get(chain, 0) + s["values"][0]
    theirs = {}
    for chain in truth["samples"]:
        theirs[tuple(chain)] = theirs.get(tuple(chain), 0) + 1

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
    weight = sum(sum(tl[f].values()) for f in common)
    callers = sum(sum(tl[f].values()) * overlap(ol[f], tl[f]) for f in common) / weight
    leaves = overlap({f: sum(v.values()) for f, v in ol.items()},
                     {f: sum(v.values()) for f, v in tl.items()})
    top = lambda d: "\n".join(f"  {v} {' ; '.join(k)}" for k, v in
                              sorted(d.items(), key=lambda kv: -kv[1])[:6])
    print(f"excimer: {len(truth['samples'])} samples, spanprof {sum(ours.values())} with PHP "
          f"frames; leaf functions compared {common}: their callers agree {100 * callers:.1f}%;"
          f" the leaf functions' shares agree {100 * leaves:.1f}% (not bound: see above)")
    assert sum(ours.values()) >= 0.5 * truth["cpu"] * FREQ, res.stderr[-3000:]
    assert {"spin", "{closure}"} <= set(common), f"spanprof:\n{top(ours)}\nexcimer:\n{top(theirs)}"
    assert callers >= 0.95, f"spanprof:\n{top(ours)}\nexcimer:\n{top(theirs)}"
