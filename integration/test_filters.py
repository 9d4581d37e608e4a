"""Targeting filters applied in BPF (--pid, --exe, --cgroup, --container-id, --k8s-pod) and the
container / Kubernetes resource attributes, against the real kernel and real cgroup v2
directories. Every cgroup a test makes lives under one scratch directory that the fixture
removes, even when the test fails; processes still inside are moved back to the root first."""
import os
import secrets
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import cpu_seconds, free_port, read_stats, record, wait_listening

FREQ = "99"


def cgroup2_root():
    """Where the unified hierarchy is mounted (/sys/fs/cgroup, or .../unified on hybrid hosts)."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        f = line.split()
        if f[2] == "cgroup2" and f[1] in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
            return Path(f[1])
    pytest.fail("cgroup v2 is not mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified")


class Cgroups:
    """A scratch cgroup v2 subtree: mkdir(), move(), and a teardown that leaves nothing."""

    def __init__(self):
        self.root = cgroup2_root()
        self.base = self.root / f"spanprof-test-{os.getpid()}-{secrets.token_hex(4)}"
        self.base.mkdir()

    def mkdir(self, rel):
        d = self.base / rel
        d.mkdir(parents=True, exist_ok=True)
        return d

    @staticmethod
    def move(pid, d):
        (Path(d) / "cgroup.procs").write_text(f"{pid}\n")

    def close(self):
        if not self.base.exists():
            return
        dirs = sorted((p for p in self.base.rglob("*") if p.is_dir()),
                      key=lambda p: len(p.parts), reverse=True) + [self.base]
        for d in dirs:
            for pid in (d / "cgroup.procs").read_text().split():
                try:
                    self.move(pid, self.root)
                except OSError:
                    pass  # exited meanwhile
        for d in dirs:
            for _ in range(50):  # a moved process can take a moment to leave
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        assert not self.base.exists(), f"cgroup {self.base} left behind"


@pytest.fixture
def cgroups(procs):
    # Depends on procs: torn down first, so the cgroups are emptied before the processes die.
    cg = Cgroups()
    yield cg
    cg.close()


def filtered_count(stats):
    """Samples of other processes filtered out in BPF (the run's --stats-json document)."""
    assert stats["run"]["targeted"] and stats["targeting"] is not None, stats["run"]
    return stats["samples"]["filtered"]


def pprof_pids(pprofcheck, out):
    """{pid: samples} of the pprof output."""
    prof = pprofcheck(out / "profile.pb.gz")
    assert prof["check_error"] == ""
    pids = {}
    for s in prof["samples"]:
        pid = s["num_labels"]["pid"][0]
        pids[pid] = pids.get(pid, 0) + s["values"][0]
    return pids


def start_in_cgroup(procs, cgdir, *argv):
    """Starts argv already inside cgdir (the shell joins it, then execs)."""
    return procs.start("sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgdir, *argv)


def in_cgroup(pid, cgdir, root):
    want = "0::/" + str(Path(cgdir).relative_to(root))
    return want in Path(f"/proc/{pid}/cgroup").read_text().splitlines()


def wait_in_cgroup(pid, cgdir, root):
    for _ in range(100):
        if in_cgroup(pid, cgdir, root):
            return
        time.sleep(0.05)
    raise AssertionError(f"{pid} never joined {cgdir}")


def export_resources(spanprof, procs, testcollector_bin, otlpcheck, tmp_path, *args, env=None):
    """Runs an exporting record into the test collector; returns (resources, stderr, stats), a
    resource being its attribute dict plus "_events", the samples it carries, stats the run's
    --stats-json document."""
    port = free_port()
    col = procs.start(testcollector_bin, "-listen", f"127.0.0.1:{port}", "-out",
                      tmp_path / "recv.jsonl", stderr=subprocess.DEVNULL)
    wait_listening(port, col)
    reqdir = tmp_path / "requests"
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{port}",
                          "--export-interval", "1", "--frequency", FREQ, "--output-dir",
                          str(reqdir), "--stats-json", str(tmp_path / "stats.json"),
                          *map(str, args)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    files = sorted(reqdir.glob("profiles-*.binpb"))
    assert files, f"no request was sent:\n{res.stderr}"
    got = otlpcheck(*files)
    assert got["ok"], got["errors"]
    out = []
    for inp in got["inputs"]:
        for msg in inp["messages"]:
            for rp in msg["resource_profiles"]:
                attrs = dict(rp["attributes"])
                attrs["_events"] = sum(p["events"] for sc in rp["scopes"]
                                       for p in sc["profiles"])
                out.append(attrs)
    return out, res.stderr, read_stats(tmp_path / "stats.json")


# --- filters -------------------------------------------------------------------------------


def test_pid_filter_excludes_every_other_process(spanprof, workload, procs, tmp_path,
                                                 pprofcheck):
    chain = workload("chain")
    a = procs.start(chain, "60")
    b = procs.start(chain, "60")  # same program, just as busy: only the PID tells them apart
    out = tmp_path / "out"
    res = record(spanprof, out, "--pid", a.pid, "--duration", 4, "--frequency", FREQ)
    pids = pprof_pids(pprofcheck, out)
    assert set(pids) == {a.pid}, f"samples of other processes: {pids}"
    # A loaded machine (other jobs) gives it a fraction of a CPU: a threshold, no rate.
    assert pids[a.pid] >= 10, f"only {pids[a.pid]} samples of the target at {FREQ} Hz for 4 s"
    # b (and the rest of the machine) ran all along: BPF refused its samples.
    assert filtered_count(res.stats) >= 50, res.stderr


def test_exe_filter_follows_the_file_even_when_replaced(spanprof, workload, procs, tmp_path,
                                                        pprofcheck):
    chain = workload("chain")
    exe_a, exe_b = tmp_path / "chain-a", tmp_path / "chain-b"
    shutil.copy(chain, exe_a)
    shutil.copy(chain, exe_b)
    link = tmp_path / "link-to-a"
    link.symlink_to(exe_a)
    a = procs.start(exe_a, "60")
    b = procs.start(exe_b, "60")
    out = tmp_path / "out"
    rec = procs.start(spanprof, "record", "--exe", link, "--duration", 8, "--frequency", FREQ,
                      "--output-dir", out, "--stats-json", tmp_path / "stats.json",
                      stderr=subprocess.PIPE, text=True)
    assert "sampling the targeted processes" in rec.stderr.readline()
    # A new build replaces the file (new inode); a process started from it must be sampled too,
    # and the process still running the old file as well.
    time.sleep(1)
    new = tmp_path / "chain-a.new"
    shutil.copy(chain, new)
    new.rename(exe_a)
    a2 = procs.start(exe_a, "60")
    _, err = rec.communicate(timeout=120)
    assert rec.returncode == 0, err
    pids = pprof_pids(pprofcheck, out)
    assert b.pid not in pids, f"chain-b was sampled: {pids}"
    assert set(pids) <= {a.pid, a2.pid}, f"samples of other processes: {pids}"
    assert pids.get(a.pid, 0) >= 5, pids
    assert pids.get(a2.pid, 0) >= 5, f"the replaced binary was not followed: {pids}\n{err}"
    stats = read_stats(tmp_path / "stats.json")
    assert stats["targeting"]["exes_found"] == 1, stats["targeting"]
    assert stats["targeting"]["exe_files"] == 2, stats["targeting"]
    assert filtered_count(stats) >= 50, err


def test_cgroup_filter_covers_descendants_and_late_cgroups(spanprof, workload, procs, tmp_path,
                                                           cgroups, pprofcheck):
    chain = workload("chain")
    svc = cgroups.mkdir("svc.service")
    child = cgroups.mkdir("svc.service/worker")
    a = start_in_cgroup(procs, child, chain, "60")  # below the filtered cgroup
    b = procs.start(chain, "60")  # outside it
    o = start_in_cgroup(procs, cgroups.mkdir("other.service"), chain, "60")  # a sibling
    wait_in_cgroup(a.pid, child, cgroups.root)
    out = tmp_path / "out"
    late = cgroups.base / "late.service"
    rec = procs.start(spanprof, "record", "--cgroup", svc,
                      "--cgroup", late.relative_to(cgroups.root),  # relative to the mount
                      "--duration", 8, "--frequency", FREQ, "--output-dir", out,
                      "--stats-json", tmp_path / "stats.json", stderr=subprocess.PIPE, text=True)
    first = rec.stderr.readline()
    assert "late.service" in first and "does not exist (yet)" in first, first
    # Created after the start (a service started later): found at the next refresh.
    time.sleep(1)
    late.mkdir()
    c = start_in_cgroup(procs, late, chain, "60")
    _, err = rec.communicate(timeout=120)
    assert rec.returncode == 0, err
    pids = pprof_pids(pprofcheck, out)
    assert b.pid not in pids and o.pid not in pids, f"processes outside were sampled: {pids}"
    assert set(pids) <= {a.pid, c.pid}, f"samples of other processes: {pids}"
    assert pids.get(a.pid, 0) >= 5, pids
    assert pids.get(c.pid, 0) >= 5, f"the cgroup made later was not picked up: {pids}\n{err}"
    stats = read_stats(tmp_path / "stats.json")
    assert stats["targeting"]["cgroups_found"] == 2, stats["targeting"]
    assert filtered_count(stats) >= 50, err


def test_cgroup_as_proc_pid_cgroup_shows_it(spanprof, workload, procs, tmp_path, cgroups,
                                            pprofcheck):
    """--cgroup /a/b.service (the form /proc/PID/cgroup prints: relative to the mount) is taken
    as the directory under the cgroup v2 mount; one naming nothing either way gets a hint."""
    chain = workload("chain")
    svc = cgroups.mkdir("shown.service")
    a = start_in_cgroup(procs, svc, chain, "60")
    b = procs.start(chain, "60")  # outside it
    wait_in_cgroup(a.pid, svc, cgroups.root)
    shown = "/" + str(svc.relative_to(cgroups.root))
    assert f"0::{shown}" in Path(f"/proc/{a.pid}/cgroup").read_text().splitlines()
    missing = "/" + str((cgroups.base / "never.service").relative_to(cgroups.root))
    out = tmp_path / "out"
    cpu0 = cpu_seconds(a.pid)
    res = record(spanprof, out, "--cgroup", shown, "--cgroup", missing, "--duration", 4,
                 "--frequency", FREQ)
    cpu = cpu_seconds(a.pid) - cpu0
    assert f"--cgroup {shown}: taken as {svc} " in res.stderr, res.stderr
    assert f"give --cgroup {cgroups.root}{missing} for that" in res.stderr, res.stderr
    pids = pprof_pids(pprofcheck, out)
    assert b.pid not in pids, f"a process outside was sampled: {pids}"
    # Sized from the CPU time it had while sampled (a loaded machine runs it less).
    assert pids.get(a.pid, 0) >= max(3, cpu * int(FREQ) / 4), f"{pids} cpu {cpu}\n{res.stderr}"
    assert res.stats["targeting"]["cgroups_found"] == 1, res.stats["targeting"]


def test_container_id_on_a_process_started_in_its_own_cgroup(spanprof, workload, procs, tmp_path,
                                                             cgroups, testcollector_bin,
                                                             otlpcheck):
    chain = workload("chain")
    cid = secrets.token_hex(32)
    cid2 = cid[:12] + secrets.token_hex(26)  # same 12-digit prefix: a prefix must name one
    scope = cgroups.mkdir(f"system.slice/docker-{cid}.scope")
    scope2 = cgroups.mkdir(f"system.slice/cri-containerd-{cid2}.scope")
    a = start_in_cgroup(procs, scope, chain, "60")
    a2 = start_in_cgroup(procs, scope2, chain, "60")
    b = procs.start(chain, "60")
    wait_in_cgroup(a.pid, scope, cgroups.root)
    resources, err, stats = export_resources(spanprof, procs, testcollector_bin, otlpcheck,
                                             tmp_path, "--container-id", cid[:20],
                                             "--container-id", cid2, "--duration", 4)
    by_pid = {r["process.pid"]: r for r in resources}
    assert set(by_pid) <= {a.pid, a2.pid}, f"samples of other processes: {sorted(by_pid)}"
    assert a.pid in by_pid and a2.pid in by_pid, err
    assert by_pid[a.pid]["container.id"] == cid
    assert by_pid[a2.pid]["container.id"] == cid2
    assert b.pid not in by_pid
    assert stats["targeting"]["container_ids"] == stats["targeting"]["containers_found"] == 2
    assert stats["targeting"]["containers_ambiguous"] == 0, stats["targeting"]

    # The shared 12-digit prefix names both containers: refused, with a warning.
    out = tmp_path / "ambiguous"
    res = record(spanprof, out, "--container-id", cid[:12], "--duration", 1)
    assert "names several containers" in res.stderr, res.stderr
    assert res.stats["targeting"]["containers_found"] == 0, res.stats["targeting"]
    assert res.stats["targeting"]["containers_ambiguous"] == 1, res.stats["targeting"]
    # The end of the run says what to do about it.
    assert "--container-id: 1 of 1 are prefixes of several containers; give more of the id" in \
        res.stderr, res.stderr


def test_container_started_later_is_caught(spanprof, workload, procs, tmp_path, cgroups,
                                          pprofcheck):
    chain = workload("chain")
    cid = secrets.token_hex(32)
    b = procs.start(chain, "60")
    out = tmp_path / "out"
    rec = procs.start(spanprof, "record", "--container-id", cid, "--duration", 8, "--frequency",
                      FREQ, "--output-dir", out, "--stats-json", tmp_path / "stats.json",
                      stderr=subprocess.PIPE, text=True)
    first = rec.stderr.readline()
    assert "no container cgroup" in first, first
    time.sleep(1)
    # The runtime makes the container's cgroup now (a walk happens when the tree changes).
    scope = cgroups.mkdir(f"system.slice/docker-{cid}.scope")
    a = start_in_cgroup(procs, scope, chain, "60")
    _, err = rec.communicate(timeout=120)
    assert rec.returncode == 0, err
    pids = pprof_pids(pprofcheck, out)
    assert set(pids) == {a.pid}, f"{pids}\n{err}"
    assert pids[a.pid] >= 5, pids
    assert read_stats(tmp_path / "stats.json")["targeting"]["containers_found"] == 1, err


def test_k8s_metadata_and_pod_filter(spanprof, workload, procs, tmp_path, cgroups,
                                     testcollector_bin, otlpcheck):
    """A fake kubelet node: a kubepods cgroup hierarchy (systemd driver names) and the kubelet's
    log layout under SPANPROF_HOST_ROOT."""
    chain = workload("chain")
    pod_uid, other_uid = str(uuid.uuid4()), str(uuid.uuid4())
    cid, cid_side = secrets.token_hex(32), secrets.token_hex(32)
    qos = cgroups.mkdir("kubepods.slice/kubepods-burstable.slice")

    def pod_slice(uid):
        return qos / f"kubepods-burstable-pod{uid.replace('-', '_')}.slice"

    app = cgroups.mkdir(pod_slice(pod_uid).relative_to(cgroups.base) /
                        f"cri-containerd-{cid}.scope")
    side = cgroups.mkdir(pod_slice(pod_uid).relative_to(cgroups.base) /
                         f"cri-containerd-{cid_side}.scope")
    other = cgroups.mkdir(pod_slice(other_uid).relative_to(cgroups.base) /
                          f"cri-containerd-{secrets.token_hex(32)}.scope")
    host = tmp_path / "host"
    (host / "sys/fs").mkdir(parents=True)
    (host / "sys/fs/cgroup").symlink_to("/sys/fs/cgroup")
    (host / f"var/log/pods/shop_checkout-7d9f_{pod_uid}/app").mkdir(parents=True)
    (host / f"var/log/pods/shop_checkout-7d9f_{pod_uid}/sidecar").mkdir(parents=True)
    (host / f"var/log/pods/shop_cart-5c8b_{other_uid}/cart").mkdir(parents=True)
    (host / "var/log/containers").mkdir(parents=True)
    (host / f"var/log/containers/checkout-7d9f_shop_app-{cid}.log").touch()
    # The sidecar has no /var/log/containers entry: pod names only.

    a = start_in_cgroup(procs, app, chain, "60")
    s = start_in_cgroup(procs, side, chain, "60")
    o = start_in_cgroup(procs, other, chain, "60")
    b = procs.start(chain, "60")
    wait_in_cgroup(a.pid, app, cgroups.root)
    env = dict(os.environ, SPANPROF_HOST_ROOT=str(host), K8S_NODE_NAME="node-7")
    env.pop("NODE_NAME", None)
    resources, err, stats = export_resources(spanprof, procs, testcollector_bin, otlpcheck,
                                             tmp_path, "--k8s", "--k8s-pod",
                                             "shop/checkout-7d9f", "--duration", 4, env=env)
    by_pid = {r["process.pid"]: r for r in resources}
    assert set(by_pid) <= {a.pid, s.pid}, f"samples outside the pod: {sorted(by_pid)}\n{err}"
    assert o.pid not in by_pid and b.pid not in by_pid
    ra = by_pid.get(a.pid)
    assert ra, f"the pod's container was not sampled:\n{err}"
    assert ra["container.id"] == cid
    assert ra["k8s.pod.uid"] == pod_uid
    assert ra["k8s.pod.name"] == "checkout-7d9f"
    assert ra["k8s.namespace.name"] == "shop"
    assert ra["k8s.container.name"] == "app"
    assert ra["k8s.node.name"] == "node-7"
    rs = by_pid.get(s.pid)
    assert rs, f"the pod's sidecar was not sampled:\n{err}"
    assert rs["k8s.pod.name"] == "checkout-7d9f" and rs["container.id"] == cid_side
    assert rs["k8s.namespace.name"] == "shop" and "k8s.container.name" not in rs
    assert stats["targeting"]["k8s_pods"] == stats["targeting"]["k8s_pods_found"] == 1, err
    assert stats["kubernetes"]["processes_named"] >= 1 and stats["kubernetes"]["node_name"]

    # The other pod, by uid.
    (tmp_path / "by-uid").mkdir()
    resources, err, _ = export_resources(spanprof, procs, testcollector_bin, otlpcheck,
                                         tmp_path / "by-uid", "--k8s", "--k8s-pod", other_uid,
                                         "--duration", 3, env=env)
    by_pid = {r["process.pid"]: r for r in resources}
    assert set(by_pid) == {o.pid}, f"{sorted(by_pid)}\n{err}"
    assert by_pid[o.pid]["k8s.pod.name"] == "cart-5c8b"
    assert by_pid[o.pid]["k8s.pod.uid"] == other_uid


def test_no_k8s_flag_no_k8s_attributes(spanprof, workload, procs, tmp_path, cgroups,
                                       testcollector_bin, otlpcheck):
    chain = workload("chain")
    pod_uid = str(uuid.uuid4())
    cid = secrets.token_hex(32)
    d = cgroups.mkdir(f"kubepods/besteffort/pod{pod_uid}/{cid}")  # cgroupfs driver names
    a = start_in_cgroup(procs, d, chain, "60")
    wait_in_cgroup(a.pid, d, cgroups.root)
    env = dict(os.environ, K8S_NODE_NAME="node-7")
    resources, err, stats = export_resources(spanprof, procs, testcollector_bin, otlpcheck,
                                             tmp_path, "--container-id", cid, "--duration", 3,
                                             env=env)
    assert {r["process.pid"] for r in resources} == {a.pid}, err
    assert resources[0]["container.id"] == cid
    assert not [k for k in resources[0] if k.startswith("k8s.")], resources[0]
    assert stats["kubernetes"] is None, stats["kubernetes"]


def test_exe_not_installed_yet_is_looked_for(spanprof, tmp_path):
    """A program not installed yet is a target to wait for, not a usage error."""
    missing = tmp_path / "installed-later"
    res = record(spanprof, tmp_path / "out", "--exe", missing, "--duration", 1, check=False)
    assert res.returncode == 0, res.stderr
    assert f"--exe {missing}" in res.stderr and "does not exist (yet)" in res.stderr, res.stderr


def test_exe_script_names_its_interpreter(spanprof, tmp_path):
    """A script is never a process's executable: the warning says what to give instead."""
    script = tmp_path / "job.sh"
    script.write_text("#! /bin/sh -e\nexit 0\n")
    script.chmod(0o755)
    res = record(spanprof, tmp_path / "out", "--exe", script, "--duration", 0.5)
    assert f"--exe {script} is a script" in res.stderr, res.stderr
    assert "interpreter (/bin/sh -e)" in res.stderr, res.stderr
    binary = record(spanprof, tmp_path / "out2", "--exe", "/bin/sh", "--duration", 0.5)
    assert "is a script" not in binary.stderr, binary.stderr


def test_bad_targets_are_refused(spanprof, tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program\n")
    plain.chmod(0o644)
    for args, code, msg in (
            (["--exe", str(tmp_path)], 2, f"--exe wants an executable file, not '{tmp_path}' "
                                          "(a directory)"),
            (["--exe", str(plain)], 2, "(not executable)"),
            (["--exe", "/dev/null"], 2, "(not a regular file)"),
            (["--container-id", "abc"], 2, "--container-id wants 12 to 64 hex digits"),
            (["--container-id", "z" * 12], 2, "--container-id wants"),
            (["--k8s-pod", "no-slash"], 2, "--k8s-pod wants a pod uid"),
            (["--k8s-pod", "Shop/x"], 2, "--k8s-pod wants"),
            (["--cgroup", str(tmp_path)], 1, "is not a cgroup v2 directory"),
            (["--exe", ""], 2, "--exe wants a path")):
        out = tmp_path / "out"
        res = record(spanprof, out, *args, "--duration", 1, check=False)
        assert res.returncode == code, (args, res.stderr)
        assert msg in res.stderr, (args, res.stderr)
        assert not out.exists(), "a refused run left its output directory"
