#!/usr/bin/env python3
"""bench/unwind_truth: spanprof's user stacks against `perf record --call-graph dwarf` on real
Debian programs built without frame pointers.

For each workload (default: /usr/bin/python3 running a CPU-bound script, redis-server under
redis-benchmark on loopback), the script starts the program, then runs concurrently for the same
window (default 15 s):

    spanprof record --pid PID --frequency 99 --duration S --output-dir TMP
    perf record -e cpu-clock -F 99 --call-graph dwarf,16384 -p PID -o TMP/perf.data -- sleep S

and compares the *user* stacks of the two profiles (kernel frames dropped on both sides):

  * spanprof: TMP/profile.pb.gz (pprof, decoded here), kernel locations dropped, each location
    named by its physical function (the outermost of its lines: profile.folded shows inlined
    functions as frames of their own, e.g. libc's with libc6-dbg installed);
  * perf: `perf script -F comm,pid,tid,ip,sym,dso --no-inline` (demangled by perf), frames of
    [kernel.kallsyms] dropped.

Frame names are normalized before comparing: symbol versions (`@@GLIBC_2.34`) are stripped and
aliases (several symbols at the same address of the same file, e.g. __libc_start_main and
__libc_start_main_impl) are mapped to one name read from the files' symbol tables (readelf -sW);
`__vdso_` prefixes are dropped. GCC clone suffixes (.constprop.0, .isra.0,
.part.0) are dropped (spanprof names clones from DWARF, perf from ELF). Frames without a symbol
(static functions of stripped binaries such as Debian's python3.11) are named by the function
holding them: the start of their .eh_frame FDE (`[python3.11:fn@0x5dee60]`), looked up at the
pc for the leaf and at return address - 1 for callers (perf prints return address - 1 for
callers already). Stacks are thus sequences of physical functions on both sides.

The two tools sample independently, so sample-by-sample pairing is impossible; the comparison is
between the two distributions of distinct stacks weighted by their counts:

  * spanprof in perf: share of spanprof samples whose full leaf-to-root sequence is also a stack
    perf recorded (any count); perf in spanprof: the converse;
  * the same allowing for perf's truncation: a spanprof stack also counts as matched when a perf
    stack that does not reach a root frame is a leaf-side prefix of it;
  * distribution overlap: sum over stacks of min(share in spanprof, share in perf);
  * root reach: share of samples whose outermost frame is a thread root (_start, clone3, clone,
    start_thread, __libc_start_main for processes without _start).

It prints the figures, the largest unmatched stacks on both sides and where they diverge (first
differing frame from the leaf against the perf stack with the same leaf and the longest common
leaf-side prefix). Needs root. Installs redis-server/redis-tools with apt-get only if missing.
Never fails on the figures.

Usage: python3 bench/unwind/unwind_truth.py [--build DIR] [--seconds S] [--hz HZ] [--only python|redis]
                                     [--deep N] [--keep DIR]
"""
import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
import benchproc
from benchproc import CHILDREN, BenchError, spawn

ROOT_FRAMES = {"_start", "clone3", "__clone3", "clone", "__clone", "start_thread",
               "__libc_start_main", "__libc_start_call_main"}
THREAD_ROOTS = {"_start", "clone3", "__clone3", "clone", "__clone"}
PY = "/usr/bin/python3"
REDIS_PORT = 6399

PY_SCRIPT = r'''
import json, re, sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def strings(n):
    s = {}
    for i in range(n):
        k = "k%d" % (i % 1000)
        s[k] = s.get(k, 0) + len(k.upper())
    return s
def nested(d):
    return {"a": nested(d - 1), "b": [d, str(d)]} if d else {"leaf": 1}
def sortit(n):
    return sorted(((i * 7919) % 10007 for i in range(n)), key=lambda x: -x)
doc = nested(40)
deep = nested(int(sys.argv[2])) if len(sys.argv) > 2 and int(sys.argv[2]) else None
pat = re.compile(r"(\w+)=(\d+);")
text = ";".join("key%d=%d" % (i, i * 3) for i in range(2000)) + ";"
end = time.time() + float(sys.argv[1])
while time.time() < end:
    fib(18); strings(20000); sortit(20000)
    json.loads(json.dumps(doc)); pat.findall(text)
    if deep is not None:
        for _ in range(20):
            json.dumps(deep)
'''



def log(msg):
    print(f"unwind_truth: {msg}", file=sys.stderr, flush=True)


def stop(p, sig=signal.SIGKILL, timeout=60):
    benchproc.stop(p, sig, timeout, group=True)


# --- preparation ---------------------------------------------------------------------------

def ensure_redis():
    if shutil.which("redis-server") and shutil.which("redis-benchmark"):
        return
    log("installing redis-server redis-tools with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "redis-server",
                    "redis-tools"], check=True, env=env, stdout=subprocess.DEVNULL)
    # The package may start the service (systemd): that one is not ours to profile.
    subprocess.run(["service", "redis-server", "stop"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def fp_report(path):
    """How many functions of @path set up a frame pointer (push %rbp; mov %rsp,%rbp)."""
    path = os.path.realpath(path)
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True,
                         text=True).stdout
    funcs = out.count(">:\n")
    fp = len(re.findall(r"push\s+%rbp\n[^\n]*mov\s+%rsp,%rbp", out))
    secs = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    dbg = ".debug_info" in secs
    return f"{path}: {fp} of {funcs} disassembled functions set up RBP as a frame pointer; " \
           f"{'has' if dbg else 'no'} .debug_info; .eh_frame {'present' if '.eh_frame ' in secs else 'MISSING'}"


# --- symbol aliases ------------------------------------------------------------------------

def strip_version(name):
    return name.split("@", 1)[0]


def debug_file(path):
    """The separate debug file of @path (/usr/lib/debug/.build-id/xx/yyyy.debug) or None."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID:\s*([0-9a-f]+)", out)
    if not m:
        return None
    f = Path("/usr/lib/debug/.build-id") / m.group(1)[:2] / (m.group(1)[2:] + ".debug")
    return str(f) if f.exists() else None


def alias_map(paths):
    """{name: canonical name} for FUNC symbols sharing an address in one of @paths (their
    separate debug files included: both tools read them)."""
    amap = {}
    for path in paths:
        out = ""
        for f in (path, debug_file(path)):
            if not f:
                continue
            try:
                out += subprocess.run(["readelf", "-sW", f], capture_output=True, text=True,
                                      timeout=60).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
        by_addr = collections.defaultdict(set)
        for line in out.splitlines():
            f = line.split()
            if len(f) < 8 or not f[0].endswith(":") or f[3] not in ("FUNC", "IFUNC"):
                continue
            if f[6] == "UND":
                continue
            try:
                addr = int(f[1], 16)
            except ValueError:
                continue
            by_addr[addr].add(strip_version(f[7]))
        for names in by_addr.values():
            if len(names) > 1:
                # Canonical: the name without leading underscores first, then the shortest.
                canon = min(names, key=lambda n: (n.startswith("_"), len(n), n))
                for n in names:
                    amap.setdefault(n, canon)
    return amap


CLONE_RE = re.compile(r"\.(constprop|isra|part|lto_priv|localalias)(\.\d+)*$")


def norm_name(name, amap):
    name = strip_version(name)
    name = CLONE_RE.sub("", name)  # GCC clones: spanprof names them from DWARF, perf from ELF
    if name.startswith("__vdso_"):
        name = name[len("__vdso_"):]
    return amap.get(name, name)


class FuncIndex:
    """Start of the function (FDE of .eh_frame) holding a file offset: the identity of frames
    without a symbol, so that two pcs of one unnamed function compare equal."""

    def __init__(self):
        self.cache = {}

    def _load(self, path):
        loads, fdes = [], []
        try:
            ph = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
            fr = subprocess.run(["readelf", "--debug-dump=frames", path], capture_output=True,
                                text=True, timeout=120).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        for line in ph.splitlines():
            f = line.split()
            if f and f[0] == "LOAD":
                loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # off, vaddr, filesz
        for m in re.finditer(r" FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", fr):
            fdes.append((int(m.group(1), 16), int(m.group(2), 16)))
        fdes.sort()
        return loads, fdes, [a for a, _ in fdes]

    def lookup(self, path, off, name):
        import bisect
        if path not in self.cache:
            self.cache[path] = self._load(path)
        t = self.cache[path]
        if not t:
            return None
        loads, fdes, starts = t
        for poff, vaddr, filesz in loads:
            if poff <= off < poff + filesz:
                va = off - poff + vaddr
                i = bisect.bisect_right(starts, va) - 1
                if i >= 0 and fdes[i][0] <= va < fdes[i][1]:
                    return f"[{name}:fn@0x{fdes[i][0]:x}]"
                return None
        return None


FUNCS = FuncIndex()


def unknown_frame(path, off, leaf):
    """Name of a frame without a symbol at file offset @off (a return address unless @leaf)."""
    base = os.path.basename(path)
    fn = FUNCS.lookup(path, off if leaf else off - 1, base)
    return fn or f"[{base}+0x{off:x}]"


# --- parsing -------------------------------------------------------------------------------

UNKNOWN_RE = re.compile(r"^\[(.+)\+0x([0-9a-f]+)\]$")


def pb_fields(buf):
    """Yields (field number, wire type, value) of a protobuf message (varint / length only)."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            ln, i = varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise BenchError(f"pprof: wire type {wt}")
        yield fn, wt, v


def varint(buf, i):
    r = shift = 0
    while True:
        b = buf[i]
        i += 1
        r |= (b & 0x7F) << shift
        if b < 0x80:
            return r, i
        shift += 7


def ints(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def read_spanprof_pprof(path, amap):
    """Counter {(leaf, ..., root): samples} of user frames from spanprof's profile.pb.gz, each
    location named by its physical function (the outermost of its inlined lines)."""
    import gzip
    buf = gzip.decompress(Path(path).read_bytes())
    strings, samples, mappings, locations, functions = [], [], {}, {}, {}
    for fn, wt, v in pb_fields(buf):
        if fn == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif fn == 2:
            locs, vals = [], []
            for f2, w2, v2 in pb_fields(v):
                if f2 == 1:
                    locs += ints(w2, v2)
                elif f2 == 2:
                    vals += ints(w2, v2)
            samples.append((locs, vals[0] if vals else 1))
        elif fn == 3:
            m = {f2: v2 for f2, _, v2 in pb_fields(v)}
            mappings[m.get(1, 0)] = m
        elif fn == 4:
            loc = {"lines": []}
            for f2, _, v2 in pb_fields(v):
                if f2 == 4:
                    loc["lines"].append({f3: v3 for f3, _, v3 in pb_fields(v2)}.get(1, 0))
                else:
                    loc[f2] = v2
            locations[loc.get(1, 0)] = loc
        elif fn == 5:
            f = {f2: v2 for f2, _, v2 in pb_fields(v)}
            functions[f.get(1, 0)] = f
    names = {}
    for lid, loc in locations.items():
        m = mappings.get(loc.get(2, 0))
        fname = strings[m.get(5, 0)] if m else ""
        kernel = fname.startswith("[kernel") or fname.startswith("[vmlinux") or \
            (m is None and loc.get(3, 0) >= 0xffff800000000000)
        name = ""
        if loc["lines"]:
            f = functions.get(loc["lines"][-1], {})  # innermost first: last = physical
            name = strings[f.get(2, 0)] or strings[f.get(3, 0)]
        if kernel:
            names[lid] = None
        elif name:
            names[lid] = norm_name(name, amap)
        elif m and fname:
            addr = loc.get(3, 0)
            off = addr - m.get(2, 0) + m.get(4, 0) if addr >= m.get(2, 0) else addr
            names[lid] = (fname, off)  # named per sample: leaf or return address
        else:
            names[lid] = "[unknown]"
    stacks = collections.Counter()
    for locs, n in samples:
        frames = []
        for l in locs:
            nm = names.get(l)
            if nm is None:
                continue
            if isinstance(nm, tuple):
                nm = unknown_frame(nm[0], nm[1], not frames)
            frames.append(nm)
        stacks[tuple(frames)] += n
    return stacks


def read_perf(perf_data, amap, dsos):
    # --max-stack: perf script would cut callchains at kernel.perf_event_max_stack (127).
    argv = ["perf", "script", "-i", perf_data, "--max-stack", "4096", "-F", "comm,pid,tid,ip,sym,dso",
            "--no-inline"]
    res = subprocess.run(argv, capture_output=True, text=True)
    if res.returncode:
        raise BenchError(f"perf script: {res.stderr[-2000:]}")
    stacks = collections.Counter()
    frame_re = re.compile(r"^\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)$")
    cur, first_user = None, True

    def flush():
        if cur is not None:
            stacks[tuple(cur)] += 1

    for line in res.stdout.splitlines():
        if not line.strip():
            flush()
            cur = None
            continue
        if cur is None:  # header: comm pid/tid
            cur, first_user = [], True
            continue
        m = frame_re.match(line)
        if not m:
            continue
        ip, sym, dso = int(m.group(1), 16), m.group(2), m.group(3)
        if dso.startswith("[kernel") or dso.endswith(".ko") or "kallsyms" in dso:
            continue
        if dso.startswith("/"):
            dsos.add(dso)
        if sym == "[unknown]":
            if dso in ("unknown", "[unknown]"):
                name = "[unknown]"
            else:  # perf prints return address - 1 for callers: back to the return address
                name = unknown_frame(dso, ip if first_user else ip + 1, first_user)
        else:
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            name = norm_name(sym, amap)
        cur.append(name)
        first_user = False
    flush()
    return stacks


def renormalize(stacks, amap):
    return collections.Counter({tuple(norm_name(f, amap) if not f.startswith("[") else f
                                      for f in s): n for s, n in stacks.items()} or {})


# --- comparison ----------------------------------------------------------------------------

def reaches_root(stack):
    return bool(stack) and stack[-1] in ROOT_FRAMES


def compare(sp, pf):
    nsp, npf = sum(sp.values()), sum(pf.values())
    r = {"sp_samples": nsp, "perf_samples": npf, "sp_distinct": len(sp), "perf_distinct": len(pf)}
    r["sp_in_perf"] = sum(n for s, n in sp.items() if s in pf) / max(nsp, 1)
    r["perf_in_sp"] = sum(n for s, n in pf.items() if s in sp) / max(npf, 1)
    # perf's truncated stacks (the 16 KiB stack copy ran out) end in a bogus [unknown] frame.
    truncated = set()
    for s in pf:
        if not reaches_root(s):
            while s and s[-1] == "[unknown]":
                s = s[:-1]
            truncated.add(s)

    def matched_trunc(s):
        if s in pf:
            return True
        return any(s[:k] in truncated for k in range(1, len(s) + 1))

    r["sp_in_perf_trunc"] = sum(n for s, n in sp.items() if matched_trunc(s)) / max(nsp, 1)
    r["overlap"] = sum(min(sp[s] / max(nsp, 1), pf[s] / max(npf, 1)) for s in sp if s in pf)
    # Good-Turing: share of perf's distribution made of stacks perf saw only once ~ the chance
    # that a further sample from the same distribution has a stack perf never recorded.
    f1 = sum(1 for n in pf.values() if n == 1)
    r["ceiling_sp_in_perf"] = 1 - f1 / max(npf, 1)
    f1s = sum(1 for n in sp.values() if n == 1)
    r["ceiling_perf_in_sp"] = 1 - f1s / max(nsp, 1)
    edges = {(s[i], s[i + 1]) for s in pf for i in range(len(s) - 1)}
    leaves = {s[0] for s in pf if s}
    r["sp_edges"] = sum(n for s, n in sp.items() if reaches_root(s) and all(
        (s[i], s[i + 1]) in edges for i in range(len(s) - 1))) / max(nsp, 1)
    r["sp_edges_leaf"] = sum(n for s, n in sp.items() if reaches_root(s) and s[0] in leaves and all(
        (s[i], s[i + 1]) in edges for i in range(len(s) - 1))) / max(nsp, 1)
    r["sp_root"] = sum(n for s, n in sp.items() if reaches_root(s)) / max(nsp, 1)
    r["perf_root"] = sum(n for s, n in pf.items() if reaches_root(s)) / max(npf, 1)
    r["sp_depth"] = sum(len(s) * n for s, n in sp.items()) / max(nsp, 1)
    r["perf_depth"] = sum(len(s) * n for s, n in pf.items()) / max(npf, 1)
    r["sp_max_depth"] = max((len(s) for s in sp), default=0)
    r["perf_max_depth"] = max((len(s) for s in pf), default=0)
    r["sp_outer"] = collections.Counter()
    for s, n in sp.items():
        if not reaches_root(s):
            r["sp_outer"][s[-1] if s else "(empty)"] += n
    r["perf_outer"] = collections.Counter()
    for s, n in pf.items():
        if not reaches_root(s):
            r["perf_outer"][s[-1] if s else "(empty)"] += n
    return r


def divergence(stack, other):
    """(index, frame here, frame there) of the first difference against the stack of @other with
    the longest common leaf-side prefix."""
    best, best_k = None, -1
    for o in other:
        k = 0
        while k < len(stack) and k < len(o) and stack[k] == o[k]:
            k += 1
        if k > best_k:
            best, best_k = o, k
    if best is None:
        return None
    here = stack[best_k] if best_k < len(stack) else "(end)"
    there = best[best_k] if best_k < len(best) else "(end)"
    return best_k, here, there


def show(stack, width=200):
    s = ";".join(reversed(stack))
    return s if len(s) <= width else "..." + s[-width:]


def report(name, r, sp, pf, top):
    print(f"\n== {name}")
    print(f"samples: spanprof {r['sp_samples']} ({r['sp_distinct']} distinct user stacks, mean "
          f"depth {r['sp_depth']:.1f}, max {r['sp_max_depth']}); perf {r['perf_samples']} "
          f"({r['perf_distinct']} distinct, mean depth {r['perf_depth']:.1f}, max {r['perf_max_depth']})")
    print(f"spanprof samples whose stack perf also recorded:      {100 * r['sp_in_perf']:.1f}%")
    print(f"  same, allowing perf stacks truncated before a root: {100 * r['sp_in_perf_trunc']:.1f}%")
    print(f"  ceiling from sampling alone (1 - perf stacks seen once / perf samples): "
          f"{100 * r['ceiling_sp_in_perf']:.1f}%")
    print(f"perf samples whose stack spanprof also recorded:      {100 * r['perf_in_sp']:.1f}% "
          f"(ceiling {100 * r['ceiling_perf_in_sp']:.1f}%)")
    print(f"spanprof samples reaching a root whose every caller->callee pair perf also saw: "
          f"{100 * r['sp_edges']:.1f}% (and leaf function too: {100 * r['sp_edges_leaf']:.1f}%)")
    print(f"distribution overlap (sum of min shares):             {100 * r['overlap']:.1f}%")
    print(f"samples reaching a thread root: spanprof {100 * r['sp_root']:.1f}%, perf {100 * r['perf_root']:.1f}%")
    if r["sp_outer"]:
        print("  spanprof stacks not reaching a root end at: " + ", ".join(
            f"{f} ({n})" for f, n in r["sp_outer"].most_common(5)))
    if r["perf_outer"]:
        print("  perf stacks not reaching a root end at: " + ", ".join(
            f"{f} ({n})" for f, n in r["perf_outer"].most_common(5)))
    for title, mine, theirs in (("spanprof stacks perf never recorded", sp, pf),
                                ("perf stacks spanprof never recorded", pf, sp)):
        miss = [(n, s) for s, n in mine.items() if s not in theirs]
        miss.sort(reverse=True)
        if not miss:
            continue
        print(f"largest {title} (samples: root;...;leaf | first difference from the leaf):")
        div = collections.Counter()
        by_leaf = collections.defaultdict(list)
        for s in theirs:
            by_leaf[s[0] if s else None].append(s)
        for n, s in miss:
            d = divergence(s, by_leaf.get(s[0] if s else None, []))
            if d:
                div[(d[1], d[2])] += n
        for n, s in miss[:top]:
            d = divergence(s, by_leaf.get(s[0] if s else None, []))
            where = f"frame {d[0]}: {d[1]} vs {d[2]}" if d else "no stack with this leaf"
            print(f"  {n:5d}  {show(s)} | {where}")
        if div:
            print("  divergence points (this side vs other side, samples): " + "; ".join(
                f"{a} vs {b} ({n})" for (a, b), n in div.most_common(6)))


# --- runs ----------------------------------------------------------------------------------

def wait_ready(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise BenchError(f"{what} not ready after {timeout} s")


def profile(args, spanprof, pid, tmp):
    """Runs spanprof and perf on @pid concurrently for args.seconds."""
    perf_data = tmp / "perf.data"
    sp_err = open(tmp / "spanprof.stderr", "w")
    sp = spawn([spanprof, "record", "--pid", pid, "--frequency", args.hz, "--duration",
                args.seconds, "--quiet", "--verbose", "--output-dir", tmp], stdout=sp_err,
               stderr=sp_err)
    pf_err = open(tmp / "perf.stderr", "w")
    pf = spawn(["perf", "record", "-q", "-e", "cpu-clock", "-F", args.hz, "--call-graph",
                f"dwarf,{args.stack_size}", "-p", pid, "-o", perf_data, "--", "sleep",
                args.seconds], stdout=pf_err, stderr=pf_err)
    for p, what in ((pf, "perf"), (sp, "spanprof")):
        try:
            p.wait(timeout=args.seconds + 120)
        except subprocess.TimeoutExpired:
            raise BenchError(f"{what} did not stop")
        CHILDREN.remove(p)
        if p.returncode:
            errf = tmp / ("perf.stderr" if p is pf else "spanprof.stderr")
            raise BenchError(f"{what} exited {p.returncode}: {errf.read_text()[-2000:]}")
    summary = [ln for ln in (tmp / "spanprof.stderr").read_text().splitlines()
               if "user stacks:" in ln or "dropped" in ln]
    return tmp / "profile.folded", perf_data, summary


def run_python(args, spanprof, tmp):
    script = tmp / "work.py"
    script.write_text(PY_SCRIPT)
    w = spawn([PY, script, args.seconds + 60, args.deep], stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        if w.poll() is not None:
            raise BenchError("python workload exited")
        return profile(args, spanprof, w.pid, tmp)
    finally:
        stop(w)


def run_redis(args, spanprof, tmp):
    ensure_redis()
    srv = spawn(["redis-server", "--port", REDIS_PORT, "--bind", "127.0.0.1",
                 "--protected-mode", "yes", "--save", "", "--appendonly", "no",
                 "--daemonize", "no", "--dir", tmp, "--logfile", tmp / "redis.log"],
                stdout=subprocess.DEVNULL)
    bench = None
    try:
        def up():
            r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(REDIS_PORT), "ping"],
                               capture_output=True, text=True)
            return r.stdout.strip() == "PONG"
        wait_ready(up, 20, "redis-server")
        bench = spawn(["redis-benchmark", "-h", "127.0.0.1", "-p", REDIS_PORT, "-q", "-l",
                       "-n", 200000, "-c", 20, "-P", 8, "-r", 100000,
                       "-t", "set,get,incr,lpush,rpop,sadd,hset,zadd,lrange_100,mset"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        return profile(args, spanprof, srv.pid, tmp)
    finally:
        if bench:
            stop(bench)
        stop(srv, signal.SIGTERM, timeout=20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--hz", type=int, default=99)
    ap.add_argument("--stack-size", type=int, default=16384, help="perf --call-graph dwarf,SIZE")
    ap.add_argument("--only", choices=["python", "redis"])
    ap.add_argument("--deep", type=int, default=0,
                    help="python: also encode a JSON document nested DEEP levels (C recursion "
                    "in _json: stacks deeper than perf's stack copy)")
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--keep", help="copy each run's outputs (folded, perf script text) here")
    args = ap.parse_args()
    if os.geteuid():
        raise BenchError("needs root")
    spanprof = Path(args.build).resolve() / "spanprof"
    if not spanprof.exists():
        raise BenchError(f"{spanprof} missing: make BUILD={args.build} all")
    for tool in ("perf", "readelf", "objdump"):
        if not shutil.which(tool):
            raise BenchError(f"{tool} missing")

    print(f"unwind_truth: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, kernel "
          f"{os.uname().release}, {os.cpu_count()} CPUs, {args.hz} Hz, {args.seconds} s, perf "
          f"--call-graph dwarf,{args.stack_size}")
    runs = [("python", run_python, PY), ("redis", run_redis, "redis-server")]
    failed = False
    for name, fn, exe in runs:
        if args.only and args.only != name:
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f"spanprof-truth-{name}-"))
        try:
            log(f"{name}: profiling for {args.seconds} s")
            folded, perf_data, summary = fn(args, spanprof, tmp)
            dsos = set()
            pf_raw = read_perf(perf_data, {}, dsos)
            amap = alias_map(sorted(dsos))
            pf = renormalize(pf_raw, amap)
            sp = read_spanprof_pprof(folded.parent / "profile.pb.gz", amap)
            r = compare(sp, pf)
            print(f"\n{fp_report(shutil.which(exe))}")
            for ln in summary:
                print(ln)
            label = f"{name} ({exe}" + (f", JSON nested {args.deep} deep)" if name == "python" and args.deep else ")")
            report(label, r, sp, pf, args.top)
            if args.keep:
                keep = Path(args.keep) / name
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(folded, keep / "profile.folded")
                with open(keep / "perf.folded", "w") as f:
                    for s, n in pf.most_common():
                        f.write(f"{';'.join(reversed(s))} {n}\n")
                with open(keep / "spanprof.user.folded", "w") as f:
                    for s, n in sp.most_common():
                        f.write(f"{';'.join(reversed(s))} {n}\n")
        except (BenchError, subprocess.CalledProcessError) as e:
            log(f"{name}: error: {e}")
            failed = True
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # perf.data included
    return 1 if failed else 0


if __name__ == "__main__":
    benchproc.run_main(main, log, stop)
