// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of procctx (OTEP 4719): payloads packed with protobuf-c and decoded, garbage and
 * truncated payloads, and child processes that publish an OTEL_CTX mapping (memfd, named
 * anonymous and named shared anonymous memory) with good and bad headers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "opentelemetry/proto/processcontext/v1development/process_context.pb-c.h"
#include "spans/procctx.h"

#include "../testproc.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

typedef Opentelemetry__Proto__Common__V1__KeyValue kv_t;
typedef Opentelemetry__Proto__Common__V1__AnyValue any_t;

/* ---- payloads ---------------------------------------------------------------------------- */

static any_t *str_value(const char *s)
{
	any_t *v = malloc(sizeof(*v));

	opentelemetry__proto__common__v1__any_value__init(v);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
	v->string_value = (char *)s;
	return v;
}

static kv_t *kv(const char *key, any_t *v)
{
	kv_t *p = malloc(sizeof(*p));

	opentelemetry__proto__common__v1__key_value__init(p);
	p->key = (char *)key;
	p->value = v;
	return p;
}

static void free_kvs(kv_t **kvs, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		any_t *v = kvs[i]->value;

		if (v && v->value_case ==
			     OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE) {
			for (j = 0; j < v->array_value->n_values; j++)
				free(v->array_value->values[j]);
			free(v->array_value->values);
			free(v->array_value);
		}
		free(v);
		free(kvs[i]);
	}
}

static any_t *key_map_value(const char *const *keys, size_t n, int int_at)
{
	Opentelemetry__Proto__Common__V1__ArrayValue *arr = malloc(sizeof(*arr));
	any_t *v = malloc(sizeof(*v));
	size_t i;

	opentelemetry__proto__common__v1__array_value__init(arr);
	arr->n_values = n;
	arr->values = calloc(n, sizeof(*arr->values));
	for (i = 0; i < n; i++) {
		arr->values[i] = str_value(keys[i]);
		if ((int)i == int_at) {
			arr->values[i]->value_case =
			    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
			arr->values[i]->int_value = 7;
		}
	}
	opentelemetry__proto__common__v1__any_value__init(v);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE;
	v->array_value = arr;
	return v;
}

/*
 * Packs a ProcessContext: resource {service.name = @service, process.pid 42, sampled true,
 * ratio 0.25, tags [..]} and attributes {threadlocal.schema_version = @schema,
 * threadlocal.attribute_key_map [http.route, user.id, 7]}. With @threadlocal_in_resource the
 * threadlocal keys are resource attributes instead. Returns a malloc'd buffer.
 */
static uint8_t *pack_context_schema(const char *service, bool threadlocal_in_resource,
				    const char *schema, size_t *len)
{
	static const char *const keys[] = {"http.route", "user.id", "int-entry"};
	Opentelemetry__Proto__Processcontext__V1development__ProcessContext pc;
	Opentelemetry__Proto__Resource__V1__Resource res;
	kv_t *rattrs[8], *attrs[2];
	size_t nr = 0, na = 0;
	any_t *v;
	uint8_t *buf;

	opentelemetry__proto__processcontext__v1development__process_context__init(&pc);
	opentelemetry__proto__resource__v1__resource__init(&res);
	if (service)
		rattrs[nr++] = kv("service.name", str_value(service));
	v = str_value(NULL);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
	v->int_value = 42;
	rattrs[nr++] = kv("process.pid", v);
	v = str_value(NULL);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
	v->bool_value = 1;
	rattrs[nr++] = kv("sampled", v);
	v = str_value(NULL);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
	v->double_value = 0.25;
	rattrs[nr++] = kv("ratio", v);
	rattrs[nr++] = kv("tags", key_map_value(keys, 2, -1)); /* not a scalar: not rendered */
	if (threadlocal_in_resource) {
		rattrs[nr++] = kv("threadlocal.schema_version", str_value(schema));
		rattrs[nr++] = kv("threadlocal.attribute_key_map", key_map_value(keys, 3, 2));
	} else {
		attrs[na++] = kv("threadlocal.schema_version", str_value(schema));
		attrs[na++] = kv("threadlocal.attribute_key_map", key_map_value(keys, 3, 2));
	}
	res.n_attributes = nr;
	res.attributes = rattrs;
	pc.resource = &res;
	pc.n_attributes = na;
	pc.attributes = attrs;
	*len =
	    opentelemetry__proto__processcontext__v1development__process_context__get_packed_size(
		&pc);
	buf = malloc(*len ? *len : 1);
	opentelemetry__proto__processcontext__v1development__process_context__pack(&pc, buf);
	free_kvs(rattrs, nr);
	free_kvs(attrs, na);
	return buf;
}

/* pack_context_schema() with OTEP 4947's schema names as the tests have used them: the
 * merged OTEP's "tlsdesc_v1_dev" among the attributes, "tls_v1" among the resource's. */
static uint8_t *pack_context(const char *service, bool threadlocal_in_resource, size_t *len)
{
	return pack_context_schema(service, threadlocal_in_resource,
				   threadlocal_in_resource ? "tls_v1" : "tlsdesc_v1_dev", len);
}

static void check_full(const struct procctx *c, const char *service)
{
	assert_string_equal(c->service_name, service);
	assert_int_equal(c->nresource, 4);
	assert_string_equal(c->resource[0].key, "service.name");
	assert_string_equal(c->resource[1].key, "process.pid");
	assert_string_equal(c->resource[1].value, "42");
	assert_string_equal(c->resource[2].value, "true");
	assert_string_equal(c->resource[3].key, "ratio");
	assert_string_equal(c->resource[3].value, "0.25");
	assert_string_equal(c->schema_version, "tlsdesc_v1_dev");
	assert_int_equal(c->nkeys, 3);
	assert_string_equal(c->key_map[0], "http.route");
	assert_string_equal(c->key_map[1], "user.id");
	assert_string_equal(c->key_map[2], ""); /* an int entry keeps its index */
}

static void test_decode(void **state)
{
	struct procctx c;
	size_t len;
	uint8_t *buf = pack_context("checkout", false, &len);

	assert_int_equal(procctx__decode(buf, len, &c), 0);
	check_full(&c, "checkout");
	assert_int_equal(c.published_at_ns, 0);
	procctx__free(&c);
	procctx__free(&c); /* twice is fine */
	procctx__free(NULL);
	free(buf);

	/* threadlocal keys among the resource attributes: the fallback. */
	buf = pack_context(NULL, true, &len);
	assert_int_equal(procctx__decode(buf, len, &c), 0);
	assert_null(c.service_name);
	assert_string_equal(c.schema_version, "tls_v1");
	assert_int_equal(c.nkeys, 3);
	assert_string_equal(c.key_map[1], "user.id");
	procctx__free(&c);
	free(buf);

	/* An empty payload is an empty context. */
	assert_int_equal(procctx__decode((const uint8_t *)"", 0, &c), 0);
	assert_null(c.service_name);
	assert_null(c.schema_version);
	assert_int_equal(c.nresource, 0);
	assert_int_equal(c.nkeys, 0);
	procctx__free(&c);
}

/* A bare Resource (the OTEP's earlier payload) decodes too. */
/*
 * OTEP 4947 (merged) names its schema "tlsdesc_v1_dev" and promises "tls_v1": both are read
 * alike, wherever the writer puts them, and the key map names the record's attributes under
 * either (docs/span-links.md).
 */
static void test_decode_schema_names(void **state)
{
	static const char *const names[] = {"tlsdesc_v1_dev", "tls_v1"};
	struct procctx c;
	size_t len;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		for (int in_resource = 0; in_resource < 2; in_resource++) {
			uint8_t *buf = pack_context_schema("checkout", in_resource, names[i], &len);

			assert_int_equal(procctx__decode(buf, len, &c), 0);
			assert_string_equal(c.schema_version, names[i]);
			assert_int_equal(c.nkeys, 3);
			assert_string_equal(c.key_map[0], "http.route");
			assert_string_equal(c.key_map[1], "user.id");
			assert_string_equal(c.service_name, "checkout");
			procctx__free(&c);
			free(buf);
		}
	}
}

static void test_decode_bare_resource(void **state)
{
	Opentelemetry__Proto__Resource__V1__Resource res;
	kv_t *attrs[1];
	struct procctx c;
	uint8_t buf[256];
	size_t len;

	opentelemetry__proto__resource__v1__resource__init(&res);
	attrs[0] = kv("service.name", str_value("bare"));
	res.n_attributes = 1;
	res.attributes = attrs;
	len = opentelemetry__proto__resource__v1__resource__pack(&res, buf);
	free_kvs(attrs, 1);
	assert_int_equal(procctx__decode(buf, len, &c), 0);
	assert_string_equal(c.service_name, "bare");
	assert_int_equal(c.nresource, 1);
	procctx__free(&c);
}

/* More than 256 keys: the first 256 are kept. */
static void test_decode_many_keys(void **state)
{
	Opentelemetry__Proto__Processcontext__V1development__ProcessContext pc;
	static char names[300][8];
	const char *keys[300];
	kv_t *attrs[1];
	struct procctx c;
	uint8_t *buf;
	size_t i, len;

	for (i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "k%zu", i);
		keys[i] = names[i];
	}
	opentelemetry__proto__processcontext__v1development__process_context__init(&pc);
	attrs[0] = kv("threadlocal.attribute_key_map", key_map_value(keys, 300, -1));
	pc.n_attributes = 1;
	pc.attributes = attrs;
	len = opentelemetry__proto__processcontext__v1development__process_context__get_packed_size(
	    &pc);
	buf = malloc(len);
	opentelemetry__proto__processcontext__v1development__process_context__pack(&pc, buf);
	free_kvs(attrs, 1);
	assert_int_equal(procctx__decode(buf, len, &c), 0);
	assert_int_equal(c.nkeys, PROCCTX_MAX_KEYS);
	assert_string_equal(c.key_map[255], "k255");
	procctx__free(&c);
	free(buf);
}

static void test_decode_garbage(void **state)
{
	struct procctx c;
	uint8_t *buf, junk[512];
	size_t len, cut, i;
	int iter, err, ok = 0;

	buf = pack_context("checkout", false, &len);
	/* Every truncation either fails cleanly or decodes a prefix. */
	for (cut = 0; cut < len; cut++) {
		err = procctx__decode(buf, cut, &c);
		assert_true(err == 0 || err == -EBADMSG);
		if (!err) {
			ok++;
			procctx__free(&c);
		}
	}
	/* Cut inside the first field's length-delimited bytes: not a message. */
	assert_int_equal(procctx__decode(buf, 3, &c), -EBADMSG);
	assert_int_equal(procctx__decode(NULL, 10, &c), -EBADMSG);
	free(buf);
	srand(5);
	for (iter = 0; iter < 5000; iter++) {
		len = (size_t)rand() % sizeof(junk);
		for (i = 0; i < len; i++)
			junk[i] = (uint8_t)rand();
		err = procctx__decode(junk, len, &c);
		assert_true(err == 0 || err == -EBADMSG);
		if (!err)
			procctx__free(&c);
	}
	/* A length prefix far past the end. */
	memcpy(junk, "\x0a\xff\xff\x03", 4);
	assert_int_equal(procctx__decode(junk, 4, &c), -EBADMSG);
}

/* ---- child processes publishing a mapping ------------------------------------------------ */

enum pub_kind { PUB_MEMFD, PUB_ANON, PUB_SHMEM };

struct publish {
	enum pub_kind kind;
	const char *signature;
	uint32_t version;
	uint64_t published_at_ns;
	uint32_t payload_size;	/* 0: the packed payload's */
	bool payload_elsewhere; /* in the heap, not after the header */
	bool bad_pointer;
	bool flip; /* keep republishing two payloads */
};

struct pub_child {
	pid_t pid;
	int wait_fd;
};

struct hdr {
	char signature[8];
	uint32_t version;
	uint32_t payload_size;
	uint64_t published_at_ns;
	uint64_t payload;
};

/* The child: publishes as @p says, reports 'R' (or 'S' when naming is not supported), waits. */
static void publisher(const struct publish *p, int ready_fd, int wait_fd)
{
	size_t la, lb, size = 4096;
	uint8_t *a = pack_context("checkout", false, &la);
	uint8_t *b = pack_context("payments", false, &lb);
	volatile struct hdr *h;
	uint8_t *map, *payload;
	char c;
	int fd;

	if (p->kind == PUB_MEMFD) {
		fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, (off_t)size))
			_exit(1);
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
	} else {
		map = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_ANONYMOUS | (p->kind == PUB_ANON ? MAP_PRIVATE : MAP_SHARED), -1, 0);
	}
	if (map == MAP_FAILED)
		_exit(1);
	h = (volatile struct hdr *)map;
	payload = p->payload_elsewhere ? malloc(la) : map + sizeof(*h);
	memcpy(payload, a, la);
	h->version = p->version;
	h->payload_size = p->payload_size ? p->payload_size : (uint32_t)la;
	h->published_at_ns = p->published_at_ns;
	h->payload = p->bad_pointer ? 16 : (uint64_t)(uintptr_t)payload;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy((void *)h->signature, p->signature, 8);
	if (p->kind != PUB_MEMFD &&
	    prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)map, size, "OTEL_CTX")) {
		c = 'S';
		(void)!write(ready_fd, &c, 1);
		_exit(0);
	}
	c = 'R';
	(void)!write(ready_fd, &c, 1);
	if (p->flip) {
		/* The updating protocol, as fast as it goes: 0, new pointer and size, timestamp. */
		uint8_t *pb = malloc(lb);
		uint64_t ts = p->published_at_ns;

		struct timespec pause = {0, 20000};

		memcpy(pb, b, lb);
		for (;;) {
			bool to_b = ++ts & 1; /* odd timestamps: "payments" */

			h->published_at_ns = 0;
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			h->payload = (uint64_t)(uintptr_t)(to_b ? pb : payload);
			h->payload_size = (uint32_t)(to_b ? lb : la);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			h->published_at_ns = ts;
			/* Bursts of back-to-back updates, then a pause: both kinds of read. */
			if (!(ts % 64))
				nanosleep(&pause, NULL);
		}
	}
	while (read(wait_fd, &c, 1) > 0)
		;
	_exit(0);
}

/* Starts a publisher; false when the kernel can't name the mapping (the case is skipped). */
static bool pub_start(struct pub_child *c, const struct publish *p)
{
	int ready[2], wait[2];
	char r = 0;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(wait), 0);
	c->pid = fork_tied(); /* dies with the test, even when an assertion skips pub_stop() */
	if (!c->pid) {
		close(ready[0]);
		close(wait[1]);
		publisher(p, ready[1], wait[0]);
	}
	close(ready[1]);
	close(wait[0]);
	c->wait_fd = wait[1];
	assert_int_equal(read(ready[0], &r, 1), 1);
	close(ready[0]);
	if (r == 'S') {
		close(c->wait_fd);
		waitpid(c->pid, NULL, 0);
		print_message(
		    "kernel can't name anonymous mappings (CONFIG_ANON_VMA_NAME): skipped\n");
		return false;
	}
	assert_int_equal(r, 'R');
	return true;
}

static void pub_stop(struct pub_child *c)
{
	close(c->wait_fd);
	kill(c->pid, SIGKILL);
	assert_int_equal(waitpid(c->pid, NULL, 0), c->pid);
}

static int read_published(const struct publish *p, struct procctx *out)
{
	struct pub_child c;
	int err;

	if (!pub_start(&c, p))
		return 1;
	err = procctx__read(c.pid, out);
	pub_stop(&c);
	return err;
}

static void test_read_kinds(void **state)
{
	static const struct publish cases[] = {
	    {PUB_MEMFD, "OTEL_CTX", 2, 1700000000000000000ull, 0, false, false, false},
	    {PUB_MEMFD, "OTEL_CTX", 1, 5, 0, true, false, false},
	    {PUB_ANON, "OTEL_CTX", 2, 7, 0, true, false, false},
	    {PUB_SHMEM, "OTEL_CTX", 2, 9, 0, false, false, false},
	};
	struct procctx c;
	size_t i;
	int err;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err = read_published(&cases[i], &c);
		if (err == 1)
			continue;
		if (err)
			fail_msg("case %zu: %s", i, strerror(-err));
		check_full(&c, "checkout");
		assert_int_equal(c.published_at_ns, cases[i].published_at_ns);
		procctx__free(&c);
	}
}

static void test_read_bad(void **state)
{
	static const struct {
		struct publish p;
		int err;
	} cases[] = {
	    {{PUB_MEMFD, "OTEL_CTY", 2, 1, 0, false, false, false}, -EBADMSG},
	    {{PUB_MEMFD, "OTEL_CTX", 3, 1, 0, false, false, false}, -EBADMSG},
	    {{PUB_MEMFD, "OTEL_CTX", 0, 1, 0, false, false, false}, -EBADMSG},
	    /* published_at_ns 0: an update that never ends. */
	    {{PUB_MEMFD, "OTEL_CTX", 2, 0, 0, false, false, false}, -EAGAIN},
	    {{PUB_MEMFD, "OTEL_CTX", 2, 1, PROCCTX_MAX_PAYLOAD + 1, false, false, false}, -EBADMSG},
	    /* Size past the mapping's end (the payload follows the header). */
	    {{PUB_MEMFD, "OTEL_CTX", 2, 1, 8000, false, false, false}, -EBADMSG},
	    {{PUB_MEMFD, "OTEL_CTX", 2, 1, 0, false, true, false}, -EBADMSG},
	    /* A payload cut in the middle of a field. */
	    {{PUB_MEMFD, "OTEL_CTX", 2, 1, 3, false, false, false}, -EBADMSG},
	};
	struct procctx c;
	size_t i;
	int err;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err = read_published(&cases[i].p, &c);
		if (err != cases[i].err)
			fail_msg("case %zu: %d, expected %d", i, err, cases[i].err);
	}
	/* No mapping at all: the test itself. */
	assert_int_equal(procctx__read(getpid(), &c), -ENOENT);
}

static void test_read_gone(void **state)
{
	struct procctx c;

	assert_int_equal(procctx__read(gone_pid(), &c), -ESRCH);
}

/* The names the kernel gives each kind of mapping (this kernel may not name anonymous ones). */
static void test_mapping_names(void **state)
{
	assert_true(procctx__is_mapping_name("[anon_shmem:OTEL_CTX]"));
	assert_true(procctx__is_mapping_name("[anon:OTEL_CTX]"));
	assert_true(procctx__is_mapping_name("/memfd:OTEL_CTX"));
	assert_false(procctx__is_mapping_name("[anon:OTEL]"));
	assert_false(procctx__is_mapping_name("/memfd:OTHER"));
	assert_false(procctx__is_mapping_name("/tmp/OTEL_CTX"));
	assert_false(procctx__is_mapping_name(""));
	assert_false(procctx__is_mapping_name(NULL));
}

/* A writer that never stops updating: every read is consistent or gives up with -EAGAIN. */
static void test_read_concurrent(void **state)
{
	struct publish p = {PUB_MEMFD, "OTEL_CTX", 2, 100, 0, true, false, true};
	struct pub_child ch;
	struct procctx c;
	int i, err, ok = 0, again = 0, flipped = 0;

	assert_true(pub_start(&ch, &p));
	for (i = 0; i < 300; i++) {
		err = procctx__read(ch.pid, &c);
		if (err == -EAGAIN) {
			again++;
			continue;
		}
		assert_int_equal(err, 0);
		/* Odd timestamps point at "payments", even ones at "checkout". */
		assert_string_equal(c.service_name,
				    c.published_at_ns & 1 ? "payments" : "checkout");
		if (c.published_at_ns > 100)
			flipped++;
		ok++;
		procctx__free(&c);
	}
	pub_stop(&ch);
	print_message("concurrent writer: %d consistent reads (%d after an update), %d gave up\n",
		      ok, flipped, again);
	assert_int_equal(ok + again, 300);
	assert_true(flipped > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode),
	    cmocka_unit_test(test_decode_schema_names),
	    cmocka_unit_test(test_decode_bare_resource),
	    cmocka_unit_test(test_decode_many_keys),
	    cmocka_unit_test(test_decode_garbage),
	    cmocka_unit_test(test_read_kinds),
	    cmocka_unit_test(test_read_bad),
	    cmocka_unit_test(test_read_gone),
	    cmocka_unit_test(test_mapping_names),
	    cmocka_unit_test(test_read_concurrent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
