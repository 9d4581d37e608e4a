# Workload of integration/test_python.py's uprobe cost test: makes and frees code objects as
# fast as it can (copies of one function's code object, code.replace()), for SECONDS of wall
# time, from one thread: each free is a hit of the agent's code-deallocation uprobe while that
# is attached.
# Prints {"pid"} at start, waits for a line on stdin, runs, then prints {"freed": code objects
# made and freed}.
# Usage: python pyfrees.py SECONDS
import json
import os
import sys
import time


def template():
    return 1


sys.stdout.write(json.dumps({"pid": os.getpid()}) + "\n")
sys.stdout.flush()
sys.stdin.readline()
code = template.__code__
freed = 0
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(1000):
        copy = code.replace(co_name="copy")
        del copy
    freed += 1000
sys.stdout.write(json.dumps({"freed": freed}) + "\n")
sys.stdout.flush()
