#!/usr/bin/env python3
"""Long-run stability test of the agent (docs/soak.md).

Runs spanprof as a node agent (whole machine, OTLP export to the real Collector) for SECONDS under
churn, measures its memory, CPU, descriptors and BPF maps every few seconds, and checks at the
end that

  - it never crashed and printed no unexpected error;
  - its RSS, descriptors and BPF map use stayed flat after warm-up (the run is cut in thirds:
    the first is warm-up; the last third's peak may exceed the second third's by a small bound);
  - samples of the churned processes (exec'ing binaries built during the run) were named;
  - every sample BPF took is in the Collector's output or in a named drop counter.

Load, all at once:
  - churn: hundreds of short-lived processes per second, each exec'ing the newest variant of
    variant.c, rebuilt every few seconds with new function names and build ID;
  - threads: threads created and joined continuously;
  - dlloop: dlopen/dlclose of a few shared libraries, rebuilt now and then;
  - the Collector stopped (SIGTERM) and started again every RESTART seconds, with a short gap.

Writes OUT/curve.csv (one row per measurement), OUT/curve.svg, OUT/summary.txt, the agent's
stderr and the Collector's outputs. Exit status 0 when every check passed.

  python3 integration/soak/soak.py --seconds 600          # by hand (make soak SOAK_SECONDS=600)
  python3 integration/soak/soak.py --seconds 150 --restart-every 20   # what CI runs
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MiB = 1 << 20

# Hash-like maps whose entry count can grow with the load (arrays are fixed at creation).
COUNTED_MAP_TYPES = {"hash", "lru_hash", "percpu_hash", "lru_percpu_hash", "lpm_trie",
                     "hash_of_maps"}

# Agent stderr lines that are expected during a soak (the Collector goes away on purpose).
EXPECTED_LINES = [
    r"^spanprof: +\d+\.\ds ",                                   # progress line
    r"^spanprof: sampling ",
    r"^spanprof: export to .* failed: (UNAVAILABLE|DEADLINE_EXCEEDED|CANCELLED|ABORTED)"
    r".*\(retrying with backoff\)$",
    r"^spanprof: export to .* works again$",
    r"^spanprof: sending \d+ queued requests",
    r"^spanprof: \d+ samples from \d+ processes",              # summary
    r"^spanprof: sent \d+ samples to ",                        # summary: where they went
    r"^spanprof: (frames|user stacks|unwind tables|span links|accounting|memory|processes): ",
    r"^spanprof: file identities \(processes not loaded yet\): ",  # summary
    r"^spanprof: (python|JIT code|JIT unwinding records|Go labels|Go|v8): ",  # summary, by runtime
    r"^spanprof: debug: sample queue peak ",
    r"^spanprof: info: stats ",                                 # self-telemetry counters
    r"^spanprof: dropped \d+ \(ring buffer full",
    r"^spanprof: export to \S+: \d+ requests sent",
    r"^spanprof: capabilities: ",
    r"^spanprof: debug: cannot open ",                          # SPANPROF_DEBUG: process gone
    r"^spanprof: warning: setrlimit",
]
SUSPICIOUS = re.compile(r"error|fail|abort|sanitizer|leak|segmentation|assert|out of memory|"
                        r"rejected|not retryable|corrupt|double free", re.I)


def log(msg):
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def compile_c(src, out, gen, shared=False):
    """Builds a variant of a template into out (atomically: a temp file renamed into place)."""
    tmp = f"{out}.tmp{os.getpid()}"
    cmd = ["gcc", "-O1", "-g", "-fno-omit-frame-pointer", f"-DGEN={gen}", "-o", tmp, str(src)]
    if shared:
        cmd[1:1] = ["-shared", "-fPIC"]
    subprocess.run(cmd, check=True)
    os.rename(tmp, out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"collector exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


class Children:
    """Every process the soak starts; all of them are stopped and reaped at the end."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        p = subprocess.Popen([str(a) for a in args], **kw)
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=30):
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return p.returncode

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


class Collector:
    """The pinned OpenTelemetry Collector, one output file per life."""

    def __init__(self, children, binary, port, outdir):
        self.children, self.binary, self.port, self.outdir = children, binary, port, outdir
        self.proc = None
        self.lives = []

    def start(self):
        out = self.outdir / f"collector-{len(self.lives):03d}.jsonl"
        env = dict(os.environ, OTLP_FILE=str(out), OTLP_GRPC_ENDPOINT=f"127.0.0.1:{self.port}")
        self.proc = self.children.start(
            [self.binary, "--config", ROOT / "collector-config/file.yaml",
             "--feature-gates=service.profilesSupport"], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.lives.append(out)
        wait_listening(self.port, self.proc)

    def stop(self):
        # SIGTERM: the Collector finishes the calls in flight and flushes its file exporter,
        # so what it acknowledged is on disk (the accounting check relies on it).
        if self.proc:
            self.children.stop(self.proc)
            self.proc = None


class AgentReader(threading.Thread):
    """Keeps the agent's stderr (file and memory) and its latest progress numbers."""

    def __init__(self, proc, path):
        super().__init__(daemon=True)
        self.proc, self.path = proc, path
        self.lines = []
        self.progress = {}

    def run(self):
        with open(self.path, "w") as f:
            for line in self.proc.stderr:
                f.write(line)
                f.flush()
                line = line.rstrip("\n").split("\r")[-1]
                self.lines.append(line)
                m = re.match(r"spanprof: +([\d.]+)s +(\d+) samples +(\d+) dropped +(\d+) "
                             r"processes", line)
                if m:
                    self.progress = {"samples": int(m.group(2)), "dropped": int(m.group(3)),
                                     "processes": int(m.group(4))}


def proc_status(pid):
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def agent_cpu_s(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def agent_fd_ids(pid, key):
    ids = set()
    for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            for line in open(f):
                if line.startswith(key):
                    ids.add(int(line.split()[1]))
        except (OSError, ValueError):
            pass
    return ids


def bpf_maps(pid):
    """The agent's BPF maps: count, memlock bytes, entries of hash-like maps."""
    ids = agent_fd_ids(pid, "map_id:")
    res = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True)
    maps = [m for m in json.loads(res.stdout or "[]") if m.get("id") in ids]
    entries = 0
    for m in maps:
        if m.get("type") in COUNTED_MAP_TYPES:
            d = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(m["id"])],
                               capture_output=True, text=True)
            try:
                entries += len(json.loads(d.stdout or "[]"))
            except json.JSONDecodeError:
                pass
    return {"maps": len(maps), "memlock": sum(m.get("bytes_memlock", 0) for m in maps),
            "entries": entries, "progs": len(agent_fd_ids(pid, "prog_id:"))}


def churn_stats(path):
    try:
        spawned, failed, running = map(int, Path(path).read_text().split())
        return spawned, failed
    except (OSError, ValueError):
        return 0, 0


def plot_svg(rows, path):
    """A small SVG: RSS (MiB), BPF memlock (MiB) and fds against time, each scaled to its max."""
    if len(rows) < 2:
        return
    w, h, pad = 720, 300, 40
    t_max = max(r["t"] for r in rows) or 1
    series = [("rss_kib", 1 / 1024, "#d62728", "agent RSS MiB"),
              ("bpf_memlock", 1 / MiB, "#1f77b4", "BPF memlock MiB"),
              ("fds", 1, "#2ca02c", "agent fds"),
              ("bpf_entries", 1, "#9467bd", "BPF hash entries")]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + 80}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect x="{pad}" y="{pad // 2}" width="{w - 2 * pad}" height="{h - pad}" '
           f'fill="none" stroke="#888"/>']
    for i, (key, scale, color, label) in enumerate(series):
        vals = [r[key] * scale for r in rows]
        top = max(vals) or 1
        pts = " ".join(f"{pad + (r['t'] / t_max) * (w - 2 * pad):.1f},"
                       f"{pad // 2 + (h - pad) * (1 - v / top):.1f}" for r, v in zip(rows, vals))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>')
        out.append(f'<text x="{pad + 170 * i}" y="{h + 20}" fill="{color}">{label} '
                   f'(max {top:.1f})</text>')
    out.append(f'<text x="{pad}" y="{h + 45}">time 0..{t_max:.0f} s; each curve scaled to its '
               f'own maximum (top of the box)</text></svg>')
    Path(path).write_text("\n".join(out) + "\n")


def flat(rows, key, ratio, slack, agg=max):
    """agg (max: peaks, min: the floor a leak raises) of the last third against that of the
    second third; the first third is warm-up."""
    n = len(rows)
    if n < 6:
        return False, f"only {n} measurements"
    second = agg(r[key] for r in rows[n // 3: 2 * n // 3])
    last = agg(r[key] for r in rows[2 * n // 3:])
    bound = second * ratio + slack
    return last <= bound, (f"last third {agg.__name__} {last} <= {ratio} x {second} + {slack} "
                           f"= {bound:.0f}")


def summary_numbers(stderr):
    out = {}
    pats = {
        "recorded": r"^spanprof: (\d+) samples from",
        "drop_ringbuf": r"ring buffer full (\d+)",
        "drop_oom": r"agent out of memory (\d+)",
        "taken": r"^spanprof: accounting: (\d+) samples taken",
        "encode_dropped": r"(\d+) samples lost encoding",
    }
    for k, p in pats.items():
        m = re.search(p, stderr, re.M)
        out[k] = int(m.group(1)) if m else None
    m = re.search(r"requests sent \((\d+) bytes, (\d+) samples\), (\d+) retries, (\d+) failed, "
                  r"(\d+) dropped \((\d+) samples\), (\d+) profiles rejected", stderr)
    if m:
        out.update(sent=int(m.group(2)), retries=int(m.group(3)), failed=int(m.group(4)),
                   dropped=int(m.group(5)), dropped_samples=int(m.group(6)),
                   rejected=int(m.group(7)))
    return out


def decode_collector(otlpcheck, files):
    """Samples the Collector wrote, in total and for each soak workload (by thread name)."""
    tot = {"events": 0, "churn": 0, "churn_user": 0, "churn_named": 0, "churn_gens": set(),
           "thread_named": 0, "lib_named": 0, "lib_gens": set(), "errors": []}
    churn_fn = re.compile(r"^soak_churn_g(\d+)_burn$")
    lib_fn = re.compile(r"^soak_lib_g(\d+)_work$")
    for f in files:
        if not Path(f).exists() or Path(f).stat().st_size == 0:
            continue
        res = subprocess.run([str(otlpcheck), "-compact", str(f)], capture_output=True,
                             text=True)
        if res.returncode not in (0, 1):
            tot["errors"].append(f"{f}: otlpcheck: {res.stderr.strip()[:300]}")
            continue
        doc = json.loads(res.stdout)
        tot["errors"] += [f"{f}: {e}" for e in doc.get("errors") or []][:5]
        for inp in doc["inputs"]:
            for msg in inp["messages"]:
                tot["errors"] += [f"{f}: {e}" for e in msg.get("errors") or []][:5]
                for rp in msg["resource_profiles"]:
                    for sc in rp["scopes"]:
                        for p in sc["profiles"]:
                            for d in p.get("sample_details") or []:
                                n = len(d.get("timestamps") or []) or sum(d.get("values") or [1])
                                tot["events"] += n
                                tname = str((d.get("attributes") or {}).get("thread.name", ""))
                                frames = d.get("frames") or []
                                types = d.get("frame_types") or []
                                user = [fr for fr, ty in zip(frames, types) if ty == "native"]
                                for fr in frames:
                                    m = lib_fn.match(fr)
                                    if m:
                                        tot["lib_named"] += n
                                        tot["lib_gens"].add(int(m.group(1)))
                                    if fr == "soak_thread_work":
                                        tot["thread_named"] += n
                                if tname != "soakv":
                                    continue
                                tot["churn"] += n
                                if not user:
                                    continue  # in the kernel only (exec, exit, page faults)
                                tot["churn_user"] += n
                                gens = [churn_fn.match(fr) for fr in user]
                                gens = [int(m.group(1)) for m in gens if m]
                                if gens or any(not fr.startswith(("0x", "[")) for fr in user):
                                    tot["churn_named"] += n
                                tot["churn_gens"].update(gens)
    return tot


def run(args):
    build = (ROOT / args.build).resolve()
    out = Path(args.out).resolve() if args.out else build / "test-artifacts/soak"
    spanprof = build / "spanprof"
    if not spanprof.exists():
        raise SystemExit(f"{spanprof} is missing: run 'make' first")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    otelcol = build / "otelcol-spanprof"
    subprocess.run([str(ROOT / "integration/collector/build.sh"), str(otelcol)], check=True)
    otlpcheck = build / "otlpcheck"
    subprocess.run(["go", "build", "-o", str(otlpcheck), "."], cwd=ROOT / "integration/otlpcheck",
                   check=True)

    work = Path(tempfile.mkdtemp(prefix="spanprof-soak-"))
    children = Children()
    failures = []
    rows = []
    t_start = time.time()
    try:
        for name in ("churn", "threads", "dlloop"):
            subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-D_GNU_SOURCE",
                            "-o", str(work / name), str(HERE / f"{name}.c"), "-lpthread",
                            "-ldl"],
                           check=True)
        bins, libs = work / "bin", work / "lib"
        bins.mkdir()
        libs.mkdir()
        gen = 0
        compile_c(HERE / "variant.c", bins / "soakv-0", 0)
        os.symlink("soakv-0", bins / "soakv")
        for slot in range(args.lib_slots):
            compile_c(HERE / "soaklib.c", libs / f"libsoak-{slot}.so", slot, shared=True)
        lib_gen = args.lib_slots

        port = free_port()
        col = Collector(children, otelcol, port, out)
        col.start()
        agent = children.start(
            # --verbose: the full accounting at the end, which summary_numbers() reads.
            [spanprof, "record", "--endpoint", f"127.0.0.1:{port}", "--frequency",
             args.frequency, "--export-interval", args.export_interval, "--flush-timeout", 30,
             "--verbose"],
            stderr=subprocess.PIPE, text=True, env=dict(os.environ, SPANPROF_DEBUG="1"))
        reader = AgentReader(agent, out / "agent.stderr")
        reader.start()
        deadline = time.time() + 60
        while not any("sampling" in l for l in reader.lines):
            if agent.poll() is not None or time.time() > deadline:
                raise RuntimeError("the agent did not start:\n" + "\n".join(reader.lines))
            time.sleep(0.2)
        agent_pid = agent.pid
        log(f"agent {agent_pid} sampling at {args.frequency} Hz, Collector on :{port}; "
            f"{args.seconds} s of churn at {args.rate}/s, Collector restarted every "
            f"{args.restart_every} s")

        env = dict(os.environ, SOAK_BURN_US=str(args.burn_us))
        stats_file = work / "churn.stats"
        churn = children.start([work / "churn", bins / "soakv", args.rate, stats_file], env=env)
        threads = children.start([work / "threads", 8, 1000], stdout=subprocess.DEVNULL)
        dl = children.start([work / "dlloop", libs, args.lib_slots, 2000],
                            stdout=subprocess.DEVNULL)

        t0 = time.time()
        next_build = next_lib = t0 + args.rebuild_every
        next_restart = t0 + args.restart_every
        next_sample = t0
        restarts = 0
        while time.time() - t0 < args.seconds:
            now = time.time()
            if agent.poll() is not None:
                failures.append(f"the agent exited early with status {agent.returncode}")
                break
            for p, name in ((churn, "churn"), (threads, "threads"), (dl, "dlloop")):
                if p.poll() is not None:
                    raise RuntimeError(f"workload {name} exited with {p.returncode}")
            if now >= next_build:
                gen += 1
                compile_c(HERE / "variant.c", bins / f"soakv-{gen}", gen)
                os.symlink(f"soakv-{gen}", bins / "soakv.new")
                os.rename(bins / "soakv.new", bins / "soakv")
                # Older builds are deleted while their last processes may still run.
                old = bins / f"soakv-{gen - 3}"
                if old.exists():
                    old.unlink()
                next_build = now + args.rebuild_every
            if now >= next_lib:
                compile_c(HERE / "soaklib.c", libs / f"libsoak-{lib_gen % args.lib_slots}.so",
                          lib_gen, shared=True)
                lib_gen += 1
                next_lib = now + args.rebuild_every * 2
            if now >= next_restart:
                col.stop()
                time.sleep(args.restart_gap)
                col.start()
                restarts += 1
                next_restart = time.time() + args.restart_every
            if now >= next_sample:
                st = proc_status(agent_pid)
                bm = bpf_maps(agent_pid)
                spawned, skipped = churn_stats(stats_file)
                row = {"t": round(now - t0, 1), "rss_kib": int(st["VmRSS"].split()[0]),
                       "cpu_s": round(agent_cpu_s(agent_pid), 2),
                       "fds": len(os.listdir(f"/proc/{agent_pid}/fd")),
                       "threads": int(st["Threads"]), "bpf_maps": bm["maps"],
                       "bpf_memlock": bm["memlock"], "bpf_entries": bm["entries"],
                       "bpf_progs": bm["progs"], "spawned": spawned, "spawn_skipped": skipped,
                       "samples": reader.progress.get("samples", 0),
                       "dropped": reader.progress.get("dropped", 0),
                       "processes": reader.progress.get("processes", 0),
                       "collector_lives": len(col.lives)}
                rows.append(row)
                if len(rows) % 6 == 1:
                    log(f"t={row['t']:6.1f}s rss={row['rss_kib'] / 1024:.1f} MiB "
                        f"cpu={row['cpu_s']:.1f}s fds={row['fds']} "
                        f"bpf={row['bpf_memlock'] / MiB:.1f} MiB/{row['bpf_entries']} entries "
                        f"spawned={spawned} samples={row['samples']}")
                next_sample = now + args.sample_every
            time.sleep(0.1)

        # The end: load first, then the agent (it flushes to the Collector), then the Collector.
        for p in (churn, threads, dl):
            children.stop(p)
        spawned, skipped = churn_stats(stats_file)
        time.sleep(1)
        rc = children.stop(agent, timeout=90)
        reader.join(timeout=10)
        col.stop()
        stderr = "\n".join(reader.lines)
        if rc != 0:
            failures.append(f"the agent exited with status {rc}")

        # --- checks -----------------------------------------------------------------------
        unexpected = [l for l in reader.lines if l.strip() and
                      not any(re.search(p, l) for p in EXPECTED_LINES)]
        suspicious = [l for l in unexpected if SUSPICIOUS.search(l)]
        if suspicious:
            failures.append("unexpected error lines from the agent:\n  " +
                            "\n  ".join(suspicious[:10]))
        nums = summary_numbers(stderr)
        col_tot = decode_collector(otlpcheck, col.lives)
        checks = []

        def check(name, ok, detail):
            checks.append((name, ok, detail))
            if not ok:
                failures.append(f"{name}: {detail}")

        check("agent RSS peak flat (KiB)", *flat(rows, "rss_kib", 1.15, 8 * 1024))
        check("agent RSS floor flat (KiB)", *flat(rows, "rss_kib", 1.15, 8 * 1024, min))
        # Descriptors: the symbol cache keeps up to a quarter of RLIMIT_NOFILE, the CFI chunks
        # one per 512 KiB map: both bounded; a leak raises the floor.
        check("agent fds floor flat", *flat(rows, "fds", 1.15, 32, min))
        fd_peak = max(r["fds"] for r in rows) if rows else 0
        check("agent fds bounded", fd_peak <= 1024, f"peak {fd_peak} <= 1024")
        # CFI tables follow what the machine runs (other people's compilers too): their peaks
        # come and go; a leak shows as a rising floor. The peak is bounded by --unwind-max-mb.
        check("BPF memlock floor flat", *flat(rows, "bpf_memlock", 1.15, 4 * MiB, min))
        peak = max(r["bpf_memlock"] for r in rows) if rows else 0
        check("BPF memlock under the CFI limit", peak <= (256 + 32) * MiB,
              f"peak {peak / MiB:.1f} MiB <= 256 MiB of CFI chunks + 32 MiB of fixed maps")
        check("BPF hash entries flat", *flat(rows, "bpf_entries", 1.25, 512))
        check("BPF maps and programs constant",
              len({(r["bpf_progs"]) for r in rows}) == 1,
              f"programs held: {sorted({r['bpf_progs'] for r in rows})}")
        for k in ("recorded", "taken", "sent", "dropped_samples", "encode_dropped"):
            if nums.get(k) is None:
                failures.append(f"the agent's summary has no '{k}' count")
        if None not in (nums.get("taken"), nums.get("recorded"), nums.get("drop_oom")):
            check("BPF samples accounted", nums["taken"] == nums["recorded"] + nums["drop_oom"],
                  f"{nums['taken']} taken by BPF = {nums['recorded']} recorded + "
                  f"{nums['drop_oom']} dropped in the agent")
        if None not in (nums.get("sent"), nums.get("dropped_samples"),
                        nums.get("encode_dropped"), nums.get("recorded")):
            lost = nums["dropped_samples"] + nums["encode_dropped"]
            check("recorded samples accounted", nums["recorded"] == nums["sent"] + lost,
                  f"{nums['recorded']} recorded = {nums['sent']} sent + {lost} counted drops")
            check("Collector holds what was sent", col_tot["events"] == nums["sent"],
                  f"{col_tot['events']} in the Collector's files, {nums['sent']} acknowledged")
        check("Collector output valid", not col_tot["errors"], "; ".join(col_tot["errors"][:3]))
        cu = col_tot["churn_user"]
        ratio = col_tot["churn_named"] / cu if cu else 0
        check("churned processes sampled", cu >= 50,
              f"{col_tot['churn']} samples of churned processes, {cu} with user frames")
        check("churned processes named", ratio >= args.min_named,
              f"{col_tot['churn_named']}/{cu} = {ratio:.0%} of their samples with user frames "
              f"named (>= {args.min_named:.0%}); {len(col_tot['churn_gens'])} of {gen + 1} "
              f"fresh builds seen by name")
        check("fresh builds named", len(col_tot["churn_gens"]) >= max(2, 2 * (gen + 1) // 3),
              f"{len(col_tot['churn_gens'])} of {gen + 1} builds")
        check("dlopen'd libraries named", len(col_tot["lib_gens"]) >= 2,
              f"{col_tot['lib_named']} samples in {len(col_tot['lib_gens'])} of {lib_gen} "
              f"library builds")
        check("thread workload named", col_tot["thread_named"] > 0,
              f"{col_tot['thread_named']} samples in soak_thread_work")

        # --- report -------------------------------------------------------------------------
        fields = list(rows[0].keys()) if rows else []
        with open(out / "curve.csv", "w") as f:
            f.write(",".join(fields) + "\n")
            for r in rows:
                f.write(",".join(str(r[k]) for k in fields) + "\n")
        plot_svg(rows, out / "curve.svg")
        lines = [f"soak: {args.seconds} s, {args.frequency} Hz, churn {args.rate}/s asked, "
                 f"{spawned} processes spawned ({spawned / max(args.seconds, 1):.0f}/s, "
                 f"{skipped} skipped at the cap), {gen + 1} executable builds, {lib_gen} library "
                 f"builds, {restarts} Collector restarts",
                 "",
                 f"{'t (s)':>7} {'RSS MiB':>8} {'CPU s':>7} {'fds':>5} {'thr':>4} "
                 f"{'BPF MiB':>8} {'entries':>8} {'samples':>9} {'dropped':>8} {'procs':>7}"]
        step = max(1, len(rows) // 20)
        for r in rows[::step] + ([rows[-1]] if rows and (len(rows) - 1) % step else []):
            lines.append(f"{r['t']:7.1f} {r['rss_kib'] / 1024:8.1f} {r['cpu_s']:7.1f} "
                         f"{r['fds']:5d} {r['threads']:4d} {r['bpf_memlock'] / MiB:8.1f} "
                         f"{r['bpf_entries']:8d} {r['samples']:9d} {r['dropped']:8d} "
                         f"{r['processes']:7d}")
        if len(rows) >= 2:
            cpu = (rows[-1]["cpu_s"] - rows[0]["cpu_s"]) / max(rows[-1]["t"] - rows[0]["t"], 1)
            lines.append(f"agent CPU: {cpu:.1%} of one core on average")
        lines.append("")
        lines.append("agent summary numbers: " + json.dumps(nums))
        if unexpected:
            lines.append("other agent lines:\n  " + "\n  ".join(unexpected[:10]))
        lines.append("")
        for name, ok, detail in checks:
            lines.append(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
        for fl in failures:
            if not any(fl.startswith(c[0] + ":") for c in checks):
                lines.append(f"FAIL  {fl}")
        lines.append("")
        lines.append(f"soak {'PASSED' if not failures else 'FAILED'} "
                     f"({time.time() - t_start:.0f} s wall); curve: {out / 'curve.csv'}")
        text = "\n".join(lines)
        (out / "summary.txt").write_text(text + "\n")
        print(text, flush=True)
        return failures
    finally:
        children.close()
        shutil.rmtree(work, ignore_errors=True)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=600, help="length of the churn (600)")
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--out", help="artifacts directory (default BUILD/test-artifacts/soak)")
    ap.add_argument("--frequency", type=int, default=99)
    ap.add_argument("--export-interval", type=float, default=5)
    ap.add_argument("--rate", type=float, default=200, help="processes started per second")
    ap.add_argument("--burn-us", type=int, default=2000, help="CPU each churned process burns")
    ap.add_argument("--rebuild-every", type=float, default=3,
                    help="seconds between fresh executable builds (libraries: twice that)")
    ap.add_argument("--lib-slots", type=int, default=3)
    ap.add_argument("--restart-every", type=float, default=60,
                    help="seconds between Collector restarts")
    ap.add_argument("--restart-gap", type=float, default=6,
                    help="seconds the Collector stays down at each restart (longer than the "
                    "export interval, so that every restart makes the agent retry)")
    ap.add_argument("--sample-every", type=float, default=5, help="seconds between measurements")
    ap.add_argument("--min-named", type=float, default=0.5,
                    help="share of churned-process samples with user frames that must be named "
                    "(named from the file identities their samples carry even when they exit "
                    "before the agent reads their maps; samples taken inside mmap(2) at start-up "
                    "carry none: docs/soak.md)")
    return ap.parse_args(argv)


if __name__ == "__main__":
    if os.geteuid() != 0:
        raise SystemExit("the soak needs root (BPF, perf events)")
    sys.exit(1 if run(parse_args()) else 0)
