# SPDX-License-Identifier: Apache-2.0
"""Publish the active OpenTelemetry span of each thread for spanprof (OTEP 4947 / OTEP 4719).

A ctypes binding of libspanprof_ctx.so (writer/spanprof_ctx.h) and a hook for the OpenTelemetry
Python SDK:

    import spanprof_context
    spanprof_context.publish_process({"service.name": "checkout"}, ["http.route"])
    spanprof_context.install()      # every span made current is now published for its thread

The library is found, in this order: the path in $SPANPROF_CTX_LIB, the copy built into this
package at install time (pip install writer/python), libspanprof_ctx.so in this package's
directory or the one above it, the dynamic linker's cache (ldconfig), the default search path.

What is published follows what runs (see _hook.py): OpenTelemetry context attach/detach on each
thread, each asyncio callback and task step (the span of its own context, restored on the way
out), concurrent.futures work items (asyncio.to_thread publishes its task's span), eager task
factories, trio tasks through trio_instrument(), and the tasks of loops whose callbacks cannot be
hooked (uvloop) through task_factory(). Where the running code cannot be proven (a running event
loop whose steps are not hooked), nothing is published.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import importlib.machinery
import logging
import os
import threading
from typing import Callable, Dict, Iterable, List, Mapping, Optional

__all__ = [
    "load", "publish_process", "unpublish_process", "attach", "detach", "current",
    "install", "uninstall", "trio_instrument", "task_factory", "MAX_ATTRS_DATA",
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
    here = os.path.dirname(os.path.abspath(__file__))
    # Built by setup.py as an extension-named shared library (no Python module inside: loaded
    # with ctypes only), so that the wheel is tagged for its platform and Python.
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        out.append(os.path.join(here, "_libspanprof_ctx" + suffix))
    out.append(os.path.join(here, "libspanprof_ctx.so"))
    out.append(os.path.join(os.path.dirname(here), "libspanprof_ctx.so"))
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
                if path or cand == os.environ.get("SPANPROF_CTX_LIB"):
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


# The OpenTelemetry SDK hook lives in _hook.py (imported lazily: the binding works without the
# SDK installed).


def install(attrs: Optional[Callable[[object], Optional[Mapping[int, str]]]] = None,
            asyncio: bool = True, profile_id: Optional[bool] = None,
            tracer_provider: Optional[object] = None):
    """Publishes, for every thread, the span of the context that runs on it (recording spans
    only). Wraps opentelemetry.context's runtime context (attach/detach) and, with asyncio=True,
    asyncio's callback runner (asyncio.events.Handle._run: every task step and callback of the
    standard event loops), concurrent.futures worker items and the eager task factories.
    attrs, if given, is called with the span each time it is published and returns the thread
    attributes ({key index: value}). Call after trace.set_tracer_provider() and before serving
    (before creating event loops that use an eager task factory). Idempotent; returns the
    runtime-context wrapper.

    profile_id (default: on, unless $SPANPROF_PROFILE_ID is "false"): every span started by
    tracer_provider (default: the global one; an SDK TracerProvider, else nothing is added) gets
    the attribute pyroscope.profile.id = its span id (16 lowercase hex digits), the attribute
    Grafana's Tempo looks for to offer "Profiles for this span" (docs/span-links.md)."""
    from . import _hook
    if profile_id is None:
        profile_id = os.environ.get("SPANPROF_PROFILE_ID", "").lower() != "false"
    wrapper = _hook.install(attrs, asyncio)  # raises OSError without the library: no attribute
    _hook.install_profile_id(profile_id, tracer_provider)
    return wrapper


def uninstall() -> None:
    """Undoes install(): the SDK's runtime context and asyncio's functions are put back. Spans
    published by the hook stay published on their threads until those contexts are detached.
    Spans started from now on get no pyroscope.profile.id (the processor stays registered with
    its TracerProvider, which cannot remove one, but does nothing)."""
    from . import _hook
    _hook.install_profile_id(False, None)
    _hook.uninstall()


def trio_instrument():
    """A trio instrument (trio.run(..., instruments=[spanprof_context.trio_instrument()]) or
    trio.lowlevel.add_instrument()) that publishes each trio task step's span. Without it, spans
    attached inside trio are not published (trio runs many tasks on one thread)."""
    from . import _hook
    return _hook.TrioInstrument()


def task_factory(inner=None):
    """A task factory for loop.set_task_factory() whose tasks publish their span while each
    step runs: for event loops whose callbacks install() cannot hook (uvloop). Set it on the
    loop before its first task (a loop_factory of asyncio.run()/asyncio.Runner, 3.12+, or
    right after uvloop.new_event_loop()); tasks created before are not followed (their spans
    are not published). inner: an existing task factory to wrap (default: asyncio.Task). Callbacks
    that are not task steps (call_soon, transports' protocols) stay outside: spans attached
    there on such a loop are not published."""
    from . import _hook
    return _hook.task_factory(inner)
