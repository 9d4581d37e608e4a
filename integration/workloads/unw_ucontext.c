/*
 * Integration workload for the CFI unwinder: a coroutine made with makecontext() (its own stack,
 * uc_link NULL) runs co_body -> co_inner -> co_spin and switches back to main's m_loop -> m_spin
 * with swapcontext(). makecontext() pushes __start_context as the return address of co_body: no
 * call precedes it, and the byte before it lies in no FDE. Built with frame pointers, so a
 * frame-pointer step there would follow the RBP of the getcontext() call in main and glue main's
 * callers onto the coroutine's stack. Usage: unw_ucontext SECONDS (exits by itself).
 */
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>

static volatile unsigned long sink;
static ucontext_t uc_main, uc_co;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void co_spin(void)
{
	for (int i = 0; i < 400000; i++)
		sink += i;
}

__attribute__((noinline)) void co_inner(void)
{
	co_spin();
	swapcontext(&uc_co, &uc_main);
	sink++; /* not a tail call: co_inner stays on the stack in swapcontext */
}

__attribute__((noinline)) void co_body(void)
{
	for (;;)
		co_inner();
}

__attribute__((noinline)) void m_spin(void)
{
	for (int i = 0; i < 200000; i++)
		sink += i;
}

__attribute__((noinline)) void m_loop(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		swapcontext(&uc_main, &uc_co);
		m_spin();
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;

	if (getcontext(&uc_co))
		return 1;
	uc_co.uc_stack.ss_sp = malloc(1 << 16);
	uc_co.uc_stack.ss_size = 1 << 16;
	uc_co.uc_link = NULL;
	makecontext(&uc_co, co_body, 0);
	m_loop(seconds);
	return 0;
}
