# A CPython program for the BPF walk test (test/runtime/test_python_bpf.c): one thread spins in a
# known call chain (CPU samples) while the main thread sleeps 10 ms at a time in another
# (off-CPU samples). Prints "ready NATIVE_TID" for the spinning thread, then runs until killed.
# Runs on CPython 3.8 and later.
import sys
import threading
import time


def spin_inner():
    n = 0
    while True:
        n += 1


def spin_outer():
    spin_inner()


def main_wait(tid):
    sys.stdout.write("ready %d\n" % tid)
    sys.stdout.flush()
    while True:
        time.sleep(0.01)


def run(box):
    box.append(threading.get_native_id())
    spin_outer()


if __name__ == "__main__":
    box = []
    threading.Thread(target=run, args=(box,), daemon=True).start()
    while not box:
        pass
    main_wait(box[0])
