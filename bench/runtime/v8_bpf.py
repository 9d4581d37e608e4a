#!/usr/bin/env python3
"""BPF time per CPU sample of on_cpu_sample with the V8 frame reader (bpf/v8.bpf.h) on and off
(--no-v8), for a node process running a chain of N JavaScript functions
(bench/workloads/v8spin.js), in the same invocation: the reader's cost is the difference.
Needs root and bpftool; uses kernel.bpf_stats_enabled (restored after). Never fails on the
figures: it prints them.

  python3 bench/runtime/v8_bpf.py [--build build] [--depths 5,50] [--hz 999] [--seconds 6]
"""
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import unwind_bpf as ub  # noqa: E402
import benchproc  # noqa: E402
from benchproc import CHILDREN, BenchError  # noqa: E402

SPIN = Path(__file__).resolve().parents[1] / "workloads" / "v8spin.js"


def main():
    args, _, spanprof = ub.bench_args(__doc__, depths="5,50")
    node = shutil.which("node")
    if not node or not shutil.which("bpftool"):
        raise BenchError("node and bpftool are needed")
    depths = [int(x) for x in args.depths.split(",")]
    modes = [("reader on", []), ("reader off (--no-v8)", ["--no-v8"])]
    prev = Path(ub.STATS_SYSCTL).read_text().strip()
    results, other = {}, []
    try:
        Path(ub.STATS_SYSCTL).write_text("1\n")
        for rnd in range(args.rounds):
            sleeper = lambda tot: ["sleep", str(int(tot) + 1)]  # noqa: E731
            other.append(ub.measure(args, spanprof, sleeper, [], "other"))
            for depth in depths:
                order = modes if rnd % 2 == 0 else modes[::-1]
                for label, extra in order:
                    ub.log(f"round {rnd + 1}: depth {depth}: {label}")
                    argv = lambda tot, d=depth: [node, str(SPIN), str(tot), str(d)]  # noqa: E731
                    r = ub.measure(args, spanprof, argv, extra, label)
                    results.setdefault((depth, label), []).append(r)
    finally:
        Path(ub.STATS_SYSCTL).write_text(prev + "\n")
        for p in list(CHILDREN):
            ub.stop(p)
    ub.wait_progs_freed()
    _, per_sample = ub.sample_cost(other)
    print(f"\nBPF time of on_cpu_sample per recorded sample, {args.hz} Hz, {args.seconds:.0f} s "
          f"windows, {args.rounds} rounds; kernel {os.uname().release}, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}\n")
    print("| JS depth | user frames | reader on (ns/sample) | off (ns/sample) | the reader adds |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for depth in depths:
        on = statistics.median(per_sample(r) for r in results[(depth, modes[0][0])])
        off = statistics.median(per_sample(r) for r in results[(depth, modes[1][0])])
        frames = max(r["depth"] for r in results[(depth, modes[0][0])])
        print(f"| {depth} | {frames} | {on:.0f} | {off:.0f} | {on - off:.0f} ns ({on / off:.2f}x) |")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, ub.log, ub.stop)
