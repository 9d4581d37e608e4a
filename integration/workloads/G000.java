// The template of the classes JvmChain's "unload" scenario defines (G001..G999, methods
// s001..s999: the names patched in the class file's constant pool).
public class G000 {
    public static long s000(long n) {
        long x = 5;
        for (long i = 0; i < n; i++) x = (x * 29 + i) % 1000037;
        return x;
    }
}
