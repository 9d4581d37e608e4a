#!/usr/bin/env bash
# Boots a Debian kernel package as a QEMU guest with this machine's file system (virtme-ng) and
# runs spanprof's tests inside it; the results come back to the host in RESULTS.
#
#   integration/kernels/run.sh [--tests FILE] KERNEL RESULTS
#
# KERNEL: a package name (linux-image-6.1.0-57-amd64-unsigned) or a series: "6.1" is the newest
# linux-image-6.1.0-*-amd64-unsigned of the archive, "6.12" the newest 6.12 "+deb12" one.
# --tests: pytest node ids, one a line (default integration/kernels/smoke.txt).
# RESULTS receives: package, uname (the guest's uname -r), junit.xml and pytest.log (the tests),
# load-times.txt (start to "sampling" per profile type), btf (the guest's /sys/kernel/btf/vmlinux),
# console.log (the guest's console), rc (pytest's exit status). Exit status: pytest's, or 2 when
# the guest never ran the tests.
#
# Run as root, after 'make'. Needs no KVM: the guest runs under TCG (about 20 s to boot, programs
# several times slower). Installs what it needs (scripts/install-kernel-deps.sh); kernel packages
# are downloaded once into $BUILD/kernels.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "$root" && mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)"
tests="$here/smoke.txt"
if [[ ${1:-} == --tests ]]; then
	tests="$(realpath "$2")"
	shift 2
fi
if [[ $# -ne 2 ]]; then
	echo "usage: $0 [--tests FILE] KERNEL RESULTS" >&2
	exit 2
fi
kernel=$1
results=$(mkdir -p "$2" && cd "$2" && pwd)
rm -f "$results"/{package,uname,junit.xml,pytest.log,load-times.txt,btf,console.log,rc}

"$root/scripts/install-kernel-deps.sh"

# --- the kernel package ----------------------------------------------------------------------
resolve_package() {
	local pattern
	case $1 in
	linux-image-*) echo "$1"; return ;;
	6.1) pattern='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' ;;
	*) pattern="^linux-image-${1//./\\.}\\.[0-9]+\\+deb12-amd64-unsigned\$" ;;
	esac
	apt-cache search --names-only "$pattern" | cut -d' ' -f1 | grep -E "$pattern" | sort -V |
		tail -1
}
pkg=$(resolve_package "$kernel")
if [[ -z $pkg ]]; then
	apt-get update -qq >/dev/null
	pkg=$(resolve_package "$kernel")
fi
if [[ -z $pkg ]]; then
	echo "run.sh: no Debian kernel package matches '$kernel'" >&2
	exit 2
fi
echo "$pkg" >"$results/package"
kdir="$build/kernels/$pkg"
vmlinuz=$(ls "$kdir"/boot/vmlinuz-* 2>/dev/null | head -1 || true)
if [[ -z $vmlinuz ]]; then
	echo "run.sh: downloading $pkg" >&2
	rm -rf "$kdir.tmp" && mkdir -p "$kdir.tmp"
	(cd "$kdir.tmp" && { apt-get download "$pkg" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null && apt-get download "$pkg" >/dev/null; }; })
	dpkg-deb -x "$kdir.tmp"/*.deb "$kdir.tmp/root"
	rm -rf "$kdir" && mv "$kdir.tmp/root" "$kdir" && rm -rf "$kdir.tmp"
	vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -1)
fi

# --- what the tests build with Go is built here: the guest's file system is read-only ---------
[[ -x "$build/spanprof" ]] || { echo "run.sh: $build/spanprof is missing: run 'make' first" >&2; exit 2; }
(cd "$root/integration" && for peer in pprofcheck otlpcheck testcollector; do
	(cd "$peer" && go build -o "$build/$peer" .)
done)
"$root/integration/collector/build.sh" "$build/otelcol-spanprof"

# --- boot --------------------------------------------------------------------------------------
echo "run.sh: booting $pkg (TCG), tests from ${tests#"$root"/}" >&2
start=$(date +%s)
cd "$root"
set +e
# A hang guard, not a time budget (GUEST_TIMEOUT seconds, default 40 min): timeout(1) ends
# vng and QEMU with it (its own process group).
# One host thread runs both vCPUs (-accel tcg,thread=single). With a thread per vCPU (MTTCG),
# a 6.1 guest once hung for good: both vCPUs spun at the same instruction of
# syscall_trace_enter while the kernel patched its tracepoint jump there (text_poke_bp, as the
# agent attached a syscall tracepoint under a syscall-heavy workload), soft lockups for 15 min.
# Single-threaded TCG keeps code modified by one vCPU coherent for the other.
timeout -k 30 "${GUEST_TIMEOUT:-2400}" \
	vng -v --run "$vmlinuz" --disable-kvm --cpus 2 --memory 4G --rwdir="$results" \
	--qemu-opts="-accel tcg,thread=single" \
	--exec "$here/guest.sh $results $tests $build" >"$results/console.log" 2>&1 </dev/null
vrc=$?
set -e
echo "run.sh: guest ran $(($(date +%s) - start)) s (vng exit $vrc)" >&2
if [[ ! -s $results/rc ]]; then
	echo "run.sh: the guest did not run the tests; its console: $results/console.log" >&2
	tail -20 "$results/console.log" >&2
	exit 2
fi
tail -1 "$results/pytest.log" >&2
exit "$(cat "$results/rc")"
