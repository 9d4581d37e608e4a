# SPDX-License-Identifier: Apache-2.0
"""Unit tests of spanprof_context (no root): what the thread-local otel_thread_ctx_v1 holds,
read back through the library (spanprof_context.current()), while threads, asyncio tasks,
executor workers, uvloop, anyio and trio run spans of the real OpenTelemetry SDK.

The invariant checked everywhere: the thread publishes nothing or the recording span of the
context that is running (opentelemetry.trace.get_current_span()), never another one.
    pip install writer/python[test] && python -m pytest writer/python/tests
"""
import asyncio
import contextvars
import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

import spanprof_context

_provider = TracerProvider()
tracer = _provider.get_tracer("test")


@pytest.fixture(autouse=True)
def hooked():
    spanprof_context.install()
    yield
    spanprof_context.uninstall()


def published():
    """(trace_id, span_id) published for the calling thread, or None."""
    rec = spanprof_context.current()
    if rec is None:
        return None
    assert rec["valid"] == 1, rec
    return rec["trace_id"], rec["span_id"]


def ids(span):
    sc = span.get_span_context()
    return sc.trace_id, sc.span_id


def expected():
    span = trace.get_current_span()
    return ids(span) if span.is_recording() else None


def check(where=""):
    assert published() == expected(), where


def test_threads_nesting_and_isolation():
    assert published() is None
    with tracer.start_as_current_span("outer") as outer:
        assert published() == ids(outer)
        with tracer.start_as_current_span("inner") as inner:
            assert published() == ids(inner)
            token = context.attach(context.Context())  # a context without a span
            assert published() is None
            context.detach(token)
            ctx = context.get_current()  # the same context attached twice
            t1, t2 = context.attach(ctx), context.attach(ctx)
            context.detach(t2)
            context.detach(t1)
            assert published() == ids(inner)
        assert published() == ids(outer)
        results = []

        def worker():
            ok = published() is None
            with tracer.start_as_current_span("worker") as span:
                ok = ok and published() == ids(span)
            results.append(ok and published() is None)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [True] * 4
        assert published() == ids(outer)
    assert published() is None


def test_non_recording_and_ended_spans_are_not_published():
    off = TracerProvider(sampler=ALWAYS_OFF).get_tracer("off")
    with off.start_as_current_span("unsampled"):
        assert published() is None
    span = tracer.start_span("ended")
    span.end()
    with trace.use_span(span):
        assert published() is None


def test_profile_id_set_on_every_span_unless_turned_off():
    """pyroscope.profile.id (Grafana's traces-to-profiles) = each span's own id in lowercase hex,
    on local roots, children and remote-parented spans alike; none with profile_id=False."""
    provider = TracerProvider()
    t = provider.get_tracer("profile-id")
    spanprof_context.install(tracer_provider=provider)
    spanprof_context.install(tracer_provider=provider)  # idempotent: one processor
    assert len(provider._active_span_processor._span_processors) == 1
    remote = trace.NonRecordingSpan(trace.SpanContext(0x1234, 0x5678, is_remote=True,
                                                      trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
    with t.start_as_current_span("root") as root, t.start_as_current_span("child") as child:
        with t.start_as_current_span("remote-child", context=trace.set_span_in_context(remote)) \
                as rchild:
            pass
    for span in (root, child, rchild):
        assert span.attributes["pyroscope.profile.id"] == \
            "%016x" % span.get_span_context().span_id, span.name
    assert len(root.attributes["pyroscope.profile.id"]) == 16
    spanprof_context.install(tracer_provider=provider, profile_id=False)
    with t.start_as_current_span("off") as off:
        pass
    assert "pyroscope.profile.id" not in off.attributes
    spanprof_context.install(tracer_provider=provider)
    spanprof_context.uninstall()
    with t.start_as_current_span("after-uninstall") as after:
        pass
    assert "pyroscope.profile.id" not in after.attributes


def test_profile_id_off_through_the_environment(monkeypatch):
    provider = TracerProvider()
    monkeypatch.setenv("SPANPROF_PROFILE_ID", "false")
    spanprof_context.install(tracer_provider=provider)
    with provider.get_tracer("env").start_as_current_span("s") as span:
        pass
    assert "pyroscope.profile.id" not in span.attributes
    monkeypatch.setenv("SPANPROF_PROFILE_ID", "true")
    spanprof_context.install(tracer_provider=provider)
    with provider.get_tracer("env").start_as_current_span("s") as span:
        pass
    assert span.attributes["pyroscope.profile.id"] == "%016x" % span.get_span_context().span_id


def test_tasks_holding_spans_across_awaits():
    """Each task's span is published only while that task runs; callbacks without a span in
    between publish nothing."""
    seen = []

    def callback(tag):
        seen.append((tag, published()))

    async def request(k):
        loop = asyncio.get_running_loop()
        check("before")
        with tracer.start_as_current_span(f"req{k}") as span:
            assert published() == ids(span)
            for i in range(3):
                loop.call_soon(callback, (k, i))  # runs in a copy of this context: the span
                await asyncio.sleep(0)
                assert published() == ids(span)
            with tracer.start_as_current_span(f"child{k}") as child:
                await asyncio.sleep(0.001)
                assert published() == ids(child)
            assert published() == ids(span)
            await asyncio.sleep(0)
            assert published() == ids(span)
        check("after")
        return ids(span)

    async def main():
        loop = asyncio.get_running_loop()
        spans = await asyncio.gather(*(request(k) for k in range(5)))
        contextvars.Context().run(loop.call_soon, callback, "empty")  # no span in its context
        await asyncio.sleep(0)
        return spans

    spans = asyncio.run(main())
    by_k = dict(enumerate(spans))
    for tag, pub in seen:
        want = None if tag == "empty" else by_k[tag[0]]
        assert pub == want, (tag, pub, want)
    assert published() is None


def test_exception_in_step_restores():
    async def failing():
        with tracer.start_as_current_span("failing"):
            await asyncio.sleep(0)
            raise RuntimeError("boom")

    async def main():
        task = asyncio.ensure_future(failing())
        await asyncio.sleep(0)
        check("while the failing task waits")
        with pytest.raises(RuntimeError):
            await task
        check("after")
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        # A raw callback that raises after attaching a span: the loop logs it, the span goes.
        def bad():
            context.attach(trace.set_span_in_context(tracer.start_span("leaked")))
            raise ValueError("callback")
        loop.set_exception_handler(lambda loop, ctx: None)
        loop.call_soon(bad)
        loop.call_soon(lambda: fut.set_result(published()))
        assert await fut is None

    asyncio.run(main())
    assert published() is None


def test_nested_context_run_and_unbalanced_attach_in_a_step():
    async def main():
        loop = asyncio.get_running_loop()
        with tracer.start_as_current_span("outer") as outer:
            def inner():
                with tracer.start_as_current_span("nested") as nested:
                    assert published() == ids(nested)
                assert published() == ids(outer)
            contextvars.copy_context().run(inner)
            assert published() == ids(outer)
            # An attach left in place in a plain callback: gone once the callback returns.
            done = loop.create_future()
            loop.call_soon(lambda: context.attach(
                trace.set_span_in_context(tracer.start_span("unbalanced"))))
            loop.call_soon(lambda: done.set_result(published()))
            assert await done == ids(outer)  # call_soon copied this task's context
            done2 = loop.create_future()
            contextvars.Context().run(loop.call_soon, lambda: done2.set_result(published()))
            await asyncio.sleep(0)
            assert await done2 is None
            assert published() == ids(outer)

    asyncio.run(main())


def test_detach_in_a_later_step_republishes_the_parent():
    async def main():
        with tracer.start_as_current_span("outer") as outer:
            with tracer.start_as_current_span("inner") as inner:
                await asyncio.sleep(0)
                assert published() == ids(inner)
            # inner's token was attached in an earlier step: republished as a marker.
            assert published() == ids(outer)
            await asyncio.sleep(0)
            assert published() == ids(outer)
        assert published() is None

    asyncio.run(main())


def test_child_task_outliving_its_span():
    async def main():
        go = asyncio.Event()
        out = []

        async def child():
            out.append(published())
            await go.wait()
            out.append(published())  # the parent's span has ended: not published

        with tracer.start_as_current_span("parent") as parent:
            task = asyncio.ensure_future(child())
            await asyncio.sleep(0)
        go.set()
        await task
        assert out == [ids(parent), None]

    asyncio.run(main())


def test_executor_threads():
    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))  # one worker thread
        with tracer.start_as_current_span("req") as req:
            # to_thread copies the task's context: the worker publishes the task's span.
            if hasattr(asyncio, "to_thread"):
                assert await asyncio.to_thread(published) == ids(req)

                def leak():
                    context.attach(trace.set_span_in_context(tracer.start_span("leak")))
                    return published()
                leaked = await asyncio.to_thread(leak)
                assert leaked is not None and leaked != ids(req)
            # run_in_executor does not copy the context: nothing, and not the leaked span.
            assert await loop.run_in_executor(None, published) is None
            assert published() == ids(req)

    asyncio.run(main())


def test_random_interleavings_keep_the_invariant():
    """Many tasks, random nesting, awaits inside and between spans, callbacks: the published
    span is checked against the running context at every step."""
    rng = random.Random(4947)
    bad = []

    def probe(where):
        pub, want = published(), expected()
        if pub != want:
            bad.append((where, pub, want))

    async def work(k, depth):
        loop = asyncio.get_running_loop()
        for i in range(rng.randint(1, 3)):
            probe((k, depth, i, "enter"))
            if depth < 4 and rng.random() < 0.6:
                with tracer.start_as_current_span(f"s{k}.{depth}.{i}"):
                    probe((k, depth, i, "in"))
                    await asyncio.sleep(rng.choice([0, 0, 0.0005]))
                    probe((k, depth, i, "resumed"))
                    if rng.random() < 0.3:
                        loop.call_soon(probe, (k, depth, i, "callback"))
                    if rng.random() < 0.3:
                        await asyncio.gather(work(k * 10 + 1, depth + 1),
                                             work(k * 10 + 2, depth + 1))
                    else:
                        await work(k, depth + 1)
                    probe((k, depth, i, "back"))
            else:
                await asyncio.sleep(0)
            probe((k, depth, i, "after"))

    async def main():
        await asyncio.gather(*(work(k, 0) for k in range(20)))

    asyncio.run(main())
    assert not bad, bad[:5]
    assert published() is None


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager task factories are 3.12+")
def test_eager_task_factory():
    async def main():
        asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
        go = asyncio.Event()

        async def child():
            with tracer.start_as_current_span("child") as span:
                assert published() == ids(span)
                await go.wait()  # first step ends here, inside the creator's create_task
                assert published() == ids(span)

        with tracer.start_as_current_span("parent") as parent:
            task = asyncio.create_task(child())
            assert published() == ids(parent)
            go.set()
            await task
            assert published() == ids(parent)

    asyncio.run(main())


def test_uvloop_publishes_nothing_rather_than_a_wrong_span():
    uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed")
    out = []

    async def request(k):
        with tracer.start_as_current_span(f"uv{k}") as span:
            for _ in range(3):
                pub = published()
                out.append(pub)
                assert pub in (None, ids(span))
                await asyncio.sleep(0)

    async def main():
        await asyncio.gather(*(request(k) for k in range(4)))

    loop = uvloop.new_event_loop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert out and all(p is None for p in out), out


def _requests_through(loop, n=6, steps=4):
    """n concurrent requests, each a span held across awaits, on loop; returns the mismatches
    (what was published at each step against the task's own span) and the step count."""
    bad, seen = [], []

    async def request(k):
        with tracer.start_as_current_span(f"tf{k}") as span:
            for i in range(steps):
                seen.append(k)
                if published() != ids(span):
                    bad.append((k, i, published(), ids(span)))
                await asyncio.sleep(0)
                with tracer.start_as_current_span(f"tf{k}.{i}") as child:
                    if published() != ids(child):
                        bad.append((k, i, "child", published()))
                    await asyncio.sleep(0)
                    if published() != ids(child):
                        bad.append((k, i, "child after await", published()))
            if published() != ids(span):
                bad.append((k, "end", published()))

    async def main():
        await asyncio.gather(*(request(k) for k in range(n)))
        # Between steps of no task with a span, and after every task: nothing.
        if published() is not None:
            bad.append(("main", published()))

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return bad, len(seen)


def test_uvloop_with_task_factory_publishes_each_tasks_span():
    uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed")
    loop = uvloop.new_event_loop()
    loop.set_task_factory(spanprof_context.task_factory())
    bad, n = _requests_through(loop)
    assert n == 24 and not bad, bad[:5]
    assert published() is None


def test_task_factory_on_the_standard_loop_and_wrapping_another_factory():
    made = []

    def inner(loop, coro, **kwargs):
        made.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop = asyncio.new_event_loop()
    loop.set_task_factory(spanprof_context.task_factory(inner))
    bad, n = _requests_through(loop)
    assert n == 24 and not bad, bad[:5]
    assert made and all(asyncio.iscoroutine(c) for c in made)


def test_task_factory_restores_on_cancellation_and_errors():
    uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed")
    loop = uvloop.new_event_loop()
    loop.set_task_factory(spanprof_context.task_factory())
    after = []

    async def victim(started):
        with tracer.start_as_current_span("victim"):
            started.set()
            await asyncio.sleep(10)

    async def failing():
        with tracer.start_as_current_span("failing"):
            await asyncio.sleep(0)
            raise ValueError("boom")

    async def main():
        started = asyncio.Event()
        t = asyncio.ensure_future(victim(started))
        await started.wait()
        after.append(published())
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        after.append(published())
        with pytest.raises(ValueError):
            await asyncio.ensure_future(failing())
        after.append(published())

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    # main's own task has no span: nothing published whenever it runs.
    assert after == [None, None, None], after
    assert published() is None


def test_anyio_asyncio_backend():
    anyio = pytest.importorskip("anyio", reason="anyio is not installed")
    bad = []

    async def request(k):
        with tracer.start_as_current_span(f"a{k}") as span:
            for _ in range(3):
                if published() != ids(span):
                    bad.append((k, published()))
                await anyio.sleep(0)

    async def main():
        async with anyio.create_task_group() as tg:
            for k in range(4):
                tg.start_soon(request, k)

    anyio.run(main, backend="asyncio")
    assert not bad, bad


def trio_run(instrumented):
    trio = pytest.importorskip("trio", reason="trio is not installed")
    out = []

    async def request(k):
        with tracer.start_as_current_span(f"t{k}") as span:
            for _ in range(3):
                out.append((published(), ids(span)))
                await trio.sleep(0)

    async def main():
        async with trio.open_nursery() as nursery:
            for k in range(4):
                nursery.start_soon(request, k)

    trio.run(main, instruments=[spanprof_context.trio_instrument()] if instrumented else [])
    assert published() is None
    return out


def test_trio_with_the_instrument():
    out = trio_run(True)
    assert out and all(pub == own for pub, own in out), out


def test_trio_without_the_instrument_publishes_nothing():
    out = trio_run(False)
    assert out and all(pub is None for pub, _ in out), out
