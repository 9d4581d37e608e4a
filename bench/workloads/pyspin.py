# Workload of bench/runtime/python_bpf.c: one thread spins DEPTH Python frames deep (argv[1]).
import sys


def spin():
    n = 0
    while True:
        n += 1


def rec(n):
    if n:
        return rec(n - 1)
    return spin()


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    print("ready", flush=True)
    rec(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
