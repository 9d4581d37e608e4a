#!/usr/bin/env bash
# Runs spanprof's tests and prints one closing summary line "all: N passed, N failed".
#   run-tests.sh unit BIN...         cmocka unit test binaries
#   run-tests.sh integration         pytest integration tests (root, real BPF)
#   run-tests.sh all BIN...          both
set -uo pipefail
mode=$1; shift
passed=0 failed=0

run_unit() {
	local bin out p f rc
	for bin in "$@"; do
		echo "=== unit: $bin"
		out=$("$bin" 2>&1); rc=$?
		echo "$out"
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' <<<"$out" | tail -1)
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' <<<"$out" | tail -1)
		p=${p:-0} f=${f:-0}
		# A binary that crashed or printed no summary counts as one failure.
		if [[ $rc -ne 0 && $f -eq 0 ]]; then f=1; fi
		if [[ $p -eq 0 && $f -eq 0 ]]; then f=1; echo "no test ran in $bin"; fi
		passed=$((passed + p)) failed=$((failed + f))
	done
}

run_integration() {
	local out p f
	echo "=== integration (pytest)"
	out=$(python3 -m pytest -v -rs integration 2>&1 | tee /dev/stderr | tail -1)
	p=$(grep -o '[0-9]* passed' <<<"$out" | grep -o '[0-9]*' || true)
	f=$(grep -o '[0-9]* failed' <<<"$out" | grep -o '[0-9]*' || true)
	e=$(grep -o '[0-9]* error' <<<"$out" | grep -o '[0-9]*' || true)
	p=${p:-0} f=$(( ${f:-0} + ${e:-0} ))
	if [[ $p -eq 0 && $f -eq 0 ]]; then f=1; echo "no integration test ran"; fi
	passed=$((passed + p)) failed=$((failed + f))
}

case $mode in
unit) run_unit "$@" ;;
integration) run_integration ;;
all) run_unit "$@"; run_integration ;;
*) echo "usage: $0 unit|integration|all [BIN...]" >&2; exit 2 ;;
esac

echo
echo "all: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
