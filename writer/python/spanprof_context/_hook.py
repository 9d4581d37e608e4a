# SPDX-License-Identifier: Apache-2.0
"""The OpenTelemetry SDK hook: the published span follows what runs on each thread.

Invariant: at every instant, a thread's otel_thread_ctx_v1 holds nothing or the recording span
of the context that is running on that thread. Python switches contexts in two ways:
- opentelemetry.context.attach/detach (a ContextVar set/reset): the runtime-context wrapper
  republishes after each;
- contextvars.Context.run, which has no hook. Schedulers use it to run many tasks on one thread:
  asyncio runs every callback and task step through asyncio.events.Handle._run (pure Python in
  CPython 3.8-3.13, also for the C _asyncio.Task: its steps are call_soon() callbacks),
  asyncio.to_thread runs its function through Context.run in a concurrent.futures worker, an
  eager task factory (3.12+) runs a task's first step inside its creator's step, trio runs task
  steps between before_task_step/after_task_step instrument calls.
  Each of these is wrapped in a *scope*: on entry the span of the context about to run is
  published; on exit every writer level pushed inside (spans attached and still attached when a
  task step yields) is popped, which restores what the thread published before the scope.
  uvloop's handles are Cython, not hookable: its tasks are scopes through task_factory(), whose
  coroutine wrapper makes each send/throw a scope.
A thread on which an event loop runs outside any scope (uvloop's callbacks that are not task
steps, or all of them without the task factory; trio without trio_instrument()) publishes
nothing: no link beats a wrong one.

Per thread, this module keeps the stack of writer levels of the current scope: entries
(SDK token or None, writer token or None, span published before the entry). A detach pops its
entry and everything above it (a contextvars reset restores the value the variable had before
the matching set, which is what the level below published). A detach of a token that is not in
the current scope (attached in an earlier task step) republishes the then-current span as a
marker entry. Writer calls are skipped when the span to publish is the one already published.
"""
from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures.thread as _cf_thread
import contextvars
import functools
import logging
import sys
import threading
from typing import Callable, Mapping, Optional

from . import _SIZES, _U8, _attrs_array, _size, load

logger = logging.getLogger("spanprof_context")

_get_running_loop = asyncio.events._get_running_loop
_sys_modules = sys.modules


class _State:
    """One thread's state (a plain object in a threading.local: one thread-local lookup per
    hook call, then cheap attribute accesses)."""
    __slots__ = ("stack", "cur", "scopes", "trio")

    def __init__(self):
        self.stack = []    # writer levels of the current scope: (sdk token, writer token, prev)
        self.cur = None    # the span this module has published for the thread, or None
        self.scopes = 0    # nesting of proven scopes (a loop step, a worker item, a trio step)
        self.trio = []     # saved scope states across trio before/after_task_step


_tls = threading.local()


def _state() -> _State:
    try:
        return _tls.s
    except AttributeError:
        st = _tls.s = _State()
        return st

# Set by install().
_wattach = None
_wdetach = None
_attrs_fn = None
_span_key = None   # the OpenTelemetry Context key of the current span
_cvar = None       # the SDK's ContextVar holding the current OpenTelemetry Context, or None
_installed = None
_saved = {}        # what install() replaced: (object, attribute) -> original


def _in_trio() -> bool:
    trio = _sys_modules.get("trio")
    if trio is None:
        return False
    try:
        return trio.lowlevel.in_trio_run()
    except AttributeError:  # trio < 0.23
        run = _sys_modules.get("trio._core._run")
        return run is not None and hasattr(run.GLOBAL_RUN_CONTEXT, "runner")


_ids = {}          # id(span) -> (span, writer arguments): spans are published many times


def _publish(st, span) -> Optional[object]:
    """Publishes span (a recording span, else none) for the calling thread; returns the writer
    token, or None when the span was already published (no writer call)."""
    if span is not None:
        try:
            if not span.is_recording():
                span = None
        except Exception:
            span = None
    if span is not None and not st.scopes and (_get_running_loop() is not None or _in_trio()):
        span = None  # a scheduler runs other contexts on this thread without a hook
    if span is st.cur:
        return None
    if span is None:
        token = _wattach(None, None, _U8[0], None, _SIZES[0])
    elif _attrs_fn is None:
        hit = _ids.get(id(span))
        if hit is None or hit[0] is not span:
            if len(_ids) >= 4096:
                _ids.clear()
            sc = span.get_span_context()
            hit = _ids[id(span)] = (span, (sc.trace_id.to_bytes(16, "big"),
                                           sc.span_id.to_bytes(8, "big"),
                                           _U8[sc.trace_flags & 0xFF], None, _SIZES[0]))
        token = _wattach(*hit[1])
    else:
        sc = span.get_span_context()
        arr, n = None, 0
        try:
            arr, n = _attrs_array(_attrs_fn(span))
        except Exception:
            logger.debug("spanprof: attrs() failed", exc_info=True)
        token = _wattach(sc.trace_id.to_bytes(16, "big"), sc.span_id.to_bytes(8, "big"),
                         _U8[sc.trace_flags & 0xFF], arr, _size(n))
    st.cur = span
    return token


def _pop(st, i: int) -> None:
    """Pops entries i.. of the current scope's stack and restores what entry i found."""
    stack = st.stack
    for e in stack[i:]:
        if e[1] is not None:
            _wdetach(e[1])  # also pops every level above it
            break
    st.cur = stack[i][2]
    del stack[i:]


def _span_of(ctx) -> Optional[object]:
    """The span of a contextvars.Context (None if it holds no OpenTelemetry context)."""
    if _cvar is None:
        return None
    otel = ctx.get(_cvar)
    return otel.get(_span_key) if otel is not None else None


def _current_span() -> Optional[object]:
    """The span of the calling thread's current context."""
    if _cvar is None:
        return None
    otel = _cvar.get(None)
    return otel.get(_span_key) if otel is not None else None


def _scope_enter(span):
    """Starts a scope that runs a context whose span is span; returns what _scope_exit needs."""
    st = _state()
    saved = (st.stack, st.cur)
    st.stack = []
    st.scopes += 1
    try:
        base = _publish(st, span)
    except BaseException:
        base = None
        logger.debug("spanprof: could not publish the span", exc_info=True)
    return saved, base


def _scope_exit(scope) -> None:
    (stack, cur), base = scope
    st = _state()
    st.scopes -= 1
    try:
        if base is not None:
            _wdetach(base)  # pops every level pushed in the scope too
        else:
            for e in st.stack:
                if e[1] is not None:
                    _wdetach(e[1])
                    break
    finally:
        st.stack, st.cur = stack, cur


# --- the runtime-context wrapper ---------------------------------------------------------------

def _runtime_context_class():
    from opentelemetry.context.context import _RuntimeContext

    class SpanprofRuntimeContext(_RuntimeContext):
        """Wraps the SDK's runtime context: after each attach and detach, the span of the
        then-current context is what the thread publishes (see the module comment)."""

        def __init__(self, inner: _RuntimeContext):
            self._inner = inner

        def attach(self, context):
            token = self._inner.attach(context)
            try:
                st = _state()
                prev = st.cur
                w = _publish(st, context.get(_span_key))
                st.stack.append((token, w, prev))
            except Exception:  # never break the application for a profiling aid
                logger.debug("spanprof: could not publish the span", exc_info=True)
            return token

        def get_current(self):
            return self._inner.get_current()

        def detach(self, token) -> None:
            # If the SDK refuses the token it raises and its context stays: so does the span.
            self._inner.detach(token)
            try:
                st = _state()
                stack = st.stack
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i][0] is token:
                        _pop(st, i)
                        return
                # Attached in another scope (an earlier task step) or before install():
                # publish what is current now, replacing an earlier such marker.
                if stack and stack[-1][0] is None:
                    _pop(st, len(stack) - 1)
                prev = st.cur
                w = _publish(st, self._inner.get_current().get(_span_key))
                stack.append((None, w, prev))
            except Exception:
                logger.debug("spanprof: could not publish the span", exc_info=True)

    return SpanprofRuntimeContext


# --- scopes: asyncio, concurrent.futures, eager task factories, trio --------------------------

def _wrap_handle_run(orig):
    # _scope_enter/_scope_exit inlined: this runs for every callback of the loop.
    def _run(self):
        st = _state()
        span = None
        if _cvar is not None:
            otel = self._context.get(_cvar)
            if otel is not None:
                span = otel.get(_span_key)
        stack, cur = st.stack, st.cur
        st.stack = []
        st.scopes += 1
        base = None
        try:
            if span is not cur or span is not None:
                try:
                    base = _publish(st, span)
                except Exception:  # never break the loop for a profiling aid
                    logger.debug("spanprof: could not publish the span", exc_info=True)
            return orig(self)
        finally:
            st.scopes -= 1
            try:
                if base is not None:
                    _wdetach(base)
                else:
                    for e in st.stack:
                        if e[1] is not None:
                            _wdetach(e[1])
                            break
            finally:
                st.stack, st.cur = stack, cur
    _run.__wrapped__ = orig
    return _run


def _wrap_work_item_run(orig):
    def run(self):
        fn = self.fn
        # asyncio.to_thread / a copied context: partial(Context.run, func, ...).
        owner = getattr(getattr(fn, "func", None), "__self__", None)
        if type(fn) is functools.partial and type(owner) is contextvars.Context:
            span = _span_of(owner)
        else:
            span = _current_span()
        scope = _scope_enter(span)
        try:
            return orig(self)
        finally:
            _scope_exit(scope)
    run.__wrapped__ = orig
    return run


def _wrap_task_factory(factory):
    """An eager task factory runs the new task's first step inside the caller: a scope."""
    def eager_factory(loop, coro, *args, **kwargs):
        ctx = kwargs.get("context")
        span = _span_of(ctx) if ctx is not None else _current_span()
        scope = _scope_enter(span)
        try:
            return factory(loop, coro, *args, **kwargs)
        finally:
            _scope_exit(scope)
    eager_factory.__wrapped__ = factory
    return eager_factory


def _wrap_create_eager_task_factory(orig):
    def create_eager_task_factory(custom_task_constructor):
        return _wrap_task_factory(orig(custom_task_constructor))
    create_eager_task_factory.__wrapped__ = orig
    return create_eager_task_factory


class _StepScoped:
    """A task's coroutine whose every step (send, throw) runs as a scope publishing the span of
    the context it runs in: the task's own (a task step runs inside Context.run of the task's
    context, whatever loop schedules it). For loops whose callbacks bypass Handle._run (uvloop),
    through task_factory(). Implements collections.abc.Coroutine (registered below); the
    wrapped coroutine's attributes (cr_frame, __name__, ...) are reached through it."""
    __slots__ = ("_coro", "__weakref__")

    def __init__(self, coro):
        self._coro = coro

    def send(self, value):
        scope = _scope_enter(_current_span())
        try:
            return self._coro.send(value)
        finally:
            _scope_exit(scope)

    def throw(self, *args):
        scope = _scope_enter(_current_span())
        try:
            return self._coro.throw(*args)
        finally:
            _scope_exit(scope)

    def close(self):
        return self._coro.close()

    def __next__(self):
        return self.send(None)

    def __iter__(self):
        return self

    def __await__(self):
        return self

    def __getattr__(self, name):
        return getattr(self._coro, name)

    def __repr__(self):
        return repr(self._coro)


collections.abc.Coroutine.register(_StepScoped)


def task_factory(inner=None):
    """A task factory (loop.set_task_factory()) whose tasks run every step as a scope: the span
    of the task's context is published while the step runs and what the thread published
    before is restored after. inner: the factory to create the task with (default: the
    loop's Task class, asyncio.Task)."""
    def factory(loop, coro, **kwargs):
        if not isinstance(coro, _StepScoped) and asyncio.iscoroutine(coro):
            coro = _StepScoped(coro)
        if inner is not None:
            return inner(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)
    factory.__wrapped__ = inner
    return factory


class TrioInstrument:
    """trio instrument: each task step is a scope publishing the span of task.context."""

    def before_task_step(self, task):
        _state().trio.append(_scope_enter(_span_of(task.context)))

    def after_task_step(self, task):
        if _state().trio:
            _scope_exit(_state().trio.pop())


PROFILE_ID_KEY = "pyroscope.profile.id"
_profile_id_on = False
_profile_id_providers = []  # TracerProviders given a _ProfileIdProcessor (weakly: by identity)


class _ProfileIdProcessor:
    """A SpanProcessor (the SDK's interface, duck-typed: the package works without the SDK) that
    sets pyroscope.profile.id = the span's own id (lowercase hex) on every span at its start.

    Every span, not only local roots as Grafana's pprof integrations do: those label a local
    root's whole subtree with the root's id, while spanprof's samples carry the id of the span
    active on the thread, and Pyroscope's span selector matches ids exactly. So each span's
    "Profiles for this span" shows the samples taken while it was the active span (its self
    time, not its children's)."""

    def on_start(self, span, parent_context=None):
        if not _profile_id_on:
            return
        try:
            span.set_attribute(PROFILE_ID_KEY, format(span.get_span_context().span_id, "016x"))
        except Exception:  # never break the application for a profiling aid
            logger.debug("spanprof: setting %s failed", PROFILE_ID_KEY, exc_info=True)

    def _on_ending(self, span):
        pass

    def on_end(self, span):
        pass

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def install_profile_id(on: bool, provider) -> None:
    """Turns pyroscope.profile.id on or off; when on, adds the processor to provider (default:
    the global TracerProvider) once. A provider without add_span_processor (the API's proxy
    before trace.set_tracer_provider(), another SDK) gets nothing: logged."""
    global _profile_id_on
    _profile_id_on = on
    if not on:
        return
    if provider is None:
        from opentelemetry import trace
        provider = trace.get_tracer_provider()
    if any(p is provider for p in _profile_id_providers):
        return
    add = getattr(provider, "add_span_processor", None)
    if add is None:
        logger.info("spanprof: %s is not set: the TracerProvider (%s) takes no span processor "
                    "(call install() after trace.set_tracer_provider())", PROFILE_ID_KEY,
                    type(provider).__name__)
        return
    add(_ProfileIdProcessor())
    _profile_id_providers.append(provider)


def _replace(obj, name, wrapper):
    orig = getattr(obj, name)
    _saved[(obj, name)] = orig
    setattr(obj, name, wrapper(orig))


def install(attrs: Optional[Callable[[object], Optional[Mapping[int, str]]]], with_asyncio: bool):
    global _installed, _wattach, _wdetach, _attrs_fn, _span_key, _cvar
    import opentelemetry.context as otel_context
    from opentelemetry.trace.propagation import _SPAN_KEY

    _attrs_fn = attrs
    if _installed is not None and otel_context._RUNTIME_CONTEXT is _installed:
        return _installed
    lib = load()
    _wattach, _wdetach = lib.spctx_attach, lib.spctx_detach
    _span_key = _SPAN_KEY
    inner = otel_context._RUNTIME_CONTEXT
    # The SDK's default (ContextVarsRuntimeContext) keeps the context in a ContextVar; with
    # another runtime context, scopes publish no span (their contexts cannot be read).
    _cvar = getattr(inner, "_current_context", None)
    if not isinstance(_cvar, contextvars.ContextVar):
        _cvar = None
    wrapper = _runtime_context_class()(inner)
    otel_context._RUNTIME_CONTEXT = wrapper
    _installed = wrapper
    if with_asyncio and not _saved:  # not wrapped twice if the runtime context was replaced
        _replace(asyncio.events.Handle, "_run", _wrap_handle_run)
        _replace(_cf_thread._WorkItem, "run", _wrap_work_item_run)
        tasks = asyncio.tasks
        if hasattr(tasks, "create_eager_task_factory"):  # 3.12+
            for mod in (tasks, asyncio):
                _replace(mod, "create_eager_task_factory", _wrap_create_eager_task_factory)
                _replace(mod, "eager_task_factory", _wrap_task_factory)
    return wrapper


def uninstall() -> None:
    global _installed
    import opentelemetry.context as otel_context

    if _installed is not None and otel_context._RUNTIME_CONTEXT is _installed:
        otel_context._RUNTIME_CONTEXT = _installed._inner
    _installed = None
    for (obj, name), orig in _saved.items():
        setattr(obj, name, orig)
    _saved.clear()
