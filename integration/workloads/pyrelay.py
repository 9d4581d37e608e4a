# Workload of integration/test_python.py's code-object cache test. One thread, turn after
# turn: makes a function turn_N as if from a file of its own (spanprof-relay-N.py), its def at
# line 1 + N % 17 (a copy of one template code object, with its name, file, line and hop
# depth replaced), calls it for TURN_CPU seconds of CPU time, and drops it. turn_N is never the
# innermost frame: it calls hop(N % 4, ...), which calls itself N % 4 times before it spins.
# So the BPF walk keeps turn_N's code object in its code-object cache, the object is freed at
# the end of the turn, and the next turn's turn_M is made at its address (the ids printed at
# the end say how often). A cache entry kept past the free would name turn_M's frames turn_N.
# The truth, checkable in each sample: drive() calls turn_N only at its line marked
# "# call:turn", and below turn_N are exactly N % 4 + 1 hop frames.
# Prints {"pid", "turn_line"} at start, waits for a line on stdin, runs SECONDS of wall time
# and at least MIN_TURNS turns, then prints {"cpu": seconds of CPU time, "turns": turns made, "addresses": distinct code
# object addresses among them}.
# Usage: python pyrelay.py SECONDS [MIN_TURNS [TURN_CPU]] (TURN_CPU: seconds, default 0.6)
import json
import os
import sys
import time
import types

# The template. Its hop depth is a float: 3.14 loads a small int with LOAD_SMALL_INT, not from
# co_consts, where turn_code() puts each turn's depth.
BODY = "def turn_{n}(cpu):\n    return hop({d}.0, cpu)\n"
TURN_CPU = 0.6


def marked(tag):
    with open(__file__) as f:
        return next(i + 1 for i, line in enumerate(f) if line.rstrip().endswith("# call:" + tag))


def spin(cpu):
    end = time.thread_time() + cpu
    s = 0
    while time.thread_time() < end:
        s += 1
    return s


def hop(d, cpu):
    if d:
        return hop(d - 1, cpu)
    return spin(cpu)


def turn_fields(template, n):
    consts = tuple(float(n % 4) if type(c) is float else c for c in template.co_consts)
    return (f"turn_{n}", f"/nonexistent/spanprof-relay-{n}.py", 1 + n % 17, consts)


def turn_code(template, fields):
    """The template with @fields replaced, as keywords (** would make a dict, which would take
    the memory of the code object freed just before)."""
    name, filename, line, consts = fields
    if hasattr(template, "co_qualname"):
        return template.replace(co_name=name, co_qualname=name, co_filename=filename,
                                co_firstlineno=line, co_consts=consts)
    return template.replace(co_name=name, co_filename=filename, co_firstlineno=line,
                            co_consts=consts)


def drive(seconds, min_turns):
    n = 0
    addresses = set()
    end = time.monotonic() + seconds
    names = {"hop": hop}
    exec(compile(BODY.format(n=0, d=0), "/nonexistent/spanprof-relay.py", "exec"), names)
    template = names["turn_0"].__code__
    del names
    fields = turn_fields(template, n)
    turn = None
    while time.monotonic() < end or n < min_turns:
        # One code object made per turn (a copy of the template's), of one size, right after
        # the last turn's is freed (its fields made before): it takes that memory.
        turn = None
        turn = types.FunctionType(turn_code(template, fields), globals())
        addresses.add(id(turn.__code__))
        fields = turn_fields(template, n + 1)
        turn(TURN_CPU)  # call:turn
        n += 1
    return n, len(addresses)


sys.stdout.write(json.dumps({"pid": os.getpid(), "turn_line": marked("turn")}) + "\n")
sys.stdout.flush()
sys.stdin.readline()
if len(sys.argv) > 3:
    TURN_CPU = float(sys.argv[3])
turns, addresses = drive(float(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
sys.stdout.write(json.dumps({"cpu": time.process_time(), "turns": turns,
                             "addresses": addresses}) + "\n")
sys.stdout.flush()
