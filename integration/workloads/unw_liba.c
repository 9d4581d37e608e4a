/* Shared library of the unw_libs workload (built -O2 -fomit-frame-pointer -fPIC -shared). */
typedef unsigned long (*spin_fn)(double until);

__attribute__((noinline)) unsigned long la_call(spin_fn fn, double until)
{
	unsigned long r = fn(until);

	return r + 1; /* work after the call: no tail call */
}
