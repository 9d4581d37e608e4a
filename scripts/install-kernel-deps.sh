#!/usr/bin/env bash
# Installs what integration/kernels/run.sh needs to boot another kernel as a guest, only what is
# missing: QEMU (Debian), kmod (depmod for the kernel package's modules), busybox-static and file
# (virtme-ng's initramfs and kernel version detection), and virtme-ng (PyPI, pinned).
# Run as root. Safe to run again: a no-op when everything is there.
set -euo pipefail

VIRTME_NG_VERSION=1.42
pkgs=(qemu-system-x86 kmod busybox-static file)

. "$(dirname "$0")/debs.sh"
debs__install_missing "${pkgs[@]}" || exit 1

have=$(python3 -m pip show virtme-ng 2>/dev/null || true)
if ! grep -qx "Version: $VIRTME_NG_VERSION" <<<"$have"; then
	echo "spanprof: installing virtme-ng $VIRTME_NG_VERSION (PyPI)" >&2
	python3 -m pip install -q "virtme-ng==$VIRTME_NG_VERSION" >&2
fi
