// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of samplequeue: a sample comes back whole (every used frame, context byte and
 * file identity, the unused slots zero), in order with the other records, in a fraction of its
 * ring size; a full queue refuses; a sample with impossible lengths is kept whole.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sampling/samplequeue.h"

static struct sp_sample *sample(uint32_t pid, uint16_t klen, uint16_t ulen, uint16_t pylen,
				uint16_t ctxlen, uint32_t nvmas)
{
	struct sp_sample *s = calloc(1, sizeof(*s));

	s->time_boot_ns = 1000 + pid;
	s->pid = pid;
	s->tid = pid + 1;
	s->kstack_len = klen;
	s->ustack_len = ulen;
	s->py_len = pylen;
	s->ctx_len = ctxlen;
	s->vmas.n = nvmas;
	s->vmas.exe.ino = 77;
	strcpy(s->comm, "worker");
	for (uint32_t i = 0; i < klen; i++)
		s->kstack[i] = 0xffffffff81000000ull + i;
	for (uint32_t i = 0; i < ulen + 2u * pylen; i++)
		s->ustack[i] = 0x400000 + 16 * i;
	for (uint32_t i = 0; i < ctxlen; i++)
		s->ctx[i] = (uint8_t)(i * 7);
	for (uint32_t i = 0; i < nvmas; i++)
		s->vmas.vma[i].start = 0x7f0000000000ull + 4096 * i;
	return s;
}

static void test_roundtrip_in_order(void **unused)
{
	struct samplequeue *q = samplequeue__new(8u << 20), *r = samplequeue__new(8u << 20);
	struct sp_sample *a = sample(10, 5, 30, 0, 0, 2), *b = sample(11, 0, 20, 4, 28, 0);
	struct sp_exec_path e = {.pid = 12};
	struct sp_sample *out = malloc(sizeof(*out));
	size_t size;

	(void)unused;
	strcpy(e.path, "/usr/bin/true");
	assert_true(samplequeue__sample_bytes(a) < sizeof(*a) / 8);
	assert_int_equal(samplequeue__push(q, a, sizeof(*a)), 0);
	assert_int_equal(samplequeue__push(q, &e, sizeof(e)), 0);
	assert_int_equal(samplequeue__push(q, b, sizeof(*b)), 0);
	samplequeue__take(q, r);
	assert_null(samplequeue__pop(q, out, &size));
	assert_non_null(samplequeue__pop(r, out, &size));
	assert_int_equal(size, sizeof(*out));
	assert_memory_equal(out, a, sizeof(*a));
	assert_non_null(samplequeue__pop(r, out, &size));
	assert_int_equal(size, sizeof(e));
	assert_memory_equal(out, &e, sizeof(e));
	assert_non_null(samplequeue__pop(r, out, &size));
	assert_memory_equal(out, b, sizeof(*b));
	assert_null(samplequeue__pop(r, out, &size));
	assert_int_equal(samplequeue__bytes(r), 0);
	free(a);
	free(b);
	free(out);
	samplequeue__free(q);
	samplequeue__free(r);
}

static void test_full_queue_refuses(void **unused)
{
	struct samplequeue *q = samplequeue__new(512u << 10); /* two blocks */
	struct sp_sample *a = sample(1, 127, 512, 0, SP_CTX_MAX, SP_MAX_VMAS);
	int err = 0, n = 0;

	(void)unused;
	while (!err && n < 10000) {
		err = samplequeue__push(q, a, sizeof(*a));
		n += !err;
	}
	assert_int_equal(err, -ENOSPC);
	assert_true(n > 0);
	assert_true(samplequeue__bytes(q) <= 512u << 10);
	assert_int_equal(samplequeue__peak_bytes(q), samplequeue__bytes(q));
	free(a);
	samplequeue__free(q);
}

static void test_bad_lengths_kept_whole(void **unused)
{
	struct samplequeue *q = samplequeue__new(1u << 20);
	struct sp_sample *a = sample(3, 2, 2, 0, 0, 0), *out = malloc(sizeof(*out));
	size_t size;

	(void)unused;
	a->ustack_len = SP_MAX_USTACK + 1; /* never written by BPF: stored as it came */
	assert_int_equal(samplequeue__sample_bytes(a), sizeof(*a));
	assert_int_equal(samplequeue__push(q, a, sizeof(*a)), 0);
	assert_int_equal(samplequeue__push(q, a, sizeof(*a) + 8), -EINVAL);
	assert_non_null(samplequeue__pop(q, out, &size));
	assert_memory_equal(out, a, sizeof(*a));
	free(a);
	free(out);
	samplequeue__free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_in_order),
	    cmocka_unit_test(test_full_queue_refuses),
	    cmocka_unit_test(test_bad_lengths_kept_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
