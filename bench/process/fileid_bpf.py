#!/usr/bin/env python3
"""bench/fileid_bpf: BPF time the file identities (bpf/fileid.bpf.h) add to a sample.

The samples that carry them are those of processes the agent has not loaded yet; to measure many
of them, the agent runs with --unwind-max-mb 0 (no process is ever loaded: every sample takes the
frame-pointer path) and --pid of integration/workloads/unw_recurse.c built with frame pointers,
once with SPANPROF_FILEIDS=0 and once with the tables on, at each depth, alternating the order
per round. BPF time per recorded sample as in bench/unwind/unwind_bpf.py (kernel.bpf_stats_enabled,
run_time_ns of on_cpu_sample, runs that record nothing subtracted at their measured cost).

Needs root. Never fails on the figures.
Usage: python3 bench/process/fileid_bpf.py [--build DIR] [--depths 10,50] [--hz 999] [--seconds S]
                                   [--rounds N] [--cpu N]
"""
import os
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import unwind_bpf as ub  # noqa: E402
from benchproc import CHILDREN, BenchError  # noqa: E402


def stat_index(name):
    """Index of SP_STAT_<name> in enum sp_stat (bpf/sampler.h)."""
    text = (ub.ROOT / "bpf" / "sampler.h").read_text()
    body = text[text.index("enum sp_stat {"):text.index("SP_STAT_MAX")]
    names = re.findall(r"^\s*(SP_STAT_\w+)", body, re.M)
    return names.index("SP_STAT_" + name)


def main():
    args, build, spanprof = ub.bench_args(__doc__, depths="10,50")
    bins = ub.build_workloads(build)
    depths = [int(x) for x in args.depths.split(",")]
    st_fid, st_vmas = stat_index("FILEID_SAMPLES"), stat_index("FILEID_VMAS")
    modes = [("file identities off", "0"), ("file identities on", "1")]
    extra = ["--unwind-max-mb", "0"]
    prev = Path(ub.STATS_SYSCTL).read_text().strip()
    results, other = {}, []
    try:
        Path(ub.STATS_SYSCTL).write_text("1\n")
        for rnd in range(args.rounds):
            os.environ["SPANPROF_FILEIDS"] = "0"
            sleeper = lambda tot: ["sleep", str(int(tot) + 1)]  # noqa: E731
            other.append(ub.measure(args, spanprof, sleeper, extra, "other"))
            for depth in depths:
                for label, env in (modes if rnd % 2 == 0 else modes[::-1]):
                    os.environ["SPANPROF_FILEIDS"] = env
                    ub.log(f"round {rnd + 1}: depth {depth}: {label}")
                    argv = lambda tot, dep=depth: [bins["fp"], str(tot), str(dep)]  # noqa: E731
                    # measure() reads the stats map twice: keep those reads for our counters.
                    snap, got = ub.snapshot, []

                    def snapshot(prog_id, map_id, snap=snap, got=got):
                        got.append(snap(prog_id, map_id))
                        return got[-1]
                    ub.snapshot = snapshot
                    try:
                        r = ub.measure(args, spanprof, argv, extra, label)
                    finally:
                        ub.snapshot = snap
                    a, b = got[0]["stats"], got[-1]["stats"]
                    r["fid"] = b.get(st_fid, 0) - a.get(st_fid, 0)
                    r["vmas"] = b.get(st_vmas, 0) - a.get(st_vmas, 0)
                    results.setdefault((depth, label), []).append(r)
    finally:
        os.environ.pop("SPANPROF_FILEIDS", None)
        Path(ub.STATS_SYSCTL).write_text(prev + "\n")
        for p in list(CHILDREN):
            ub.stop(p)
    ub.wait_progs_freed()
    c_other, per_sample = ub.sample_cost(other)

    print(f"\nBPF time of {ub.PROG_NAME} per recorded sample, frame-pointer path "
          f"(--unwind-max-mb 0), {args.hz} Hz, {args.seconds:.0f} s windows, {args.rounds} rounds")
    print(f"kernel {os.uname().release}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}; runs recording nothing: "
          f"{c_other:.0f} ns/run\n")
    print("| depth | mode | user frames | samples | with a table | VMAs/table | ns/sample (median; min..max) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | --- |")
    for depth in depths:
        for label, _ in modes:
            rs = results[(depth, label)]
            ps = [per_sample(r) for r in rs]
            s = sum(r["samples"] for r in rs)
            f = sum(r["fid"] for r in rs)
            print(f"| {depth} | {label} | {max(r['depth'] for r in rs)} | {s} | {f} | "
                  f"{sum(r['vmas'] for r in rs) / max(f, 1):.1f} | "
                  f"{statistics.median(ps):.0f} ({min(ps):.0f}..{max(ps):.0f}) |")
    print()
    for depth in depths:
        off = statistics.median(per_sample(r) for r in results[(depth, modes[0][0])])
        on = statistics.median(per_sample(r) for r in results[(depth, modes[1][0])])
        print(f"depth {depth}: file identities add {on - off:.0f} ns per sample ({on / off:.2f}x)")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        ub.log(f"error: {e}")
        sys.exit(1)
