// SPDX-License-Identifier: Apache-2.0
/*
 * Test program for test_symbolize: C++ namespaces, templates, a method and an inlined template;
 * lambdas inlined into a function template and into std::sort (gcc gives them no linkage name).
 */
#include <algorithm>
#include <cstdio>

#define NOINLINE __attribute__((noinline))

volatile int sink;

namespace outer_ns {
namespace inner {

template <typename T> NOINLINE T scale(T x, int k)
{
	return x * static_cast<T>(k + sink);
}

template <typename T> inline __attribute__((always_inline)) T add_sink(T x)
{
	return x + static_cast<T>(sink); /* MARK_CXX_INLINE */
}

class Worker {
public:
	NOINLINE long run(long x);
};

long Worker::run(long x)
{
	return add_sink<long>(x) * 7; /* MARK_CXX_CALL */
}

} // namespace inner
} // namespace outer_ns

namespace app {

template <typename F> inline __attribute__((always_inline)) long apply_twice(F f, long x)
{
	return f(f(x));
}

NOINLINE long sort_words(long *v, int n)
{
	std::sort(v, v + n, [](long a, long b) { return a % 7 < b % 7; /* MARK_CXX_LAMBDA */ });
	return apply_twice([](long y) { return y * 3 + sink; }, v[0]);
}

} // namespace app

int main(int argc, char **)
{
	outer_ns::inner::Worker w;
	long v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 7919 + argc) % 1000;
	return (int)(outer_ns::inner::scale<int>(argc, 3) + outer_ns::inner::scale<double>(argc, 2) +
		     w.run(argc) + app::sort_words(v, 64)) & 1;
}
