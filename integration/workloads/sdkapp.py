"""An application instrumented with the OpenTelemetry Python SDK, for the span-link end-to-end
test. Spans go to a Collector over OTLP/HTTP; the active span of each thread is published to
spanprof through the writer library (writer/python, the spanprof_context package), hooked into the SDK's
runtime context. Each span runs its endpoint's Python handler, which calls a native function of
burnlib.so (ctypes) that burns CPU.

Usage: sdkapp.py BURNLIB TRACES_ENDPOINT SECONDS
Prints "ready PID" once set up and one "span TRACE SPAN NAME DURATION_MS" line per span.
"""
import ctypes
import sys
import threading
import time

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import spanprof_context



# One Python function per endpoint: the span's samples show it (docs/python.md), below the
# native function it calls.
def handle_checkout(burnlib, ms):
    burnlib.burn_checkout(ms)


def handle_search(burnlib, ms):
    burnlib.burn_search(ms)


def handle_render(burnlib, ms):
    burnlib.burn_render(ms)


ENDPOINTS = [("checkout", handle_checkout, 180), ("search", handle_search, 130),
             ("render", handle_render, 30)]


def main():
    burnlib = ctypes.CDLL(sys.argv[1])
    endpoint, seconds = sys.argv[2], float(sys.argv[3])
    resource = Resource.create({"service.name": "sdk-e2e"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint),
                                                   schedule_delay_millis=500))
    trace.set_tracer_provider(provider)
    spanprof_context.publish_process({"service.name": "sdk-e2e"}, ["endpoint"])
    spanprof_context.install()
    tracer = trace.get_tracer("sdkapp")
    print("ready", __import__("os").getpid(), flush=True)

    def worker(k):
        stop = time.time() + seconds
        i = k
        while time.time() < stop:
            name, fn, ms = ENDPOINTS[i % len(ENDPOINTS)]
            i += 1
            with tracer.start_as_current_span(name) as span:
                t0 = time.time()
                fn(burnlib, ms)
                ctx = span.get_span_context()
                print("span %032x %016x %s %.0f" % (ctx.trace_id, ctx.span_id, name,
                                                    (time.time() - t0) * 1000), flush=True)
            time.sleep(0.005)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    provider.shutdown()


if __name__ == "__main__":
    main()
