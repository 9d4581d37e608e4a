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
 * <p>Virtual threads publish nothing: the record is per OS thread (the carrier's), and a virtual
 * thread that unmounts with a scope open would leave its span published on a carrier that then
 * runs another virtual thread. Their samples stay unlinked rather than risk another request's
 * span (docs/java.md).
 */
final class SpanprofContextStorage implements ContextStorage {
  /** java.lang.BaseVirtualThread (JDK 21+: VirtualThread and BoundVirtualThread), or null. */
  private static final Class<?> VIRTUAL = virtualThreadClass();

  private final ContextStorage delegate;

  SpanprofContextStorage(ContextStorage delegate) {
    this.delegate = delegate;
    Logger.getLogger("spanprof.context")
        .info(
            "spanprof: publishing each thread's current span (OTEP 4947)"
                + (VIRTUAL != null ? ", none on virtual threads" : ""));
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

  static boolean onVirtualThread() {
    return VIRTUAL != null && VIRTUAL.isInstance(Thread.currentThread());
  }

  @Override
  public Scope attach(Context toAttach) {
    Scope scope = delegate.attach(toAttach);
    // Scope.noop(): toAttach was current already, nothing changed.
    if (scope == Scope.noop() || onVirtualThread()) {
      return scope;
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
    return Native.attach(sc.getTraceId(), sc.getSpanId(), sc.getTraceFlags().asByte());
  }

  @Override
  public Context current() {
    return delegate.current();
  }

  @Override
  public Context root() {
    return delegate.root();
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
