// SPDX-License-Identifier: Apache-2.0
// Cost of the spanprof Java agent extension (writer/java) per context attach/detach pair:
// Context.makeCurrent() and Scope.close() of a context holding a recording span, in a program
// run under the OpenTelemetry Java agent (the application's API bridged to the agent's, whose
// ContextStorage the extension wraps), without and with the extension, in one run: child JVMs
// alternate (plain, spanprof, plain, ...), each takes the best of its rounds; the best of each
// kind is compared. On a JDK 21+, the same on a virtual thread (the extension keeps a virtual
// thread's span per virtual thread and publishes it on its carrier: docs/java.md).
// Usage: java JavaContextBench AGENT_JAR EXTENSION_JAR CLASSPATH [PAIRS_PER_ROUND [ALTERNATIONS]]
//        (the driver); a child: java [agent flags] -cp CLASSPATH JavaContextBench child PAIRS
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

public class JavaContextBench {
    static volatile Object sink;

    static double[] result = new double[1];

    static void child(long pairs, boolean virtual) throws Exception {
        if (!virtual) {
            loop(pairs);
        } else {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            Runnable r = () -> loop(pairs);
            Thread t = (Thread) Class.forName("java.lang.Thread$Builder").getMethod("unstarted", Runnable.class)
                    .invoke(builder, r);
            if (!(Boolean) Thread.class.getMethod("isVirtual").invoke(t))
                throw new IllegalStateException("not a virtual thread");
            t.start();
            t.join();
        }
        System.out.println("ns " + result[0]);
    }

    static void loop(long pairs) {
        Span span = GlobalOpenTelemetry.getTracer("bench").spanBuilder("bench").startSpan();
        if (!span.isRecording()) throw new IllegalStateException("the span does not record");
        Context ctx = Context.current().with(span);
        double best = Double.MAX_VALUE;
        for (int round = 0; round < 7; round++) {
            long t0 = System.nanoTime();
            for (long i = 0; i < pairs; i++) {
                try (Scope s = ctx.makeCurrent()) {
                    sink = s;
                }
            }
            best = Math.min(best, (System.nanoTime() - t0) / (double) pairs);
        }
        span.end();
        result[0] = best;
    }

    static double run(List<String> cmd) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("OTEL_TRACES_EXPORTER", "none");
        pb.environment().put("OTEL_METRICS_EXPORTER", "none");
        pb.environment().put("OTEL_LOGS_EXPORTER", "none");
        Process p = pb.start();
        double ns = -1;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null;)
                if (line.startsWith("ns ")) ns = Double.parseDouble(line.substring(3));
        }
        if (p.waitFor() != 0 || ns < 0) throw new IllegalStateException("child failed: " + cmd);
        return ns;
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("child")) {
            child(Long.parseLong(args[1]), args.length > 2 && args[2].equals("virtual"));
            return;
        }
        String agent = args[0], ext = args[1], cp = args[2];
        String pairs = args.length > 3 ? args[3] : "2000000";
        int alternations = args.length > 4 ? Integer.parseInt(args[4]) : 3;
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        boolean virtualThreads = Runtime.version().feature() >= 21;
        System.out.printf("java %s, %s pairs x 7 rounds per JVM, best of %d JVMs each:%n",
                System.getProperty("java.version"), pairs, alternations);
        for (String kind : virtualThreads ? List.of("platform", "virtual") : List.of("platform")) {
            double plain = Double.MAX_VALUE, spanprof = Double.MAX_VALUE;
            for (int i = 0; i < alternations; i++) {
                List<String> base = new ArrayList<>(List.of(java, "-javaagent:" + agent));
                List<String> with = new ArrayList<>(base);
                with.add("-Dotel.javaagent.extensions=" + ext);
                for (List<String> c : List.of(base, with))
                    c.addAll(List.of("-cp", cp, "JavaContextBench", "child", pairs, kind));
                plain = Math.min(plain, run(base));
                spanprof = Math.min(spanprof, run(with));
            }
            System.out.printf("  %s thread: agent alone %.1f ns, agent + spanprof extension %.1f ns"
                    + " per makeCurrent()+close(): ratio %.2f, the extension adds %.1f ns per"
                    + " attach/detach pair%n", kind, plain, spanprof, spanprof / plain,
                    spanprof - plain);
        }
    }
}
