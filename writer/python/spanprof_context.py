# SPDX-License-Identifier: Apache-2.0
"""Publish the active OpenTelemetry span of each thread for spanprof (OTEP 4947 / OTEP 4719).

A ctypes binding of libspanprof_ctx.so (writer/spanprof_ctx.h) and a hook for the OpenTelemetry
Python SDK:

    import spanprof_context
    spanprof_context.publish_process({"service.name": "checkout"}, ["http.route"])
    spanprof_context.install()      # every span made current is now published for its thread

The library is found, in this order: the path in $SPANPROF_CTX_LIB, libspanprof_ctx.so next to
this file, the dynamic linker's cache (ldconfig), the default library search path.

Limits: the published span follows context attach/detach calls on each OS thread. asyncio tasks
switch contexts without attach/detach, so after a task switch the previous task's span stays
published until the next attach or detach on that thread.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading
from typing import Callable, Dict, Iterable, List, Mapping, Optional

__all__ = [
    "load", "publish_process", "unpublish_process", "attach", "detach", "current",
    "install", "uninstall", "MAX_ATTRS_DATA",
]

logger = logging.getLogger(__name__)

MAX_ATTRS_DATA = 612
_HEADER = 28


class _Attr(ctypes.Structure):
    _fields_ = [("key_index", ctypes.c_uint8), ("value", ctypes.c_char_p),
                ("len", ctypes.c_size_t)]


class _Token(ctypes.c_void_p):
    """A writer token (a subclass, so ctypes hands it back as is, not as an int)."""


# spctx_attach and spctx_detach run on every context change: they are called without argtypes
# (converting arguments through argtypes triples the cost of the call), with every integer
# argument passed as a ready-made ctypes object of the exact C type.
_U8 = [ctypes.c_uint8(i) for i in range(256)]
_SIZES = [ctypes.c_size_t(i) for i in range(64)]


def _size(n: int) -> ctypes.c_size_t:
    return _SIZES[n] if n < len(_SIZES) else ctypes.c_size_t(n)


_lib = None
_lib_lock = threading.Lock()


def _candidates() -> List[str]:
    out = []
    env = os.environ.get("SPANPROF_CTX_LIB")
    if env:
        out.append(env)
    out.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "libspanprof_ctx.so"))
    found = ctypes.util.find_library("spanprof_ctx")
    if found:
        out.append(found)
    out.append("libspanprof_ctx.so")
    return out


def load(path: Optional[str] = None) -> ctypes.CDLL:
    """Loads libspanprof_ctx.so once (from path if given) and returns it."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        errors = []
        for cand in [path] if path else _candidates():
            if os.sep in cand and not os.path.exists(cand):
                errors.append(f"{cand}: no such file")
                continue
            try:
                lib = ctypes.CDLL(cand)
                break
            except OSError as e:
                errors.append(str(e))
        else:
            raise OSError("libspanprof_ctx.so not found (set SPANPROF_CTX_LIB to its path): "
                          + "; ".join(errors))
        lib.spctx_process_publish.argtypes = [ctypes.POINTER(ctypes.c_char_p),
                                              ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
        lib.spctx_process_publish.restype = ctypes.c_int
        lib.spctx_process_unpublish.argtypes = []
        lib.spctx_process_unpublish.restype = ctypes.c_int
        lib.spctx_attach.restype = _Token  # no argtypes: see _U8
        lib.spctx_detach.restype = None
        _lib = lib
        return lib


def _text(value: object) -> str:
    """Resource values are published as strings (the C API takes strings only)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    return str(value)


def publish_process(resource: Mapping[str, object], attr_keys: Iterable[str]) -> None:
    """Publishes (or updates) the process context: resource attributes (e.g. service.name) and
    the attribute key map, where attr_keys[i] names key index i of thread attributes (<= 256,
    append only). Raises OSError on failure."""
    lib = load()
    kv: List[Optional[bytes]] = []
    for key, value in resource.items():
        kv += [str(key).encode(), _text(value).encode()]
    kv.append(None)
    keys = [k.encode() for k in attr_keys]
    kv_arr = (ctypes.c_char_p * len(kv))(*kv)
    keys_arr = (ctypes.c_char_p * max(len(keys), 1))(*keys)
    err = lib.spctx_process_publish(kv_arr, keys_arr, len(keys))
    if err:
        raise OSError(-err, "spctx_process_publish: " + os.strerror(-err))


def unpublish_process() -> None:
    """Removes the process context mapping."""
    err = load().spctx_process_unpublish()
    if err:
        raise OSError(-err, "spctx_process_unpublish: " + os.strerror(-err))


def _attrs_array(attrs: Optional[Mapping[int, str]]):
    if not attrs:
        return None, 0
    values = [(int(k), v.encode() if isinstance(v, str) else bytes(v)) for k, v in attrs.items()]
    arr = (_Attr * len(values))()
    for i, (k, v) in enumerate(values):
        arr[i].key_index = k
        arr[i].value = v  # the array keeps a reference to the bytes until the call returns
        arr[i].len = len(v)
    return arr, len(values)


def attach(trace_id: int, span_id: int, flags: int = 1,
           attrs: Optional[Mapping[int, str]] = None) -> _Token:
    """Makes the span the calling thread's active span; returns an opaque token for detach().
    trace_id / span_id are the integers of the OpenTelemetry SpanContext (0: no span).
    attrs maps key index (see publish_process) to value."""
    lib = load()
    arr, n = _attrs_array(attrs)
    if trace_id and span_id:
        return lib.spctx_attach(trace_id.to_bytes(16, "big"), span_id.to_bytes(8, "big"),
                                _U8[flags & 0xFF], arr, _size(n))
    return lib.spctx_attach(None, None, _U8[0], None, _SIZES[0])


def detach(token: _Token) -> None:
    """Restores the span that was active before the attach() that returned token."""
    if not isinstance(token, ctypes.c_void_p):
        token = ctypes.c_void_p(token)
    load().spctx_detach(token)


def current() -> Optional[dict]:
    """The calling thread's published record (for tests and debugging), or None."""
    lib = load()
    # dlsym of a TLS symbol gives the calling thread's instance.
    ptr = ctypes.c_void_p.in_dll(lib, "otel_thread_ctx_v1").value
    if not ptr:
        return None
    raw = ctypes.string_at(ptr, _HEADER)
    size = int.from_bytes(raw[26:28], "little")
    data = ctypes.string_at(ptr + _HEADER, size)
    attrs: Dict[int, bytes] = {}
    i = 0
    while i + 2 <= len(data) and i + 2 + data[i + 1] <= len(data):
        attrs[data[i]] = data[i + 2:i + 2 + data[i + 1]]
        i += 2 + data[i + 1]
    return {
        "trace_id": int.from_bytes(raw[0:16], "big"),
        "span_id": int.from_bytes(raw[16:24], "big"),
        "valid": raw[24],
        "trace_flags": raw[25],
        "attrs": attrs,
    }


# --- OpenTelemetry SDK hook ------------------------------------------------------------------

_installed = None


class _ThreadTokens(threading.local):
    """Per thread: id(SDK token) -> (SDK token, writer token)."""

    def __init__(self):
        self.tokens = {}


def _runtime_context_class():
    from opentelemetry.context.context import _RuntimeContext
    from opentelemetry.trace import get_current_span

    class SpanprofRuntimeContext(_RuntimeContext):
        """Wraps the SDK's runtime context: after each attach, publishes the span of the attached
        context (or no span) for this thread; each detach restores what was published before.
        SDK tokens map to writer tokens per thread (a Context attached twice gets two tokens,
        so the map is keyed by token, not by Context)."""

        def __init__(self, inner: _RuntimeContext,
                     attrs: Optional[Callable[[object], Optional[Mapping[int, str]]]]):
            self._inner = inner
            self._attrs = attrs
            self._local = _ThreadTokens()
            lib = load()
            self._attach = lib.spctx_attach
            self._detach = lib.spctx_detach

        def attach(self, context):
            token = self._inner.attach(context)
            try:
                span = get_current_span(context)
                sc = span.get_span_context()
                if sc.is_valid:
                    arr, n = None, 0
                    if self._attrs is not None:
                        arr, n = _attrs_array(self._attrs(span))
                    wtoken = self._attach(sc.trace_id.to_bytes(16, "big"),
                                          sc.span_id.to_bytes(8, "big"),
                                          _U8[sc.trace_flags & 0xFF], arr, _size(n))
                else:
                    wtoken = self._attach(None, None, _U8[0], None, _SIZES[0])
                # contextvars tokens are not hashable: key by id, keep the token so that
                # its id is not reused while the entry lives.
                self._local.tokens[id(token)] = (token, wtoken)
            except Exception:  # never break the application for a profiling aid
                logger.debug("spanprof: could not publish the span", exc_info=True)
            return token

        def get_current(self):
            return self._inner.get_current()

        def detach(self, token) -> None:
            tokens = self._local.tokens
            entry = tokens.get(id(token))
            if entry is not None and entry[0] is token:
                del tokens[id(token)]
            else:
                entry = None  # attached before install() or on another thread
            # If the SDK refuses the token it raises and the context stays: so does the span.
            self._inner.detach(token)
            if entry is not None:
                self._detach(entry[1])

    return SpanprofRuntimeContext


def install(attrs: Optional[Callable[[object], Optional[Mapping[int, str]]]] = None):
    """Wraps opentelemetry.context's runtime context so that the current span of every thread is
    published. attrs, if given, is called with the span on each attach and returns the thread
    attributes to publish ({key index: value}). Idempotent; returns the wrapper."""
    global _installed
    import opentelemetry.context as otel_context

    if _installed is not None and otel_context._RUNTIME_CONTEXT is _installed:
        return _installed
    wrapper = _runtime_context_class()(otel_context._RUNTIME_CONTEXT, attrs)
    otel_context._RUNTIME_CONTEXT = wrapper
    _installed = wrapper
    return wrapper


def uninstall() -> None:
    """Puts the SDK's own runtime context back (spans attached meanwhile stay published until
    detached)."""
    global _installed
    import opentelemetry.context as otel_context

    if _installed is not None and otel_context._RUNTIME_CONTEXT is _installed:
        otel_context._RUNTIME_CONTEXT = _installed._inner
    _installed = None


# --- self-check -------------------------------------------------------------------------------

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
