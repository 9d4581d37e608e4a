# Workload of integration/test_python.py's code-object reuse test. Two threads compile their own
# source again and again, call the function it defines once and drop it: a function `handler`
# at line 1 in both, in two files whose paths differ by one character, with bodies of one size
# on other lines (second's is moved down). Each code object is freed after its call, so one
# thread's is often made at the address the other's just left, with the same name, the same
# first line and the same size. The truth: run_first only ever runs the first file's handler,
# run_second only the second's.
# Prints {"pid"} once both threads run, waits for a line on stdin, runs SECONDS of wall time,
# then prints {"cpu": seconds of CPU time of the process}.
# With "subinterp" third, a second interpreter is made as the run starts (3.12+): 3.13 numbers
# code objects per interpreter, so the agent must stop keying frames by their versions.
# Usage: python pysamename.py SECONDS [ascii|latin] [subinterp]
import json
import os
import sys
import threading
import time

# argv[2] "ascii": short ASCII paths; "latin": non-ASCII paths of 300 characters (a
# PyCompactUnicodeObject, more than 256 bytes) that differ only at their end.
if sys.argv[2:3] == ["latin"]:
    DIR = "/nonexistent/spanprof-\u00e9t\u00e9/" + "d" * 260
else:
    DIR = "/nonexistent"
FIRST = DIR + "/spanprof-code-a.py"
SECOND = DIR + "/spanprof-code-b.py"
SRC_FIRST = "def handler(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n"
SRC_SECOND = "def handler(n):\n\n\n\n\n\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n"
GO = threading.Event()
STOP = threading.Event()


def churn(src, path):
    GO.wait()
    while not STOP.is_set():
        ns = {}
        exec(compile(src, path, "exec"), ns)
        ns["handler"](3000)


def run_first():
    churn(SRC_FIRST, FIRST)


def run_second():
    churn(SRC_SECOND, SECOND)


threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
for t in threads:
    t.start()
sys.stdout.write(json.dumps({"pid": os.getpid()}) + "\n")
sys.stdout.flush()
sys.stdin.readline()
GO.set()
if sys.argv[3:4] == ["subinterp"]:
    try:
        import _interpreters as subinterpreters
    except ImportError:
        import _xxsubinterpreters as subinterpreters
    KEEP = subinterpreters.create()
    subinterpreters.run_string(KEEP, "def f():\n    return 1\nf()\n")
time.sleep(float(sys.argv[1]))
STOP.set()
for t in threads:
    t.join()
sys.stdout.write(json.dumps({"cpu": time.process_time()}) + "\n")
sys.stdout.flush()
