// SPDX-License-Identifier: Apache-2.0
// Cost of the spanprof Java agent extension (writer/java) per context attach/detach pair:
// Context.makeCurrent() and Scope.close() of a context holding a recording span, in a program
// run under the OpenTelemetry Java agent (the application's API bridged to the agent's, whose
// ContextStorage the extension wraps), without and with the extension, in one run: child JVMs
// alternate (plain, spanprof, plain, ...), each takes the best of its rounds; the best of each
// kind is compared.
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

    static void child(long pairs) {
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
        System.out.println("ns " + best);
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
            child(Long.parseLong(args[1]));
            return;
        }
        String agent = args[0], ext = args[1], cp = args[2];
        String pairs = args.length > 3 ? args[3] : "2000000";
        int alternations = args.length > 4 ? Integer.parseInt(args[4]) : 3;
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        double plain = Double.MAX_VALUE, spanprof = Double.MAX_VALUE;
        for (int i = 0; i < alternations; i++) {
            List<String> base = new ArrayList<>(List.of(java, "-javaagent:" + agent));
            List<String> with = new ArrayList<>(base);
            with.add("-Dotel.javaagent.extensions=" + ext);
            for (List<String> c : List.of(base, with))
                c.addAll(List.of("-cp", cp, "JavaContextBench", "child", pairs));
            plain = Math.min(plain, run(base));
            spanprof = Math.min(spanprof, run(with));
        }
        System.out.printf("java %s, %s pairs x 7 rounds per JVM, best of %d JVMs each:%n",
                System.getProperty("java.version"), pairs, alternations);
        System.out.printf("  agent alone:               %7.1f ns per makeCurrent()+close()%n", plain);
        System.out.printf("  agent + spanprof extension: %6.1f ns per makeCurrent()+close()%n", spanprof);
        System.out.printf("  ratio %.2f; the extension adds %.1f ns per attach/detach pair%n",
                spanprof / plain, spanprof - plain);
    }
}
