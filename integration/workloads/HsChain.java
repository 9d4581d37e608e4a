// Known Java chains for the HotSpot naming checks (exporter/runtime/jvm/hsname.c), run with no
// flag: main -> lambda (a hidden class) -> lambda$main$0 -> outer -> middle -> leaf, which C2
// inlines into one nmethod, and thrower, which throws and catches. Runs until killed. The line
// numbers are the ground truth (javap -l): leaf 11-14, middle 18, outer 22, thrower 27-32, main 36/38.
import java.util.function.LongUnaryOperator;

public class HsChain {
	static volatile long sink;

	static long leaf(long n) {
		long s = 0;
		for (long i = 0; i < n; i++)
			s += i * i ^ (s >> 3);
		return s;
	}

	static long middle(long n) {
		return leaf(n) + 1;
	}

	static long outer(long n) {
		return middle(n) + 1;
	}

	static long thrower(long n) {
		try {
			if (n >= 0)
				throw new IllegalStateException("x");
		} catch (IllegalStateException e) {
			return n + e.getMessage().length();
		}
		return n;
	}

	public static void main(String[] args) {
		LongUnaryOperator op = n -> outer(n) + thrower(n);
		while (true)
			sink += op.applyAsLong(100000);
	}
}
