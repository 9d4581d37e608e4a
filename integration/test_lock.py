"""The lock profile (--profile lock): contended lock waits from the futex syscall tracepoints.

The workload (workloads/lockfight.c) makes two threads wait on a lock in a known function and
measures every wait itself (CLOCK_MONOTONIC around the lock call); spanprof's lock profile must
attribute the same total to stacks through that function, with the lock's address, the waiter's
frames down to its thread start routine, nothing under --lock-min-wait, and no condition
variable wait. Span links: each acquisition of the spans mode happens inside a span.
"""
import re
import signal
import subprocess
import threading
import time

import pytest

from conftest import ROOT, bpf_prog_ids, compile_c, loaded_prog_ids, read_stats, stats_path

WRITER = ROOT / "writer"
MIN_WAIT_MS = 5
HOLD_MS = 30
ROUNDS = 10


@pytest.fixture(scope="module")
def lockfight(tmp_path_factory):
    out = tmp_path_factory.mktemp("lock") / "lockfight"
    return compile_c(ROOT / "integration" / "workloads" / "lockfight.c", out,
                     ["-pthread", f"-I{WRITER}", str(WRITER / "spanprof_ctx.c"),
                      "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1"])


TABLES_LINE = "spanprof: unwind tables of the targeted processes"


def run_profiled(spanprof, lockfight, mode, tmp_path, *extra):
    """Runs lockfight MODE under 'spanprof record --profile lock -p PID'; the threads start once
    the agent samples. Returns (workload stdout, agent stderr, output directory). Checks that no
    BPF program of the agent outlives it."""
    trigger = tmp_path / "go"
    out = tmp_path / "out"
    log = tmp_path / f"{mode}.log"
    with open(log, "w") as f:
        w = subprocess.Popen([str(lockfight), mode, str(trigger), str(ROUNDS), str(HOLD_MS)],
                             stdout=f)
    agent = None
    try:
        deadline = time.time() + 10
        while "ready" not in log.read_text() and time.time() < deadline:
            time.sleep(0.02)
        agent = subprocess.Popen(
            [str(spanprof), "record", "--profile", "lock", "--lock-min-wait", f"{MIN_WAIT_MS}ms",
             "-p", str(w.pid), "-d", "120", "--output-dir", str(out), "--stats-json",
             str(stats_path(out)), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines, ids = [], set()
        started = threading.Event()

        def drain():
            for line in agent.stderr:
                lines.append(line)
                if "sampling" in line and not ids:
                    ids.update(bpf_prog_ids(agent.pid))
                # -p: the target's unwind tables are built while sampling runs; the workload
                # goes once they are in (its stacks are then whole from the first sample).
                if line.startswith(TABLES_LINE) and not started.is_set():
                    started.set()
        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        assert started.wait(120), "".join(lines)
        trigger.touch()
        assert w.wait(timeout=120) == 0
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=120) == 0, "".join(lines)
        reader.join(timeout=10)
    finally:
        for p in (w, agent):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    err = "".join(lines)
    assert len(ids) >= 2, f"the agent's BPF programs were not seen while it ran: {ids}"
    # Freed after an RCU grace period or from a work queue: a short wait (a hang guard).
    deadline = time.monotonic() + 10
    while (left := ids & loaded_prog_ids()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"BPF programs {left} still loaded after the agent exited"
    return log.read_text(), err, out


def matches_truth(reported, waits, lock):
    """Whether @reported ns of lock waits agree with the program's own measure of @lock's lock
    calls (@waits from parse_log()): at most 10% above it, and at most 10% below it less the
    time the program's threads spent in those calls waiting for a CPU (schedstat's run delay:
    on a loaded machine a thread is preempted around the futex call as well as in it, and only
    the futex wait is a lock wait)."""
    truth = sum(ns for name, _, ns, _ in waits if name == lock)
    delay = sum(d for name, _, _, d in waits if name == lock)
    print(f"{lock}: program {truth / 1e6:.1f} ms ({delay / 1e6:.1f} ms of it waiting for a CPU), "
          f"spanprof {reported / 1e6:.1f} ms")
    return 0.90 * truth - delay <= reported <= 1.10 * truth


def parse_log(text):
    """(addresses by name, [(lock, tid, ns, ns of it waiting for a CPU)],
    spans {(trace, span): tid})."""
    addrs, waits, spans = {}, [], {}
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "addr":
            addrs = {f[i]: int(f[i + 1], 16) for i in range(1, len(f) - 1, 2)}
        elif f and f[0] == "wait":
            waits.append((f[1], int(f[2]), int(f[3]), int(f[4])))
        elif f and f[0] == "span":
            spans[(f[2], f[3])] = int(f[1])
    return addrs, waits, spans


def functions(sample):
    """Function names, leaf first."""
    return [ln["function"] for loc in sample["stack"] or [] for ln in loc["lines"] or []]


def lock_samples(pprofcheck, out):
    prof = pprofcheck(out / "lock.pb.gz")
    assert prof["sample_types"] == ["contentions/count", "delay/nanoseconds"], prof["sample_types"]
    return prof["samples"] or []


def in_function(samples, fn):
    return [s for s in samples if fn in functions(s)]


def delay(samples):
    return sum(s["values"][1] for s in samples)


def address(sample):
    return (sample.get("num_labels") or {}).get("lock_address", [None])[0]


def assert_root_to_leaf(sample, *expected):
    """The expected functions appear in this order from the root towards the leaf."""
    fns = list(reversed(functions(sample)))
    pos = 0
    for fn in expected:
        found = [i for i in range(pos, len(fns)) if re.fullmatch(fn, fns[i])]
        assert found, f"{fn} missing after position {pos} in {fns}"
        pos = found[0] + 1


def test_mutex_contention(spanprof, lockfight, pprofcheck, tmp_path):
    text, err, out = run_profiled(spanprof, lockfight, "mutex", tmp_path)
    addrs, waits, _ = parse_log(text)
    samples = lock_samples(pprofcheck, out)
    min_ns = MIN_WAIT_MS * 1000000

    hot_truth = sum(ns for lock, _, ns, _ in waits if lock == "hot")
    hot_long = [ns for lock, _, ns, _ in waits if lock == "hot" and ns >= min_ns]
    hot = in_function(samples, "hot_lock_site")
    print(f"hot: program {hot_truth / 1e6:.1f} ms in {len(hot_long)} waits >= min; "
          f"spanprof {delay(hot) / 1e6:.1f} ms in {sum(s['values'][0] for s in hot)} samples")
    # The threads took turns: about one contended wait per acquisition.
    assert len(hot_long) >= ROUNDS, waits
    assert matches_truth(delay(hot), waits, "hot"), (delay(hot), hot_truth, err)
    contentions = sum(s["values"][0] for s in hot)
    assert len(hot_long) * 0.8 <= contentions <= 3 * len(hot_long), (contentions, len(hot_long))
    for s in hot:
        assert address(s) == addrs["hot"], (hex(address(s) or 0), hex(addrs["hot"]))
        assert_root_to_leaf(s, "start_thread", "fighter", "hot_lock_site",
                            r"_*pthread_mutex_lock", r"__lll_lock_wait")

    # Every sample is at least --lock-min-wait; the cool lock's short waits are not reported.
    assert all(s["values"][1] >= min_ns for s in samples), [s["values"] for s in samples]
    cool_truth_long = sum(ns for lock, _, ns, _ in waits if lock == "cool" and ns >= min_ns)
    cool_contended = [ns for lock, _, ns, _ in waits if lock == "cool" and 20000 <= ns < min_ns]
    cool = in_function(samples, "cool_lock_site")
    print(f"cool: {len(cool_contended)} contended waits under the minimum, "
          f"{cool_truth_long / 1e6:.1f} ms above it; spanprof {delay(cool) / 1e6:.1f} ms")
    assert cool_contended, "the cool lock was never contended: the check below says nothing"
    assert delay(cool) <= 1.1 * cool_truth_long + 1000000, (delay(cool), cool_truth_long)
    lock = read_stats(stats_path(out))["events"]["lock"]
    assert lock["waits"] > 0 and lock["below_min_wait"] > 0, (lock, err)
    assert all(address(s) == addrs["cool"] for s in cool)


def test_rwlock_contention(spanprof, lockfight, pprofcheck, tmp_path):
    text, err, out = run_profiled(spanprof, lockfight, "rwlock", tmp_path)
    addrs, waits, _ = parse_log(text)
    samples = lock_samples(pprofcheck, out)
    truth = sum(ns for lock, _, ns, _ in waits if lock == "rw")
    rw = [s for s in samples if {"rw_read_site", "rw_write_site"} & set(functions(s))]
    assert matches_truth(delay(rw), waits, "rw"), (delay(rw), truth, err)
    assert in_function(rw, "rw_read_site") and in_function(rw, "rw_write_site")
    for s in rw:
        # The futex word is inside the pthread_rwlock_t (56 bytes on x86-64).
        assert addrs["rw"] <= address(s) < addrs["rw"] + 56, (hex(address(s)), hex(addrs["rw"]))
    for s in in_function(rw, "rw_read_site"):
        assert_root_to_leaf(s, "start_thread", "rw_reader", "rw_read_site",
                            r"_*pthread_rwlock_rdlock")


def test_condition_variable_wait_is_not_contention(spanprof, lockfight, pprofcheck, tmp_path):
    text, err, out = run_profiled(spanprof, lockfight, "cond", tmp_path)
    _, waits, _ = parse_log(text)
    truth = sum(ns for lock, _, ns, _ in waits if lock == "cond")
    assert truth >= ROUNDS * HOLD_MS * 1000000 * 0.9, waits
    samples = lock_samples(pprofcheck, out)
    cond = in_function(samples, "cond_wait_site")
    control = [s for s in samples if s not in cond]
    print(f"cond: waited {truth / 1e6:.1f} ms, reported {delay(cond) / 1e6:.1f} ms; "
          f"control mutex wait {delay(control) / 1e6:.1f} ms")
    # The profile did run: the closing contention on "hot" is there.
    assert delay(control) >= HOLD_MS * 1000000 // 2, (control, err)
    # Re-taking the mutex on wake-up may contend for an instant; the waits themselves never count.
    assert delay(cond) <= 0.10 * truth, (delay(cond), truth)
    # The condition variable's own futex wait (FUTEX_WAIT_BITSET, value 0) is never a sample.
    assert not [s for s in cond if "__futex_abstimed_wait_common" in functions(s)], \
        [functions(s) for s in cond]


def test_lock_samples_carry_their_span(spanprof, lockfight, pprofcheck, tmp_path):
    text, err, out = run_profiled(spanprof, lockfight, "spans", tmp_path)
    _, waits, spans = parse_log(text)
    assert len(spans) == 2 * ROUNDS, text
    samples = in_function(lock_samples(pprofcheck, out), "span_lock_site")
    linked = wrong = 0
    for s in samples:
        lab = s.get("labels") or {}
        tid = (s.get("num_labels") or {}).get("tid", [None])[0]
        key = (lab.get("trace_id", [None])[0], lab.get("span_id", [None])[0])
        if spans.get(key) == tid:
            linked += s["values"][1]
        else:
            wrong += s["values"][1]
    print(f"spans: {linked / 1e6:.1f} ms linked, {wrong / 1e6:.1f} ms not; {len(samples)} samples")
    truth = sum(ns for lock, _, ns, _ in waits if lock == "span")
    assert samples and wrong == 0, [(s.get("labels"), s.get("num_labels")) for s in samples]
    assert matches_truth(linked, waits, "span"), (linked, truth)


def test_lock_min_wait_rejects_garbage(spanprof, tmp_path):
    res = subprocess.run([str(spanprof), "record", "--profile", "lock", "--lock-min-wait", "soon",
                          "-d", "1", "-o", str(tmp_path / "o")], capture_output=True, text=True)
    assert res.returncode == 2 and "--lock-min-wait" in res.stderr, res.stderr
