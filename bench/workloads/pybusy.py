# Workload of bench/runtime/python_agent.py: THREADS threads (argv[1], default 3) burning CPU in
# Python, thread k DEPTH + 5k frames deep (argv[2], default 10), under the process name pybusy
# (so the bench counts its samples among the host's). Runs until killed; prints "ready" first.
import sys
import threading


def work(n):
    s = 0
    for i in range(200):
        s += (i * n) % 7
    return s


def spin(n):
    while True:
        work(n)


def rec(n, depth):
    if depth:
        return rec(n, depth - 1)
    return spin(n)


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    try:
        with open("/proc/self/comm", "w") as f:  # threads started below inherit it
            f.write("pybusy")
    except OSError:
        pass
    nthreads = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    for k in range(1, nthreads):
        threading.Thread(target=rec, args=(k, depth + 5 * k), daemon=True).start()
    print("ready", flush=True)
    rec(0, depth)
