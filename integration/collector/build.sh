#!/usr/bin/env bash
# Builds the pinned OpenTelemetry Collector (otelcol-spanprof) used by the integration tests.
#
#   integration/collector/build.sh [OUTPUT]      default OUTPUT: <repo>/build/otelcol-spanprof
#
# Modules come from the Go module cache (GOMODCACHE, normally ~/go/pkg/mod); only what is
# missing there is fetched from GOPROXY. go.sum is committed, so the build is read-only with
# respect to go.mod/go.sum. Does nothing when OUTPUT is newer than every source file here.
# A cold build (empty build cache) takes about 3 minutes on a 2-core machine; see
# docs/collector.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/otelcol-spanprof}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

sources=("$here/main.go" "$here/go.mod" "$here/go.sum" "$here/build.sh")

if [[ -x "$out" ]]; then
	stale=0
	for s in "${sources[@]}"; do
		if [[ "$s" -nt "$out" ]]; then stale=1; break; fi
	done
	if [[ $stale -eq 0 ]]; then
		exit 0
	fi
fi

command -v go >/dev/null || { echo "build.sh: go is not installed" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
echo "  GO       $out" >&2
start=$SECONDS
(cd "$here" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags='-s -w' -o "$tmp" .)
mv -f "$tmp" "$out"
trap - EXIT
echo "  GO       built in $((SECONDS - start)) s" >&2
