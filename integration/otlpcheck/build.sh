#!/usr/bin/env bash
# Builds otlpcheck, the independent OTLP profiles decoder/validator used by the tests.
#
#   integration/otlpcheck/build.sh [OUTPUT]      default OUTPUT: <repo>/build/otlpcheck
#
# Uses the Go module cache; does nothing when OUTPUT is newer than every source file here.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/otlpcheck}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

if [[ -x "$out" ]]; then
	stale=0
	for s in "$here"/*.go "$here/go.mod" "$here/go.sum" "$here/build.sh"; do
		if [[ "$s" -nt "$out" ]]; then stale=1; break; fi
	done
	[[ $stale -eq 1 ]] || exit 0
fi

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
echo "  GO       $out" >&2
(cd "$here" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$tmp" .)
mv -f "$tmp" "$out"
trap - EXIT
