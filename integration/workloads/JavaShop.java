// A Java HTTP service (the JDK's com.sun.net.httpserver) for the Java span-link test
// (integration/test_span_java.py). It has no OpenTelemetry code: the test runs it under the
// OpenTelemetry Java agent, whose instrumentation opens a server span per request, with the
// spanprof extension (writer/java), which publishes the current span.
//
// Three endpoints (/checkout, /search, /render); each request burns a fixed amount of work in
// methods named after the endpoint and the phase, inside the request's span:
//   ENDPOINT_before   on the handler's thread,
//   ENDPOINT_between  in a task of a second executor (the agent carries the context into it),
//                     the handler waiting for it,
//   ENDPOINT_after    on the handler's thread again, after a 1 ms sleep (a virtual thread
//                     unmounts there: another one runs on its carrier meanwhile).
// One client thread per endpoint (raw sockets: no client span) sends one request at a time,
// burns outside_span between two requests (in no span) and pauses 20 ms, so an endpoint's spans
// never touch.
//
// Usage: java [agent flags] JavaShop platform|virtual SECONDS
//   platform: both executors are fixed pools of platform threads;
//   virtual:  both are virtual-thread-per-task executors (JDK 21+).
// Calibrates its work unit and warms up (requests with spans, before the test samples), prints
// "ready PID", waits for a line on stdin, runs SECONDS, then prints
// "done REQUESTS WORK_CPU_SECONDS VIRTUAL_HANDLERS HANDLERS" (WORK_CPU_SECONDS: the CPU time of
// the in-span work done while running, at the CPU time per unit the clients measured meanwhile)
// and exits (the agent exports its spans at
// shutdown).
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class JavaShop {
    static final String[] ENDPOINTS = {"checkout", "search", "render"};
    static final double PHASE_MS = 3.0; // work per phase, in calibrated CPU ms
    static volatile long sink;
    static long unitsPerMs; // spin units (20000 multiply-adds) per ms of CPU
    static final AtomicLong phases = new AtomicLong(), handlers = new AtomicLong(),
            virtualHandlers = new AtomicLong();
    // The clients' outside_span burns while running: their units and thread CPU time, so that
    // the in-span work is converted to CPU time at the rate of the run itself (a loaded machine
    // does less work per CPU second than at start-up).
    static final AtomicLong rateUnits = new AtomicLong(), rateNs = new AtomicLong();
    static volatile boolean counting;

    static long spin(long units) {
        long x = 1;
        for (long u = 0; u < units; u++)
            for (int i = 0; i < 20000; i++) x = x * 31 + i;
        return x;
    }

    // One method per endpoint and phase, so that a sample's stack names them (the test runs
    // with -XX:+PreserveFramePointer, --java-perfmap and these methods not inlined).
    static long checkout_before(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long checkout_between(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long checkout_after(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long search_before(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long search_between(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long search_after(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long render_before(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long render_between(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long render_after(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }
    static long outside_span(long n) { long x = 1; for (long u = 0; u < n; u++) for (int i = 0; i < 20000; i++) x = x * 31 + i; return x; }

    static long phase(String ep, String ph, long n) {
        if (counting) phases.incrementAndGet();
        switch (ep + "_" + ph) {
            case "checkout_before": return checkout_before(n);
            case "checkout_between": return checkout_between(n);
            case "checkout_after": return checkout_after(n);
            case "search_before": return search_before(n);
            case "search_between": return search_between(n);
            case "search_after": return search_after(n);
            case "render_before": return render_before(n);
            case "render_between": return render_between(n);
            default: return render_after(n);
        }
    }

    static boolean isVirtual(Thread t) {
        try {
            return (Boolean) Thread.class.getMethod("isVirtual").invoke(t);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    static ExecutorService executor(boolean virtual, int threads) throws Exception {
        if (virtual)
            return (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        return Executors.newFixedThreadPool(threads);
    }

    static void handle(HttpExchange ex, String ep, ExecutorService tasks) throws Exception {
        if (counting) {
            handlers.incrementAndGet();
            if (isVirtual(Thread.currentThread())) virtualHandlers.incrementAndGet();
        }
        long n = (long) (PHASE_MS * unitsPerMs);
        sink += phase(ep, "before", n);
        sink += tasks.submit(() -> phase(ep, "between", n)).get();
        Thread.sleep(1);
        sink += phase(ep, "after", n);
        byte[] body = "ok\n".getBytes(StandardCharsets.US_ASCII);
        ex.sendResponseHeaders(200, body.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(body);
        }
    }

    static void get(int port, String ep) throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.getOutputStream().write(("GET /" + ep + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            InputStream in = s.getInputStream();
            byte[] buf = new byte[4096];
            StringBuilder sb = new StringBuilder();
            for (int r; (r = in.read(buf)) > 0;) sb.append(new String(buf, 0, r, StandardCharsets.US_ASCII));
            if (!sb.toString().startsWith("HTTP/1.1 200")) throw new IllegalStateException(sb.toString());
        }
    }

    /** Client loops, one per endpoint, for @millis; the requests they completed. */
    static long load(int port, long millis) throws Exception {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        AtomicLong done = new AtomicLong();
        Thread[] clients = new Thread[ENDPOINTS.length];
        for (int i = 0; i < clients.length; i++) {
            String ep = ENDPOINTS[i];
            clients[i] = new Thread(() -> {
                ThreadMXBean mx = ManagementFactory.getThreadMXBean();
                try {
                    while (System.nanoTime() < deadline) {
                        long c0 = mx.getCurrentThreadCpuTime();
                        sink += outside_span(unitsPerMs);
                        if (counting) {
                            rateNs.addAndGet(mx.getCurrentThreadCpuTime() - c0);
                            rateUnits.addAndGet(unitsPerMs);
                        }
                        get(port, ep);
                        done.incrementAndGet();
                        Thread.sleep(20);
                    }
                } catch (Exception e) {
                    e.printStackTrace();
                    System.exit(3);
                }
            }, "client-" + ep);
            clients[i].start();
        }
        for (Thread t : clients) t.join();
        return done.get();
    }

    public static void main(String[] args) throws Exception {
        boolean virtual = args[0].equals("virtual");
        double seconds = Double.parseDouble(args[1]);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        // Calibration on this (platform) thread, after a warm-up: units per ms of CPU.
        for (long t0 = mx.getCurrentThreadCpuTime(); mx.getCurrentThreadCpuTime() - t0 < 300_000_000L;)
            sink += spin(10);
        long t0 = mx.getCurrentThreadCpuTime(), units = 0;
        while (mx.getCurrentThreadCpuTime() - t0 < 200_000_000L) {
            sink += spin(10);
            units += 10;
        }
        unitsPerMs = Math.max(1, units * 1_000_000L / (mx.getCurrentThreadCpuTime() - t0));

        ExecutorService tasks = executor(virtual, 2);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        for (String ep : ENDPOINTS) {
            server.createContext("/" + ep, ex -> {
                try {
                    handle(ex, ep, tasks);
                } catch (Exception e) {
                    e.printStackTrace();
                    ex.sendResponseHeaders(500, -1);
                    ex.close();
                }
            });
        }
        server.setExecutor(executor(virtual, 4));
        server.start();
        int port = server.getAddress().getPort();
        load(port, 2500); // warm-up: the methods compiled, the agent's classes loaded

        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        System.in.read();
        counting = true;
        long requests = load(port, (long) (seconds * 1000));
        counting = false;
        double nsPerUnit = rateNs.get() / (double) Math.max(1, rateUnits.get());
        double work = phases.get() * (long) (PHASE_MS * unitsPerMs) * nsPerUnit / 1e9;
        System.out.println("done " + requests + " " + work + " " + virtualHandlers.get() + " "
                + handlers.get());
        System.out.flush();
        server.stop(0);
        System.exit(0);
    }
}
