#!/usr/bin/env python3
"""bench/context_reader: BPF time per sample with the thread-context reader on vs off.

The test server of the span-link tests (integration/workloads/spanserver.c, writer compiled
in, -O2 -fomit-frame-pointer) runs requests in spans on one pinned CPU. In the same
invocation, alternating, spanprof --pid profiles it:

  * "reader off"   --no-span-links (the baseline);
  * "TLS reader"   default: the record is found through otel_thread_ctx_v1 (static TLS);
  * "DTV reader"   the server linked against the writer's shared library built with the
                   legacy dialect (general dynamic: the DTV walk, one more read);
  * "uprobe"       the build without the exported variable, --context-uprobe on its
                   context-switch function (per-thread map lookup; the uprobe's own cost is
                   paid by the application, not per sample).

With kernel.bpf_stats_enabled=1 (restored at the end) it reads run_time_ns / run_cnt of the
agent's on_cpu_sample and its stats map over a steady window, and prints ns per recorded
sample (runs that record nothing subtracted, as bench/unwind/unwind_bpf.py does), the share of
samples that carried a link, and the ratio against "reader off".

Needs root. Never fails on the figures.
Usage: python3 bench/spans/context_reader.py [--build DIR] [--hz 999] [--seconds S] [--rounds N]
       make bench-context-reader [BUILD=dir] [BENCH_CONTEXT_ARGS="..."]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: benchproc
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unwind"))  # unwind_bpf
import benchproc
import unwind_bpf as ub
from benchproc import CHILDREN, spawn

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "integration" / "workloads" / "spanserver.c"
WRITER = ROOT / "writer"
ST_SAMPLES, ST_CTX_LINKED = 0, 20  # enum sp_stat (bpf/sampler.h)


def log(msg):
    print(f"context_reader: {msg}", file=sys.stderr, flush=True)


def build_servers(build):
    out = build / "bench" / "context"
    out.mkdir(parents=True, exist_ok=True)
    flags = ["-O2", "-g", "-fomit-frame-pointer", "-pthread", f"-I{WRITER}"]
    wsrc = WRITER / "spanprof_ctx.c"
    exe, up, legacy = out / "spanserver", out / "spanserver-uprobe", out / "spanserver-legacy"
    subprocess.run(["cc", *flags, "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1", "-o",
                    str(exe), str(SERVER), str(wsrc)], check=True)
    subprocess.run(["cc", *flags, "-DUPROBE_MODE", "-o", str(up), str(SERVER), str(wsrc)],
                   check=True)
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-mtls-dialect=gnu", "-o",
                    str(out / "libspanprof_ctx.so"), str(wsrc)], check=True)
    subprocess.run(["cc", *flags, "-o", str(legacy), str(SERVER), f"-L{out}", "-lspanprof_ctx",
                    f"-Wl,-rpath,{out}"], check=True)
    return exe, up, legacy


def measure(args, spanprof, server, extra, label):
    tmp = Path(tempfile.mkdtemp(prefix="spanprof-ctxbench-"))
    total = args.settle + args.seconds + 30
    work = spawn(["taskset", "-c", str(args.cpu), server, str(int(total)), "2"],
                 stdout=subprocess.DEVNULL)
    try:
        a, b = ub.sampler_window(args, spanprof, work, tmp, extra, label)
        d = lambda k: b["stats"].get(k, 0) - a["stats"].get(k, 0)  # noqa: E731
        return {"run_time_ns": b["run_time_ns"] - a["run_time_ns"],
                "run_cnt": b["run_cnt"] - a["run_cnt"],
                "samples": d(ST_SAMPLES), "linked": d(ST_CTX_LINKED)}
    finally:
        ub.stop(work)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    args, build, spanprof = ub.bench_args(__doc__, seconds=5.0, rounds=3)
    exe, up, legacy = build_servers(build)
    modes = [("reader off (--no-span-links)", exe, ["--no-span-links"]),
             ("TLS reader (static TLS)", exe, []),
             ("DTV reader (general dynamic)", legacy, []),
             ("uprobe (--context-uprobe)", up,
              ["--context-uprobe", f"{up}:spanserver_context_switched"])]
    prev = Path(ub.STATS_SYSCTL).read_text().strip()
    results, other = {}, []
    try:
        Path(ub.STATS_SYSCTL).write_text("1\n")
        for rnd in range(args.rounds):
            log(f"round {rnd + 1}: other runs (agent --pid of a sleeping process)")
            other.append(ub.measure(args, spanprof, lambda tot: ["sleep", str(int(tot) + 1)],
                                    [], "other"))
            for label, server, extra in modes[rnd % 4:] + modes[:rnd % 4]:
                log(f"round {rnd + 1}: {label}")
                results.setdefault(label, []).append(measure(args, spanprof, server, extra,
                                                             label))
    finally:
        Path(ub.STATS_SYSCTL).write_text(prev + "\n")
        for p in list(CHILDREN):
            ub.stop(p)
    _, per_sample = ub.sample_cost(other)

    print(f"\nBPF time of on_cpu_sample per recorded sample, thread-context reader on vs off; "
          f"{args.hz} Hz, {args.seconds:.0f} s windows, {args.rounds} rounds, server on CPU "
          f"{args.cpu}; kernel {os.uname().release}, load "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}\n")
    print("| mode | samples | linked | ns/sample (median; min..max) | x reader off |")
    print("| --- | ---: | ---: | --- | ---: |")
    base = statistics.median(per_sample(r) for r in results[modes[0][0]])
    for label, _, _ in modes:
        rs = results[label]
        ps = [per_sample(r) for r in rs]
        s = sum(r["samples"] for r in rs)
        lk = sum(r["linked"] for r in rs)
        med = statistics.median(ps)
        print(f"| {label} | {s} | {100.0 * lk / max(s, 1):.0f}% | {med:.0f} "
              f"({min(ps):.0f}..{max(ps):.0f}) | {med / base:.2f} |")
    for label, _, _ in modes[1:]:
        med = statistics.median(per_sample(r) for r in results[label])
        print(f"{label}: {med - base:+.0f} ns per sample over the reader off")
    print(f"\nkernel.bpf_stats_enabled restored to {Path(ub.STATS_SYSCTL).read_text().strip()}")
    return 0


if __name__ == "__main__":
    benchproc.run_main(main, log, ub.stop)
