#!/usr/bin/env python3
"""Puts Debian sid's CPython 3.14 (the interpreter linked into /usr/bin/python3.14, as Debian's
python3.11) into a private root for the Python tests: no Debian 12 package ships 3.14.

    scripts/cpython-3.14.py OUT        (make cpython-3.14: OUT = build/cpython-3.14)

Chain of trust: sid's InRelease, checked with gpgv against the machine's Debian archive keyring
(debian-archive-keyring), gives the SHA256 of main/binary-amd64/Packages.xz; the index gives
each package's file name, version and SHA256; every download is checked against it. The
packages below (the interpreter, its standard library and the sid libraries they link, their
current versions as the index says) are unpacked with `dpkg -x` into OUT/root, and
OUT/root/usr/bin/python3.14 gets sid's dynamic loader and an RPATH into OUT/root (patchelf,
`make deps` installs it), so that it runs here without touching the system. CPython then finds
its prefix (OUT/root/usr) from its own path. glibc's debug files (libc6-dbg) go beside its
libraries, in .debug/, where their .gnu_debuglink is looked for: the tests expect a thread's
stack to start at glibc's start_thread, as the machine's own libc6-dbg names it for Debian 12's
libc. No compile: about 25 MB of downloads.

Cached: OUT/root is kept and the whole step skipped while OUT/ok names the versions it was made
from and the interpreter runs; downloads are kept in OUT/debs. Exit status 0, or 1 with a
message saying what failed (the tests then skip CPython 3.14, saying it is absent).
"""
import hashlib
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITE = "sid"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# The interpreter, its standard library, and the sid libraries they load (their Depends, without
# what a private root does not need: tzdata, media-types, netbase, ca-certificates).
PACKAGES = [
    "python3.14-minimal", "libpython3.14-minimal", "libpython3.14-stdlib", "python3.14",
    "libc6", "libgcc-s1", "libexpat1", "zlib1g", "libffi8", "libzstd1", "liblzma5",
    "libbz2-1.0", "libssl3t64", "libsqlite3-0", "libncursesw6", "libtinfo6", "libreadline8t64",
    "libuuid1", "libmpdec4", "libcrypt1", "libgdbm6t64", "libdb5.3t64",
    # glibc's debug files: its .symtab names start_thread, clone3 (a thread's root frames).
    "libc6-dbg",
]
EXE = "usr/bin/python3.14"
LIBDIRS = ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu")
LOADER = "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"


def fail(msg):
    print(f"spanprof: cpython-3.14: {msg}", file=sys.stderr)
    sys.exit(1)


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            return r.read()
    except OSError as e:
        fail(f"cannot download {url}: {e}")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def verified_index(out):
    """The Packages index of sid main amd64, its SHA256 checked against the signed InRelease."""
    inrelease = fetch(f"{MIRROR}/dists/{SUITE}/InRelease")
    with tempfile.NamedTemporaryFile(dir=out) as f:
        f.write(inrelease)
        f.flush()
        res = subprocess.run(["gpgv", "--keyring", KEYRING, "--output", "-", f.name],
                             capture_output=True)
    if res.returncode != 0:
        fail(f"sid's InRelease does not verify against {KEYRING} (gpgv): "
             f"{res.stderr.decode(errors='replace').strip()[-300:]}")
    want = None
    in_sha = False
    for line in res.stdout.decode().splitlines():
        if not line.startswith(" "):
            in_sha = line == "SHA256:"
            continue
        parts = line.split()
        if in_sha and len(parts) == 3 and parts[2] == "main/binary-amd64/Packages.xz":
            want = parts[0]
    if not want:
        fail("sid's InRelease lists no SHA256 for main/binary-amd64/Packages.xz")
    xz = fetch(f"{MIRROR}/dists/{SUITE}/main/binary-amd64/Packages.xz")
    if sha256(xz) != want:
        fail("Packages.xz does not match the SHA256 of the signed InRelease")
    return lzma.decompress(xz).decode("utf-8", errors="replace")


def stanzas(index, wanted):
    """{package: {field: value}} of the index's stanzas for the @wanted packages."""
    out = {}
    for block in index.split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if line and not line[0].isspace() and ":" in line:
                k, _, v = line.partition(":")
                fields[k] = v.strip()
        name = fields.get("Package")
        if name in wanted and fields.get("Architecture") in ("amd64", "all"):
            out[name] = fields
    return out


def runs(root):
    exe = root / EXE
    if not exe.exists():
        return False
    res = subprocess.run([str(exe), "-c", "import sys, zlib, threading, json; "
                          "print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    return res.returncode == 0 and res.stdout.strip() == "3.14"


def main():
    if len(sys.argv) != 2:
        fail("usage: cpython-3.14.py OUT")
    out = Path(sys.argv[1]).resolve()
    root, debs, stamp = out / "root", out / "debs", out / "ok"
    if stamp.exists() and runs(root):
        return 0
    for tool in ("dpkg", "patchelf", "gpgv"):
        if not shutil.which(tool):
            fail(f"{tool} is missing (make deps installs it)")
    if not Path(KEYRING).exists():
        fail(f"{KEYRING} is missing (Debian package debian-archive-keyring)")
    out.mkdir(parents=True, exist_ok=True)
    debs.mkdir(exist_ok=True)
    found = stanzas(verified_index(out), set(PACKAGES))
    missing = [p for p in PACKAGES if p not in found]
    if missing:
        fail(f"not in sid's index: {' '.join(missing)}")
    tmp = out / "root.new"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    versions = []
    for name in PACKAGES:
        st = found[name]
        deb = debs / Path(st["Filename"]).name
        data = deb.read_bytes() if deb.exists() else b""
        if sha256(data) != st["SHA256"]:
            data = fetch(f"{MIRROR}/{st['Filename']}")
            if sha256(data) != st["SHA256"]:
                fail(f"{st['Filename']} does not match the SHA256 of sid's index")
            deb.write_bytes(data)
        subprocess.run(["dpkg", "-x", str(deb), str(tmp)], check=True)
        versions.append(f"{name} {st['Version']}")
    # glibc's debug files where a debugger (and the agent, symbols/debugfile.c) looks for a
    # library's .gnu_debuglink: the .debug/ directory beside it (Debian names each
    # <build-id without its first byte>.debug, as under /usr/lib/debug/.build-id/xx/).
    dbg = tmp / LIBDIRS[0] / ".debug"
    dbg.mkdir(exist_ok=True)
    for f in sorted((tmp / "usr/lib/debug/.build-id").glob("*/*.debug")):
        if not (dbg / f.name).exists():
            os.link(f, dbg / f.name)
    # Sid's loader and libraries, found from the root (RPATH: for the extension modules'
    # own dependencies too, as RUNPATH would not be).
    rpath = ":".join(str(root / d) for d in LIBDIRS)
    subprocess.run(["patchelf", "--set-interpreter", str(root / LOADER), "--force-rpath",
                    "--set-rpath", rpath, str(tmp / EXE)], check=True)
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    if not runs(root):
        fail(f"{root / EXE} does not run")
    stamp.write_text("\n".join(versions) + "\n")
    print(f"spanprof: CPython 3.14 ({found['python3.14-minimal']['Version']}, Debian sid) "
          f"in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
