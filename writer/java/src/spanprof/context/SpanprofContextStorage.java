// SPDX-License-Identifier: Apache-2.0
package spanprof.context;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.context.Scope;
import java.util.logging.Logger;

/**
 * A ContextStorage wrapper (ContextStorage.addWrapper) that publishes, on every attach that
 * changes the current context (Context.makeCurrent(), which the agent's instrumentations call
 * for a server request, an executor task, a callback...), the context's recording span as the
 * calling thread's OTEP 4947 thread context, and restores what was published before when the
 * returned scope closes. A context without a recording span publishes no span (never an outer
 * one). Thread pools need nothing more: the agent carries the context into a task and makes it
 * current on the worker thread, which comes through here.
 *
 * <p>Virtual threads (JDK 21+): the record is per OS thread (the carrier's), and a virtual
 * thread may leave its carrier at any blocking call, with its scope open. So a virtual thread's
 * current span is kept per virtual thread by the native part ({@link Native#vtSet}, on every
 * attach and close) and published on the carrier only while the virtual thread is mounted
 * (JVMTI's VirtualThreadMount/Unmount events, {@link Native#vtInit}). Where that cannot be set
 * up (or with -Dspanprof.virtualThreads=false), virtual threads publish nothing: their samples
 * stay unlinked, never linked to another request's span (docs/java.md).
 */
final class SpanprofContextStorage implements ContextStorage {
  /** java.lang.BaseVirtualThread (JDK 21+: VirtualThread and BoundVirtualThread), or null. */
  private static final Class<?> VIRTUAL = virtualThreadClass();

  /** Whether virtual threads publish their spans (see the class comment). */
  private static final boolean VIRTUAL_OK = virtualThreadsOk();

  private final ContextStorage delegate;

  SpanprofContextStorage(ContextStorage delegate) {
    this.delegate = delegate;
    Logger.getLogger("spanprof.context")
        .info(
            "spanprof: publishing each thread's current span (OTEP 4947)"
                + (VIRTUAL == null
                    ? ""
                    : VIRTUAL_OK
                        ? ", virtual threads' on their carriers"
                        : ", none on virtual threads"));
  }

  private static Class<?> virtualThreadClass() {
    for (String name : new String[] {"java.lang.BaseVirtualThread", "java.lang.VirtualThread"}) {
      try {
        return Class.forName(name, false, null);
      } catch (Throwable t) {
        // older JDK: no virtual threads
      }
    }
    return null;
  }

  private static boolean virtualThreadsOk() {
    if (VIRTUAL == null
        || "false".equalsIgnoreCase(System.getProperty("spanprof.virtualThreads"))) {
      return false;
    }
    int rc = Native.vtInit();
    if (rc != 0) {
      Logger.getLogger("spanprof.context")
          .warning(
              "spanprof: virtual threads publish no span: JVMTI's virtual thread events are not"
                  + " available (step "
                  + rc
                  + ")");
    }
    return rc == 0;
  }

  /** Whether virtual threads publish their spans (JVMTI's mount events are set up). */
  static boolean virtualThreadsPublish() {
    return VIRTUAL_OK;
  }

  static boolean onVirtualThread() {
    return VIRTUAL != null && VIRTUAL.isInstance(Thread.currentThread());
  }

  @Override
  public Scope attach(Context toAttach) {
    Scope scope = delegate.attach(toAttach);
    // Scope.noop(): toAttach was current already, nothing changed.
    if (scope == Scope.noop()) {
      return scope;
    }
    if (onVirtualThread()) {
      if (!VIRTUAL_OK) {
        return scope;
      }
      try {
        publishVirtual(toAttach);
      } catch (Throwable t) {
        return scope;
      }
      return new VirtualScope(scope, delegate);
    }
    long token;
    try {
      token = publish(toAttach);
    } catch (Throwable t) {
      return scope; // never break the application for a profiling aid
    }
    return new PublishedScope(scope, token);
  }

  /** Publishes ctx's recording span, or no span; the writer's token. */
  private static long publish(Context ctx) {
    Span span = ctx == null ? null : Span.fromContextOrNull(ctx);
    if (span == null || !span.isRecording()) {
      return Native.attachNone();
    }
    SpanContext sc = span.getSpanContext();
    if (!sc.isValid()) {
      return Native.attachNone();
    }
    String trace = sc.getTraceId();
    return Native.attach(
        Native.hexLong(trace, 0),
        Native.hexLong(trace, 16),
        Native.hexLong(sc.getSpanId(), 0),
        sc.getTraceFlags().asByte());
  }

  /** Makes ctx's recording span (or none) the calling virtual thread's current span. */
  private static void publishVirtual(Context ctx) {
    Span span = ctx == null ? null : Span.fromContextOrNull(ctx);
    SpanContext sc = span == null || !span.isRecording() ? null : span.getSpanContext();
    if (sc == null || !sc.isValid()) {
      Native.vtSet(0, 0, 0, 0);
    } else {
      String trace = sc.getTraceId();
      Native.vtSet(
          Native.hexLong(trace, 0),
          Native.hexLong(trace, 16),
          Native.hexLong(sc.getSpanId(), 0),
          sc.getTraceFlags().asByte());
    }
  }

  @Override
  public Context current() {
    return delegate.current();
  }

  @Override
  public Context root() {
    return delegate.root();
  }

  /** A virtual thread's scope: closing it publishes the span of the context then current. */
  private static final class VirtualScope implements Scope {
    private final Scope scope;
    private final ContextStorage storage;

    VirtualScope(Scope scope, ContextStorage storage) {
      this.scope = scope;
      this.storage = storage;
    }

    @Override
    public void close() {
      try {
        scope.close();
      } finally {
        publishVirtual(storage.current());
      }
    }
  }

  /** The delegate's scope; closing it also restores what was published before the attach. */
  private static final class PublishedScope implements Scope {
    private final Scope scope;
    private final long token;

    PublishedScope(Scope scope, long token) {
      this.scope = scope;
      this.token = token;
    }

    @Override
    public void close() {
      try {
        scope.close();
      } finally {
        // A token of another thread (a scope closed on the wrong thread) is ignored by the
        // writer; one already detached (closed twice) too, unless its level was reused.
        Native.detach(token);
      }
    }
  }
}
