"""How 'spanprof record' stops (docs/otlp.md "Stopping", docs/deploy.md): one --flush-timeout
deadline for both senders, SIGHUP like SIGTERM, a vanished stderr reader, the lines printed
even with --quiet."""
import re
import signal
import subprocess
import time

from conftest import free_port, read_stats, summary_numbers, wait_sampling

# The end-of-run problem line of self-metrics that reached no Collector
# (exporter/record/report_problems.c).
METRICS_PROBLEM = re.compile(r"^spanprof: self-metrics to 127\.0\.0\.1:\d+: \d+ requests not "
                             r"delivered \(.*\); ", re.M)


def test_sigterm_flush_shares_one_deadline(spanprof, workload, procs, tmp_path):
    """Nobody listens, --self-metrics on: from SIGTERM to exit takes one --flush-timeout (the
    profiles and the self-metrics share it), not one per sender (2 x 8 s before)."""
    flush = 8
    chain = procs.start(workload("chain"), "120")
    agent = procs.start(spanprof, "record", "--endpoint", f"127.0.0.1:{free_port()}",
                        "--self-metrics", "--stats-interval", 1, "--export-interval", 1,
                        "--flush-timeout", flush, "--duration", 120, "--pid", chain.pid,
                        "--frequency", 99, "--stats-json", tmp_path / "stats.json",
                        stderr=subprocess.PIPE, text=True)
    seen = wait_sampling(agent)
    time.sleep(3)  # requests queue up, retried with backoff
    t0 = time.monotonic()
    agent.send_signal(signal.SIGTERM)
    _, err = agent.communicate(timeout=120)
    elapsed = time.monotonic() - t0
    err = "".join(seen) + err
    # Nothing reached a Collector: exit status 1 (docs/otlp.md), after the summary.
    assert agent.returncode == 1 and "no sample reached the Collector" in err, err
    assert "spanprof: sending" in err, err
    # It did wait for the Collector (retrying up to the deadline), but only once.
    assert elapsed >= flush * 0.8, (elapsed, err)
    assert elapsed < flush + 5, (elapsed, err)
    stats = read_stats(tmp_path / "stats.json")
    nums = summary_numbers(stats)
    assert nums["sent"] == 0 and nums["dropped_samples"] == nums["recorded"] > 0, err
    m = stats["self_metrics"]
    assert m["requests_sent"] == 0 and m["failed"] == 0, stats
    assert m["dropped"] >= 3 and m["retries"] > 0, stats
    assert METRICS_PROBLEM.search(err), err


def test_quiet_still_shows_the_flush_and_metrics_summary(spanprof, workload, procs):
    """With --quiet (the deploy config), the "sending N queued requests" line and the
    self-metrics problem line are still printed."""
    chain = procs.start(workload("chain"), "60")
    res = subprocess.run([str(spanprof), "record", "--quiet", "--endpoint",
                          f"127.0.0.1:{free_port()}", "--self-metrics", "--stats-interval", "1",
                          "--export-interval", "1", "--flush-timeout", "1", "--duration", "4",
                          "--pid", str(chain.pid), "--frequency", "99"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stderr
    assert re.search(r"^spanprof: sending \d+ queued requests \(up to 1 s", res.stderr, re.M), \
        res.stderr
    assert METRICS_PROBLEM.search(res.stderr), res.stderr
    assert "spanprof:     " not in res.stderr  # still no progress line


def test_sighup_stops_cleanly(spanprof, workload, procs, tmp_path):
    """SIGHUP (a closed terminal, 'systemctl kill -s HUP') ends the run like SIGTERM: exit 0,
    the outputs written."""
    out = tmp_path / "out"
    chain = procs.start(workload("chain"), "60")
    agent = procs.start(spanprof, "record", "--output-dir", out, "--duration", 120, "--pid",
                        chain.pid, "--stats-json", tmp_path / "stats.json",
                        stderr=subprocess.PIPE, text=True)
    seen = wait_sampling(agent)
    time.sleep(1)
    agent.send_signal(signal.SIGHUP)
    _, err = agent.communicate(timeout=120)
    err = "".join(seen) + err
    assert agent.returncode == 0, (agent.returncode, err)
    assert (out / "profile.folded").stat().st_size > 0, err
    assert summary_numbers(read_stats(tmp_path / "stats.json"))["recorded"] > 0, err


def test_stderr_reader_gone_does_not_kill_the_run(spanprof, workload, procs, tmp_path):
    """'spanprof record ... 2>&1 | head -1': the reader of stderr goes away; the next log
    lines fail with EPIPE and the run goes on to write its outputs (no death by SIGPIPE)."""
    out = tmp_path / "out"
    chain = procs.start(workload("chain"), "60")
    agent = procs.start(spanprof, "record", "--output-dir", out, "--duration", 5,
                        "--stats-interval", 1, "--pid", chain.pid, stderr=subprocess.PIPE,
                        text=True)
    wait_sampling(agent)
    agent.stderr.close()  # stats lines every second from here on: each one hits EPIPE
    rc = agent.wait(timeout=120)
    assert rc == 0, rc
    assert (out / "profile.folded").stat().st_size > 0
    assert (out / "profile.pb.gz").exists()


def test_exit_status_of_an_export_run(spanprof, procs, tmp_path):
    """docs/otlp.md: status 1 only when samples were recorded and none reached the Collector;
    nothing recorded (an idle target) is no export failure: status 0."""
    port = free_port()  # nobody listens
    idle = procs.start("sleep", "60")
    res = subprocess.run([str(spanprof), "record", "--endpoint", f"127.0.0.1:{port}", "--pid",
                          str(idle.pid), "--duration", "2", "--export-interval", "1",
                          "--flush-timeout", "1", "--stats-json", str(tmp_path / "stats.json")],
                         capture_output=True, text=True, timeout=120)
    assert summary_numbers(read_stats(tmp_path / "stats.json"))["recorded"] == 0, res.stderr
    assert res.returncode == 0, res.stderr
    assert "no sample reached the Collector" not in res.stderr
