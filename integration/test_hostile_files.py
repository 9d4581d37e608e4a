"""Files a profiled program controls can't stall the agent (issue: containers and hostile files).
A program's debug link may name a FIFO (whose open(2) blocks until a writer comes) or a device
(whose open has effects): the agent refuses both without opening them, counts the refusal
(--stats-json symbols.not_regular), ends the run on time and names the program's frames from
what the file itself holds. The same for the files a JIT writes about its code: a perf map
/tmp/perf-PID.map or a jitdump swapped for a FIFO is refused unopened (--stats-json
jit.files_refused.not_regular) and the run ends on time. A file on a FUSE file system whose
server stops answering reads is given up after the agent's deadline (--stats-json
slow_files.stalled): the run ends on time, SIGTERM ends it with its outputs written. Root (BPF).
"""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import (WORKLOADS, compile_c, read_folded, record, record_gated, stats_path,
                      wait_sampling, with_stats)

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


def wait_for(pred, what, seconds=30):
    for _ in range(int(seconds * 20)):
        if pred():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def swap_for_fifo(path):
    """Replaces the file at @path by a FIFO (no writer: an open(2) for reading blocks)."""
    path.unlink()
    os.mkfifo(path, 0o644)


def gated_run(spanprof, tmp_path, work, what):
    """record_gated() of @work (held at its gate) with a hang guard that fails the test."""
    try:
        return record_gated(spanprof, tmp_path / "out", work, "--pid", work.pid, "--duration",
                            DURATION, "--frequency", 99, timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the agent did not end within {HANG_GUARD} s of a {DURATION} s run: it "
                    f"blocked on {what}, a FIFO")


def test_a_perf_map_that_is_a_fifo_is_refused_and_the_run_ends(spanprof, procs, workload,
                                                                tmp_path):
    """integration/workloads/jit_leaf.c runs JIT code that its /tmp/perf-PID.map names; the map
    is swapped for a FIFO before the agent starts."""
    work = procs.start(workload("jit_leaf"), DURATION, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    perf_map = Path(f"/tmp/perf-{work.pid}.map")
    try:
        wait_for(lambda: perf_map.exists() and perf_map.read_text().endswith("\n"),
                 f"{perf_map} to be written")
        swap_for_fifo(perf_map)
        res = gated_run(spanprof, tmp_path, work, perf_map)
    finally:
        perf_map.unlink(missing_ok=True)
    refused = res.stats["jit"]["files_refused"]
    assert refused["not_regular"] >= 1, f"the FIFO was not refused as not regular: {refused}"
    assert f"{perf_map} not read: not a regular file" in res.stderr, res.stderr
    assert res.stats["jit"]["perf_maps"] == 0, res.stats["jit"]


def test_a_jitdump_swapped_for_a_fifo_is_refused_and_the_run_ends(spanprof, procs, workload,
                                                                   tmp_path):
    """integration/workloads/jit_cfi.c writes jit-PID.dump in its directory and maps it (the
    marker perf looks for); the file's path is then swapped for a FIFO: the agent, finding the
    path in the process's maps, must not block opening it."""
    work = procs.start(workload("jit_cfi"), DURATION, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    dump = tmp_path / f"jit-{work.pid}.dump"
    wait_for(lambda: str(dump) in Path(f"/proc/{work.pid}/maps").read_text(),
             f"{dump} to be mapped")
    swap_for_fifo(dump)
    res = gated_run(spanprof, tmp_path, work, dump)
    jit = res.stats["jit"]
    assert jit["files_refused"]["not_regular"] >= 1, f"the FIFO was not refused: {jit}"
    assert f"{dump} not read: not a regular file" in res.stderr, res.stderr
    assert jit["jitdumps"] == 0, jit


FUSE_SERVER = Path(__file__).with_name("fuse_stall.py")
# The agent's deadline for a file on a file system that can stall (util/regfile.h).
STALL_DEADLINE = 2
# From sampling to exit, past --duration: a given-up copy, writing the outputs on a loaded host.
END_MARGIN = STALL_DEADLINE + 10


class StallFs:
    """fuse_stall.py serving @binary as MOUNT/stallprog; lines it prints are kept in .lines."""

    def __init__(self, tmp_path, binary):
        self.mnt = tmp_path / "stallfs"
        self.mnt.mkdir()
        self.path = self.mnt / "stallprog"
        self.lines = []
        self.server = subprocess.Popen([sys.executable, FUSE_SERVER, self.mnt, "stallprog",
                                        binary], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        wait_for(lambda: "ready" in self.lines or self.server.poll() is not None,
                 "the FUSE server to be mounted")
        assert "ready" in self.lines, f"the FUSE server failed: {self.server.returncode}"

    def _read(self):
        for line in self.server.stdout:
            self.lines.append(line.strip())

    def command(self, line):
        self.server.stdin.write(line + "\n")
        self.server.stdin.flush()
        wait_for(lambda: f"ok {line}" in self.lines, f"the FUSE server to take '{line}'")

    def stalled(self):
        return [l for l in self.lines if l.startswith("stalled")]

    def close(self):
        # Killed first: the connection aborts, a read still waiting for it fails (ENOTCONN).
        self.server.kill()
        self.server.wait()
        subprocess.run(["umount", "-l", str(self.mnt)], capture_output=True)


@pytest.fixture
def stall_fs(tmp_path):
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse on this machine")
    made = []

    def make(binary):
        made.append(StallFs(tmp_path, binary))
        return made[-1]

    yield make
    for fs in made:
        fs.close()


def start_stalled(procs, tmp_path, stall_fs):
    """chain.c run twice: from a FUSE mount whose server then answers only that process's
    reads (stallprog), and from a local file (chain). Returns (stallfs, fused, local)."""
    binary = compile_c(WORKLOADS / "chain.c", tmp_path / "chain")
    fs = stall_fs(binary)
    fused = procs.start(fs.path, "300")
    local = procs.start(binary, "300")
    wait_for(lambda: str(fs.path) in Path(f"/proc/{fused.pid}/maps").read_text(),
             f"{fs.path} to be mapped")
    fs.command(f"allow {fused.pid}")
    fs.command("stall")
    return fs, fused, local


def start_agent(spanprof, out, *args):
    stats = stats_path(out)
    return subprocess.Popen([str(spanprof), "record", "--output-dir", str(out), "--stats-json",
                             str(stats), "--frequency", "99", "--debuginfod", "",
                             *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finish(agent, seen, out, what):
    """Waits for @agent to exit (a hang guard fails the test) -> CompletedProcess + .stats."""
    try:
        _, err = agent.communicate(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        agent.kill()
        agent.wait()
        pytest.fail(f"the agent did not end within {HANG_GUARD} s {what}: it blocked on the "
                    f"FUSE file whose server stopped answering")
    res = subprocess.CompletedProcess(agent.args, agent.returncode, "", "".join(seen) + err)
    assert res.returncode == 0, res.stderr
    return with_stats(res, stats_path(out))


def test_a_file_on_a_fuse_server_that_answers_is_read_from_a_copy(spanprof, procs, tmp_path,
                                                                    stall_fs):
    """The same program on a FUSE mount whose server answers everything: read through the
    helper's copy (slow_files.read; its other openers from that copy: slow_files.reused) and
    named from it like the local one."""
    binary = compile_c(WORKLOADS / "chain.c", tmp_path / "chain")
    fs = stall_fs(binary)
    fused = procs.start(fs.path, "300")
    wait_for(lambda: str(fs.path) in Path(f"/proc/{fused.pid}/maps").read_text(),
             f"{fs.path} to be mapped")
    out = tmp_path / "out"
    res = record(spanprof, out, "--pid", fused.pid, "--duration", DURATION, "--frequency", 99,
                 "--debuginfod", "", timeout=HANG_GUARD)
    slow = res.stats["slow_files"]
    assert slow["read"] >= 1 and slow["stalled"] == 0, slow
    # The symbolizer and the CFI builder both open it: the second from the first's copy.
    assert slow["reused"] >= 1, slow
    mine = [(frames, n) for frames, n in read_folded(out / "profile.folded")
            if frames[0] == "stallprog"]
    total = sum(n for _, n in mine)
    assert total, "no sample of stallprog"
    named = sum(n for frames, n in mine if frames[-1] == "c")
    assert named >= 0.8 * total, f"stallprog's spinning function unnamed: {mine[:5]}"


def test_a_file_on_a_fuse_server_that_stops_answering_is_given_up(spanprof, procs, tmp_path,
                                                                   stall_fs):
    fs, fused, local = start_stalled(procs, tmp_path, stall_fs)
    out = tmp_path / "out"
    agent = start_agent(spanprof, out, "--pid", f"{fused.pid},{local.pid}", "--duration",
                        DURATION, "--verbose")
    try:
        seen = wait_sampling(agent)
        sampling = time.monotonic()
        res = finish(agent, seen, out, f"of a {DURATION} s run")
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    took = time.monotonic() - sampling
    assert fs.stalled(), f"the agent never read the FUSE file: {fs.lines}"
    slow = res.stats["slow_files"]
    assert slow["stalled"] >= 1, f"the stalled file was not counted: {slow}"
    assert "stopped answering for" in res.stderr, res.stderr
    assert f"{slow['stalled']} given up (no answer within --slow-file-timeout)" in res.stderr, \
        res.stderr
    assert took <= DURATION + END_MARGIN, f"{took:.1f} s from sampling to exit"
    folded = read_folded(out / "profile.folded")
    assert any(frames[0] == "stallprog" for frames, _ in folded), "no sample of stallprog"
    # The rest of the host still named: the local copy's spinning leaf.
    mine = [(frames, n) for frames, n in folded if frames[0] == "chain"]
    total = sum(n for _, n in mine)
    assert total, "no sample of the local workload"
    named = sum(n for frames, n in mine if frames[-1] == "c")
    assert named >= 0.8 * total, f"the local workload's spinning function unnamed: {mine[:5]}"


def test_sigterm_during_a_fuse_stall_ends_the_run_with_outputs(spanprof, procs, tmp_path,
                                                               stall_fs):
    """A whole-host run: the program on the FUSE mount starts once the agent samples (its pid
    allowed before it runs its file), so the agent meets its file while sampling and is
    waiting for the stalled read when SIGTERM comes."""
    binary = compile_c(WORKLOADS / "chain.c", tmp_path / "chain")
    fs = stall_fs(binary)
    out = tmp_path / "out"
    agent = start_agent(spanprof, out, "--duration", 600)
    try:
        seen = wait_sampling(agent)
        fused = procs.start("sh", "-c", 'read line && exec "$0" 300', fs.path,
                            stdin=subprocess.PIPE, text=True)
        fs.command(f"allow {fused.pid}")
        fs.command("stall")
        fused.stdin.write("go\n")
        fused.stdin.close()
        wait_for(lambda: fs.stalled() or agent.poll() is not None,
                 "the agent to read the FUSE file", seconds=HANG_GUARD)
        assert agent.poll() is None, agent.stderr.read()
        agent.send_signal(signal.SIGTERM)
        term = time.monotonic()
        res = finish(agent, seen, out, "of SIGTERM")
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    took = time.monotonic() - term
    assert took <= END_MARGIN, f"{took:.1f} s from SIGTERM to exit"
    assert res.stats is not None, "no --stats-json written"
    assert (out / "profile.folded").exists(), "no profile written"
    folded = read_folded(out / "profile.folded")
    assert any(frames[0] == "stallprog" for frames, _ in folded), "no sample of stallprog"
