# SPDX-License-Identifier: Apache-2.0
"""python -m spanprof_context: checks the binding and the SDK hook against the loaded library and
prints the cost of the hook. Needs opentelemetry-sdk."""
import threading

from spanprof_context import current, install, load, publish_process, uninstall, unpublish_process


def _check(pairs: int = 20000) -> None:
    """Checks the binding and the SDK hook against the loaded library and prints the cost of the
    hook per context attach+detach pair. Needs opentelemetry-sdk."""
    import timeit

    from opentelemetry import context, trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())
    tracer = trace.get_tracer("spanprof_context")
    publish_process({"service.name": "spanprof-context-check"}, ["span.name"])
    with open("/proc/self/maps") as f:
        assert "OTEL_CTX" in f.read(), "no OTEL_CTX mapping"

    def ids(span):
        sc = span.get_span_context()
        return sc.trace_id, sc.span_id

    install(attrs=lambda span: {0: getattr(span, "name", "")})
    assert current() is None
    with tracer.start_as_current_span("outer") as outer:
        rec = current()
        assert (rec["trace_id"], rec["span_id"]) == ids(outer) and rec["valid"] == 1, rec
        assert rec["attrs"] == {0: b"outer"}, rec
        with tracer.start_as_current_span("inner") as inner:
            assert (current()["trace_id"], current()["span_id"]) == ids(inner)
            token = context.attach(context.Context())  # a context without a span
            assert current() is None
            context.detach(token)
            ctx = context.get_current()  # the same context attached twice
            t1, t2 = context.attach(ctx), context.attach(ctx)
            context.detach(t2)
            context.detach(t1)
            assert current()["span_id"] == ids(inner)[1]
        assert current()["span_id"] == ids(outer)[1]

        results = []

        def worker():
            ok = current() is None
            with tracer.start_as_current_span("worker") as span:
                ok = ok and current()["span_id"] == ids(span)[1]
            results.append(ok and current() is None)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [True] * 4, results
        assert current()["span_id"] == ids(outer)[1]
    assert current() is None

    uninstall()
    span = tracer.start_span("timing")
    ctx = trace.set_span_in_context(span)

    def per_pair(rc):
        return min(timeit.repeat(lambda: rc.detach(rc.attach(ctx)), number=pairs,
                                 repeat=5)) / pairs * 1e6

    plain = per_pair(context._RUNTIME_CONTEXT)
    bare = per_pair(install())
    uninstall()
    with_attrs = per_pair(install(attrs=lambda span: {0: "GET", 1: "/api/cart", 2: "gold"}))
    uninstall()
    unpublish_process()
    print(f"spanprof_context: OK ({load()._name})")
    print(f"context attach+detach: {plain:.2f} us without the hook, {bare:.2f} us with it, "
          f"{with_attrs:.2f} us with it and 3 attributes")


if __name__ == "__main__":
    _check()
