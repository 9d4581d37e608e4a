# A multi-threaded CPython program with a known call chain per thread, for the Python-frame
# tests (integration/test_python.py). Runs on CPython 3.8 and later.
#
#   python pythreads.py SECONDS
#
# Each thread reaches its leaf function, writes down its own chain as the interpreter sees it
# (sys._getframe: module.qualname, file, the leaf's lines) and waits; the main thread prints one
# JSON line with every thread's chain and native TID, then waits for a line on stdin ("go": the
# agent samples), lets the threads run for SECONDS and exits.
#
#   alpha, beta, gamma  burn CPU in their own Python functions (beta in methods of a class,
#                       gamma 12 calls deep by recursion)
#   delta               burns CPU in a C extension (zlib.compress) called from its leaf
#   churn               burns CPU calling functions compiled at run time and dropped at once
#                       (their code objects are freed and their addresses reused), each turn's
#                       at other first lines
#   sleeper             blocked in time.sleep
#   waiter              blocked on a lock the main thread holds
import json
import os
import sys
import threading
import time
import zlib

GO = threading.Event()
STOP = [False]  # not an Event: is_set() would be a Python frame above every leaf
READY = {}
READY_LOCK = threading.Lock()
HELD = threading.Lock()


def frame_name(f):
    """module.qualname as spanprof names a frame (co_qualname from 3.11, co_name before)."""
    code = f.f_code
    base = os.path.basename(code.co_filename)
    module = base[:-3] if base.endswith(".py") else ""
    if base == "__init__.py":
        module = os.path.basename(os.path.dirname(code.co_filename))
    name = getattr(code, "co_qualname", code.co_name)
    return module + "." + name if module else name


def lines_of(tag):
    """The lines of this file marked with the comment '# leaf:TAG'."""
    with open(__file__) as f:
        return [i + 1 for i, line in enumerate(f) if line.rstrip().endswith("# leaf:" + tag)]


def report(name, tag, work):
    """Called by a thread's leaf: writes down its chain (root first), then waits for GO."""
    chain = []
    f = sys._getframe(1)
    while f is not None:
        chain.append({"function": frame_name(f), "file": f.f_code.co_filename})
        f = f.f_back
    chain.reverse()
    with READY_LOCK:
        READY[name] = {"tid": threading.get_native_id(), "chain": chain,
                       "leaf_lines": lines_of(tag), "work": work}
    GO.wait()


def alpha_leaf():
    report("alpha", "alpha", "cpu")
    n = 0
    while not STOP[0]:  # leaf:alpha
        for i in range(2000):  # leaf:alpha
            n += i  # leaf:alpha
    return n


def alpha_middle():
    return alpha_leaf()


def alpha_outer():
    return alpha_middle()


class Beta:
    def spin(self):
        report("beta", "beta", "cpu")
        x = 1.0
        while not STOP[0]:  # leaf:beta
            for _ in range(2000):  # leaf:beta
                x = x * 1.000001 + 0.5  # leaf:beta
        return x

    def step(self):
        return self.spin()

    def run(self):
        return self.step()


def gamma_leaf():
    report("gamma", "gamma", "cpu")
    s = ""
    while not STOP[0]:  # leaf:gamma
        for i in range(500):  # leaf:gamma
            s = str(i) + s[:10]  # leaf:gamma
    return s


def gamma_rec(depth):
    if depth == 0:
        return gamma_leaf()
    return gamma_rec(depth - 1)


DATA = os.urandom(1 << 20)  # incompressible: deflate runs long without the GIL


def delta_leaf():
    report("delta", "delta", "cpu-native")
    data = DATA
    while not STOP[0]:  # leaf:delta
        zlib.compress(data, 6)  # leaf:delta


def delta_outer():
    delta_leaf()


CHURN_SRC = """
def churn_f{k}(n):
    return churn_g{k}(n)

def churn_g{k}(n):
    s = 0
    for i in range(n):
        s += i
    return s
"""


# Each turn's functions start a few lines further down (0-16): code objects made one after the
# other differ by their version (3.12+) and their first line by a few, what a weak fingerprint
# confused (version v at line l with version v ^ l ^ l' at line l').
CHURN_PAD = ["\n" * i for i in range(17)]


def churn_leaf():
    report("churn", "churn", "cpu-churn")
    k = 0
    while not STOP[0]:  # leaf:churn
        ns = {}  # leaf:churn
        exec(compile(CHURN_PAD[k % 17] + CHURN_SRC.format(k=k), "<churn>", "exec"), ns)  # leaf:churn
        ns["churn_f%d" % k](300)  # leaf:churn
        k += 1  # leaf:churn


def sleeper_inner():
    report("sleeper", "sleeper", "sleep")
    while not STOP[0]:  # leaf:sleeper
        time.sleep(0.003)  # leaf:sleeper


def sleeper_outer():
    sleeper_inner()


def waiter_wait():
    report("waiter", "waiter", "lock")
    while not STOP[0]:  # leaf:waiter
        if HELD.acquire(timeout=0.05):  # leaf:waiter
            HELD.release()  # leaf:waiter


def waiter_outer():
    waiter_wait()


def thread_cpu():
    """Each thread's CPU time (utime + stime, /proc/PID/task/TID/stat): what the test sizes its
    expected sample counts from."""
    cpu = {}
    for name, t in READY.items():
        try:
            with open("/proc/self/task/%d/stat" % t["tid"]) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu[name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            cpu[name] = 0.0
    return cpu


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    HELD.acquire()
    targets = {"alpha": alpha_outer, "beta": Beta().run, "gamma": lambda: gamma_rec(12),
               "delta": delta_outer, "churn": churn_leaf, "sleeper": sleeper_outer,
               "waiter": waiter_outer}
    threads = [threading.Thread(target=t, name=n, daemon=True) for n, t in targets.items()]
    for t in threads:
        t.start()
    while True:
        with READY_LOCK:
            if len(READY) == len(targets):
                break
        time.sleep(0.01)
    print(json.dumps({"pid": os.getpid(), "version": list(sys.version_info[:3]),
                      "file": os.path.abspath(__file__), "threads": READY}), flush=True)
    sys.stdin.readline()
    cpu0 = thread_cpu()
    GO.set()
    time.sleep(seconds)
    cpu = thread_cpu()
    print(json.dumps({"cpu": {n: cpu[n] - cpu0[n] for n in cpu}}), flush=True)
    STOP[0] = True
    os._exit(0)


if __name__ == "__main__":
    main()
