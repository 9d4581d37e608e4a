# A CPython program for the BPF walk test (test/test_python_bpf.c): one thread spins in a
# known call chain while the main thread waits on stdin. Prints "ready NATIVE_TID" for the
# spinning thread, then exits when stdin closes. Runs on CPython 3.8 and later.
import os
import sys
import threading


def spin_inner():
    n = 0
    while True:
        n += 1


def spin_outer():
    spin_inner()


def main_block(tid):
    sys.stdout.write("ready %d\n" % tid)
    sys.stdout.flush()
    sys.stdin.readline()
    os._exit(0)


def run(box):
    box.append(threading.get_native_id())
    spin_outer()


if __name__ == "__main__":
    box = []
    threading.Thread(target=run, args=(box,), daemon=True).start()
    while not box:
        pass
    main_block(box[0])
