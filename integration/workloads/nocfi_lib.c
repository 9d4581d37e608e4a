/*
 * nocfi_lib: a library built without frame pointers and without unwind tables (.eh_frame removed
 * after the link, test_stack_truth.py). nocfi_leaf burns CPU itself; nocfi_mid calls back into
 * its caller's code. Neither sets up RBP: a frame-pointer step there reads its caller's frame.
 */
static volatile unsigned long sink;

__attribute__((noinline)) void nocfi_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

__attribute__((noinline)) void nocfi_mid(void (*cb)(unsigned long), unsigned long n)
{
	sink++;
	cb(n);
	sink++; /* not a tail call */
}
