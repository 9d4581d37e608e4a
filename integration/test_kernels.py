"""Debian 12's own kernel (6.1) booted as a QEMU guest with this machine's file system
(integration/kernels/run.sh, docs/kernels.md): the smoke suite (integration/kernels/smoke.txt)
runs inside it, its results come back here and are asserted. TCG only (no nested KVM): about
20 s to boot; the suite takes several minutes."""
import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "integration" / "kernels"))
import summary  # noqa: E402

SMOKE = ROOT / "integration" / "kernels" / "smoke.txt"


def smoke_ids():
    return [l.strip() for l in SMOKE.read_text().splitlines()
            if l.strip() and not l.startswith("#")]


def test_smoke_suite_on_debian12_6_1(tmp_path):
    results = tmp_path / "results"
    # Its own session: should the wait end early, the whole group (vng, QEMU) goes with it.
    p = subprocess.Popen([str(ROOT / "integration/kernels/run.sh"), "6.1", str(results)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=2700)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    res = subprocess.CompletedProcess(p.args, p.returncode, out, "")
    print(res.stdout[-3000:])
    info = summary.read(results)
    print("\n".join(info["load"]))
    assert info["package"].startswith("linux-image-6.1.0-"), info["package"]
    assert info["uname"].startswith("6.1.0-"), (info["uname"], res.stdout[-2000:])
    # Every smoke test ran in the guest and passed: none missing, failed, errored or skipped.
    outcomes = dict(info["cases"])
    missing = [t for t in smoke_ids() if t not in outcomes]
    assert not missing, (missing, list(outcomes))
    bad = {t: o for t, o in outcomes.items() if o != "passed"}
    assert not bad, (bad, (results / "pytest.log").read_text()[-6000:])
    # Loading: every profile type reached "sampling" on this kernel.
    assert info["load"] and all("to sampling" in l for l in info["load"]), info["load"]
    assert res.returncode == 0, res.stdout[-2000:]
