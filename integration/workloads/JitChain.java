// A CPU-bound Java program with a known call chain for the JIT tests (test_jit.py):
// main -> outerWork -> middleWork -> innerWork for SECONDS (args[0]) of the thread's CPU time.
// Waits for a line on stdin first (the test's gate), prints {"cpu_s": ...} when done.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class JitChain {
    static long innerWork(int n) {
        long x = 0;
        for (int i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
        return x;
    }

    static long middleWork(int n) { return innerWork(n) + 1; }

    static long outerWork(int n) { return middleWork(n) + 1; }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
        System.in.read();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long start = mx.getCurrentThreadCpuTime();
        long end = start + (long) (seconds * 1e9);
        long sum = 0;
        while (mx.getCurrentThreadCpuTime() < end) sum += outerWork(200000);
        System.out.println("{\"cpu_s\": " + (mx.getCurrentThreadCpuTime() - start) / 1e9 + ", \"sum\": " + (sum > 0) + "}");
    }
}
