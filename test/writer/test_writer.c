// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the thread-context writer (writer/spanprof_ctx.c). Built four times
 * (test/writer/writer.mk), one per way an application gets the writer, i.e. one per TLS model a
 * reader meets: "static" (source compiled into this executable: static TLS), "tlsdesc" (linked
 * against libspanprof_ctx.so built with -mtls-dialect=gnu2), "gd" (a .so built with
 * -mtls-dialect=gnu: general dynamic) and "dlopen" (the TLSDESC .so loaded with dlopen: dynamic
 * TLS, as Python's ctypes does). Thread records (OTEP 4947): contents, nesting, the stack overflow
 * rule, attribute limits, thread isolation, and a signal handler that reads the record while this
 * thread attaches and detaches, like an eBPF reader interrupting it. Process context (OTEP 4719):
 * the OTEL_CTX mapping found by name in /proc/self/maps, its header, and the payload decoded with
 * protobuf-c code generated from the published proto.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cmocka.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#include "opentelemetry/proto/processcontext/v1development/process_context.pb-c.h"
#include "spanprof_ctx.h"

#ifndef VARIANT
#define VARIANT "static"
#endif

/* --- the writer under test: linked, or loaded with dlopen ---------------------------------- */

#ifdef WRITER_DLOPEN
static void *lib;
static void *(*w_attach)(const uint8_t *, const uint8_t *, uint8_t, const struct spctx_attr *,
			 size_t);
static void (*w_detach)(void *);
static int (*w_publish)(const char *const *, const char *const *, size_t);
static int (*w_unpublish)(void);

/* dlsym of a TLS symbol gives the calling thread's instance. */
static struct spctx_record **ctx_slot(void)
{
	return dlsym(lib, "otel_thread_ctx_v1");
}

static int load_writer(void **state)
{
	lib = dlopen(WRITER_SO, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen %s: %s (build it with make)\n", WRITER_SO, dlerror());
		return -1;
	}
	*(void **)&w_attach = dlsym(lib, "spctx_attach");
	*(void **)&w_detach = dlsym(lib, "spctx_detach");
	*(void **)&w_publish = dlsym(lib, "spctx_process_publish");
	*(void **)&w_unpublish = dlsym(lib, "spctx_process_unpublish");
	return w_attach && w_detach && w_publish && w_unpublish ? 0 : -1;
}
#else
#define w_attach spctx_attach
#define w_detach spctx_detach
#define w_publish spctx_process_publish
#define w_unpublish spctx_process_unpublish

static struct spctx_record **ctx_slot(void)
{
	return &otel_thread_ctx_v1;
}

static int load_writer(void **state)
{
	return 0;
}
#endif

static struct spctx_record *cur(void)
{
	return *ctx_slot();
}

/* --- helpers ------------------------------------------------------------------------------- */

static void ids_for(uint64_t n, uint8_t trace[16], uint8_t span[8])
{
	uint64_t a = n * 0x9e3779b97f4a7c15ull + 1, b = ~n, s = (a ^ (b >> 7)) * 31 + 5;

	memcpy(trace, &a, 8);
	memcpy(trace + 8, &b, 8);
	memcpy(span, &s, 8);
}

static void assert_record(const struct spctx_record *r, uint64_t n, uint8_t flags)
{
	uint8_t trace[16], span[8];

	ids_for(n, trace, span);
	assert_non_null(r);
	assert_int_equal(r->valid, 1);
	assert_memory_equal(r->trace_id, trace, 16);
	assert_memory_equal(r->span_id, span, 8);
	assert_int_equal(r->trace_flags, flags);
}

static void *attach_n(uint64_t n, uint8_t flags)
{
	uint8_t trace[16], span[8];

	ids_for(n, trace, span);
	return w_attach(trace, span, flags, NULL, 0);
}

/* --- thread records ------------------------------------------------------------------------ */

static void test_symbol_exported(void **state)
{
	/* Readers find the variable by name in .dynsym: dlsym sees only exported symbols. */
#ifdef WRITER_DLOPEN
	void *sym = dlsym(lib, "otel_thread_ctx_v1");
#else
	void *sym = dlsym(RTLD_DEFAULT, "otel_thread_ctx_v1");
#endif
	assert_non_null(sym);
	assert_ptr_equal(sym, ctx_slot());
	assert_null(cur());
}

static void test_attach_detach(void **state)
{
	uint8_t trace[16], span[8];
	struct spctx_attr attrs[] = {
	    {.key_index = 0, .value = "GET /cart", .len = 9},
	    {.key_index = 3, .value = "", .len = 0},
	    {.key_index = 255, .value = "xyz-ignored", .len = 3},
	};
	/* {key_index, length, value}: the third value cut to its len. */
	const char want[] = "\x00\x09GET /cart"
			    "\x03\x00"
			    "\xff\x03xyz";
	struct spctx_record *r;
	void *tok;

	ids_for(1, trace, span);
	tok = w_attach(trace, span, 0x01, attrs, 3);
	assert_non_null(tok);
	r = cur();
	assert_record(r, 1, 0x01);
	assert_int_equal(r->attrs_data_size, sizeof(want) - 1);
	assert_memory_equal(r->attrs_data, want, sizeof(want) - 1);
	assert_int_equal((uintptr_t)r % 8, 0);

	w_detach(tok);
	assert_null(cur());
	/* Detaching twice, or NULL, changes nothing. */
	w_detach(tok);
	w_detach(NULL);
	assert_null(cur());
}

static void test_nesting(void **state)
{
	void *t1, *t2, *t3;

	t1 = attach_n(10, 1);
	t2 = attach_n(11, 0);
	t3 = attach_n(12, 1);
	assert_record(cur(), 12, 1);
	w_detach(t3);
	assert_record(cur(), 11, 0);
	t3 = attach_n(13, 1);
	assert_record(cur(), 13, 1);
	w_detach(t3);
	assert_record(cur(), 11, 0);
	assert_int_equal(cur()->attrs_data_size, 0);
	w_detach(t2);
	assert_record(cur(), 10, 1);
	w_detach(t1);
	assert_null(cur());

	/* Detaching an outer token pops what was attached after it; stale tokens are ignored. */
	t1 = attach_n(20, 1);
	t2 = attach_n(21, 1);
	t3 = attach_n(22, 1);
	w_detach(t2);
	assert_record(cur(), 20, 1);
	w_detach(t3);
	assert_record(cur(), 20, 1);
	w_detach(t1);
	assert_null(cur());
}

static void test_no_span_level(void **state)
{
	uint8_t zero_trace[16] = {0}, zero_span[8] = {0}, trace[16], span[8];
	void *t1, *t2, *t3;

	t1 = attach_n(30, 1);
	/* A level without a span (the SDK attached a context without one) hides the outer span. */
	t2 = w_attach(NULL, NULL, 0, NULL, 0);
	assert_non_null(t2);
	assert_null(cur());
	ids_for(31, trace, span);
	t3 = w_attach(zero_trace, span, 1, NULL, 0);
	assert_null(cur());
	w_detach(t3);
	t3 = w_attach(trace, zero_span, 1, NULL, 0);
	assert_null(cur());
	w_detach(t3);
	assert_null(cur());
	w_detach(t2);
	assert_record(cur(), 30, 1);
	w_detach(t1);
	assert_null(cur());
}

static void test_depth_overflow(void **state)
{
	enum { LEVELS = SPCTX_STACK_DEPTH + 4 };
	void *tok[LEVELS];

	for (int i = 0; i < LEVELS; i++) {
		tok[i] = attach_n(100 + i, (uint8_t)i);
		assert_record(cur(), 100 + i, (uint8_t)i);
	}
	/* Levels that shared the reused top record publish no span once uncovered... */
	for (int i = LEVELS - 1; i >= SPCTX_STACK_DEPTH; i--) {
		w_detach(tok[i]);
		assert_null(cur());
	}
	/* ...and the levels below it are intact. */
	for (int i = SPCTX_STACK_DEPTH - 1; i > 0; i--) {
		w_detach(tok[i]);
		assert_record(cur(), 100 + i - 1, (uint8_t)(i - 1));
	}
	w_detach(tok[0]);
	assert_null(cur());

	/* The reused record is whole again once the stack has come down. */
	for (int i = 0; i < SPCTX_STACK_DEPTH; i++)
		tok[i] = attach_n(200 + i, 1);
	assert_record(cur(), 200 + SPCTX_STACK_DEPTH - 1, 1);
	w_detach(tok[0]);
	assert_null(cur());
}

static void test_attrs_limits(void **state)
{
	char big[300], utf8[300];
	struct spctx_record *r;
	uint8_t trace[16], span[8];
	void *tok;

	memset(big, 'a', sizeof(big));
	/* 254 ASCII bytes then 2-byte characters: the cut at 255 would split one. */
	memset(utf8, 'b', 254);
	for (int i = 254; i + 1 < (int)sizeof(utf8); i += 2) {
		utf8[i] = (char)0xc3;
		utf8[i + 1] = (char)0xa9;
	}
	struct spctx_attr attrs[] = {
	    {.key_index = 1, .value = big, .len = 300}, /* cut to 255: 257 bytes */
	    {.key_index = 2, .value = big, .len = 255}, /* 257 bytes: 514 */
	    {.key_index = 3, .value = big, .len = 100}, /* 102 bytes: 616 > 612, skipped */
	    {.key_index = 4, .value = big, .len = 96},	/* 98 bytes: exactly 612 */
	    {.key_index = 5, .value = "z", .len = 1},	/* no room left */
	    {.key_index = 6, .value = NULL, .len = 10}, /* NULL value: empty */
	};
	ids_for(40, trace, span);
	tok = w_attach(trace, span, 1, attrs, sizeof(attrs) / sizeof(attrs[0]));
	r = cur();
	assert_record(r, 40, 1);
	assert_int_equal(r->attrs_data_size, SPCTX_MAX_ATTRS_DATA);
	assert_int_equal(r->attrs_data[0], 1);
	assert_int_equal(r->attrs_data[1], 255);
	assert_int_equal(r->attrs_data[257], 2);
	assert_int_equal(r->attrs_data[258], 255);
	assert_int_equal(r->attrs_data[514], 4);
	assert_int_equal(r->attrs_data[515], 96);
	w_detach(tok);

	struct spctx_attr cut[] = {
	    {.key_index = 7, .value = utf8, .len = sizeof(utf8)},
	    {.key_index = 6, .value = NULL, .len = 10},
	};
	tok = w_attach(trace, span, 1, cut, 2);
	r = cur();
	assert_int_equal(r->attrs_data[0], 7);
	assert_int_equal(r->attrs_data[1], 254);
	assert_int_equal(r->attrs_data[2 + 254], 6);
	assert_int_equal(r->attrs_data[2 + 254 + 1], 0);
	assert_int_equal(r->attrs_data_size, 2 + 254 + 2);
	w_detach(tok);
	assert_null(cur());
}

struct thread_arg {
	uint64_t n;
	pthread_barrier_t *barrier;
	struct thread_arg *other;
	void *main_token; /* the main thread's token: foreign here */
	void *token;
	struct spctx_record *seen;
	int ok;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	struct spctx_record *r;
	uint8_t trace[16], span[8];

	ids_for(a->n, trace, span);
	a->ok = cur() == NULL; /* a new thread starts with no span */
	a->token = attach_n(a->n, 1);
	pthread_barrier_wait(a->barrier);
	/* Both threads are inside their span: each sees its own record, and the other thread's
	 * tokens (read after the barrier) do not touch this thread's stack. */
	r = cur();
	a->seen = r;
	w_detach(a->other->token);
	w_detach(a->main_token);
	a->ok = a->ok && r && r == cur() && r->valid == 1 && !memcmp(r->trace_id, trace, 16) &&
		!memcmp(r->span_id, span, 8);
	pthread_barrier_wait(a->barrier);
	w_detach(a->token);
	a->ok = a->ok && cur() == NULL;
	return NULL;
}

static void test_threads(void **state)
{
	pthread_barrier_t barrier;
	struct thread_arg a = {.n = 50}, b = {.n = 51};
	pthread_t ta, tb;
	void *mine = attach_n(52, 1);

	pthread_barrier_init(&barrier, NULL, 2);
	a.barrier = b.barrier = &barrier;
	a.other = &b;
	b.other = &a;
	a.main_token = b.main_token = mine;
	assert_int_equal(pthread_create(&ta, NULL, thread_main, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, thread_main, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pthread_barrier_destroy(&barrier);
	assert_true(a.ok);
	assert_true(b.ok);
	assert_non_null(a.seen);
	assert_non_null(b.seen);
	assert_ptr_not_equal(a.seen, b.seen);
	/* The main thread's span is untouched by the other threads, and their tokens are foreign
	 * here too. */
	assert_record(cur(), 52, 1);
	w_detach(a.token);
	w_detach(b.token);
	assert_record(cur(), 52, 1);
	w_detach(mine);
	assert_null(cur());
}

/* --- a reader in a signal handler ---------------------------------------------------------- */

/*
 * The handler interrupts this thread like the profiler's perf event does and checks every record
 * it finds with valid == 1 for consistency: span_id, flags and the attribute are all functions
 * of trace_id (ids_for and sig_value), so a half-written record shows.
 */
static struct spctx_record **sig_slot;
static volatile sig_atomic_t sig_stop;
static volatile unsigned long sig_seen, sig_valid, sig_bad, sig_null, sig_nested, main_bad;
static unsigned long main_top_none, main_skipped;
static uint64_t sig_n = 1ull << 40; /* the handler's own spans */

static size_t sig_value(const uint8_t trace[16], char *out)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t a;
	size_t len;

	memcpy(&a, trace, 8);
	len = 1 + (a >> 58); /* 1..64 bytes: attrs_data_size varies too */
	for (size_t k = 0; k < len; k++)
		out[k] = hex[(a >> (4 * (k % 16))) & 15];
	return len;
}

static bool record_consistent(const struct spctx_record *r)
{
	uint8_t trace[16], span[8];
	uint64_t a, n;
	char value[64];
	size_t len;

	/* Recover n from the trace id: b = ~n. */
	memcpy(&n, r->trace_id + 8, 8);
	n = ~n;
	ids_for(n, trace, span);
	if (memcmp(trace, r->trace_id, 16) || memcmp(span, r->span_id, 8))
		return false;
	memcpy(&a, trace, 8);
	if (r->trace_flags != (uint8_t)a)
		return false;
	len = sig_value(trace, value);
	return r->attrs_data_size == 2 + len && r->attrs_data[0] == 3 && r->attrs_data[1] == len &&
	       !memcmp(r->attrs_data + 2, value, len);
}

static void *sig_attach(uint64_t n);

/* NULL, or a valid record that passes record_consistent. */
static bool published_ok(const struct spctx_record *r)
{
	return !r || (r->valid == 1 && record_consistent(r));
}

static void sig_reader(int sig)
{
	struct spctx_record *p = __atomic_load_n(sig_slot, __ATOMIC_RELAXED);
	struct spctx_record copy;
	void *tok;

	sig_seen++;
	if (!p) {
		sig_null++;
	} else {
		memcpy(&copy, p, sizeof(copy));
		if (copy.valid == 1) {
			sig_valid++;
			if (!record_consistent(&copy))
				sig_bad++;
		}
	}
	/* Every fourth time the handler serves a span of its own (attach and detach are
	 * async-signal-safe), whatever the interrupted attach or detach was doing. */
	if (sig_seen % 4 == 0) {
		tok = sig_attach(sig_n++);
		p = __atomic_load_n(sig_slot, __ATOMIC_RELAXED);
		if (!p || !published_ok(p))
			sig_bad++;
		w_detach(tok);
		if (!published_ok(__atomic_load_n(sig_slot, __ATOMIC_RELAXED)))
			sig_bad++;
		sig_nested++;
	}
}

/* The n a consistent record was made from (see ids_for). */
static uint64_t record_n(const struct spctx_record *r)
{
	uint64_t b;

	memcpy(&b, r->trace_id + 8, 8);
	return ~b;
}

/*
 * The main loop's own reads of the record are not atomic against the handler (the profiler
 * reads a stopped thread; here the reader is the interrupted thread itself): a check during
 * which a signal was handled is skipped.
 */
static bool main_snapshot(struct spctx_record *copy, bool *none)
{
	unsigned long seen = sig_seen;
	struct spctx_record *r;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	r = __atomic_load_n(sig_slot, __ATOMIC_RELAXED);
	*none = r == NULL;
	if (r)
		memcpy(copy, r, sizeof(*copy));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (sig_seen != seen) {
		main_skipped++;
		return false;
	}
	return true;
}

/* What the thread publishes is exactly the span n (or none). */
static void expect_main(bool span, uint64_t n)
{
	struct spctx_record r;
	bool none;

	if (!main_snapshot(&r, &none))
		return;
	if (span ? none || r.valid != 1 || !record_consistent(&r) || record_n(&r) != n : !none)
		main_bad++;
}

/* At the top of the stack a handler's span may take the shared record: then the thread
 * publishes no span (never a wrong one) until it detaches below the top. */
static void expect_main_top(uint64_t n)
{
	struct spctx_record r;
	bool none;

	if (!main_snapshot(&r, &none))
		return;
	if (none)
		main_top_none++;
	else if (r.valid != 1 || !record_consistent(&r) || record_n(&r) != n)
		main_bad++;
}

static void *sig_sender(void *p)
{
	pthread_t target = *(pthread_t *)p;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	while (!sig_stop) {
		unsigned long seen = sig_seen;

		/* Wait for each signal to be handled: pending signals do not queue, and on a busy
		 * machine the two threads may share a CPU (then each signal lands where the
		 * scheduler stopped the main thread). */
		pthread_kill(target, SIGUSR1);
		while (sig_seen == seen && !sig_stop)
			sched_yield();
	}
	return NULL;
}

static void *sig_attach(uint64_t n)
{
	uint8_t trace[16], span[8];
	char value[64];
	uint64_t a;
	struct spctx_attr attr = {.key_index = 3, .value = value};

	ids_for(n, trace, span);
	memcpy(&a, trace, 8);
	attr.len = sig_value(trace, value);
	return w_attach(trace, span, (uint8_t)a, &attr, 1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_signal_reader(void **state)
{
	struct sigaction sa = {.sa_handler = sig_reader};
	struct itimerval it = {.it_interval = {0, 500}, .it_value = {0, 500}};
	struct itimerval off = {0};
	pthread_t self = pthread_self(), sender;
	void *deep[SPCTX_STACK_DEPTH + 3];
	double start = now_s();
	uint64_t n = 0, top_n;
	unsigned long seen0;

	sig_slot = ctx_slot();
	sig_stop = 0;
	sig_seen = sig_valid = sig_bad = sig_null = sig_nested = main_bad = 0;
	main_top_none = main_skipped = 0;
	/* One handler at a time: each reads the record while nothing else writes it. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaddset(&sa.sa_mask, SIGPROF);
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	assert_int_equal(sigaction(SIGPROF, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_PROF, &it, NULL), 0);
	assert_int_equal(pthread_create(&sender, NULL, sig_sender, &self), 0);

	/* At least 50000 interruptions, at most 10 s. */
	while ((sig_seen < 50000 || n < 200000) && now_s() - start < 10) {
		uint64_t n1 = n++;
		void *t1 = sig_attach(n1);
		void *t2 = sig_attach(n++);

		expect_main(true, n - 1);
		w_detach(t2);
		expect_main(true, n1);
		t2 = w_attach(NULL, NULL, 0, NULL, 0);
		expect_main(false, 0);
		w_detach(t2);
		expect_main(true, n1);
		if (n % 64 == 0) {
			/* Through the reused top record and back. */
			for (size_t i = 0; i < sizeof(deep) / sizeof(deep[0]); i++) {
				deep[i] = sig_attach(n++);
				if (i + 1 < SPCTX_STACK_DEPTH)
					expect_main(true, n - 1);
				else
					expect_main_top(n - 1);
			}
			for (size_t i = sizeof(deep) / sizeof(deep[0]); i-- > 0;)
				w_detach(deep[i]);
			expect_main(true, n1);
		}
		w_detach(t1);
		expect_main(false, 0);
	}

	/* Then at the top of the stack, where every level shares one record: the handler's
	 * spans land in the record the main loop is filling. */
	for (size_t i = 0; i < SPCTX_STACK_DEPTH - 1; i++)
		deep[i] = sig_attach(n++);
	top_n = n - 1;
	start = now_s();
	seen0 = sig_seen;
	/*
	 * At least 30000 more interruptions (or 5 s), and in any case until the handler has seen
	 * what the checks below count on: a loaded machine delivers fewer signals per second, so
	 * the bound is the count, not the clock (120 s is a hang guard).
	 */
	for (uint64_t k = 0;; k++) {
		double elapsed = now_s() - start;
		int enough = sig_nested > 200 && sig_valid > 200 && sig_null > 0;
		uint64_t n1;

		if (elapsed > 120 ||
		    (enough && ((sig_seen - seen0 >= 30000 && k >= 50000) || elapsed > 5)))
			break;
		n1 = n++;
		void *t1 = sig_attach(n1);
		void *t2;

		expect_main_top(n1);
		t2 = sig_attach(n++);
		expect_main_top(n - 1);
		w_detach(t2);
		expect_main(false, 0); /* the shared record was reused: no span */
		w_detach(t1);
		expect_main(true, top_n);
	}
	w_detach(deep[0]);
	expect_main(false, 0);

	sig_stop = 1;
	pthread_join(sender, NULL);
	setitimer(ITIMER_PROF, &off, NULL);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGPROF, SIG_DFL);
	printf("signal reader (%s): %lu interruptions (%lu attached a span), %lu valid records, "
	       "%lu NULL, %lu bad; main loop: %lu wrong, %lu spans at the top hidden, %lu checks "
	       "skipped; %" PRIu64 " spans\n",
	       VARIANT, sig_seen, sig_nested, sig_valid, sig_null, sig_bad, main_bad, main_top_none,
	       main_skipped, n);
	assert_int_equal(sig_bad, 0);
	assert_int_equal(main_bad, 0);
	assert_true(sig_nested > 200);
	assert_true(sig_valid > 200);
	assert_true(sig_null > 0);
	assert_null(cur());
}

/* --- process context ----------------------------------------------------------------------- */

struct ctx_map {
	uintptr_t start, end;
	char name[64];
};

/* The OTEL_CTX mappings of this process, under any of the names the kernel gives them. */
static int find_ctx_maps(struct ctx_map *out, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		int name_at = 0;
		char *name;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &start, &end, &name_at) < 2 ||
		    !name_at)
			continue;
		name = line + name_at;
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, "/memfd:OTEL_CTX (deleted)") && strcmp(name, "[anon:OTEL_CTX]") &&
		    strcmp(name, "[anon_shmem:OTEL_CTX]"))
			continue;
		if (n < max) {
			out[n].start = start;
			out[n].end = end;
			snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		}
		n++;
	}
	fclose(f);
	return n;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const struct spctx_process_header *check_header(const struct ctx_map *m)
{
	const struct spctx_process_header *h = (const void *)m->start;

	assert_memory_equal(h->signature, "OTEL_CTX", 8);
	assert_int_equal(h->version, 2);
	assert_int_not_equal(h->published_at_ns, 0);
	assert_true(h->published_at_ns <= realtime_ns());
	assert_true(h->published_at_ns > realtime_ns() - 60ull * 1000000000u);
	assert_int_equal(h->payload, m->start + sizeof(*h));
	assert_true(h->payload_size > 0);
	assert_true(sizeof(*h) + h->payload_size <= m->end - m->start);
	return h;
}

typedef Opentelemetry__Proto__Processcontext__V1development__ProcessContext ProcessContext;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;

static const AnyValue *find_kv(KeyValue **kv, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(kv[i]->key, key))
			return kv[i]->value;
	}
	return NULL;
}

/* Decodes the payload with protobuf-c and checks every attribute. */
static void check_payload(const struct spctx_process_header *h, const char *const *resource,
			  const char *const *keys, size_t nkeys)
{
	ProcessContext *pc;
	const AnyValue *v;
	size_t nres = 0;

	pc = opentelemetry__proto__processcontext__v1development__process_context__unpack(
	    NULL, h->payload_size, (const uint8_t *)(uintptr_t)h->payload);
	assert_non_null(pc);
	assert_non_null(pc->resource);
	for (nres = 0; resource && resource[2 * nres]; nres++) {
		KeyValue *kv;

		assert_true(nres < pc->resource->n_attributes);
		kv = pc->resource->attributes[nres];
		assert_string_equal(kv->key, resource[2 * nres]);
		assert_non_null(kv->value);
		assert_int_equal(kv->value->value_case,
				 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE);
		assert_string_equal(kv->value->string_value, resource[2 * nres + 1]);
	}
	assert_int_equal(pc->resource->n_attributes, nres);

	assert_int_equal(pc->n_attributes, 2);
	v = find_kv(pc->attributes, pc->n_attributes, "threadlocal.schema_version");
	assert_non_null(v);
	assert_int_equal(v->value_case,
			 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE);
	assert_string_equal(v->string_value, "tlsdesc_v1_dev");

	v = find_kv(pc->attributes, pc->n_attributes, "threadlocal.attribute_key_map");
	assert_non_null(v);
	assert_int_equal(v->value_case,
			 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE);
	assert_non_null(v->array_value);
	assert_int_equal(v->array_value->n_values, nkeys);
	for (size_t i = 0; i < nkeys; i++) {
		const AnyValue *e = v->array_value->values[i];

		assert_int_equal(e->value_case,
				 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE);
		assert_string_equal(e->string_value, keys[i]);
	}
	opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(pc,
											    NULL);
}

static const char *const resource1[] = {"service.name", "checkout", "service.instance.id",
					"6f1c3c1e-8d36-4c1a-9f43-2a4e3c3f9d10", NULL};
static const char *const resource2[] = {"service.name", "checkout-v2", "deployment.environment",
					"prod", NULL};
static const char *const keys1[] = {"http.route", "http.method", "user.tier"};

static int unpublish_all(void **state)
{
	w_unpublish();
	return 0;
}

static void test_process_publish(void **state)
{
	struct ctx_map m[4];
	const struct spctx_process_header *h;

	assert_int_equal(find_ctx_maps(m, 4), 0);
	assert_int_equal(w_publish(resource1, keys1, 3), 0);
	assert_int_equal(find_ctx_maps(m, 4), 1);
	h = check_header(&m[0]);
	check_payload(h, resource1, keys1, 3);
	printf("process context (%s): %s, %" PRIu32 " payload bytes\n", VARIANT, m[0].name,
	       h->payload_size);
}

static void test_process_update(void **state)
{
	struct ctx_map m[4], m2[4];
	const struct spctx_process_header *h;
	static char names[200][40];
	const char *many[200];
	uint64_t ts1, ts2;

	assert_int_equal(w_publish(resource1, keys1, 3), 0);
	assert_int_equal(find_ctx_maps(m, 4), 1);
	h = check_header(&m[0]);
	ts1 = h->published_at_ns;

	/* In place: same mapping, a new timestamp, the new payload. */
	assert_int_equal(w_publish(resource2, keys1, 2), 0);
	assert_int_equal(find_ctx_maps(m2, 4), 1);
	assert_int_equal(m2[0].start, m[0].start);
	h = check_header(&m2[0]);
	ts2 = h->published_at_ns;
	assert_true(ts2 > ts1);
	check_payload(h, resource2, keys1, 2);

	/* A payload larger than the mapping moves to a new one; the old one goes away. */
	for (int i = 0; i < 200; i++) {
		snprintf(names[i], sizeof(names[i]), "app.attribute.number.%03d.value", i);
		many[i] = names[i];
	}
	assert_int_equal(w_publish(resource2, many, 200), 0);
	assert_int_equal(find_ctx_maps(m2, 4), 1);
	h = check_header(&m2[0]);
	assert_true(h->payload_size > 4096);
	assert_true(h->published_at_ns > ts2);
	check_payload(h, resource2, many, 200);

	/* No resource, no keys. */
	assert_int_equal(w_publish(NULL, NULL, 0), 0);
	assert_int_equal(find_ctx_maps(m2, 4), 1);
	check_payload(check_header(&m2[0]), NULL, NULL, 0);
}

static void test_process_unpublish(void **state)
{
	struct ctx_map m[4];

	assert_int_equal(w_unpublish(), 0);
	assert_int_equal(w_publish(resource1, keys1, 3), 0);
	assert_int_equal(find_ctx_maps(m, 4), 1);
	assert_int_equal(w_unpublish(), 0);
	assert_int_equal(find_ctx_maps(m, 4), 0);
	assert_int_equal(w_unpublish(), 0);
	/* Publishing again after unpublish works. */
	assert_int_equal(w_publish(resource1, keys1, 3), 0);
	assert_int_equal(find_ctx_maps(m, 4), 1);
	check_payload(check_header(&m[0]), resource1, keys1, 3);
}

static void test_process_errors(void **state)
{
	static char longkey[256][256];
	const char *keys[257];
	const char *const odd[] = {"service.name", NULL};
	struct ctx_map m[4];

	for (int i = 0; i < 256; i++) {
		memset(longkey[i], 'k', 255);
		keys[i] = longkey[i];
	}
	keys[256] = "one too many";
	assert_int_equal(w_publish(NULL, keys, 257), -EINVAL);
	assert_int_equal(w_publish(NULL, NULL, 2), -EINVAL);
	assert_int_equal(w_publish(odd, NULL, 0), -EINVAL);
	assert_int_equal(w_publish(NULL, keys, 256), -E2BIG);
	assert_int_equal(find_ctx_maps(m, 4), 0);
	/* 256 keys is the limit, not an error. */
	for (int i = 0; i < 256; i++)
		longkey[i][20] = '\0';
	assert_int_equal(w_publish(NULL, keys, 256), 0);
	assert_int_equal(find_ctx_maps(m, 4), 1);
	check_payload(check_header(&m[0]), NULL, keys, 256);
}

/* Runs fn in a child process; its exit status is the result (0: passed). */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(fn());
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int fork_child(void)
{
	struct ctx_map m[4];

	/* MADV_DONTFORK: the parent's context is not the child's. */
	if (find_ctx_maps(m, 4) != 0)
		return 1;
	if (w_publish(resource2, keys1, 3))
		return 2;
	if (find_ctx_maps(m, 4) != 1)
		return 3;
	if (memcmp((const void *)m[0].start, "OTEL_CTX", 8))
		return 4;
	return w_unpublish() ? 5 : 0;
}

static void test_process_fork(void **state)
{
	struct ctx_map m[4];

	assert_int_equal(w_publish(resource1, keys1, 3), 0);
	assert_int_equal(in_child(fork_child), 0);
	assert_int_equal(find_ctx_maps(m, 4), 1);
	check_payload(check_header(&m[0]), resource1, keys1, 3);
}

/* Whether this kernel names anonymous memory (CONFIG_ANON_VMA_NAME). */
static bool anon_names_supported(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	assert_true(p != MAP_FAILED);
	ok = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, 4096, (unsigned long)"T") ==
	     0;
	munmap(p, 4096);
	return ok;
}

/* Unnamed private anonymous mappings that start with a process context header. */
static int find_unnamed_ctx(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		char perms[8];
		int name_at = 0;
		const struct spctx_process_header *h;

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &name_at) < 3 ||
		    !name_at || line[name_at] != '\0' || strcmp(perms, "rw-p"))
			continue;
		h = (const void *)start;
		if (!memcmp(h->signature, "OTEL_CTX", 8) && h->version == 2 &&
		    h->payload == start + sizeof(*h))
			n++;
	}
	fclose(f);
	return n;
}

static bool anon_named;

static int anon_child(void)
{
#if defined(__x86_64__)
	struct sock_filter filter[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_memfd_create, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
	struct ctx_map m[4];

	/* memfd_create refused, as some sandboxes do: the fallback is anonymous memory. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 10;
	if (w_publish(resource1, keys1, 3))
		return 11;
	if (!anon_named) /* the header is there, only the name is missing */
		return find_ctx_maps(m, 4) == 0 && find_unnamed_ctx() == 1 ? 0 : 12;
	if (find_ctx_maps(m, 4) != 1)
		return 13;
	if (strcmp(m[0].name, "[anon:OTEL_CTX]"))
		return 14;
	if (memcmp((const void *)m[0].start, "OTEL_CTX", 8))
		return 15;
	return 0;
#else
	return 99;
#endif
}

static void test_process_anon_fallback(void **state)
{
#if !defined(__x86_64__)
	skip(); /* the seccomp filter that refuses memfd_create is written for x86-64 */
#endif
	anon_named = anon_names_supported();
	if (!anon_named)
		printf(
		    "process context (%s): this kernel has no CONFIG_ANON_VMA_NAME: the anonymous "
		    "fallback mapping is checked by its header, it cannot carry the name\n",
		    VARIANT);
	w_unpublish();
	assert_int_equal(in_child(anon_child), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symbol_exported),
	    cmocka_unit_test(test_attach_detach),
	    cmocka_unit_test(test_nesting),
	    cmocka_unit_test(test_no_span_level),
	    cmocka_unit_test(test_depth_overflow),
	    cmocka_unit_test(test_attrs_limits),
	    cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_signal_reader),
	    cmocka_unit_test_teardown(test_process_publish, unpublish_all),
	    cmocka_unit_test_teardown(test_process_update, unpublish_all),
	    cmocka_unit_test_teardown(test_process_unpublish, unpublish_all),
	    cmocka_unit_test_teardown(test_process_errors, unpublish_all),
	    cmocka_unit_test_teardown(test_process_fork, unpublish_all),
	    cmocka_unit_test_teardown(test_process_anon_fallback, unpublish_all),
	};

	return cmocka_run_group_tests_name("writer-" VARIANT, tests, load_writer, NULL);
}
