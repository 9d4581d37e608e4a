"""The node-agent path as users deploy it: spanprof -> agent Collector -> gateway Collector ->
backend, with collector-config/deploy/agent-collector.yaml and gateway-collector.yaml unchanged
(batch and memory_limiter processors included) and a third Collector, the backend, receiving
OTLP/HTTP and writing what arrives with the file exporter.

Both shipped files listen on port 4317 (the agent on 127.0.0.1, the gateway on 0.0.0.0), so the
agent (with spanprof) and the gateway (with the backend) each run in a network namespace of
their own, joined by a veth pair: nothing of the chain touches the host's ports.
"""
import collections
import os
import signal
import subprocess
import time

from conftest import ROOT, WORKLOADS, wait_sampling

WRITER = ROOT / "writer"
DEPLOY = ROOT / "collector-config" / "deploy"
BACKEND_CONFIG = """
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:4318
exporters:
  file:
    path: {out}
    format: json
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file]
"""


def netns(procs):
    """A process holding a new network namespace with its loopback up; returns its pid."""
    holder = procs.start("unshare", "--net", "sleep", "600")
    mine = os.readlink("/proc/self/ns/net")
    deadline = time.time() + 10
    while os.readlink(f"/proc/{holder.pid}/ns/net") == mine:
        assert time.time() < deadline, "unshare --net did not make a namespace"
        time.sleep(0.01)
    subprocess.run(["nsenter", "-t", str(holder.pid), "-n", "ip", "link", "set", "lo", "up"],
                   check=True)
    return holder.pid


def in_ns(pid, *cmd):
    return ["nsenter", "-t", str(pid), "-n", *map(str, cmd)]


def link(a, b):
    """A veth pair between namespaces a (10.77.0.1) and b (10.77.0.2)."""
    va, vb = f"spva{os.getpid() % 10000}", f"spvb{os.getpid() % 10000}"
    subprocess.run(["ip", "link", "add", va, "type", "veth", "peer", "name", vb], check=True)
    subprocess.run(["ip", "link", "set", va, "netns", str(a)], check=True)
    subprocess.run(["ip", "link", "set", vb, "netns", str(b)], check=True)
    for pid, dev, addr in ((a, va, "10.77.0.1/24"), (b, vb, "10.77.0.2/24")):
        subprocess.run(in_ns(pid, "ip", "addr", "add", addr, "dev", dev), check=True)
        subprocess.run(in_ns(pid, "ip", "link", "set", dev, "up"), check=True)


def listening(pid, port, proc, log, timeout=60):
    """Waits until something in namespace @pid listens on TCP @port (ss, inside it)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, \
            f"collector exited with {proc.returncode}: {log.read_text()[-2000:]}"
        out = subprocess.run(in_ns(pid, "ss", "-Htln", f"sport = :{port}"), capture_output=True,
                             text=True).stdout
        if out.strip():
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port} in the namespace of {pid}")


def events_and_links(out):
    """Samples (events) and events per (trace id, span id) in otlpcheck's output."""
    total, links = 0, collections.Counter()
    for inp in out["inputs"]:
        for msg in inp["messages"]:
            for rp in msg["resource_profiles"]:
                for scope in rp["scopes"]:
                    for p in scope["profiles"]:
                        total += p["events"]
                        for ln in p.get("links") or []:
                            links[(ln["trace_id"].lower(), ln["span_id"].lower())] += ln["events"]
    return total, links


def stop(proc, log):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, \
        f"collector exited with {proc.returncode}: {log.read_text()[-2000:]}"


def test_agent_gateway_backend_as_shipped(spanprof, otelcol, otlpcheck, procs, tmp_path):
    exe = tmp_path / "spanserver"
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-pthread", f"-I{WRITER}",
                    "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1", "-o", str(exe),
                    str(WORKLOADS / "spanserver.c"), str(WRITER / "spanprof_ctx.c")], check=True)
    node, central = netns(procs), netns(procs)
    link(node, central)
    received = tmp_path / "backend.jsonl"
    (tmp_path / "backend.yaml").write_text(BACKEND_CONFIG.format(out=received))
    gate = "--feature-gates=service.profilesSupport"
    logs = {n: tmp_path / f"{n}.log" for n in ("backend", "gateway", "agent")}
    cols = {}
    for name, ns, config, env in (
            ("backend", central, tmp_path / "backend.yaml", {}),
            ("gateway", central, DEPLOY / "gateway-collector.yaml",
             {"BACKEND_ENDPOINT": "http://127.0.0.1:4318"}),
            ("agent", node, DEPLOY / "agent-collector.yaml", {"GATEWAY_ENDPOINT": "10.77.0.2:4317"})):
        with open(logs[name], "w") as log:
            cols[name] = procs.start(*in_ns(ns, otelcol, "--config", config, gate),
                                     env=dict(os.environ, **env), stdout=log, stderr=log)
    listening(central, 4318, cols["backend"], logs["backend"])
    listening(central, 4317, cols["gateway"], logs["gateway"])
    listening(node, 4317, cols["agent"], logs["agent"])

    # The server waits for a line on stdin: it gets one once spanprof samples.
    srv = procs.start(exe, "3", "2", "-", stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                      text=True)
    sent_dir = tmp_path / "sent"
    agent = procs.start(*in_ns(node, spanprof, "record", "-p", srv.pid, "-F", "97",
                               "--endpoint", "127.0.0.1:4317", "--export-interval", "1",
                               "--output-dir", sent_dir),
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = wait_sampling(agent)
    srv.stdin.write("go\n")
    srv.stdin.close()
    _, err = agent.communicate(timeout=120)  # it stops once the server has exited
    stderr = "".join(seen) + err
    assert agent.returncode == 0, stderr
    # Each Collector flushes its batch and its sending queue when stopped: in pipeline order.
    for name in ("agent", "gateway", "backend"):
        stop(cols[name], logs[name])

    copies = sorted(sent_dir.glob("profiles-*.binpb"))
    assert copies, f"spanprof wrote no request copies: {stderr}"
    sent = otlpcheck(*copies)
    got = otlpcheck(received)
    assert sent["ok"], sent["errors"][:5]
    assert got["ok"], got["errors"][:5]
    n_sent, links_sent = events_and_links(sent)
    n_got, links_got = events_and_links(got)
    print(f"sent {n_sent} samples ({sum(links_sent.values())} linked to "
          f"{len(links_sent)} spans); the backend got {n_got} "
          f"({sum(links_got.values())} linked to {len(links_got)} spans)")
    # Not vacuous (the counts themselves depend on how much CPU a loaded machine gives the
    # server): samples were sent, some of them in spans.
    assert n_sent >= 10, stderr
    assert sum(links_sent.values()) >= 1, "the span server's samples carry no span links"
    assert n_got == n_sent
    assert links_got == links_sent
