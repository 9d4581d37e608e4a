"""Loading cost of spanprof on the running kernel: for each profile type set, the seconds from
start to its "spanprof: sampling" line and the BPF programs it holds then (only those of the
selected types are loaded). Usage: load_time.py SPANPROF. One line per set:
  cpu: 2.41 s to sampling, 5 BPF programs
"""
import glob
import subprocess
import sys
import tempfile
import time

# A cpu-only run (its programs only) and every type: each set costs a start-up in a slow guest.
SETS = ["cpu", "cpu,alloc,lock,offcpu"]


def prog_ids(pid):
    ids = set()
    for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            with open(f) as fd:
                ids.update(int(l.split()[1]) for l in fd if l.startswith("prog_id:"))
        except OSError:
            pass
    return ids


def measure(spanprof, types):
    with tempfile.TemporaryDirectory() as out:
        t0 = time.monotonic()
        p = subprocess.Popen([spanprof, "record", "--profile", types, "--duration", "1",
                              "--output-dir", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seen = []
        try:
            for line in p.stderr:
                seen.append(line)
                if line.startswith("spanprof: sampling"):
                    took = time.monotonic() - t0
                    progs = len(prog_ids(p.pid))
                    p.communicate(timeout=600)
                    if p.returncode:
                        break
                    return f"{types}: {took:.2f} s to sampling, {progs} BPF programs"
            p.wait(timeout=600)
            return f"{types}: FAILED (exit {p.returncode}): " + "".join(seen[-5:]).strip()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


def main():
    failed = 0
    for types in SETS:
        line = measure(sys.argv[1], types)
        failed += "FAILED" in line
        print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
