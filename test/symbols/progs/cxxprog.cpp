// SPDX-License-Identifier: Apache-2.0
/* Test program for test_symbolize: C++ namespaces, templates, a method and an inlined template. */
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

int main(int argc, char **)
{
	outer_ns::inner::Worker w;

	return (int)(outer_ns::inner::scale<int>(argc, 3) + outer_ns::inner::scale<double>(argc, 2) +
		     w.run(argc)) & 1;
}
