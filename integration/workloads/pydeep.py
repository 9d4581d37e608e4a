# Workload of integration/test_python.py's deep-stack test: recursion DEPTH calls deep into
# deep(), whose innermost call runs spin() for SECONDS of CPU time. Prints one JSON line
# ({"pid", "depth"}) once the recursion is in place, waits for a line on stdin ("go": the agent
# samples), burns, then prints {"cpu": seconds of CPU time burnt} and exits.
# Usage: python pydeep.py DEPTH SECONDS
import json
import os
import sys
import time


def spin(seconds):
    sys.stdout.write(json.dumps({"pid": os.getpid(), "depth": DEPTH}) + "\n")
    sys.stdout.flush()
    os.read(0, 64)  # the gate ("go"): a C call, where readline() runs Python frames of codecs
    t0 = time.process_time()
    x = 0
    while time.process_time() - t0 < seconds:  # leaf:spin
        for i in range(20000):  # leaf:spin
            x += i  # leaf:spin
    return time.process_time() - t0


def deep(n, seconds):
    if n == 0:
        return spin(seconds)
    return deep(n - 1, seconds)


DEPTH = int(sys.argv[1])
sys.setrecursionlimit(DEPTH + 100)
cpu = deep(DEPTH, float(sys.argv[2]))
sys.stdout.write(json.dumps({"cpu": cpu}) + "\n")
sys.stdout.flush()
