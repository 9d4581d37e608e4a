#!/usr/bin/env bash
# Regenerates the seed-* inputs of the fuzz targets, test/fuzz/corpus/<name>/seed-*, from the
# sources in test/fuzz/seeds/ (ELF files), from this machine's /proc (maps files) and from the
# texts below (kallsyms, environ, cgroup, process context payloads, thread-context records,
# perf maps and jitdump files).
# Run from anywhere (`make fuzz-seeds`); needs gcc, g++, objcopy, protoc and python3.
# The ELF seeds are built reproducibly (paths mapped); the maps seeds are this machine's.
# Other files in the corpus directories (minimized inputs, crash-* reproducers) are left alone.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/test/fuzz/seeds
out=$root/test/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

for t in cfi symbolize procmaps procctx threadctx ksyms procmeta perfmap jitdump python; do
	mkdir -p "$out/$t"
	rm -f "$out/$t"/seed-*
done

# --- ELF files: both ELF targets get all of them -----------------------------------------------
# Small files: no separate code segment, 4 KiB pages; reproducible: paths mapped, no .comment.
CFLAGS=(-Wall -fdebug-prefix-map="$src"=seeds -fdebug-prefix-map="$tmp"=build)
LDFLAGS=(-Wl,-z,noseparate-code -Wl,-z,max-page-size=0x1000 -Wl,--build-id)
TINY=(-DNOSTDLIB -nostdlib -static -fno-pie -no-pie)

elf() { # name, compiler and flags...
	local name=$1
	shift
	"$@" "${CFLAGS[@]}" "${LDFLAGS[@]}" -o "$name"
	objcopy --remove-section .comment "$name"
}

# Executables: .eh_frame + DWARF 5; DWARF 4; .debug_frame only (no unwind tables); .debug_frame
# and DWARF compressed (SHF_COMPRESSED, zlib); hand-written CFI in .eh_frame and .debug_frame.
elf tiny-eh gcc -O2 -g "${TINY[@]}" "$src/prog.c"
elf tiny-dwarf4 gcc -O2 -gdwarf-4 "${TINY[@]}" "$src/prog.c"
elf tiny-debugframe gcc -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables "${TINY[@]}" \
	"$src/prog.c"
objcopy --compress-debug-sections=zlib tiny-debugframe tiny-zdebug
elf asm-cfi gcc -nostdlib -static -no-pie "$src/cfi.S"
# Split debug info: the stripped file names its debug file in .gnu_debuglink.
cp tiny-eh tiny-split
objcopy --only-keep-debug tiny-split tiny-split.debug
objcopy --strip-debug --add-gnu-debuglink=tiny-split.debug tiny-split
# Without a build ID only the debuglink CRC finds the debug file.
elf tiny-nobid gcc -O2 -g "${TINY[@]}" -Wl,--build-id=none "$src/prog.c"
objcopy --only-keep-debug tiny-nobid tiny-nobid.debug
objcopy --strip-debug --add-gnu-debuglink=tiny-nobid.debug tiny-nobid
# CFI only in the debug file, compressed (the file has neither .eh_frame nor .debug_frame).
cp tiny-debugframe tiny-cfisplit
objcopy --only-keep-debug --compress-debug-sections=zlib tiny-cfisplit tiny-cfisplit.debug
objcopy --strip-debug tiny-cfisplit
# glibc programs: PIE with .eh_frame_hdr, PLT CFI, .dynsym (-rdynamic: the TLS variable too);
# C++ with exceptions (personality, LSDA) and mangled names.
elf glibc-pie gcc -O2 -g -fPIE -pie -rdynamic "$src/prog.c"
elf cxx-eh g++ -O2 -g1 -fPIE -pie "$src/cxxprog.cpp"
# Libraries reaching the TLS variable each way tlsctx classifies.
LIB=(gcc -O2 -fPIC -shared -nostdlib "$src/tlslib.c")
elf lib-tlsdesc.so "${LIB[@]}" -mtls-dialect=gnu2
elf lib-gd.so "${LIB[@]}" -mtls-dialect=gnu
elf lib-ld-hidden.so "${LIB[@]}" -mtls-dialect=gnu -DVIS='"hidden"'
elf lib-ld-hidden-tlsdesc.so "${LIB[@]}" -mtls-dialect=gnu2 -DVIS='"hidden"'
elf lib-ie-extern.so "${LIB[@]}" -ftls-model=initial-exec -DEXTERN

# MiniDebugInfo as Fedora ships it: stripped, the function symbols in .gnu_debugdata (xz ELF).
cp tiny-eh tiny-mdi
objcopy --only-keep-debug tiny-mdi tiny-mdi.dbg
nm tiny-mdi.dbg --format=sysv --defined-only |
	awk -F '|' '$4 ~ "FUNC" { gsub(/ +$/, "", $1); print $1 }' | sort >tiny-mdi.keep
objcopy -S --remove-section '.debug_*' --keep-symbols=tiny-mdi.keep tiny-mdi.dbg tiny-mdi.mini
xz tiny-mdi.mini
strip --strip-all tiny-mdi
objcopy --add-section .gnu_debugdata=tiny-mdi.mini.xz tiny-mdi
cp tiny-mdi "$out/symbolize/seed-tiny-mdi"

for f in tiny-eh tiny-dwarf4 tiny-debugframe tiny-zdebug asm-cfi tiny-split tiny-split.debug \
	glibc-pie cxx-eh lib-tlsdesc.so lib-gd.so lib-ld-hidden.so lib-ld-hidden-tlsdesc.so \
	lib-ie-extern.so; do
	cp "$f" "$out/cfi/seed-$f"
	cp "$f" "$out/symbolize/seed-$f"
done
# A file and its debug file in one input (see fuzz_elf_split() in fuzz.h).
for f in tiny-split tiny-nobid tiny-cfisplit; do
	cat "$f" "$f.debug" >"$out/cfi/seed-pair-$f"
	cp "$out/cfi/seed-pair-$f" "$out/symbolize/seed-pair-$f"
done

# Bare CFI sections for fuzz_cfi (see wrap_section() there): kind byte (1: .debug_frame),
# section address (8 bytes, little endian), section bytes.
python3 - "$out/cfi" asm-cfi cxx-eh glibc-pie tiny-eh tiny-debugframe <<'EOF'
import struct, sys
out = sys.argv[1]
for path in sys.argv[2:]:
    elf = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3a)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    strtab = shdrs[shstrndx][4]
    for name, type_, flags, addr, off, size, *_ in shdrs:
        sname = elf[strtab + name:elf.index(b"\0", strtab + name)].decode()
        if sname in (".eh_frame", ".debug_frame") and type_ != 8:  # not SHT_NOBITS
            kind = 1 if sname == ".debug_frame" else 0
            with open(f"{out}/seed-raw-{path}{sname.replace('.', '-')}", "wb") as f:
                f.write(bytes([kind]) + struct.pack("<Q", addr) + elf[off:off + size])
EOF

# --- /proc/PID/maps: real ones (this machine's) and the odd lines proc(5) allows ---------------
cat /proc/self/maps >"$out/procmaps/seed-self-cat"
python3 -c 'import sys; sys.stdout.write(open("/proc/self/maps").read())' \
	>"$out/procmaps/seed-self-python"
cat >"$out/procmaps/seed-odd" <<'EOF'
00400000-00401000 r-xp 00000000 08:01 1234                               /opt/app/bin/server
00401000-00402000 rw-p 00001000 08:01 1234                               /opt/app/bin/server (deleted)
7f0000000000-7f0000001000 r--p 00000000 00:00 0                          [anon:OTEL_CTX]
7f0000001000-7f0000002000 rw-s 00000000 00:01 4321                       /memfd:OTEL_CTX (deleted)
7f0000002000-7f0000003000 rw-s 00000000 00:01 4322                       [anon_shmem:OTEL_CTX]
7f0000003000-7f0000004000 r-xp 00000000 08:01 99                         /tmp/dir with spaces/lib\012name.so
7f0000004000-7f0000005000 ---p 00000000 00:00 0 
7f0000005000-7f0000005000 r--p 00000000 00:00 0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
7ffd000fe000-7ffd00100000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
EOF
# Out of order (sorted by the parser), then an overlap (rejected).
cat >"$out/procmaps/seed-unsorted" <<'EOF'
7f0000002000-7f0000003000 r-xp 00002000 fd:00 42	/usr/lib/libx.so
7f0000000000-7f0000001000 r--p 00000000 fd:00 42	/usr/lib/libx.so
7f0000001000-7f0000002000 r--p 00001000 fd:00 42	/usr/lib/libx.so
EOF
printf '%s\n' '1000-3000 r-xp 00000000 00:00 0' '2000-4000 r-xp 00000000 00:00 0' \
	'zz-1000 r-xp 00000000 00:00 0' >"$out/procmaps/seed-bad"

# --- /proc/kallsyms ----------------------------------------------------------------------------
cat >"$out/ksyms/seed-kallsyms" <<'EOF'
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81001000 T do_one_initcall
ffffffff81001200 t trace_initcall_start_cb
ffffffff81001300 W arch_cpu_idle
ffffffff81002000 D some_data
ffffffff81003000 w weak_text
ffffffffc0a01000 t nf_conntrack_init	[nf_conntrack]
ffffffffc0a01100 T nf_ct_get_tuple	[nf_conntrack]
ffffffffc0b02000 t ext4_fill_super	[ext4]
ffffffffc0b02080 t __pfx_ext4_mount	[ext4]
EOF
# kptr_restrict: every address reads as zero.
printf '%s\n' '0000000000000000 T _stext' '0000000000000000 t foo [mod]' >"$out/ksyms/seed-restricted"

# --- /proc/PID/environ and /proc/PID/cgroup ----------------------------------------------------
printf 'PATH=/usr/bin\0OTEL_SERVICE_NAME=checkout\0OTEL_RESOURCE_ATTRIBUTES=service.name=cart,deployment.environment=prod%%2Ceu, team = a%%20b \0HOME=/root\0' \
	>"$out/procmeta/seed-environ"
printf 'OTEL_RESOURCE_ATTRIBUTES=service.name=api,bad%%zz=1\0OTEL_SERVICE_NAME=\0' \
	>"$out/procmeta/seed-environ-bad"
printf '%s\n' '0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope' \
	>"$out/procmeta/seed-cgroup-docker"
printf '%s\n' '12:memory:/kubepods/burstable/pod1234/cri-containerd-ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope' \
	'0::/kubepods.slice/kubepods-pod1.slice/crio-conmon-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope' \
	>"$out/procmeta/seed-cgroup-k8s"
# Kubernetes: pod uids (systemd and cgroupfs drivers, the colon form) and kubelet log names.
printf '%s\n' '0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope' \
	'1:name=systemd:/kubepods/besteffort/pod1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef' \
	'2:cpu:/system.slice/containerd.service/kubepods-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice:cri-containerd:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef' \
	'shop_checkout-7d9f_1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d' \
	'checkout-7d9f_shop_app-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.log' \
	>"$out/procmeta/seed-k8s-pod"
# cgroup v1: one line per hierarchy, no container.
printf '%s\n' '12:pids:/user.slice/user-1000.slice' '4:memory:/user.slice' '1:name=systemd:/init.scope' \
	'0::/user.slice/user-1000.slice/session-2.scope' >"$out/procmeta/seed-cgroup-v1"

# --- process context payloads (OTEP 4719), encoded by protoc ---------------------------------
encode() { # name, message type, text
	printf '%s\n' "$3" | protoc --proto_path="$root/otlp-proto" --encode="$2" \
		"$root/otlp-proto/opentelemetry/proto/processcontext/v1development/process_context.proto" \
		>"$out/procctx/seed-$1"
}
PC=opentelemetry.proto.processcontext.v1development.ProcessContext
RES=opentelemetry.proto.resource.v1.Resource
encode full $PC '
resource {
  attributes { key: "service.name" value { string_value: "checkout" } }
  attributes { key: "service.instance.id" value { string_value: "a1b2" } }
  attributes { key: "process.pid" value { int_value: 4242 } }
  attributes { key: "sampled" value { bool_value: true } }
  attributes { key: "ratio" value { double_value: 0.1 } }
  attributes { key: "tags" value { array_value { values { string_value: "x" } } } }
  attributes { key: "blob" value { bytes_value: "\001\002" } }
  attributes { key: "nested" value { kvlist_value { values { key: "k" value { int_value: 1 } } } } }
}
attributes { key: "threadlocal.schema_version" value { string_value: "tlsdesc_v1_dev" } }
attributes { key: "threadlocal.attribute_key_map" value { array_value {
  values { string_value: "http.route" } values { int_value: 7 } values { string_value: "user.id" } } } }'
encode keymap-in-resource $PC '
resource {
  attributes { key: "service.name" value { int_value: 1 } }
  attributes { key: "threadlocal.attribute_key_map" value { array_value {
    values { string_value: "a" } values { string_value: "b" } } } }
}'
encode bare-resource $RES '
attributes { key: "service.name" value { string_value: "legacy" } }
attributes { key: "threadlocal.schema_version" value { string_value: "v1" } }
dropped_attributes_count: 3'
encode empty $PC ''

# --- thread-context records (OTEP 4947): header 28 bytes, then {key, length, value} ------------
python3 - "$out/threadctx" <<'EOF'
import struct, sys
out = sys.argv[1]
trace = bytes(range(1, 17))
span = bytes(range(0xa0, 0xa8))

def rec(attrs, valid=1, flags=1, size=None, tid=trace):
    n = len(attrs) if size is None else size
    return tid + span + struct.pack("<BBH", valid, flags, n) + attrs

def attr(k, v):
    return bytes([k, len(v)]) + v

seeds = {
    "ok": rec(attr(0, b"/api/cart") + attr(2, b"user-17")),
    "dup-key": rec(attr(1, b"first") + attr(1, b"second") + attr(255, b"")),
    "no-attrs": rec(b""),
    "not-valid": rec(attr(0, b"x"), valid=0),
    "zero-trace": rec(attr(0, b"x"), tid=bytes(16)),
    "too-big": rec(b"", size=613),
    "truncated": rec(attr(0, b"abc"), size=40),
    "cut-entry": rec(attr(0, b"abc")[:-1] + b"\x05\xff"),
    "full": rec(b"".join(attr(i, bytes([0x41 + i % 26]) * 10) for i in range(51))[:612]),
}
for name, data in seeds.items():
    with open(f"{out}/seed-{name}", "wb") as f:
        f.write(data)
EOF

# --- perf maps and jitdump files (runtime/jit, runtime/jit): written by the profiled
# program, so as hostile as any input -----------------------------------------------------------
cat >"$out/perfmap/seed-v8" <<'EOF'
3ef1b6c0b240 3c Builtin:ArgumentsAdaptorTrampoline
3ef1b6c0c000 1a0 JS:*fib /app/x.js:3:13
0x3ef1b6c0c100 0x40 JS:~main file:///app/x.js:10:1
3ef1b6c0c0f0 20 LazyCompile:*replaced /app/x.js:20
7f0000001000 10 Interpreter
EOF
printf '%s\n' '0x00007ffae0940b80 0x0000000000017de0 Interpreter' \
	'0x00007ffae0960000 0x0000000000000100 long JitChain.innerWork(int)' \
	'1000 0 zero' 'ffffffffffffffff 10 wrap' 'zz 10 bad' >"$out/perfmap/seed-jvm"
python3 - "$out/jitdump" <<'EOF'
import struct, sys
out = sys.argv[1]
def header(magic=0x4A695444):
    return struct.pack("<IIIIIIQQ", magic, 1, 40, 62, 0, 4242, 1, 0)
def rec(rid, body):
    return struct.pack("<IIQ", rid, 16 + len(body), 2) + body
def load(addr, size, name, index=1):
    return rec(0, struct.pack("<IIQQQQ", 4242, 4243, addr, addr, size, index) + name + b"\0" +
               b"\xc3" * size)
def move(old, new, size, index=1):
    return rec(1, struct.pack("<IIQQQQQ", 4242, 4243, new, old, new, size, index))
def debug(addr, rows):
    body = struct.pack("<QQ", addr, len(rows))
    for a, line, name in rows:
        body += struct.pack("<QII", a, line, 0) + name + b"\0"
    return rec(2, body)
seeds = {
    "loads": header() + debug(0x1000, [(0x1000, 10, b"/app/x.js"), (0x1008, 11, b"\xff"),
                                       (0x1010, 20, b"/app/y.js")]) +
             load(0x1000, 0x20, b"JS:*fib") + load(0x2000, 0x10, b"Builtin:Add", 2),
    "move": header() + load(0x1000, 0x20, b"moved") + move(0x1000, 0x5000, 0x20) +
            load(0x5010, 8, b"over") + move(0x9000, 0x7000, 0x10),
    "close-unknown": header() + rec(99, b"\0" * 8) + rec(4, b"\0" * 24) + load(0x1000, 8, b"a") +
                     rec(3, b"") + load(0x2000, 8, b"after"),
    "swapped": header(0x4454694A) + load(0x1000, 8, b"x"),
    "bad-size": header() + load(0x1000, 8, b"ok") + struct.pack("<IIQ", 0, 3, 0),
}
for name, data in seeds.items():
    with open(f"{out}/seed-{name}", "wb") as f:
        f.write(data)
EOF

# --- CPython (exporter/runtime/python/): line tables, _Py_DebugOffsets, sample frames ----------
# Selector byte first (fuzz_python.c). Line tables: this python3's own co_linetable (PEP 657 on
# 3.11+), and PEP 626 / lnotab pairs written here; debug offsets: the first 584 bytes of a
# 3.13 libpython's .PyRuntime section when pyenv has one (none: no such seed).
py313=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13.*/lib/libpython3.13.so.1.0 2>/dev/null |
	head -n 1 || true)
python3 - "$out/python" "$py313" <<'EOF'
import struct, subprocess, sys
out, lib = sys.argv[1], sys.argv[2]

def lines(fmt, first, off, table):
    return bytes([0, fmt]) + struct.pack("<ii", first, off) + table

def sample(stop, cut, frames):  # frames leaf first: n, L (loop), p, P (entry)
    code = {"n": 0, "L": 1, "p": 0x80, "P": 0x81}
    return bytes([2, stop, cut]) + bytes(code[c] for c in frames)

def f(x):
    y = x + 1
    if y:
        return [i * y for i in range(x)]
    return None

seeds = {
    "pep657": lines(3, f.__code__.co_firstlineno, 6, f.__code__.co_linetable),
    "pep626": lines(2, 10, 4, bytes([2, 1, 4, 0x80, 6, 2])),
    "lnotab": lines(1, 10, 8, bytes([2, 1, 4, 0xff, 6, 3])),
    "merge-311": sample(1, 0, "nnLnLnn" + "ppPpP"),
    "merge-cut": sample(6, 0, "nLnLnLn" + "pPpp"),
}
if lib:
    sec = subprocess.run(["objcopy", "-O", "binary", "--only-section=.PyRuntime", lib,
                          "/dev/stdout"], capture_output=True, check=True).stdout
    seeds["debug-offsets-313"] = bytes([1]) + sec[:584]
for name, data in seeds.items():
    with open(f"{out}/seed-{name}", "wb") as fh:
        fh.write(data)
EOF

chmod 0644 "$out"/*/seed-*
for t in cfi symbolize procmaps procctx threadctx ksyms procmeta perfmap jitdump python; do
	printf '  %-10s %3d seeds, %s\n' "$t" "$(ls "$out/$t"/seed-* | wc -l)" \
		"$(du -ch "$out/$t"/seed-* | tail -1 | cut -f1)"
done
