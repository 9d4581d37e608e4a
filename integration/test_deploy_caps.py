"""The agent with exactly the capabilities the shipped deployment grants it
(collector-config/deploy/spanprof.service's CapabilityBoundingSet, the same as the DaemonSet's
capabilities.add), as root, against a process of root's that kept its capabilities (as a
service started by root does): its user frames and its kernel frames are named, and the start
says nothing is missing. And the same set without CAP_SYSLOG: the start warns that kernel frames
are not named exactly when the kernel's sysctls hide /proc/kallsyms's addresses
(kptr_restrict 1, or 0 with perf_event_paranoid above 1), and they are not.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, read_folded

UNIT = ROOT / "collector-config" / "deploy" / "spanprof.service"
DAEMONSET = ROOT / "collector-config" / "deploy" / "kubernetes" / "spanprof-daemonset.yaml"
SETPRIV = shutil.which("setpriv")
pytestmark = pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is not installed")


def unit_caps():
    """The unit's CapabilityBoundingSet, as setpriv names ("bpf", "sys_ptrace", ...)."""
    m = re.search(r"^CapabilityBoundingSet=(.*)$", UNIT.read_text(), re.M)
    return [c.lower().removeprefix("cap_") for c in m.group(1).split()]


# capability(7) numbers of the names the unit may hold.
CAP_BITS = {"dac_override": 1, "dac_read_search": 2, "setpcap": 8, "sys_ptrace": 19,
            "sys_admin": 21, "sys_resource": 24, "syslog": 34, "perfmon": 38, "bpf": 39,
            "checkpoint_restore": 40}


def grantable(caps):
    """The part of @caps this test's own bounding set holds (a container running the tests may
    lack some), and the rest."""
    bnd = next(int(l.split()[1], 16) for l in Path("/proc/self/status").read_text().splitlines()
               if l.startswith("CapBnd:"))
    have = [c for c in caps if c in CAP_BITS and bnd >> CAP_BITS[c] & 1]
    return have, [c for c in caps if c not in have]


def daemonset_caps():
    m = re.search(r"add: \[([^\]]*)\]", DAEMONSET.read_text())
    return [c.strip().strip('"').lower() for c in m.group(1).split(",")]


def sysctl(name):
    try:
        return int(Path("/proc/sys/kernel", name).read_text())
    except (OSError, ValueError):
        return None


def kallsyms_hidden_without_syslog():
    """kernel/kallsyms.c, kallsyms_show_value(): what a reader without CAP_SYSLOG gets."""
    k, p = sysctl("kptr_restrict"), sysctl("perf_event_paranoid")
    return not (k == 0 and p is not None and p <= 1)


def test_unit_and_daemonset_grant_the_same():
    assert sorted(unit_caps()) == sorted(daemonset_caps())
    assert "syslog" in unit_caps()


@pytest.mark.parametrize("drop", [None, "syslog"], ids=["shipped", "without-syslog"])
def test_shipped_capabilities_name_kernel_frames(spanprof, workload, procs, tmp_path, drop):
    if sysctl("kptr_restrict") == 2:
        pytest.skip("kernel.kptr_restrict=2 hides kernel addresses from every reader here")
    caps, missing = grantable([c for c in unit_caps() if c != drop])
    if {"bpf", "perfmon", "sys_ptrace"} - set(caps) or \
            (not drop and "syslog" in unit_caps() and "syslog" not in caps):
        pytest.skip(f"this machine's bounding set lacks {missing}")
    if missing:
        print(f"not granted here (absent from this machine's bounding set): {missing}")
    # Runs until the test ends (procs kills it): longer than the agent's start on a loaded host.
    sc = procs.start(workload("syscalls"), "600")
    out = tmp_path / "out"
    spec = "-all," + ",".join("+" + c for c in caps)
    res = subprocess.run([SETPRIV, f"--inh-caps={spec}", f"--ambient-caps={spec}",
                          f"--bounding-set={spec}", "--", str(spanprof), "record", "--pid",
                          str(sc.pid), "--duration", "5", "--frequency", "99", "--output-dir",
                          str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "warning: no CAP_SYS_PTRACE" not in res.stderr, res.stderr
    stacks = [(f, c) for f, c in read_folded(out / "profile.folded") if f[0] == "syscalls"]
    total = sum(c for _, c in stacks)
    # Enough to measure shares on (a loaded machine gives the workload little CPU).
    assert total >= 10, (total, res.stderr)
    # The root process's own frames: read with the shipped CAP_SYS_PTRACE.
    user = sum(c for f, c in stacks if "copy_zeroes" in f)
    assert user >= 0.5 * total, (user, total, [f for f, _ in stacks[:3]])
    kernel = [x for f, c in stacks for x in f for _ in range(c) if x.endswith("_[k]")]
    named = [x for x in kernel if not re.match(r"^(0x[0-9a-f]+|\[unknown\])_\[k\]$", x)]
    assert len(kernel) >= 10, (len(kernel), res.stderr)
    print(f"{drop or 'shipped'}: {len(named)}/{len(kernel)} kernel frames named")
    hidden = drop == "syslog" and kallsyms_hidden_without_syslog()
    if hidden:
        assert "warning: no CAP_SYSLOG: kernel frames are not named" in res.stderr, res.stderr
        assert not named, named[:5]
    else:
        assert "CAP_SYSLOG" not in res.stderr, res.stderr
        assert len(named) >= 0.95 * len(kernel), (len(named), len(kernel), kernel[:5])
        assert any("read" in x for x in named), named[:10]
