# A CPython program with a known state, read from outside by test/runtime/test_python.c.
# Each thread sits blocked in its own call chain (a lock, time.sleep, an Event, recursion,
# non-ASCII names, code compiled from a string with long line gaps and wide columns). Once
# every stack is still, one reporting thread prints what the interpreter itself says about
# them (sys._current_frames(), id() of code objects, f_lasti, f_lineno) and the line of every
# instruction of the test's code objects (co_lines(), or dis.findlinestarts() before 3.10),
# then waits for commands on stdin. Runs on CPython 3.8 and later. Output, tab separated:
#   version HEX | self IDENT | thread IDENT NATIVE_ID | frame CODE_ID LASTI LINENO
#   | code CODE_ID FIRSTLINENO QUALNAME FILENAME | line CODE_ID OFFSET LINE | end
import dis
import os
import sys
import threading
import time

lock = threading.Lock()
lock.acquire()
stop = threading.Event()
natives = {}


def out(*fields):
    sys.stdout.buffer.write("\t".join(str(f) for f in fields).encode("utf-8") + b"\n")


def qualname(co):
    return getattr(co, "co_qualname", co.co_name)


class Worker:
    def run(self):
        self.inner()

    def inner(self):
        lock.acquire()


def alpha():
    beta()


def beta():
    time.sleep(3600)


def gamma(n):
    if n:
        return gamma(n - 1)
    stop.wait()


def naïve_функция():
    𠀀()


def 𠀀():
    stop.wait()


GEN_SRC = (
    "def generated():\n"
    "    x = 1\n" + "\n" * 300 + "    y = (" + " + ".join(["x"] * 120) + ")\n"
    "    stop.wait()\n"
    "    return y\n"
)
gen_ns = {"stop": stop}
exec(compile(GEN_SRC, "/generated/gen_\U0001f40d.py", "exec"), gen_ns)
generated = gen_ns["generated"]


def callback(x):
    stop.wait()
    return x


def via_c():
    # map() is C: callback runs in a call of the interpreter loop of its own.
    return list(map(callback, [1]))


def main_block():
    stop.wait()


def start(fn, *args):
    def run():
        natives[threading.get_ident()] = threading.get_native_id()
        fn(*args)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def lines_of(co):
    if hasattr(co, "co_lines"):
        for start_, end, line in co.co_lines():
            for off in range(start_, end, 2):
                yield off, -1 if line is None else line
        return
    starts = list(dis.findlinestarts(co))
    for off in range(0, len(co.co_code), 2):
        line = co.co_firstlineno
        for s, l in starts:
            if s <= off:
                line = l
        yield off, line


def snapshot(me):
    frames = sys._current_frames()
    snap = {}
    for ident, f in frames.items():
        if ident == me:
            continue
        chain = []
        while f is not None:
            chain.append((id(f.f_code), f.f_lasti, f.f_lineno, f.f_code))
            f = f.f_back
        snap[ident] = chain
    return snap


def report():
    me = threading.get_ident()
    markers = {"inner", "beta", "gamma", "𠀀", "generated", "callback", "main_block"}
    prev, still = None, 0
    while still < 5:  # the same stacks 5 polls in a row, each in its marker function
        time.sleep(0.02)
        snap = snapshot(me)
        key = {i: [(c, l) for c, l, _, _ in ch] for i, ch in snap.items()}
        ok = len(snap) == 7 and all(
            any(co.co_name in markers for _, _, _, co in ch) for ch in snap.values())
        still = still + 1 if ok and key == prev else 0
        prev = key
    out("version", hex(sys.hexversion))
    out("self", me)
    codes = {}
    for ident, chain in snap.items():
        native = natives.get(ident, threading.main_thread().native_id)
        out("thread", ident, native)
        for cid, lasti, lineno, co in chain:
            out("frame", cid, lasti, -1 if lineno is None else lineno)
            codes[cid] = co
    for co in (Worker.inner, alpha, gamma, 𠀀, generated, lines_of, report):
        co = getattr(co, "__code__", co)
        codes[id(co)] = co
    for cid, co in codes.items():
        out("code", cid, co.co_firstlineno, qualname(co), co.co_filename)
        for off, line in lines_of(co):
            out("line", cid, off, line)
    out("end")
    sys.stdout.flush()
    for cmd in sys.stdin:
        if cmd.strip() == "reuse":
            reuse()
        if cmd.strip() == "freed":
            freed()
        if cmd.strip() == "subinterp":
            subinterp()
        if cmd.strip() == "many":
            many()
    os._exit(0)  # stdin closed: the test is done


def reuse():
    # Frees a code object and compiles others of the same size until one gets its address.
    src = "def f_%d():\n    return %d\n"
    ns = {}
    exec(src % (0, 0), ns)
    old = id(ns["f_0"].__code__)
    del ns["f_0"]
    for i in range(1, 10000):
        co = compile(src % (i, i), "/reused/r.py", "exec").co_consts[0]
        if id(co) == old:
            out("reused", old, qualname(co), co.co_filename, co.co_firstlineno)
            sys.stdout.flush()
            reuse.keep = co
            return
        del co
    out("reused", 0)
    sys.stdout.flush()


def freed():
    # A freed code object as pymalloc leaves it: every field in place but the first word,
    # ob_refcnt, which holds the free list's next block. Made deterministic: a copy of a live
    # code object (its names and line table stay alive) whose first word is a heap address.
    import ctypes
    co = lines_of.__code__
    size = sys.getsizeof(co)
    freed.buf = ctypes.create_string_buffer(ctypes.string_at(id(co), size), size)
    addr = ctypes.addressof(freed.buf)
    ctypes.memmove(addr, ctypes.byref(ctypes.c_uint64(id(freed) + 64)), 8)
    out("freed", addr, id(co))
    sys.stdout.flush()


def many():
    # 600 more code objects, kept alive: "many ID ID ..." (the reader's cache grows past them).
    ns = {}
    exec("".join("def many_%d():\n    return %d\n" % (i, i) for i in range(600)), ns)
    many.keep = [ns["many_%d" % i] for i in range(600)]
    out("many", *[id(f.__code__) for f in many.keep])
    sys.stdout.flush()


def subinterp():
    # A second interpreter, kept alive, that makes code objects of its own (3.12:
    # _xxsubinterpreters, 3.13: _interpreters; none before): "subinterp 1", or "subinterp 0".
    try:
        import _interpreters as mod
    except ImportError:
        try:
            import _xxsubinterpreters as mod
        except ImportError:
            out("subinterp", 0)
            sys.stdout.flush()
            return
    iid = mod.create()
    mod.run_string(iid, "def f():\n    return 1\nf()\n")
    subinterp.keep = iid
    out("subinterp", 1)
    sys.stdout.flush()


if __name__ == "__main__":
    start(Worker().run)
    start(alpha)
    start(gamma, 5)
    start(naïve_функция)
    start(generated)
    start(via_c)
    threading.Thread(target=report, daemon=True).start()
    main_block()
