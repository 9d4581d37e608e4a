#!/usr/bin/env bash
# Runs inside the guest booted by integration/kernels/run.sh: RESULTS TESTS_FILE BUILD. The root
# file system is the host's, read-only; RESULTS is shared read-write; /tmp is the guest's own.
set -uo pipefail
results=$1 tests=$2
export BUILD=$3
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="/root/.pyenv/shims:/usr/local/go/bin:$PATH"
export PYTHONDONTWRITEBYTECODE=1 SPANPROF_PEERS_PREBUILT=1
export PYENV_ROOT=/root/.pyenv TMPDIR=/tmp
# TCG runs the guest's code several times slower than the host (conftest.py's SLOWDOWN).
export SPANPROF_TEST_SLOWDOWN=4
uname -r >"$results/uname"
cp /sys/kernel/btf/vmlinux "$results/btf" 2>/dev/null
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
python3 integration/kernels/load_time.py "$BUILD/spanprof" >"$results/load-times.txt" 2>&1
mapfile -t ids < <(grep -v '^#' "$tests" | grep .)
python3 -m pytest -v -rs -p no:cacheprovider --junitxml="$results/junit.xml" "${ids[@]}" \
	>"$results/pytest.log" 2>&1
echo $? >"$results/rc"
