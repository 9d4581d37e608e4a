"""spanprof record against the real kernel: stacks, symbols, outputs, errors."""
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from conftest import (as_nobody, bpf_prog_ids, cpu_seconds, loaded, loaded_prog_ids,
                      read_folded, read_stats, record, wait_sampling)


def is_subsequence(needle, hay):
    it = iter(hay)
    return all(x in it for x in needle)


def test_chain_full_stack_in_folded_and_pprof(spanprof, workload, procs, tmp_path, pprofcheck):
    chain = workload("chain")
    # Runs until the test ends (procs kills it): the agent's start-up takes seconds on a loaded
    # machine and longer in a TCG guest, so a workload of fixed length could end before sampling.
    p = procs.start(chain, "600")
    out = tmp_path / "out"
    agent = procs.start(spanprof, "record", "--pid", p.pid, "--duration", 4, "--frequency", 99,
                        "--output-dir", out, "--stats-json", tmp_path / "stats.json",
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_sampling(agent)
    # The workload's CPU time while sampled: what the expected count is sized from (a slow or
    # loaded machine runs it less than the wall-clock time).
    cpu0 = cpu_seconds(p.pid)
    time.sleep(4)
    cpu = cpu_seconds(p.pid) - cpu0
    _, err = agent.communicate(timeout=600)
    assert agent.returncode == 0, err

    folded = read_folded(out / "profile.folded")
    assert folded, "no samples recorded"
    total = sum(c for _, c in folded)
    # Sampled with a PID filter: every line belongs to the workload.
    assert all(frames[0] == "chain" for frames, _ in folded), folded[:3]
    # Sampling starts before the tables are built: the samples before hold the leaf only, marked
    # (checked by loaded()); a TCG guest builds libc's table for a good part of the run.
    walked, marked = loaded(folded)
    full = sum(c for frames, c in walked if is_subsequence(["main", "a", "b", "c"], frames))
    # Every sample the kernel delivered was recorded; the rate: about 99 per CPU second on a
    # host, 46% of that in a loaded TCG guest (its timer interrupts come late), hence 0.4.
    samples = read_stats(tmp_path / "stats.json")["samples"]
    assert samples["taken"] == samples["recorded"] == total, (samples, err)
    assert total >= 0.4 * cpu * 99 and total >= 20, \
        f"only {total} samples at 99 Hz for {cpu:.2f} s of the workload's CPU time"
    assert full >= 0.90 * (total - marked), \
        f"{full}/{total} samples show main;a;b;c ({marked} before the tables)\n{folded[:5]}"

    prof = pprofcheck(out / "profile.pb.gz")
    assert prof["check_error"] == ""
    assert prof["sample_types"] == ["samples/count", "cpu/nanoseconds"]
    assert prof["period_type"] == "cpu/nanoseconds"
    assert prof["period"] == 1_000_000_000 // 99
    pprof_total = sum(s["values"][0] for s in prof["samples"])
    assert pprof_total == total, "pprof and folded disagree on the sample count"
    assert sum(s["values"][1] for s in prof["samples"]) == total * prof["period"]
    for s in prof["samples"]:
        assert s["num_labels"]["pid"] == [p.pid]
        assert s["num_labels"]["tid"] == [p.pid]
        assert s["labels"]["comm"] == ["chain"]
    # Frames of the executable: named, with file and line from DWARF, and a build ID.
    c_frames = [loc for s in prof["samples"] for loc in s["stack"]
                if loc["lines"] and loc["lines"][-1]["function"] == "c"]
    assert c_frames, "function c never seen in pprof"
    loc = c_frames[0]
    assert loc["lines"][-1]["file"].endswith("chain.c")
    assert loc["lines"][-1]["line"] > 0
    assert loc["mapping"].endswith("/chain")
    assert len(loc["build_id"]) == 40
    # The pprof stack of a full sample reads leaf to root.
    names = [l["lines"][-1]["function"] for l in prof["samples"][0]["stack"] if l["lines"]]
    assert is_subsequence(["c", "b", "a", "main"], names) or len(prof["samples"]) > 1


def test_whole_machine_sees_kernel_frames(spanprof, workload, procs, tmp_path):
    sc = workload("syscalls")
    # Runs until the test ends (procs kills it): the agent's start-up takes seconds on a loaded
    # machine and longer in a TCG guest, so a workload of fixed length could end before sampling.
    procs.start(sc, "600")
    out = tmp_path / "out"
    res = record(spanprof, out, "--duration", 3, "--frequency", 99)
    folded = read_folded(out / "profile.folded")
    kernel = [(f, c) for f, c in folded if any(x.endswith("_[k]") for x in f)]
    assert kernel, "no kernel frames in a whole-machine run"
    ours = [(f, c) for f, c in folded if f[0] == "syscalls"]
    assert ours, "the syscall workload was not sampled"
    # Its kernel time is under read/write; kernel frames are leafward of user frames. Until the
    # agent has its tables (a whole host's first pass takes seconds on a loaded machine) a
    # sample holds the leaf only, under "[truncated: not loaded yet]"; once walked with CFI it
    # shows the real chain, copy_zeroes between main and the read.
    assert any(any("read" in x for x in f) and f[-1].endswith("_[k]") for f, _ in ours), ours[:5]
    for f, _ in ours:
        if "main" in f and any("read" in x for x in f):
            assert "copy_zeroes" in f[f.index("main"):], f
    for f, _ in ours:
        kidx = [i for i, x in enumerate(f) if x.endswith("_[k]")]
        if kidx:
            assert all(not x.endswith("_[k]") for x in f[1:kidx[0]])
    assert (out / "flamegraph.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    assert "samples" in res.stderr


def test_short_lived_processes_get_named_frames(spanprof, workload, procs, tmp_path):
    short = workload("shortlived")
    out = tmp_path / "out"
    rec = procs.start(spanprof, "record", "--output-dir", out, "--duration", 6, "--frequency", 49,
                      stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # let the sampler attach
    for _ in range(8):
        subprocess.run([str(short), "0.2"], check=True)
        time.sleep(0.1)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    folded = read_folded(out / "profile.folded")
    mine = [(f, c) for f, c in folded if f[0] == "shortlived"]
    assert mine, "no sample of the short-lived processes"
    named = sum(c for f, c in mine if "shortlived_spin" in f)
    total = sum(c for _, c in mine)
    assert named / total >= 0.8, f"{named}/{total} short-lived samples named\n{mine}"


def shortlived_shares(folded):
    """Of the samples of the 'shortlived' processes that have user frames: (total, with every user
    frame in a known mapping, with a frame of the workload's own binary)."""
    total = mapped = own = 0
    for f, c in folded:
        if f[0] != "shortlived":
            continue
        user = [x for x in f[1:] if not x.endswith("_[k]")]
        if not user:
            continue  # exec, exit, page faults: kernel frames only
        total += c
        if not any(x.startswith("[unknown]") for x in user):
            mapped += c
        if "shortlived_spin" in user or "main" in user:
            own += c
    return total, mapped, own


def test_very_short_lived_processes_named_with_agent_behind(spanprof, workload, procs, tmp_path):
    """Hundreds of processes of ~5 ms each while the agent, sampling at 999 Hz, shares CPU 0 with
    them at nice 19: nearly all are gone before their first sample reaches it (without file
    identities none of their samples is named), so their frames are named from the file
    identities their samples carry (bpf/fileid.bpf.h), not from /proc/PID/maps."""
    short = workload("shortlived")
    out = tmp_path / "out"
    rec = procs.start("taskset", "-c", "0", "nice", "-n", "19", spanprof, "record",
                      "--output-dir", out, "--frequency", 999, "--verbose",
                      "--stats-json", tmp_path / "stats.json", stderr=subprocess.PIPE, text=True)
    wait_sampling(rec)  # --verbose: the start-up timeline comes first
    # Two loops of 200 processes each, 4 ms of CPU time apiece (plus loader start-up).
    loop = f"i=0; while [ $i -lt 200 ]; do {short} 0.004 cpu; i=$((i+1)); done"
    loops = [procs.start("taskset", "-c", "0", "sh", "-c", loop) for _ in range(2)]
    for p in loops:
        assert p.wait(timeout=300) == 0
    time.sleep(1)
    rec.send_signal(signal.SIGINT)
    _, err = rec.communicate(timeout=120)
    assert rec.returncode == 0, err
    total, mapped, own = shortlived_shares(read_folded(out / "profile.folded"))
    summary = "\n".join(x for x in err.splitlines() if "frames" in x or "identities" in x)
    assert total >= 100, f"only {total} samples of 400 short-lived processes\n{summary}"
    assert mapped / total >= 0.8, f"{mapped}/{total} with every user frame named\n{summary}"
    # Samples taken before the agent has a process's tables hold the leaf only (nothing is
    # guessed): those in libc's clock_gettime or the loader show no function of the workload.
    assert own / total >= 0.7, f"{own}/{total} in the workload's own functions\n{summary}"
    assert read_stats(tmp_path / "stats.json")["file_identities"]["frames_named"] > 0, summary


def test_sigint_stops_and_writes(spanprof, workload, procs, tmp_path):
    chain = workload("chain")
    p = procs.start(chain, "10")
    out = tmp_path / "out"
    rec = procs.start(spanprof, "record", "--pid", p.pid, "--output-dir", out,
                      stderr=subprocess.PIPE, text=True)
    first = rec.stderr.readline()  # "sampling ...": the programs are attached by now
    assert "sampling" in first, first
    ids = bpf_prog_ids(rec.pid)
    assert ids, "the agent holds no BPF program while sampling"
    time.sleep(2.5)
    rec.send_signal(signal.SIGINT)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    for name in ("profile.pb.gz", "profile.folded", "flamegraph.svg"):
        assert (out / name).stat().st_size > 0, name
    assert not list(out.glob("*.tmp*")), "temporary files left behind"
    assert not ids & loaded_prog_ids(), "BPF programs left loaded after exit"


def test_nonexistent_pid_fails_cleanly(spanprof, tmp_path):
    out = tmp_path / "out"
    res = record(spanprof, out, "--pid", 999999999 % 4194304 + 4194304, "--duration", 1,
                 check=False)
    assert res.returncode != 0
    assert "no process with PID" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not out.exists(), "output directory created for a failed run"


def test_unwritable_output_dir_fails_cleanly(spanprof, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = record(spanprof, blocker / "out", "--duration", 1, check=False)
    assert res.returncode != 0
    assert "output directory" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_unprivileged_user_is_refused(spanprof, tmp_path):
    out = tmp_path / "out"
    os.chmod(tmp_path, 0o777)
    res = subprocess.run(as_nobody(spanprof, "record", "--duration", "1", "--output-dir", out),
                         capture_output=True, text=True)
    assert res.returncode != 0
    assert "CAP_BPF" in res.stderr and "root" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not out.exists()


def test_bad_arguments_are_usage_errors(spanprof, tmp_path):
    for args in (["--frequency", "0"], ["--frequency", "abc"], ["--duration", "-1"],
                 ["--pid", "x"], ["extra"]):
        res = subprocess.run([str(spanprof), "record", *args], capture_output=True, text=True)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.strip(), args
    res = subprocess.run([str(spanprof), "record", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "--frequency" in res.stdout and "--pid" in res.stdout


def test_profile_type_listed_twice_is_refused(spanprof, tmp_path):
    for types, dup in (("cpu,cpu", "cpu"), ("cpu,alloc,offcpu,alloc", "alloc")):
        res = subprocess.run([str(spanprof), "record", "--profile", types, "--duration", "1",
                              "--output-dir", str(tmp_path / "out")],
                             capture_output=True, text=True)
        assert res.returncode == 2, (types, res.stderr)
        assert f"--profile lists '{dup}' twice" in res.stderr, res.stderr
        assert not (tmp_path / "out").exists()
    cfg = tmp_path / "twice.yaml"
    cfg.write_text("profile: offcpu,offcpu\n")
    res = subprocess.run([str(spanprof), "config", "check", str(cfg)], capture_output=True,
                         text=True)
    assert res.returncode == 2
    assert f"{cfg}:1:10: key 'profile': lists 'offcpu' twice" in res.stderr, res.stderr


def assert_chain_named(spanprof, pid, out):
    """Records the chain workload running as @pid: 90% of its samples show main;a;b;c."""
    record(spanprof, out, "--pid", pid, "--duration", 3, "--frequency", 99)
    folded = read_folded(out / "profile.folded")
    total = sum(c for _, c in folded)
    named = sum(c for f, c in folded if is_subsequence(["main", "a", "b", "c"], f))
    assert total and named / total >= 0.9, folded[:5]


def test_deleted_executable_still_named(spanprof, workload, procs, tmp_path):
    exe = tmp_path / "vanishing"
    exe.write_bytes(workload("chain").read_bytes())
    exe.chmod(0o755)
    p = procs.start(exe, "60")  # killed at the end; outlasts a slow start on a loaded machine
    time.sleep(0.3)
    exe.unlink()  # the running image now exists only through /proc/PID/map_files
    assert_chain_named(spanprof, p.pid, tmp_path / "out")


def test_binary_inside_chroot_is_named(spanprof, workload, procs, tmp_path):
    """The executable's path exists only in the process's own root (as in a container)."""
    root = tmp_path / "root"
    (root / "opt").mkdir(parents=True)
    static = workload("chain", ("-static",))
    (root / "opt" / "chain-in-root").write_bytes(static.read_bytes())
    (root / "opt" / "chain-in-root").chmod(0o755)
    p = procs.start("chroot", root, "/opt/chain-in-root", "60")  # killed at the end
    time.sleep(0.3)
    assert_chain_named(spanprof, p.pid, tmp_path / "out")


def test_signal_during_start_up_is_clean(spanprof, tmp_path):
    for delay in (0.05, 0.15, 0.3):
        out = tmp_path / f"out-{delay}"
        p = subprocess.Popen([str(spanprof), "record", "--duration", "5", "--output-dir",
                              str(out)], stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        if p.returncode == 0:  # it was already sampling: a normal, short run
            assert (out / "profile.folded").exists(), err
        elif p.returncode == -signal.SIGINT and not err:
            # Still in the dynamic loader (a loaded machine): none of spanprof's code ran.
            assert not out.exists()
        else:
            assert p.returncode == 130, (p.returncode, err)
            assert "interrupted" in err
            assert not out.exists(), "a run interrupted at start-up left its directory"


def test_output_dir_parents_are_created(spanprof, tmp_path):
    out = tmp_path / "a" / "b" / "c"
    record(spanprof, out, "--duration", 1)
    assert (out / "profile.pb.gz").exists()


def test_no_repeated_frames_without_recursion(spanprof, workload, procs, tmp_path):
    """Debug info that inlines a function into itself (glibc's __libc_read with libc6-dbg
    installed) must not show up as the same frame twice in a row."""
    p = procs.start(workload("syscalls"), "10")  # outlasts a slow start on a loaded machine
    out = tmp_path / "out"
    record(spanprof, out, "--pid", p.pid, "--duration", 3, "--frequency", 99)
    folded = read_folded(out / "profile.folded")
    assert folded
    for frames, _ in folded:
        for a, b in zip(frames, frames[1:]):
            assert a != b, f"repeated frame {a} in {frames}"


def _cap_mask(pid, field):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def test_capabilities_dropped_after_loading(spanprof, workload, procs, tmp_path):
    """Once loaded, the agent keeps only what it uses: no CAP_PERFMON, CAP_SYS_MODULE, ..."""
    chain = workload("chain")
    p = procs.start(chain, "10")
    rec = procs.start(spanprof, "record", "--pid", p.pid, "--output-dir", tmp_path / "out",
                      stderr=subprocess.PIPE, text=True)
    first = rec.stderr.readline()
    assert "sampling" in first, first
    time.sleep(0.5)
    keep = {1, 2, 19, 21, 34, 39, 40}  # dac_override, dac_read_search, sys_ptrace, sys_admin,
    #                                     syslog (uprobe conflicts), bpf, checkpoint_restore
    for field in ("CapPrm", "CapEff", "CapBnd"):
        mask = _cap_mask(rec.pid, field)
        extra = [b for b in range(64) if mask >> b & 1 and b not in keep]
        assert not extra, f"{field} still holds capabilities {extra}"
    assert _cap_mask(rec.pid, "CapEff") >> 39 & 1, "CAP_BPF dropped: unwind tables need it"
    rec.send_signal(signal.SIGINT)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    assert (tmp_path / "out" / "profile.pb.gz").exists()


def test_missing_capability_is_named(spanprof, tmp_path):
    res = subprocess.run(["setpriv", "--inh-caps=-all", "--bounding-set=-bpf,-perfmon,-sys_admin",
                          str(spanprof), "record", "-d", "1", "-o", str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1, res.stderr
    assert "CAP_BPF and CAP_PERFMON" in res.stderr, res.stderr


def test_stops_when_every_pid_has_exited(spanprof, workload, procs, tmp_path):
    """Like 'perf record -p': no --duration, the targets exit, the run ends and writes."""
    chain = workload("chain")
    a, b = procs.start(chain, "120"), procs.start(chain, "120")
    out = tmp_path / "out"
    rec = procs.start(spanprof, "record", "--pid", f"{a.pid},{b.pid}", "--frequency", 99,
                      "--output-dir", out, "--stats-json", tmp_path / "stats.json",
                      stderr=subprocess.PIPE, text=True)
    first = rec.stderr.readline()
    assert "sampling" in first and "until they exit" in first, first
    time.sleep(1.5)
    a.kill()
    a.wait()  # reaped: its PID may even be reused, the agent holds the process itself
    time.sleep(1)
    assert rec.poll() is None, "stopped while one target still runs"
    b.kill()  # left a zombie: exited too
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    assert "spanprof: all target processes exited; stopping" in err, err
    recorded = read_stats(tmp_path / "stats.json")["samples"]["recorded"]
    assert recorded > 0, err
    folded = read_folded(out / "profile.folded")
    assert sum(c for _, c in folded) == recorded, "the summary and the file disagree"
    assert (out / "profile.pb.gz").stat().st_size > 0


def test_other_targets_keep_the_run_going_after_the_pids_exit(spanprof, workload, procs,
                                                             tmp_path):
    """--exe can match processes started later: the exit of the --pid ones is no reason to stop."""
    chain = workload("chain")
    p = procs.start(chain, "1")
    out = tmp_path / "out"
    res = record(spanprof, out, "--pid", p.pid, "--exe", chain, "--duration", 4, timeout=90)
    assert "all target processes exited" not in res.stderr, res.stderr
    assert res.stats["run"]["duration_s"] >= 3.9, res.stderr


def test_short_duration_is_honoured_on_the_whole_host(spanprof, workload, procs, tmp_path):
    """-d 0.5 over every process: the first pass (maps, CFI tables of every process seen) must
    not stretch the sampling past the deadline (it used to last 1-3 s)."""
    chain = workload("chain")
    for _ in range(6):
        procs.start(chain, "60")
    ncpus, hz = os.cpu_count(), 99
    for i in range(2):
        out = tmp_path / f"out{i}"
        res = record(spanprof, out, "--duration", 0.5, "--frequency", hz)
        samples, secs = res.stats["samples"]["recorded"], res.stats["run"]["duration_s"]
        assert secs <= 0.8, res.stderr
        # The samples themselves tell how long the CPUs were sampled: at most 0.8 s' worth
        # (the busy chains keep both CPUs sampled), and none lost on the way.
        assert 0 < samples <= ncpus * hz * 0.8, res.stderr
        folded = read_folded(out / "profile.folded")
        assert sum(c for _, c in folded) == samples
        assert res.stats["samples"]["taken"] == samples, res.stats["samples"]
        assert res.stats["samples"]["lost_out_of_memory"] == 0, res.stats["samples"]


def test_an_unwritable_output_does_not_lose_the_others(spanprof, tmp_path):
    """profile.pb.gz can't be written (a directory stands there): the folded stacks and the flame
    graph still are, the failure is named and the exit status says so."""
    out = tmp_path / "out"
    (out / "profile.pb.gz").mkdir(parents=True)
    res = record(spanprof, out, "--duration", 1, check=False)
    assert res.returncode == 1, res.stderr
    assert f"writing {out}/profile.pb.gz failed: Is a directory" in res.stderr, res.stderr
    assert (out / "profile.folded").is_file() and (out / "flamegraph.svg").is_file()
    assert f"wrote {out}/profile.folded, {out}/flamegraph.svg" in res.stderr, res.stderr


def test_numbers_are_decimal_and_limits_named(spanprof, tmp_path):
    """Every numeric option reads decimal only (no hex, blank, inf) and names its range; a list
    of PIDs has no empty item."""
    for args, msg in (
            (["-d", "0x10"], "--duration wants a number of seconds above 0 and up to 10000000"),
            (["-d", "inf"], "--duration wants"),
            (["-d", "1e9"], "up to 10000000, not '1e9'"),
            (["-F", "0x10"], "--frequency wants a whole number from 1 to"),
            (["-F", " 99"], "--frequency wants"),
            (["--stats-interval", "1e9"], "--stats-interval wants a number of seconds from 0 to"),
            (["--symbol-cache-mb", "99999999999999"], "from 4 to 1048576"),
            (["--lock-min-wait", "0x1ms"], "--lock-min-wait wants a time with a unit"),
            (["--profile", "cpu, cpu"], "--profile lists 'cpu' twice"),
            (["--pid", "1,,"], "--pid wants process ids separated by commas, not '1,,'"),
            (["--pid", ",1"], "--pid wants process ids separated by commas"),
            (["--pid", ""], "--pid wants process ids separated by commas")):
        res = record(spanprof, tmp_path / "out", *args, check=False)
        assert res.returncode == 2, (args, res.stderr)
        assert msg in res.stderr, (args, res.stderr)
    res = record(spanprof, tmp_path / "out", "-d", "0.5e0", "--lock-min-wait", "1.5e1us",
                 "--profile", "cpu, lock")  # blanks around the commas are fine
    assert " in 0.5 s " in res.stderr, res.stderr


def test_option_of_a_type_not_selected_is_warned(spanprof, tmp_path):
    """--lock-min-wait without --profile lock would do nothing: said so, the run goes on."""
    res = record(spanprof, tmp_path / "out", "--lock-min-wait", "0", "-d", "0.3")
    assert "warning: --lock-min-wait has no effect without --profile lock" in res.stderr, \
        res.stderr
    res = record(spanprof, tmp_path / "out", "--lock-min-wait", "0", "--profile", "cpu,lock",
                 "-d", "0.3")
    assert "no effect" not in res.stderr, res.stderr


def test_end_of_run_is_short_and_stats_json_complete(spanprof, workload, procs, tmp_path):
    """The end of a clean run (exporter/record/report.h): what was sampled and where it went, no
    problem line; --verbose adds the full accounting; --stats-json holds every counter (the
    schema of docs/stats-json.md), written whole, nothing left beside it."""
    p = procs.start(workload("chain"), "60")
    out = tmp_path / "out"
    res = record(spanprof, out, "--pid", p.pid, "--duration", 2, "--frequency", 99, "--quiet")
    lines = res.stderr.strip().splitlines()
    assert re.match(r"spanprof: \d+ samples from 1 processes in 2\.\d s \(cpu at 99 Hz on \d+ "
                    r"CPUs?\)$", lines[0]), res.stderr
    assert lines[1] == f"spanprof: wrote {out}/profile.pb.gz, {out}/profile.folded, " \
                       f"{out}/flamegraph.svg, {out}/profile.otlp.pb.gz", res.stderr
    assert len(lines) <= 4 and "accounting:" not in res.stderr, res.stderr
    st = res.stats
    assert st["samples"]["recorded"] > 0 and st["run"]["frequency_hz"] == 99, st["run"]
    assert st["processes"]["seen"] == 1 and st["run"]["targeted"], st["processes"]
    assert [p["message"] for p in st["problems"]] == \
        [l.removeprefix("spanprof: ") for l in lines[2:]], (st["problems"], lines)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["out", "out.stats.json"]

    res = record(spanprof, out, "--pid", p.pid, "--duration", 1, "--quiet", "--verbose")
    assert re.search(r"^spanprof: accounting: (\d+) samples taken by BPF = \1 recorded \+ 0 "
                     r"dropped", res.stderr, re.M), res.stderr
    assert re.search(r"^spanprof: user stacks: ", res.stderr, re.M), res.stderr
    # A --stats-json path that cannot take a file is refused before sampling starts.
    bad = record(spanprof, out, "--duration", 1, "--stats-json", tmp_path / "no" / "s.json",
                 check=False)
    assert bad.returncode == 1 and "--stats-json" in bad.stderr, bad.stderr
    assert "sampling" not in bad.stderr, bad.stderr
