# Workload of bench/runtime/python_bpf.c and walk_time.py: one thread spins DEPTH Python frames
# deep (argv[1]), <module> + DEPTH + 1 calls + spin. argv[2] "distinct": the DEPTH + 1 calls are
# to as many functions, each its own code object (a walker's per-code-object work in every
# frame), instead of one recursive function (that work once per walk).
import sys


def spin():
    n = 0
    while True:
        n += 1


def rec(n):
    if n:
        return rec(n - 1)
    return spin()


def chain(depth):
    """f0 -> f1 -> ... -> f<depth> -> spin: the entry of a chain of distinct functions."""
    src = "".join(f"def f{i}():\n    return f{i + 1}()\n\n" for i in range(depth))
    src += f"def f{depth}():\n    return spin()\n"
    names = {"spin": spin}
    exec(compile(src, __file__, "exec"), names)
    return names["f0"]


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    distinct = len(sys.argv) > 2 and sys.argv[2] == "distinct"
    entry = chain(depth) if distinct else None
    print("ready", flush=True)
    if distinct:
        entry()
    else:
        rec(depth)
