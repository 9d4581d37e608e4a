# Workload of integration/test_python.py's fingerprint test. One thread, turn after turn:
# compiles a function turn_N into a file of its own (spanprof-turn-N.py), its def at line
# 1 + N % 17, and calls it; then makes a lambda with eval() and calls it (the lambda sums a
# generator expression); then drops both. Code objects are made one after the other, freed and
# their addresses taken by the next turns', with versions (3.12+) a few apart and first lines a
# few apart: what a weak fingerprint of (version, first line) confuses.
# The truth: drive() calls turn_N only at its line marked "# call:turn" and the lambda only at
# its line marked "# call:lambda"; turn_N runs only its own body.
# Prints {"pid", "turn_line", "lambda_line"} at start, waits for a line on stdin, runs SECONDS of
# wall time, then prints {"cpu": seconds of CPU time, "turns": turns made}.
# Usage: python pyturns.py SECONDS
import json
import os
import sys
import time

BODY = "def turn_{n}(k):\n    s = 0\n    for i in range(k):\n        s += i * {n}\n    return s\n"


def marked(tag):
    with open(__file__) as f:
        return next(i + 1 for i, line in enumerate(f) if line.rstrip().endswith("# call:" + tag))


def drive(seconds):
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        names = {}
        src = "\n" * (n % 17) + BODY.format(n=n)
        exec(compile(src, f"/nonexistent/spanprof-turn-{n}.py", "exec"), names)
        names[f"turn_{n}"](20000 + (n % 5) * 2000)  # call:turn
        fn = eval(f"lambda k: sum(j * {n} for j in range(k))", {}, {})
        fn(15000)  # call:lambda
        n += 1
    return n


sys.stdout.write(json.dumps({"pid": os.getpid(), "turn_line": marked("turn"),
                             "lambda_line": marked("lambda")}) + "\n")
sys.stdout.flush()
sys.stdin.readline()
turns = drive(float(sys.argv[1]))
sys.stdout.write(json.dumps({"cpu": time.process_time(), "turns": turns}) + "\n")
sys.stdout.flush()
