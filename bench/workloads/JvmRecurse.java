// The workload of bench/runtime/jvm_vs_cfi.py: `java JvmRecurse SECONDS DEPTH WARMUP`. main calls
// rec(DEPTH) again and again for SECONDS of wall time; rec recurses DEPTH levels (rec(DEPTH) ..
// rec(0): DEPTH + 1 frames) into leaf, a hot loop of about a few ms interpreted, a fraction of a
// ms compiled: a sample's stack is main, rec x (DEPTH + 1), leaf (DEPTH + 3 Java frames). Prints
// "ready" on stdout once WARMUP seconds have passed (the bench starts the agent then: after the
// JIT compiled the chain, in a compiled run). Run compiled with
// -XX:CompileCommand=dontinline,JvmRecurse::rec and ::leaf so that the chain stays DEPTH frames.
public class JvmRecurse {
    static volatile long sink;

    static long leaf() {
        long x = 0;
        for (int i = 0; i < 200000; i++) x = (x * 31 + i) % 1000003;
        return x;
    }

    static long rec(int depth) {
        if (depth == 0) return leaf();
        return rec(depth - 1) + 1; // work after the call: no tail position
    }

    public static void main(String[] args) {
        long start = System.nanoTime();
        long end = start + (long) (Double.parseDouble(args[0]) * 1e9);
        int depth = Integer.parseInt(args[1]);
        long ready = start + (long) (Double.parseDouble(args[2]) * 1e9);
        boolean said = false;
        for (long now = start; now < end; now = System.nanoTime()) {
            sink += rec(depth);
            if (!said && now >= ready) {
                System.out.println("ready");
                System.out.flush();
                said = true;
            }
        }
    }
}
