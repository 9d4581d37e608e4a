"""An asyncio HTTP service instrumented with the OpenTelemetry Python SDK, for the asyncio
span-link test (test_span_python_async.py). Its active spans are published through the
spanprof_context package (writer/python), wired exactly as docs/span-links-sdk.md shows.

Six endpoints; each request holds its span across two awaits and burns CPU before, between and
after them in native functions of asyncburn.so named after the endpoint and the phase
(checkout_before, ...), then burns <endpoint>_unspanned after its span ended. A task without
any span burns outside_span. One client task per endpoint (in this process, over TCP) sends
one request at a time, so at any instant at most one request of an endpoint is in flight.

Usage: asyncapp.py ASYNCBURN_SO SPANS_OUT SECONDS (ASYNCAPP_LOOP=uvloop: served on uvloop)
Prints "ready PID", waits for a line on stdin, serves SECONDS, writes the spans the SDK exported
(one JSON object a line: trace_id, span_id, name, start_ns, end_ns) to SPANS_OUT, prints
"done SPANS CPU_SECONDS".
"""
import asyncio
import ctypes
import json
import os
import sys
import time

# --- the wiring shown in docs/span-links-sdk.md (Python) ---
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
import spanprof_context

provider = TracerProvider(resource=Resource.create({"service.name": "async-e2e"}))
trace.set_tracer_provider(provider)
spanprof_context.publish_process({"service.name": "async-e2e"}, ["span.name"])
spanprof_context.install()
# --- end of the wiring ---

from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter)

ENDPOINTS = ["checkout", "search", "render", "login", "cart", "pay"]
BURN_US = 4000      # CPU per phase
SLEEP_S = 0.002     # each of the two awaits inside the span
PAUSE_S = 0.02      # between two requests of one endpoint: spans of an endpoint never touch

exporter = InMemorySpanExporter()
provider.add_span_processor(SimpleSpanProcessor(exporter))
tracer = trace.get_tracer("asyncapp")
burn = ctypes.CDLL(sys.argv[1])


async def handle(endpoint):
    with tracer.start_as_current_span(endpoint):
        getattr(burn, endpoint + "_before")(BURN_US)
        await asyncio.sleep(SLEEP_S)
        getattr(burn, endpoint + "_between")(BURN_US)
        await asyncio.sleep(SLEEP_S)
        getattr(burn, endpoint + "_after")(BURN_US)
    getattr(burn, endpoint + "_unspanned")(BURN_US // 2)


async def serve_connection(reader, writer):
    request = await reader.readline()
    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
        pass
    endpoint = request.split()[1].decode().strip("/")
    if endpoint in ENDPOINTS:
        await handle(endpoint)
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
    else:
        writer.write(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    await writer.drain()
    writer.close()


async def client(port, endpoint, stop):
    n = 0
    while time.time() < stop:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /{endpoint} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        await writer.drain()
        status = await reader.readline()
        assert status.startswith(b"HTTP/1.0 200"), status
        await reader.read()
        writer.close()
        n += 1
        await asyncio.sleep(PAUSE_S)
    return n


async def outside(stop):
    while time.time() < stop:
        burn.outside_span(2000)
        await asyncio.sleep(0.005)


async def main(seconds):
    server = await asyncio.start_server(serve_connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print("ready", os.getpid(), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    stop = time.time() + seconds
    counts = await asyncio.gather(*(client(port, ep, stop) for ep in ENDPOINTS), outside(stop))
    server.close()
    await server.wait_closed()
    return counts


def run_on_uvloop(seconds):
    """On uvloop, whose callbacks install() cannot hook: its tasks publish their spans through
    the task factory, wired as docs/span-links-sdk.md shows."""
    # --- the uvloop wiring shown in docs/span-links-sdk.md ---
    import uvloop

    loop = uvloop.new_event_loop()
    loop.set_task_factory(spanprof_context.task_factory())
    # --- end of the uvloop wiring ---
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(main(seconds))
    finally:
        loop.close()


if __name__ == "__main__":
    if os.environ.get("ASYNCAPP_LOOP") == "uvloop":
        counts = run_on_uvloop(float(sys.argv[3]))
    else:
        counts = asyncio.run(main(float(sys.argv[3])))
    provider.shutdown()
    with open(sys.argv[2], "w") as f:
        for span in exporter.get_finished_spans():
            sc = span.get_span_context()
            f.write(json.dumps({"trace_id": f"{sc.trace_id:032x}", "span_id": f"{sc.span_id:016x}",
                                "name": span.name, "start_ns": span.start_time,
                                "end_ns": span.end_time}) + "\n")
    print("done", len(exporter.get_finished_spans()), time.process_time(), counts, flush=True)
