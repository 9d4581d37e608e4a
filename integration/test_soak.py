"""The soak test, short: 150 s of process churn, fresh binaries, threads, dlopen/dlclose and
Collector restarts under the real agent (integration/soak/soak.py; `make soak` runs the long
one). Fails on growth of the agent's memory, descriptors or BPF maps after warm-up, a crash, an
unexpected error line, unnamed churned processes, or a sample not accounted for."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "soak"))
import soak  # noqa: E402

from conftest import BUILD  # noqa: E402


def test_soak_short():
    args = soak.parse_args(["--seconds", "150", "--restart-every", "20", "--sample-every", "3",
                            "--build", str(BUILD), "--out",
                            str(BUILD / "test-artifacts/soak-short")])
    failures = soak.run(args)
    assert not failures, "\n".join(failures)
