// Java programs with known call chains for the HotSpot walk's tests (test_jvm.py), run with no
// profiling flag. `java JvmChain SCENARIO SECONDS`: waits for a line on stdin (the test's gate),
// runs SCENARIO on a thread named after it for SECONDS of that thread's CPU time, then prints
// {"cpu_s": ...}. Scenarios:
//   chain      run -> outer -> middle -> leaf                         (leaf's loop: LEAF_LINE)
//   lambda     run -> lambdaOuter -> (a lambda) -> lambdaLeaf
//   exception  run -> catcher -> thrower -> thrower -> thrower, which throws (caught by catcher)
//   jni        run -> jniOuter -> nativeCall (C, libjvmchain.so) -> callback -> callbackLeaf
//   unload     classes G000..G999 defined one after the other by their own class loader, each
//              running its s<k> (same k) for a moment, then dropped and unloaded by GCs
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.function.LongSupplier;

public class JvmChain {
    static volatile long sink;

    static long leaf(int n) {
        long x = 0;
        for (int i = 0; i < n; i++) x = (x * 31 + i) % 1000003; // LEAF_LINE
        return x;
    }

    static long middle(int n) { return leaf(n) + 1; }

    static long outer(int n) { return middle(n) + 1; }

    static long lambdaLeaf(int n) {
        long x = 7;
        for (int i = 0; i < n; i++) x = (x * 17 + i) % 999983;
        return x;
    }

    static long lambdaOuter(LongSupplier s) { return s.getAsLong() + 1; }

    static void thrower(int depth) {
        if (depth == 0) throw new IllegalStateException("deep");
        thrower(depth - 1);
    }

    static long catcher() {
        long n = 0;
        for (int i = 0; i < 200; i++) { // many throws per look at the thread's CPU time
            try {
                thrower(2);
            } catch (IllegalStateException e) {
                n += e.getStackTrace().length;
            }
        }
        return n;
    }

    static native long nativeCall(int n);

    static long callbackLeaf(int n) {
        long x = 3;
        for (int i = 0; i < n; i++) x = (x * 13 + i) % 1000033;
        return x;
    }

    // Called by nativeCall (C) through JNI.
    static long callback(int n) { return callbackLeaf(n) + 1; }

    static long jniOuter(int n) { return nativeCall(n) + 1; }

    /* A class loader for one generated class. */
    static final class OneClass extends ClassLoader {
        OneClass() { super(JvmChain.class.getClassLoader()); }

        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    /* The class file of G000 with every "G000" and "s000" made "G<k>" and "s<k>" (same length:
     * the constant pool's lengths hold). */
    static byte[] renamed(byte[] template, int k) {
        byte[] b = template.clone();
        byte[] cls = "G000".getBytes(StandardCharsets.US_ASCII);
        byte[] mth = "s000".getBytes(StandardCharsets.US_ASCII);
        byte[] num = String.format("%03d", k).getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i + 4 <= b.length; i++) {
            boolean c = true, m = true;
            for (int j = 0; j < 4; j++) {
                c &= b[i + j] == cls[j];
                m &= b[i + j] == mth[j];
            }
            if (c || m) System.arraycopy(num, 0, b, i + 1, 3);
        }
        return b;
    }

    static void unload(ThreadMXBean mx, long end) throws Exception {
        byte[] template;
        try (var in = JvmChain.class.getResourceAsStream("/G000.class")) {
            template = in.readAllBytes();
        }
        for (int k = 1; mx.getCurrentThreadCpuTime() < end; k = k % 999 + 1) {
            Class<?> c = new OneClass().define(String.format("G%03d", k), renamed(template, k));
            Method m = c.getMethod(String.format("s%03d", k), long.class);
            long stop = mx.getCurrentThreadCpuTime() + 50_000_000L; // 50 ms of CPU each
            while (mx.getCurrentThreadCpuTime() < stop) sink += (long) m.invoke(null, 20000L);
            if (k % 10 == 0) System.gc();
        }
    }

    static void run(String scenario, double seconds) throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long start = mx.getCurrentThreadCpuTime();
        long end = start + (long) (seconds * 1e9);
        switch (scenario) {
            case "chain":
                while (mx.getCurrentThreadCpuTime() < end) sink += outer(200000);
                break;
            case "lambda":
                while (mx.getCurrentThreadCpuTime() < end) {
                    int n = 200000;
                    sink += lambdaOuter(() -> lambdaLeaf(n));
                }
                break;
            case "exception":
                while (mx.getCurrentThreadCpuTime() < end) sink += catcher();
                break;
            case "jni":
                System.loadLibrary("jvmchain");
                while (mx.getCurrentThreadCpuTime() < end) sink += jniOuter(200000);
                break;
            case "unload":
                unload(mx, end);
                break;
            default:
                throw new IllegalArgumentException(scenario);
        }
        // A StringBuilder, not +: javac compiles + to invokedynamic, whose bootstrap would be
        // the thread's last CPU (a lot of it in a slow guest).
        double cpu = (mx.getCurrentThreadCpuTime() - start) / 1e9;
        System.out.println(new StringBuilder("{\"cpu_s\": ").append(cpu).append('}').toString());
    }

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        double seconds = Double.parseDouble(args[1]);
        CountDownLatch gate = new CountDownLatch(1);
        // The thread and what its loop uses (the thread CPU clock) are set up before the gate:
        // after it, the thread runs its scenario only (a slow machine's start-up is not counted).
        Thread t = new Thread(() -> {
            try {
                ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
                gate.await();
                run(scenario, seconds);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, scenario);
        t.start();
        System.in.read();
        gate.countDown();
        t.join();
        if (args.length > 2) Thread.sleep((long) (Double.parseDouble(args[2]) * 1000));
    }
}
