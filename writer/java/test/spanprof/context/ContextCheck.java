// SPDX-License-Identifier: Apache-2.0
package spanprof.context;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.ReadableSpan;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Checks what the extension publishes, read back from otel_thread_ctx_v1 ({@link Native#current})
 * as a reader sees it, at every step of nested scopes on platform threads, in executor tasks
 * (Context.taskWrapping, as the agent wraps them), and on virtual threads that unmount (sleep,
 * yield) between steps while sharing carriers (run with -Djdk.virtualThreadScheduler.parallelism=1
 * to share one): the published span must always be the current context's recording span (or
 * none). The OpenTelemetry API alone (no SDK): the wrapper is installed as the customizer does.
 * Then {@link SpanprofProfileIdProcessor} in an SDK TracerProvider: every span (local root, child,
 * remote-parented) carries pyroscope.profile.id = its own span id; the switch turns it off.
 * Usage: java -cp <jar>:<api jars>:<this> spanprof.context.ContextCheck [VIRTUAL_THREADS]
 * Prints "ok N checks" (exit 0) or the mismatches (exit 1).
 */
public final class ContextCheck {
  static final AtomicLong checks = new AtomicLong(), mismatches = new AtomicLong();
  static final AtomicLong ids = new AtomicLong(1);

  /** A recording span with fresh ids; nothing else. */
  static final class RecSpan implements Span {
    final SpanContext sc;
    volatile boolean ended;

    RecSpan() {
      long n = ids.getAndIncrement();
      sc =
          SpanContext.create(
              String.format("%016x%016x", 0x1234L, n),
              String.format("%016x", 0xabc00000L + n),
              TraceFlags.getSampled(),
              TraceState.getDefault());
    }

    @Override
    public <T> Span setAttribute(AttributeKey<T> key, T value) {
      return this;
    }

    @Override
    public Span addEvent(String name, Attributes attributes) {
      return this;
    }

    @Override
    public Span addEvent(String name, Attributes attributes, long timestamp, TimeUnit unit) {
      return this;
    }

    @Override
    public Span setStatus(StatusCode statusCode, String description) {
      return this;
    }

    @Override
    public Span recordException(Throwable exception, Attributes additionalAttributes) {
      return this;
    }

    @Override
    public Span updateName(String name) {
      return this;
    }

    @Override
    public void end() {
      ended = true;
    }

    @Override
    public void end(long timestamp, TimeUnit unit) {
      ended = true;
    }

    @Override
    public SpanContext getSpanContext() {
      return sc;
    }

    @Override
    public boolean isRecording() {
      return !ended;
    }
  }

  /** What must be published now: the current context's recording span's ids, or null. */
  static String expected() {
    Span s = Span.fromContextOrNull(Context.current());
    if (s == null || !s.isRecording() || !s.getSpanContext().isValid()) {
      return null;
    }
    return s.getSpanContext().getTraceId() + "-" + s.getSpanContext().getSpanId();
  }

  static void check(String where) {
    checks.incrementAndGet();
    String want = expected(), got = Native.current();
    if (want == null ? got != null : !want.equals(got)) {
      if (mismatches.incrementAndGet() <= 10) {
        System.out.println("mismatch at " + where + " on " + Thread.currentThread() + ": want "
            + want + ", published " + got);
      }
    }
  }

  static void pause(int i) throws InterruptedException {
    if (i % 3 == 0) {
      Thread.sleep(1);
    } else if (i % 3 == 1) {
      Thread.yield();
    }
  }

  /** One request's worth of nesting: its span, a child, a non-recording context, an ended span. */
  static void request(String who, ExecutorService pool) throws Exception {
    check(who + " before");
    RecSpan root = new RecSpan();
    try (Scope a = Context.current().with(root).makeCurrent()) {
      for (int i = 0; i < 6; i++) {
        check(who + " root " + i);
        pause(i);
        check(who + " root after pause " + i);
        RecSpan child = new RecSpan();
        try (Scope b = Context.current().with(child).makeCurrent()) {
          pause(i + 1);
          check(who + " child " + i);
          try (Scope c = Context.current().with(Span.getInvalid()).makeCurrent()) {
            pause(i + 2);
            check(who + " invalid " + i);
          }
          check(who + " child again " + i);
          if (pool != null) {
            Future<?> f =
                Context.taskWrapping(pool).submit(() -> {
                  check(who + " task " + " (" + Thread.currentThread().getName() + ")");
                  return null;
                });
            f.get();
            check(who + " after task " + i);
          }
        }
        child.end();
        check(who + " root after child " + i);
      }
    }
    root.end();
    check(who + " after");
  }

  /** pyroscope.profile.id of spans of an SDK TracerProvider with the processor. */
  static void profileIdCheck() {
    SdkTracerProvider provider =
        SdkTracerProvider.builder().addSpanProcessor(new SpanprofProfileIdProcessor()).build();
    Tracer tracer = provider.get("profile-id");
    Span root = tracer.spanBuilder("root").setNoParent().startSpan();
    Span child = tracer.spanBuilder("child").setParent(Context.root().with(root)).startSpan();
    SpanContext remote =
        SpanContext.createFromRemoteParent(
            "0000000000000000000000000000abcd", "000000000000abcd", TraceFlags.getSampled(),
            TraceState.getDefault());
    Span rchild =
        tracer.spanBuilder("remote-child").setParent(Context.root().with(Span.wrap(remote)))
            .startSpan();
    for (Span span : new Span[] {root, child, rchild}) {
      checks.incrementAndGet();
      String got = ((ReadableSpan) span).getAttribute(SpanprofProfileIdProcessor.PROFILE_ID);
      String want = span.getSpanContext().getSpanId();
      if (got == null || !got.equals(want) || !got.matches("[0-9a-f]{16}")) {
        mismatches.incrementAndGet();
        System.out.println(((ReadableSpan) span).getName() + ": pyroscope.profile.id " + got
            + ", span id " + want);
      }
      span.end();
    }
    provider.close();
    String saved = System.getProperty("spanprof.profile-id");
    checks.addAndGet(2);
    if (!SpanprofProfileIdProcessor.enabled()) {
      mismatches.incrementAndGet();
      System.out.println("the processor is off by default");
    }
    System.setProperty("spanprof.profile-id", "false");
    if (SpanprofProfileIdProcessor.enabled()) {
      mismatches.incrementAndGet();
      System.out.println("-Dspanprof.profile-id=false leaves the processor on");
    }
    if (saved == null) {
      System.clearProperty("spanprof.profile-id");
    } else {
      System.setProperty("spanprof.profile-id", saved);
    }
  }

  public static void main(String[] args) throws Exception {
    int virtual = args.length > 0 ? Integer.parseInt(args[0]) : 0;
    if (!Native.ok()) {
      System.out.println("the native part did not load");
      System.exit(2);
    }
    ContextStorage.addWrapper(SpanprofContextStorage::new);
    if (!(ContextStorage.get() instanceof SpanprofContextStorage)) {
      System.out.println("the wrapper is not installed: " + ContextStorage.get());
      System.exit(2);
    }
    ExecutorService pool = Executors.newFixedThreadPool(2);
    // Platform threads: the main thread and 4 threads side by side, tasks in a pool.
    request("main", pool);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      String who = "platform-" + t;
      threads.add(new Thread(() -> {
        try {
          request(who, pool);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      }));
    }
    if (virtual > 0) {
      if (!SpanprofContextStorage.virtualThreadsPublish()) {
        System.out.println("virtual threads do not publish (no JVMTI mount events)");
        System.exit(2);
      }
      Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
      ExecutorService vpool =
          (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
      for (int t = 0; t < virtual; t++) {
        String who = "virtual-" + t;
        Runnable r = () -> {
          try {
            request(who, vpool);
          } catch (Exception e) {
            throw new RuntimeException(e);
          }
        };
        threads.add(
            (Thread)
                Class.forName("java.lang.Thread$Builder")
                    .getMethod("unstarted", Runnable.class)
                    .invoke(builder, r));
      }
    }
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    pool.shutdown();
    check("main at the end");
    profileIdCheck();
    if (mismatches.get() > 0) {
      System.out.println(mismatches.get() + " mismatches in " + checks.get() + " checks");
      System.exit(1);
    }
    System.out.println("ok " + checks.get() + " checks");
  }
}
