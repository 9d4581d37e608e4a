"""The configuration file (docs/configuration.md): a round trip through `spanprof record
--config`, the precedence flag > environment > file, and `spanprof config check`."""
import json
import os
import re
import subprocess
from pathlib import Path

from conftest import ROOT, free_port, read_stats, summary_numbers, wait_listening

PROGRESS = re.compile(r"^spanprof: +\d+\.\ds +\d+ samples", re.M)


def start_testcollector(procs, binary, port, out_file):
    p = procs.start(binary, "-listen", f"127.0.0.1:{port}", "-out", out_file, "-record-headers",
                    stderr=subprocess.DEVNULL)
    wait_listening(port, p)
    return p


def received(path):
    """testcollector output: one dict per accepted request."""
    if not Path(path).exists():
        return []
    return [json.loads(l) for l in Path(path).read_text().splitlines()]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OTEL_EXPORTER_OTLP_") and k != "SPANPROF_CONFIG"}
    env.update(extra)
    return env


def run(spanprof, *args, env=None, timeout=120):
    return subprocess.run([str(spanprof), *map(str, args)], capture_output=True, text=True,
                          env=env or clean_env(), timeout=timeout)


def otlp_resources(otlpcheck, reqdir):
    """(process.pid of every resource, period of every profile) in the requests written to DIR."""
    files = sorted(Path(reqdir).glob("profiles-*.binpb"))
    assert files, f"no request written to {reqdir}"
    got = otlpcheck(*files)
    assert got["ok"], got["errors"][:5]
    pids, periods = set(), set()
    for i in got["inputs"]:
        for m in i["messages"]:
            for rp in m["resource_profiles"]:
                pids.add(rp["attributes"]["process.pid"])
                for sc in rp["scopes"]:
                    for p in sc["profiles"]:
                        periods.add(p["period"])
    return pids, periods


def test_config_file_round_trip_local_files(spanprof, workload, procs, tmp_path, pprofcheck):
    target = procs.start(workload("chain"), "15")
    other = procs.start(workload("chain"), "15")  # busy too, but not in the pid list
    out = tmp_path / "out"
    cfg = tmp_path / "spanprof.yaml"
    cfg.write_text(f"""# spanprof record settings
frequency: 97
duration: 3
pid: [{target.pid}]
output-dir: "{out}"
quiet: true
symbol-cache-mb: 16
""")
    chk = run(spanprof, "config", "check", cfg)
    assert chk.returncode == 0, chk.stderr
    assert f"{cfg}: ok" in chk.stdout
    assert "frequency: 97  # file line 2" in chk.stdout
    assert f"pid: [{target.pid}]  # file line 4" in chk.stdout

    res = run(spanprof, "record", "--config", cfg)
    assert res.returncode == 0, res.stderr
    assert not PROGRESS.search(res.stderr), "quiet: true should hide the progress line"
    assert re.search(r" in 3\.\d s ", res.stderr), "duration: 3 should end the run after 3 s"
    prof = pprofcheck(out / "profile.pb.gz")
    assert prof["check_error"] == ""
    assert prof["period"] == 1_000_000_000 // 97
    assert prof["samples"], res.stderr
    pids = {s["num_labels"]["pid"][0] for s in prof["samples"]}
    assert pids == {target.pid}, f"pid filter from the file: got {pids}, other={other.pid}"
    assert (out / "profile.folded").exists() and (out / "flamegraph.svg").exists()


def test_config_file_round_trip_otlp(spanprof, workload, procs, tmp_path, testcollector_bin,
                                     otlpcheck):
    port = free_port()
    recv = tmp_path / "recv.jsonl"
    start_testcollector(procs, testcollector_bin, port, recv)
    target = procs.start(workload("chain"), "15")
    procs.start(workload("chain"), "15")
    reqdir = tmp_path / "requests"
    cfg = tmp_path / "agent.yaml"
    cfg.write_text(f"""endpoint: 127.0.0.1:{port}
export-interval: 1
duration: 3
frequency: 61
pid:
  - {target.pid}
header:
  X-Team: config file
  x-tenant: "42"
output-dir: {reqdir}
compression: gzip
stats-json: {tmp_path / "stats.json"}
""")
    res = run(spanprof, "record", "--config", cfg)
    assert res.returncode == 0, res.stderr
    nums = summary_numbers(read_stats(tmp_path / "stats.json"))
    assert nums["sent"] == nums["recorded"] and nums["recorded"] > 0, res.stderr
    reqs = received(recv)
    assert reqs, "the Collector received nothing"
    for r in reqs:
        assert r["headers"].get("x-team") == "config file", r["headers"]
        assert r["headers"].get("x-tenant") == "42", r["headers"]
        assert {p["pid"] for p in r["profiles"]} <= {target.pid}
    assert sum(p["samples"] for r in reqs for p in r["profiles"]) == nums["sent"]
    pids, periods = otlp_resources(otlpcheck, reqdir)
    assert pids == {target.pid}
    assert periods == {1_000_000_000 // 61}


def test_env_overrides_file_and_flag_overrides_env(spanprof, workload, procs, tmp_path,
                                                   testcollector_bin, otlpcheck):
    port_env, port_flag = free_port(), free_port()
    recv_env, recv_flag = tmp_path / "env.jsonl", tmp_path / "flag.jsonl"
    start_testcollector(procs, testcollector_bin, port_env, recv_env)
    start_testcollector(procs, testcollector_bin, port_flag, recv_flag)
    target = procs.start(workload("chain"), "30")
    cfg = tmp_path / "spanprof.yaml"
    # The file's endpoint is a port nobody listens on: a run that used it would send nothing.
    cfg.write_text(f"""endpoint: 127.0.0.1:{free_port()}
frequency: 49
duration: 2
export-interval: 1
pid: [{target.pid}]
quiet: true
header: {{x-src: file, x-file: "yes"}}
output-dir: {tmp_path / "req-env"}
""")
    env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port_env}",
                    OTEL_EXPORTER_OTLP_HEADERS="x-src=env")

    # Environment over file: endpoint and the header of the same name; the file's other
    # header stays.
    res = run(spanprof, "record", "--config", cfg, env=env)
    assert res.returncode == 0, res.stderr
    reqs = received(recv_env)
    assert reqs, res.stderr
    for r in reqs:
        assert r["headers"] == {"x-src": "env", "x-file": "yes"}, r["headers"]
    assert not received(recv_flag)
    _, periods = otlp_resources(otlpcheck, tmp_path / "req-env")
    assert periods == {1_000_000_000 // 49}
    n_env = len(reqs)

    # Flag over environment (and over the file): endpoint, header list, frequency, output-dir.
    res = run(spanprof, "record", "--config", cfg, "--endpoint", f"127.0.0.1:{port_flag}",
              "--header", "x-src=flag", "--frequency", 73, "--output-dir",
              tmp_path / "req-flag", env=env)
    assert res.returncode == 0, res.stderr
    reqs = received(recv_flag)
    assert reqs, res.stderr
    for r in reqs:
        assert r["headers"] == {"x-src": "flag"}, r["headers"]
    assert len(received(recv_env)) == n_env, "the environment's endpoint was used over the flag"
    _, periods = otlp_resources(otlpcheck, tmp_path / "req-flag")
    assert periods == {1_000_000_000 // 73}

    # `config check` shows where each effective value comes from.
    res = run(spanprof, "config", "check", cfg, env=env)
    assert res.returncode == 0, res.stderr
    assert (f'endpoint: "http://127.0.0.1:{port_env}"  # OTEL_EXPORTER_OTLP_ENDPOINT '
            f"(replaces file line 1)") in res.stdout


def test_spanprof_config_env_names_the_file(spanprof, tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("frequency: 99\nduration: soon\n")
    res = run(spanprof, "record", env=clean_env(SPANPROF_CONFIG=str(cfg)))
    assert res.returncode == 2
    assert (f"{cfg}:2:11: key 'duration': wants a number of seconds above 0 and up to "
            "10000000, not 'soon'") in res.stderr
    assert "samples from" not in res.stderr  # stopped before sampling


def test_config_check_names_every_bad_key_and_line(spanprof, tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("frequency: 99\n"
                   "duratoin: 10\n"
                   "pid: [1, x]\n"
                   "quiet: perhaps\n"
                   "frequency: 98\n")
    res = run(spanprof, "config", "check", cfg)
    assert res.returncode == 2
    assert res.stdout == ""
    for want in (f"{cfg}:2:1: key 'duratoin': unknown key (did you mean 'duration'?)",
                 f"{cfg}:3:10: key 'pid': wants process ids, not 'x'",
                 f"{cfg}:4:8: key 'quiet': wants true or false, not 'perhaps'",
                 f"{cfg}:5:1: key 'frequency': duplicate key (first set on line 1)",
                 f"spanprof: {cfg}: 4 errors"):
        assert want in res.stderr, res.stderr
    # A syntax error: the line of the problem.
    cfg.write_text("frequency: 99\npid: [1, 2\n")
    res = run(spanprof, "config", "check", cfg)
    assert res.returncode == 2
    assert f"{cfg}:3:1: YAML syntax error" in res.stderr, res.stderr
    # `record --config` refuses the same file before loading anything.
    res = run(spanprof, "record", "--config", cfg)
    assert res.returncode == 2 and "YAML syntax error" in res.stderr, res.stderr


def test_config_check_refuses_an_exe_that_is_not_a_program(spanprof, tmp_path):
    cfg = tmp_path / "exe.yaml"
    cfg.write_text(f"frequency: 99\nexe: [{tmp_path}]\n")
    for cmd in (["config", "check", cfg], ["record", "--config", cfg, "--duration", "1"]):
        res = run(spanprof, *cmd)
        assert res.returncode == 2, res.stderr
        assert (f"{cfg}:2:7: key 'exe': wants an executable file, not '{tmp_path}' "
                "(a directory)") in res.stderr, res.stderr


def test_shipped_example_is_valid(spanprof):
    example = ROOT / "collector-config/deploy/spanprof.yaml"
    res = run(spanprof, "config", "check", example)
    assert res.returncode == 0, res.stderr
    assert f"{example}: ok" in res.stdout


def test_endpoint_forms_checked_before_start(spanprof, workload, procs, tmp_path,
                                             testcollector_bin):
    # Each bad form is a usage error (2) from the flag, the file (with line:col) and the
    # environment, before anything is loaded.
    cfg = tmp_path / "ep.yaml"
    for bad, part in (("localhost:99999", "port '99999'"), ("localhost", "no port"),
                      ("ftp://x:1", "scheme 'ftp'"), ("host with space:1", "is a space"),
                      ("localhost:4317/v1/profiles", "path '/v1/profiles'"),
                      ("localhost:4317\r", "control character")):
        res = run(spanprof, "record", "--duration", "1", "--endpoint", bad, timeout=30)
        assert res.returncode == 2 and part in res.stderr, (bad, res.stderr)
        cfg.write_text("frequency: 99\nendpoint: " + json.dumps(bad) + "\n")
        res = run(spanprof, "config", "check", cfg, timeout=30)
        assert res.returncode == 2 and f"{cfg}:2:11: key 'endpoint': " in res.stderr, res.stderr
        assert part in res.stderr, (bad, res.stderr)
        res = run(spanprof, "record", "--duration", "1", timeout=30,
                  env=clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=bad))
        assert res.returncode == 2 and "OTEL_EXPORTER_OTLP_ENDPOINT: " in res.stderr
        assert part in res.stderr, (bad, res.stderr)
    # A trailing "/" is dropped before gRPC sees the target: the samples arrive.
    port = free_port()
    recv = tmp_path / "recv.jsonl"
    start_testcollector(procs, testcollector_bin, port, recv)
    chain = procs.start(workload("chain"), "10")
    res = run(spanprof, "record", "--endpoint", f"http://127.0.0.1:{port}/", "--pid", chain.pid,
              "--duration", "2", "--export-interval", "1", "--stats-json", tmp_path / "st.json")
    assert res.returncode == 0, res.stderr
    nums = summary_numbers(read_stats(tmp_path / "st.json"))
    assert nums["sent"] == nums["recorded"] > 0, res.stderr
    assert sum(p["samples"] for r in received(recv) for p in r["profiles"]) == nums["sent"]


def test_fifo_and_second_config_are_refused(spanprof, tmp_path):
    fifo = tmp_path / "agent.yaml"
    os.mkfifo(fifo)
    # No writer ever comes: a read would block until the timeout.
    res = run(spanprof, "config", "check", fifo, timeout=30)
    assert res.returncode == 2 and "not a regular file (a FIFO)" in res.stderr, res.stderr
    res = run(spanprof, "record", timeout=30, env=clean_env(SPANPROF_CONFIG=str(fifo)))
    assert res.returncode == 2 and "not a regular file (a FIFO)" in res.stderr, res.stderr
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("frequency: 31\n")
    b.write_text("frequency: 37\n")
    res = run(spanprof, "record", "--config", a, "--config", b, "--duration", "1", timeout=30)
    assert res.returncode == 2 and "--config was given twice" in res.stderr, res.stderr


def test_config_command_misuse_is_named(spanprof):
    res = run(spanprof, "config", "bogus", "x")
    assert res.returncode == 2 and "unknown command 'bogus'" in res.stderr, res.stderr
    res = run(spanprof, "config", "check")
    assert res.returncode == 2 and "give at least one FILE" in res.stderr, res.stderr
